"""End-to-end runs with real fio on regular files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGED_OFF, TWO_IOPS_ROUNDS, merged, sets
from tkbench import cli
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import Interrupted
from tkbench.outputs.show import run_summary
from tkbench.rundir.store import load_run

MiB = 1024 * 1024


def _run(
    tmp_path: Path, overrides: list[str], name: str = "run", **kw: Any
) -> tuple[Path, dict[str, Any]]:
    req = RunRequest(
        profile="quick",
        target=str(tmp_path / "t.img"),
        size=16 * MiB,
        out=tmp_path / name,
        overrides=merged(*overrides),
        assume_yes=True,
        **kw,
    )
    return start(req)


@pytest.mark.fio
def test_iops_run_stores_every_round_and_stops_at_steady_state(tmp_path: Path) -> None:
    # a loose excursion limit makes steady state certain after exactly `window` rounds
    out, manifest = _run(
        tmp_path,
        [
            "tests.iops.rounds.max_excursion=9.0",
            "tests.iops.rounds.max_slope_excursion=9.0",
            "tests.iops.rounds.window=3",
            "tests.throughput.enabled=false",
            "tests.latency.enabled=false",
            "tests.wsat.enabled=false",
            *STAGED_OFF,
        ],
    )
    assert manifest.status == "complete"
    assert manifest.fio_version.startswith("fio-")
    assert manifest.target.capacity_bytes == 16 * MiB
    run = load_run(out)
    (iops,) = run.tests
    assert [r.round for r in iops.rounds] == [1, 2, 3]
    assert iops.result is not None and iops.result.steady_state is True
    assert iops.result.window == (
        1,
        2,
        3,
    )
    rdir = out / "tests" / "iops" / "rounds"
    for n in (1, 2, 3):
        raw = (rdir / f"{n:04d}.out").read_text()
        assert '"fio version"' in raw
        assert "[p000_64k_100-0]" in (rdir / f"{n:04d}.fio").read_text()
    r1 = iops.rounds[0]
    assert len(r1.points) == 6
    for p in r1.points:
        assert p.iops > 0 and p.error == 0
        assert p.runtime == 0.2
    w = next(p for p in r1.points if p.read_pct == 0 and p.bs == 4096)
    assert r1.tracking["iops 4k 0/100"] == pytest.approx(w.iops)
    assert w.read.io_bytes == 0 and w.write.io_bytes > 0
    assert set(w.write.percentiles_ns) >= {"99", "99.99"}
    assert iops.purge is not None and iops.purge.method == "file-recreate"
    assert iops.purge.pts_compliant is False
    assert iops.precondition is not None
    assert iops.precondition.written_bytes == 16 * MiB  # capacity_multiple 1.0
    assert not (out / ".scratch").exists()


@pytest.mark.fio
def test_tight_limits_run_to_the_round_limit(tmp_path: Path) -> None:
    out, _ = _run(
        tmp_path,
        [
            "tests.latency.rounds.max_excursion=0.000001",
            "tests.latency.rounds.max=6",
            "tests.iops.enabled=false",
            "tests.throughput.enabled=false",
            "tests.wsat.enabled=false",
            *STAGED_OFF,
        ],
    )
    t = load_run(out).test("latency")
    assert len(t.rounds) == 6
    assert t.result is not None and t.result.steady_state is False
    # json+ histograms are kept for the latency test
    p = t.rounds[0].points[0]
    assert sum(p.read.bins_ns.values()) > 0


@pytest.mark.fio
def test_write_saturation_stops_at_written_multiple(tmp_path: Path) -> None:
    out, _ = _run(
        tmp_path,
        [
            "tests.wsat.stop_written_multiple=0.5",
            "tests.wsat.point_runtime=0.05s",
            "tests.iops.enabled=false",
            "tests.throughput.enabled=false",
            "tests.latency.enabled=false",
            *STAGED_OFF,
        ],
    )
    t = load_run(out).test("wsat")
    totals = [r.total_written_bytes for r in t.rounds]
    assert totals[-1] >= 8 * MiB
    assert len(totals) == 1 or totals[-2] < 8 * MiB  # stopped at the first round past the limit
    assert totals == sorted(totals)
    assert t.purge is not None and t.precondition is None


@pytest.mark.fio
def test_interrupt_and_resume_continue_the_rounds(tmp_path: Path) -> None:
    overrides = [
        "tests.iops.rounds.max_excursion=0.000001",
        "tests.iops.rounds.max=4",
        "tests.iops.rounds.window=3",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        "tests.wsat.enabled=false",
        *STAGED_OFF,
    ]
    rounds_seen: list[int] = []

    def stop() -> bool:
        out = tmp_path / "run" / "tests" / "iops" / "rounds"
        rounds_seen.append(len(list(out.glob("*.json"))) if out.exists() else 0)
        return rounds_seen[-1] >= 2

    with pytest.raises(Interrupted):
        _run(tmp_path, overrides, stop=stop)
    data = load_run(tmp_path / "run")
    assert data.manifest.status == "interrupted"
    assert len(data.test("iops").rounds) == 2
    # resumed within the hour it continues (the default, 1 s, would re-precondition)
    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True, resume_gap=3600))
    assert manifest.status == "complete"
    t = load_run(out).test("iops")
    assert [r.round for r in t.rounds] == [1, 2, 3, 4]
    assert {r.segment for r in t.rounds} == {1}
    assert manifest.resumes[0].action == "continue"


@pytest.mark.fio
def test_resume_after_a_long_gap_starts_a_new_segment(tmp_path: Path) -> None:
    overrides = [
        "tests.iops.rounds.max_excursion=9",
        "tests.iops.rounds.max_slope_excursion=9",
        "tests.iops.rounds.window=2",
        "tests.iops.rounds.max=6",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        "tests.wsat.enabled=false",
        *STAGED_OFF,
    ]
    with pytest.raises(Interrupted):
        _run(
            tmp_path,
            overrides,
            stop=lambda: (tmp_path / "run/tests/iops/rounds/0001.json").exists(),
        )
    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True, resume_gap=0.0))
    t = load_run(out).test("iops")
    assert manifest.resumes[0].action == "re-precondition"
    assert [(r.round, r.segment) for r in t.rounds] == [(1, 1), (2, 2), (3, 2)]
    # the window lies in the new segment only
    assert t.result is not None and t.result.window == (
        2,
        3,
    )


@pytest.mark.fio
def test_cli_run_json_and_show_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "run",
        "--profile",
        "quick",
        "--target",
        str(tmp_path / "c.img"),
        "--size",
        "16M",
        "--yes",
        "--out",
        str(tmp_path / "cli"),
        "--no-report",
        "--json",
    ]
    args += sets(*TWO_IOPS_ROUNDS)
    assert cli.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "complete"
    assert cli.main(["show", str(tmp_path / "cli"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (t,) = shown["tests"]
    assert set(t) >= {"name", "steady_state", "rounds", "window", "tracking"}
    assert t["name"] == "iops" and t["rounds"] == 2
    assert len(t["tracking"]["iops 4k 0/100"]) == 2
    assert isinstance(t["steady_state"], bool)
    assert cli.main(["show", str(tmp_path / "cli")]) == 0
    assert "IOPS (iops): 2 round(s)" in capsys.readouterr().out


@pytest.mark.fio
def test_summary_of_synthetic_records_matches(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, TWO_IOPS_ROUNDS)
    s = run_summary(load_run(out))
    t = s["tests"][0]
    rounds = load_run(out).test("iops").rounds
    assert t["tracking"]["iops 64k 65/35"] == [r.tracking["iops 64k 65/35"] for r in rounds]


@pytest.mark.fio
def test_relative_out_and_target_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = [
        "run",
        "--profile",
        "quick",
        "--target",
        "t.img",
        "--size",
        "16M",
        "--yes",
        "--out",
        "rel-run",
        "--no-report",
    ]
    args += sets(*TWO_IOPS_ROUNDS)
    assert cli.main(args) == 0
    assert len(load_run(tmp_path / "rel-run").test("iops").rounds) == 2


def test_two_runs_cannot_claim_one_run_directory(tmp_path: Path) -> None:
    from tkbench.errors import RunDirError
    from tkbench.rundir.records import Manifest
    from tkbench.rundir.store import RunStore

    RunStore.create(tmp_path / "r", Manifest(status="running"))
    with pytest.raises(RunDirError):
        RunStore.create(tmp_path / "r", Manifest(status="running"))


@pytest.mark.fio
def test_resume_of_a_test_whose_rounds_were_complete_only_writes_its_result(
    tmp_path: Path,
) -> None:
    import json as _json

    out, _ = _run(
        tmp_path,
        [
            "tests.iops.rounds.max=3",
            "tests.iops.rounds.window=3",
            "tests.iops.rounds.max_excursion=0.0000001",
            "tests.throughput.enabled=false",
            "tests.latency.enabled=false",
            "tests.wsat.enabled=false",
            *STAGED_OFF,
        ],
    )
    # as if the process died after the last round, before result.json, long ago
    (out / "tests/iops/result.json").unlink()
    for f in (out / "tests/iops/rounds").glob("*.json"):
        rec = _json.loads(f.read_text())
        rec["ended"] -= 86400
        f.write_text(_json.dumps(rec))
    manifest = _json.loads((out / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (out / "manifest.json").write_text(_json.dumps(manifest))
    pre_before = (out / "tests/iops/precondition.json").read_text()
    _, m = start(RunRequest(resume=out, assume_yes=True))
    t = load_run(out).test("iops")
    assert len(t.rounds) == 3  # no round added
    assert t.result is not None and t.result.rounds == 3 and t.result.segment == 1
    assert (out / "tests/iops/precondition.json").read_text() == pre_before  # not redone
    assert not list((out / "tests/iops").glob("precondition-s*.json"))
    assert m.status == "complete"
