"""``workload.write_cache`` in runs: the profile key, the engine setting it before the
first test and restoring it however the run ends, resume, the record in the run
directory, ``show``, ``plan`` and the report.

The drive is a FAKE NVMe drive: a 16 MiB file in tmp_path presented as an NVMe
namespace, whose commands go to the fake nvme of tests/fakes (this machine has no
NVMe drive), and fio is the FAKE runner of tests/fakes/fio_runner.py -- except in
the last test, a real run with real fio on a regular file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.helpers import FakeTools

from tests._helpers import STAGED_OFF, TWO_IOPS_ROUNDS, merged
from tests.fakes.fio_runner import Call, FakeFio
from tkbench import cli
from tkbench.cli.commands import _warn_write_cache
from tkbench.conformance import judge_plan, judge_run
from tkbench.device import DeviceIdentity, WriteCacheError
from tkbench.device.cacherecord import describe
from tkbench.engine import Engine, EngineOptions, check_resumable, new_manifest, runs
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import (
    EXIT_BAD_INPUT,
    EXIT_DEVICE,
    Interrupted,
    ProfileError,
    ToolMissingError,
)
from tkbench.outputs.show import format_summary, run_summary
from tkbench.outputs.show import shown as show
from tkbench.plan import build as planmod
from tkbench.profile.build import build as build_profile
from tkbench.profile.build import load as load_profile
from tkbench.report import header
from tkbench.rundir import writecache as cacherecord
from tkbench.rundir.store import RunStore, load_run
from tkbench.targets import open_target
from tkbench.targets.base import Target
from tkbench.targets.block import BlockTarget

MiB = 1024 * 1024
GiB = 1024 * MiB
ONLY_IOPS = [
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=2",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
]


# --------------------------------------------------------------------------- profile key


def test_bundled_profiles_ask_what_their_pts_variant_states() -> None:
    assert load_profile("pts-e").workload.write_cache == "disabled"
    assert load_profile("pts-c").workload.write_cache == "enabled"
    assert load_profile("quick").workload.write_cache == "unchanged"
    p = load_profile("quick", ["workload.write_cache=enabled"])
    assert {t.workload.write_cache for t in p.tests} == {"enabled"}


def test_bad_values_are_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as err:
        load_profile("quick", ["workload.write_cache=off"])
    assert str(err.value) == (
        "--set workload.write_cache: 'off' is not one of disabled, enabled, unchanged"
    )
    f = tmp_path / "p.toml"
    f.write_text('extends = "quick"\n[workload]\nwrite_cache = false\n')
    with pytest.raises(ProfileError, match=r"key 'workload.write_cache': False is not one of"):
        load_profile(str(f))
    f.write_text('extends = "pts-e"\n[tests.iops]\nworkload = { write_cache = "enabled" }\n')
    with pytest.raises(ProfileError, match=r"tests.iops.workload.write_cache': the write cache"):
        load_profile(str(f))


def test_bad_value_on_the_command_line_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    assert cli.main([*argv, "--set", "workload.write_cache=maybe"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workload.write_cache" in err and "Traceback" not in err


def test_a_setting_other_than_the_pts_variants_is_a_departure() -> None:
    def of(name: str, *sets: str) -> list[tuple[str, str]]:
        plan = planmod.build(load_profile(name, list(sets)), planmod.TargetInfo("d", "block", GiB))
        return [
            (d.required, d.actual)
            for d in judge_plan(plan).departures
            if d.requirement == "volatile write cache"
        ]

    assert of("pts-e") == [] and of("pts-c") == []
    assert of("quick") == [
        ("disabled, WCD", "left as the drive had it (workload.write_cache = unchanged)")
    ]
    assert of("pts-c", "workload.write_cache=disabled") == [("enabled, WCE", "disabled")]


def test_plan_says_what_will_be_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--profile", "pts-e", "--target", str(tmp_path / "t.img"), "--size", "1G"]
    assert cli.main([*argv, "--no-jobs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("Purge")
    assert lines[3] == (
        "Cache     volatile write cache disabled asked, not applicable: a regular file has no"
        " drive write cache of its own; the run records the departure"
    )
    assert not (tmp_path / "t.img").exists()


# --------------------------------------------------------------------------- engine


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    return FakeTools(tmp_path, monkeypatch)


def nvme_target(tmp: Path) -> BlockTarget:
    """A FAKE NVMe namespace: a file the fake fio never writes, commands to the fake nvme."""
    img = tmp / "nvme0n1.img"
    with open(img, "wb") as fh:
        fh.truncate(16 * MiB)
    dev = DeviceIdentity(
        path=str(img), kernel_name="nvme0n1", is_block_device=True, interface="nvme",
        model="Samsung SSD 980 PRO 1TB", serial="S5GXNF0R912345F", capacity_bytes=16 * MiB,
        logical_sector=512,
    )  # fmt: skip
    return BlockTarget(str(img), str(img), 16 * MiB, 512, dev.to_dict(), device=dev)


def engine(
    tmp: Path, target: Target, fake: FakeFio, overrides: list[str], **options: Any
) -> Engine:
    """A new run of the quick profile (fast, ``overrides``) on ``target``, as ``run``
    starts it once the guards passed."""
    prof = load_profile("quick", merged(*ONLY_IOPS, *overrides))
    plan = planmod.build(prof, target.info())
    target.check_write_cache(prof.workload.write_cache)
    store = RunStore.create(tmp / "run", new_manifest(plan, target, fake.version(), [], []))
    return Engine(plan, target, fake, store, fake.progress, EngineOptions(**options))


def resumed(tmp: Path, target: Target, fake: FakeFio) -> Engine:
    data = load_run(tmp / "run")
    check_resumable(data)
    m = data.manifest
    prof = build_profile(dict(m.profile.resolved), m.profile.source)
    plan = planmod.build(prof, target.info())
    return Engine(plan, target, fake, RunStore.open(tmp / "run"), fake.progress, EngineOptions())


def cache_on(fakes: FakeTools) -> bool:
    return bool(fakes.state().get("vwc_enabled", True))


def watching(fakes: FakeTools, seen: list[bool]) -> FakeFio:
    """A fake fio that notes the drive's cache setting at every point it runs."""

    def script(call: Call) -> float:
        seen.append(cache_on(fakes))
        return 10_000.0

    return FakeFio(script)


