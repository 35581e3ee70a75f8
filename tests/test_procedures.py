"""The PTS 2.0.2 tests beyond the basic four (Host Idle Recovery, Cross-Stimulus
Recovery, Composite Block Size Workload, DIRTH): their profile keys, their plans as
stages, fio's per-interval logs read back, the rules of tkbench/kinds/staged/results.py,
and one real run of all four (real fio on a regular file, shrunk by
tests/_helpers.py FAST)."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGE_TESTS, sets
from tkbench import cli
from tkbench.analysis.window import window, window_records
from tkbench.fio import logs as fiologs
from tkbench.kinds.staged import results as stages
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Series
from tkbench.rundir.store import load_run

GiB = 1 << 30
MiB = 1 << 20


def _pts_e(sector: int = 512, *overrides: str) -> dict[str, planmod.PlannedTest]:
    pl = planmod.build(
        load_profile("pts-e", list(overrides)),
        planmod.TargetInfo("/dev/x", "block", 400 * GiB, sector),
    )
    return {t.name: t for t in pl.tests}


# --------------------------------------------------------------------------- plans


def test_host_idle_recovery_is_a_steady_preconditioning_and_one_round_of_wait_states() -> None:
    by = _pts_e()
    pre = by["hir-precondition"]
    assert pre.purge and pre.precondition is None  # PTS: no workload-independent one
    assert len(pre.points) == 30 and {p.runtime for p in pre.points} == {60.0}
    # the tracking variable reads the round's last minute only
    assert [p.role for p in pre.points] == ["interval"] * 29 + [""]
    assert [t.label for t in pre.tracking] == ["iops 4k 0/100"]
    assert {(p.numjobs, p.iodepth) for p in pre.points} == {(4, 32)}
    rec = by["hir-recovery"]
    assert not rec.purge and rec.spec.kind == "fixed" and rec.sample == 1.0
    waits = [p for p in rec.points if p.idle]
    assert [p.idle for p in waits] == [5.0, 10.0, 15.0, 25.0, 50.0]
    assert all(p.busy == 5.0 and p.runtime == 360 * (5.0 + p.idle) for p in waits)
    # each wait state followed by 1,800 s of continuous writes
    assert [p.runtime for p in rec.points if not p.idle] == [1800.0] * 5
    assert [p.idle > 0 for p in rec.points] == [True, False] * 5


def test_cross_stimulus_recovery_is_three_groups_back_to_back_sampled_per_minute() -> None:
    xsr = _pts_e()["xsr"]
    assert [(p.bs, p.pattern, p.rw, p.runtime) for p in xsr.points] == [
        (1 << 20, "sequential", "write", 8 * 3600.0),
        (8192, "random", "randwrite", 6 * 3600.0),
        (1 << 20, "sequential", "write", 8 * 3600.0),
    ]
    assert {(p.numjobs, p.iodepth) for p in xsr.points} == {(1, 32)}
    assert xsr.sample == 60.0 and xsr.purge and xsr.precondition is None


def test_composite_block_size_workload_stages() -> None:
    by = _pts_e()
    pre = by["cbw-precondition"]
    assert pre.precondition is not None  # purge, then 2x capacity of 128k writes
    assert [p.role for p in pre.points] == [""] + ["interval"] * 29  # tracks the first
    assert {(p.numjobs, p.iodepth, p.rw) for p in pre.points} == {(32, 32, "randwrite")}
    point = pre.points[0]
    assert point.bs == 0 and point.label.startswith("composite 0/100")
    assert point.bssplit == (
        "512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4096/67:8192/10:16384/7:32768/3:65536/3"
    )
    assert point.zones == "zoned:50/5:30/15:20/80"
    di = by["cbw-intensity"]
    first, grid = di.points[0], di.points[1:]
    assert (first.role, first.runtime, first.mix.read) == ("prewrite", 300.0, 0)
    loads = [(p.numjobs, p.iodepth) for p in grid]
    levels = [32, 16, 8, 6, 4, 2, 1]
    assert loads == [(t, q) for t in levels for q in levels]  # thread count outer
    assert {p.mix.read for p in grid} == {40}
    assert [p for p in grid if not p.role] == [grid[0]]  # only T32/Q32 is tracked
    op = by["cbw-operating"]
    assert op.derive_from == "cbw-intensity" and op.spec.histogram
    assert [p.runtime for p in op.points] == [3600.0, 600.0] * 3


def test_the_full_suite_is_planned_in_days() -> None:
    pl = planmod.build(load_profile("pts-e"), planmod.TargetInfo("/dev/x", "block", 400 * GiB))
    lo, hi = pl.estimate(1e9)
    assert 2 * 86400 < lo < hi and hi > 5 * 86400


def test_a_4kn_drive_folds_the_small_composite_sizes_into_4k_and_says_so() -> None:
    pre = _pts_e(4096)["cbw-precondition"]
    assert pre.points[0].bssplit.startswith("4096/77:8192/10:")
    assert any("folded into 4k" in n for n in pre.notes)
    # a single block size the sector does not divide: the test is left out, with a note
    pl = planmod.build(
        load_profile("pts-e", ['tests.dirth.block_sizes=["512"]']),
        planmod.TargetInfo("/dev/x", "block", 400 * GiB, 4096),
    )
    assert not [t for t in pl.tests if t.spec.name == "dirth"]
    assert any(n.startswith("test dirth skipped") for n in pl.notes)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ('tests.cbw.bssplit=["4k/60", "8k/30"]', "the shares add up to 90 %, not 100 %"),
        ('tests.cbw.zones=["50/5", "30/95"]', "the accesses add up to 80 %"),
        ("tests.hir.wait_states=[]", "needs at least 1 entry"),
        ("tests.hir.precondition=true", "has no workload-independent preconditioning"),
        ("tests.hir.procedure=idle", "'idle' is not one of hir, xsr, cbw, dirth"),
        ('tests.xsr.groups=["1m sideways 1h"]', "not an access group"),
    ],
)
def test_bad_procedure_keys_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], override: str, message: str
) -> None:
    argv = ["plan", "--profile", "pts-e", "--target", str(tmp_path / "t.img"), "--size", "1G"]
    assert cli.main([*argv, "--set", override]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_tests_selects_a_subset_and_refuses_an_unknown_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", "--profile", "pts-e", "--target", str(tmp_path / "t.img"), "--size", "1G"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--json", "--no-jobs", "--tests", "xsr,hir"]) == 0
    names = [t["name"] for t in json.loads(out.getvalue())["tests"]]
    assert names == ["hir-precondition", "hir-recovery", "xsr"]  # the profile's order
    assert cli.main([*argv, "--tests", "hir,nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no test 'nosuch'" in err and "dirth" in err


@pytest.mark.parametrize("workload", ["oltp", "vod", "metadata", "composite"])
def test_write_saturation_optional_workloads_are_no_departure(workload: str) -> None:
    from tkbench.conformance import judge_plan

    pl = planmod.build(
        load_profile("pts-e", [f"tests.wsat.wsat_workload={workload}", *_ONLY_WSAT]),
        planmod.TargetInfo("/dev/x", "block", 400 * GiB),
    )
    (wsat,) = pl.tests
    assert wsat.points[0].label != "4k 0/100" and wsat.tracking
    assert judge_plan(pl).conforms
    # the same change made by hand, not as an optional workload, is a departure
    by_hand = planmod.build(
        load_profile(
            "pts-e",
            [
                'tests.wsat.block_sizes=["16k"]',
                'tests.wsat.tracking=["iops 16k 0/100"]',
                *_ONLY_WSAT,
            ],
        ),
        planmod.TargetInfo("/dev/x", "block", 400 * GiB),
    )
    assert not judge_plan(by_hand).conforms


_ONLY_WSAT = [
    f"tests.{t}.enabled=false"
    for t in ("iops", "throughput", "latency", "hir", "xsr", "cbw", "dirth")
]


# --------------------------------------------------------------------------- rules


def _cell(t: int, q: int, iops: float, ms: float) -> stages.Cell:
    return stages.Cell(t, q, iops, ms * 1e6, ms * 3e6, 1.0)


def test_operating_points_follow_the_ceiling_and_the_midpoint() -> None:
    cells = [
        _cell(1, 1, 1000, 0.1),
        _cell(1, 4, 3000, 1.0),
        _cell(4, 4, 9000, 4.0),
        _cell(4, 8, 9500, 6.0),  # more IOPS, but beyond the 5 ms ceiling
    ]
    mx, mid, mn = stages.choose(cells, 5e6)
    assert (mx.name, mx.numjobs, mx.iodepth, mx.iops) == ("max", 4, 4, 9000)
    assert (mn.numjobs, mn.iodepth) == (1, 1)
    assert (mid.numjobs, mid.iodepth) == (1, 4)  # 3,000 is closest to (9,000 + 1,000) / 2
    # nothing within the ceiling: the quickest-responding load, and why
    mx, _, _ = stages.choose(cells, 0.05e6)
    assert (mx.numjobs, mx.iodepth) == (1, 1) and "no load stays within" in mx.why
    with pytest.raises(ValueError):
        stages.choose([], 5e6)


def test_recovery_time_is_where_the_group_enters_its_band_for_good() -> None:
    values = [10.0, 50.0, 80.0, 95.0, 100.0, 101.0, 99.0, 100.0, 100.0]
    assert stages.settle_time(values, 60.0, 0.1) == 180.0  # from sample 4 (95) on
    assert stages.settle_time([100.0] * 9, 60.0, 0.1) == 0.0
    # in the band, out again, back: only the last entry counts
    assert stages.settle_time([100, 100, 50, 100, 100, 100, 100, 100], 1.0, 0.1) == 3.0
    assert stages.settle_time([1.0, 2.0], 60.0, 0.1) is None


def test_bursts_are_runs_of_samples_with_io() -> None:
    s = Series(interval=0.5, iops=(100.0, 100.0, 0.0, 0.0, 200.0, 200.0, 200.0, 0.0))
    got = stages.bursts(s, busy=1.0)
    assert [(b.start_s, b.seconds, b.iops) for b in got] == [
        (0.0, 1.0, 100.0),
        (2.0, 1.0, 300.0 / 1.0),
    ]


@pytest.mark.fio
def test_fio_host_idle_shows_in_its_logs_as_empty_samples(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    target.write_bytes(b"\0" * (32 * MiB))
    argv = ["fio", "--name=x", f"--filename={target}", "--size=32m", "--rw=randwrite"]
    argv += ["--bs=4k", "--ioengine=psync", "--numjobs=2", "--thread", "--time_based"]
    argv += ["--runtime=4", "--thinktime=1000ms", "--thinktime_iotime=500ms"]
    argv += ["--log_avg_msec=100", "--output-format=json"]
    argv += [f"--write_{k}_log={fiologs.prefix('x')}" for k in ("iops", "bw", "lat")]
    subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True, timeout=60)
    s = fiologs.read_series(tmp_path, "x", 0.1)
    assert s is not None and len(s.iops) == len(s.t_s) == len(s.lat_mean_ns)
    found = stages.bursts(s, 0.5)
    assert len(found) >= 2 and all(b.iops > 0 for b in found)
    # between bursts, about a second of samples without I/O (the host idle)
    gaps = [b.start_s - (a.start_s + a.seconds) for a, b in itertools.pairwise(found)]
    assert all(0.6 <= g <= 1.4 for g in gaps), gaps
    assert fiologs.read_series(tmp_path, "nosuch", 0.1) is None


# --------------------------------------------------------------------------- a run


@pytest.fixture(scope="module")
def staged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("staged")
    out = d / "run"
    argv = ["run", "--profile", "quick", "--tests", "hir,xsr,cbw,dirth", "--size", "64M"]
    argv += ["--target", str(d / "t.img"), "--out", str(out), "--yes", "--no-history", "-q"]
    assert cli.main([*argv, "--no-report", *sets()]) == 0
    return out


def _show(run: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["show", str(run), "--json"]) == 0
    return dict(json.loads(out.getvalue()))


@pytest.mark.fio
def test_every_stage_is_stored_and_shown(staged_run: Path) -> None:
    run = load_run(staged_run)
    names = [t.name for t in run.tests]
    assert names == STAGE_TESTS
    assert all(t.finished for t in run.tests)
    shown = _show(staged_run)["procedures"]
    waits = shown["hir"]["wait_states"]
    assert [w["idle_s"] for w in waits] == [0.3, 0.6]
    base = shown["hir"]["steady_state_iops"]
    for w in waits:
        assert w["bursts"] >= 1 and w["mean_iops"] > 0
        assert w["recovery"] == pytest.approx(w["mean_iops"] / base, rel=1e-3)
    moves = [(x["from"], x["to"]) for x in shown["xsr"]["transitions"]]
    assert moves == [("128k sequential", "4k random"), ("4k random", "128k sequential")]
    for name in ("cbw", "dirth"):
        ops = shown[name]["operating_points"]
        assert set(ops) == {"max", "mid", "min"}
        assert (ops["min"]["threads"], ops["min"]["iodepth"]) == (1, 1)
        assert all(o["iops"] > 0 and o["samples"] > 0 for o in ops.values())


@pytest.mark.fio
def test_the_operating_points_are_chosen_from_the_stored_window(staged_run: Path) -> None:
    run = load_run(staged_run)
    tests = {t.name: t for t in run.tests}
    for name in ("cbw", "dirth"):
        di = tests[f"{name}-intensity"]
        op = tests[f"{name}-operating"]
        again = stages.choose(
            stages.grid(window_records(di.rounds, window(di))), op.plan.response_ceiling * 1e9
        )
        assert [(o.name, o.numjobs, o.iodepth) for o in op.plan.operating] == [
            (o.name, o.numjobs, o.iodepth) for o in again
        ]
        measured = [p for p in op.rounds[0].points if p.role != "prewrite"]
        assert [(p.numjobs, p.iodepth) for p in measured] == [(o.numjobs, o.iodepth) for o in again]
        assert all(p.read.bins_ns and p.write.bins_ns for p in measured)  # full histograms


@pytest.mark.fio
def test_fio_is_told_the_mix_the_zones_and_the_idle(staged_run: Path) -> None:
    cbw = (staged_run / "tests/cbw-intensity/rounds/0001.fio").read_text()
    assert "random_distribution=zoned:50/5:30/15:20/80" in cbw
    assert "bssplit=512/4:1024/1:1536/1:" in cbw and "\nbs=" not in cbw
    hir = (staged_run / "tests/hir-recovery/rounds/0001.fio").read_text()
    assert "thinktime=300ms" in hir and "thinktime_iotime=300ms" in hir
    assert "log_avg_msec=100" in hir
    series = load_run(staged_run).tests[1].rounds[0].points[0].series
    assert series is not None and series.interval == 0.1 and 0.0 in series.iops