def nvme_steps(fakes: FakeTools) -> list[str]:
    """The nvme subcommands run, set-feature with its value."""
    out = []
    for argv in fakes.calls("nvme"):
        value = next((a for a in argv if a.startswith("--value=")), "")
        out.append(f"{argv[1]}{value[7:]}")
    return out


def test_pts_e_setting_holds_for_every_round_and_is_restored(
    tmp_path: Path, fakes: FakeTools
) -> None:
    seen: list[bool] = []
    eng = engine(
        tmp_path, nvme_target(tmp_path), watching(fakes, seen), ["workload.write_cache=disabled"]
    )
    assert eng.run().status == "complete"
    assert seen and not any(seen)  # every point ran with the cache disabled
    assert cache_on(fakes) is True  # and the drive has it back
    steps = nvme_steps(fakes)
    # set before the purge (format), restored after the last round
    assert steps.index("set-feature=0") < steps.index("format")
    assert steps[-2:] == ["set-feature=1", "get-feature"]
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and rec.requested == "disabled" and rec.tool == "nvme-cli"
    assert describe(rec) == "disabled (set by tkbench, verified; restored to enabled after the run)"
    log = (tmp_path / "run" / "events.log").read_text()
    assert log.index("set disabled, read back disabled") < log.index("test iops: started")
    assert log.index("restored to enabled") < log.index("run complete")
    # show --json carries the record; show and the report say it in words
    summary = run_summary(load_run(tmp_path / "run"))
    assert summary["write_cache"] == json.loads((tmp_path / "run" / "write-cache.json").read_text())
    assert f"Cache     volatile write cache {describe(rec)}" in format_summary(
        show(load_run(tmp_path / "run"))
    )
    rows = {r.label: r.value for r in header.setup_rows(load_run(tmp_path / "run"))}
    assert rows["Volatile write cache"] == describe(rec)
    device = {r.label for r in header.device_rows(load_run(tmp_path / "run").manifest)}
    assert "Kernel write-cache mode (sysfs)" in device and "Volatile write cache" not in device
    # the cache as PTS-E asks and a secure erase: neither is a departure; quick's IOPS
    # load is the operator's choice, stated
    judged = judge_run(load_run(tmp_path / "run"), rec)
    found = {d.requirement for d in judged.departures}
    assert "volatile write cache" not in found and "purge" not in found
    assert "outstanding I/O" not in found
    assert [c.requirement for c in judged.choices] == ["outstanding I/O"]
    assert summary["pts"]["variant"] == "E" and summary["pts"]["conforms"] is False


def test_a_run_read_back_reads_its_write_cache_record_once(
    tmp_path: Path, fakes: FakeTools
) -> None:
    """Every part of a report (set-up rows, operator choices, warnings, the PTS claim)
    and ``show`` take the record the run was read with: a record changed or gone
    afterwards changes none of them half-way."""
    eng = engine(tmp_path, nvme_target(tmp_path), FakeFio(), ["workload.write_cache=disabled"])
    assert eng.run().status == "complete"
    run = load_run(tmp_path / "run")
    rec = run.write_cache
    assert rec is not None and rec.requested == "disabled"
    (tmp_path / "run" / "write-cache.json").unlink()
    rows = {r.label: r.value for r in header.setup_rows(run)}
    assert rows["Volatile write cache"] == describe(rec)
    assert run_summary(run)["write_cache"] == rec.to_dict()
    assert header.pts_claim(run) == header.pts_claim_of(judge_run(run, rec))
    assert load_run(tmp_path / "run").write_cache is None  # a new reading sees it gone


def test_restored_after_an_interrupt_and_set_again_on_resume(
    tmp_path: Path, fakes: FakeTools
) -> None:
    target = nvme_target(tmp_path)
    seen: list[bool] = []
    fake = watching(fakes, seen)
    eng = engine(
        tmp_path, target, fake, ["workload.write_cache=disabled"],
        stop=lambda: len(fake.rounds()) >= 1,
    )  # fmt: skip
    with pytest.raises(Interrupted):
        eng.run()
    assert load_run(tmp_path / "run").manifest.status == "interrupted"
    assert cache_on(fakes) is True
    log = (tmp_path / "run" / "events.log").read_text()
    assert log.index("interrupted") < log.index("restored to enabled")
    resumed(tmp_path, target, fake).run()
    assert cache_on(fakes) is True and seen and not any(seen)
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and len(rec.sessions) == 2
    assert all(s.changed and s.restore_verified for s in rec.sessions)
    assert nvme_steps(fakes).count("set-feature=0") == 2


def test_restored_after_a_failed_test(tmp_path: Path, fakes: FakeTools) -> None:
    fake = FakeFio(error=lambda call: 5 if call.round == 2 else 0)
    eng = engine(tmp_path, nvme_target(tmp_path), fake, ["workload.write_cache=disabled"])
    with pytest.raises(Exception, match="error"):
        eng.run()
    assert load_run(tmp_path / "run").manifest.status == "failed"
    assert cache_on(fakes) is True
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and rec.sessions[0].restore_verified is True


def test_a_drive_that_refuses_is_refused_before_the_purge(tmp_path: Path, fakes: FakeTools) -> None:
    fakes.configure(nvme={"set_feature_ignored": True})
    fake = FakeFio()
    eng = engine(tmp_path, nvme_target(tmp_path), fake, ["workload.write_cache=disabled"])
    with pytest.raises(WriteCacheError) as err:
        eng.run()
    assert err.value.exit_code == EXIT_DEVICE and "\n" not in str(err.value)
    assert "format" not in nvme_steps(fakes) and fake.runs == []  # nothing destructive
    m = load_run(tmp_path / "run").manifest
    assert m.status == "failed" and "did not take the setting" in (m.error or "")
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and describe(rec).startswith("NOT disabled: the write cache of")
    # once the drive takes it, the same run resumes and runs its tests
    fakes.configure(nvme={"set_feature_ignored": False})
    target = nvme_target(tmp_path)
    assert resumed(tmp_path, target, fake).run().status == "complete"
    assert "format" in nvme_steps(fakes) and cache_on(fakes) is True
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and describe(rec).startswith("disabled (set by tkbench, verified")


def test_no_volatile_cache_to_enable_for_pts_c(tmp_path: Path, fakes: FakeTools) -> None:
    fakes.configure(nvme={"id_ctrl": {"vwc": 0}})
    eng = engine(tmp_path, nvme_target(tmp_path), FakeFio(), ["workload.write_cache=enabled"])
    with pytest.raises(WriteCacheError, match="has no volatile write cache"):
        eng.run()
    assert "format" not in nvme_steps(fakes)


def test_resume_after_a_kill_restores_the_original(tmp_path: Path, fakes: FakeTools) -> None:
    target = nvme_target(tmp_path)
    eng = engine(tmp_path, target, FakeFio(), ["workload.write_cache=disabled"])
    # the first process set the cache and was killed (kill -9: no restore ran)
    target.write_cache("disabled", cacherecord.RunRecordSink(eng.store)).begin()
    assert cache_on(fakes) is False
    resumed(tmp_path, target, FakeFio()).run()
    assert cache_on(fakes) is True  # what the drive had before tkbench, not what it found
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None
    assert [(s.before, s.original) for s in rec.sessions] == [
        ("enabled", "enabled"),
        ("disabled", "enabled"),
    ]


def test_a_failed_restore_is_a_warning_with_the_command(
    tmp_path: Path, fakes: FakeTools, capsys: pytest.CaptureFixture[str]
) -> None:
    fakes.configure(nvme={"set_feature_fails_from": 2})
    eng = engine(tmp_path, nvme_target(tmp_path), FakeFio(), ["workload.write_cache=disabled"])
    assert eng.run().status == "complete"  # the measurement stands
    assert cache_on(fakes) is False
    _warn_write_cache(tmp_path / "run")
    err = capsys.readouterr().err
    assert err.startswith("tkbench: warning: the write cache of ")
    assert "was not restored to enabled: set it by hand with `nvme set-feature" in err
    _warn_write_cache(None)  # no run directory yet: nothing to say
    assert capsys.readouterr().err == ""


def test_a_file_target_records_the_departure(tmp_path: Path, fakes: FakeTools) -> None:
    target = open_target(str(tmp_path / "t.img"), size=16 * MiB, create=True)
    with target.materialized():
        pass
    eng = engine(tmp_path, target, FakeFio(), ["workload.write_cache=disabled"])
    assert eng.run().status == "complete"
    assert fakes.calls() == []
    rec = cacherecord.load(tmp_path / "run")
    assert rec is not None and rec.applies is False
    assert describe(rec) == (
        "NOT disabled as the profile asks: a regular file has no drive write cache of its own"
    )
    run = load_run(tmp_path / "run")
    # quick claims PTS-E: the report lists it among the departures, and only there
    (cache,) = [
        d for d in judge_run(run, rec).departures if d.requirement == "volatile write cache"
    ]
    assert cache.test is None and cache.required == "disabled, WCD"
    assert cache.actual == "not set, as a regular file has no drive write cache of its own"
    claim = header.pts_claim(run)
    assert any(cache.words() in items for _, items in claim.groups)
    assert not any("did not apply" in w for w in header.warnings(run, ()))
    assert "write cache: disabled not applied" in (tmp_path / "run" / "events.log").read_text()


def test_a_missing_tool_is_refused_before_the_confirmation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeTools(tmp_path, monkeypatch, tools=())  # no nvme-cli on PATH
    target = nvme_target(tmp_path)
    monkeypatch.setattr(runs, "open_target", lambda *a, **k: target)
    asked: list[str] = []
    req = RunRequest(
        profile="pts-e", target=target.path, out=tmp_path / "run", interactive=True,
        prompt=lambda text: asked.append(text) or "no",
    )  # fmt: skip
    with pytest.raises(ToolMissingError, match=r"needs 'nvme' \(Debian package nvme-cli\)"):
        start(req)
    assert asked == [] and not (tmp_path / "run").exists()
    argv = ["run", "--profile", "pts-e", "--target", target.path, "--confirm", "S5GXNF0R912345F"]
    assert cli.main([*argv, "--no-report", "--no-history"]) == EXIT_DEVICE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workload.write_cache is 'disabled'" in err
    # "unchanged" runs the drive as it is: the same request gets past this check
    target.check_write_cache("unchanged")


def test_a_corrupt_record_is_one_line(tmp_path: Path, fakes: FakeTools) -> None:
    eng = engine(tmp_path, nvme_target(tmp_path), FakeFio(), ["workload.write_cache=disabled"])
    eng.run()
    path = tmp_path / "run" / "write-cache.json"
    data = json.loads(path.read_text())
    data["sessions"][0]["changed"] = "yes"
    path.write_text(json.dumps(data))
    assert cli.main(["show", str(tmp_path / "run")]) == EXIT_BAD_INPUT


# --------------------------------------------------------------------------- real fio


@pytest.mark.fio
def test_a_real_run_on_a_file_with_unchanged(tmp_path: Path) -> None:
    out, manifest = start(
        RunRequest(
            profile="quick",
            target=str(tmp_path / "t.img"),
            size=16 * MiB,
            out=tmp_path / "run",
            overrides=merged(*TWO_IOPS_ROUNDS),
            assume_yes=True,
        )
    )
    assert manifest.status == "complete"
    rec = cacherecord.load(out)
    assert rec is not None and rec.requested == "unchanged" and rec.applies is False
    (session,) = rec.sessions
    assert session.before == "not applicable" and session.changed is False
    assert session.ended is not None and session.commands == []
    text = "not set by tkbench: a regular file has no drive write cache of its own"
    assert describe(rec) == text
    run = load_run(out)
    assert run_summary(run)["write_cache"]["requested"] == "unchanged"
    rows = {r.label: r.value for r in header.setup_rows(run)}
    assert rows["Volatile write cache"] == text
    assert not any("did not apply" in w for w in header.warnings(run, ()))
