"""The response-time histogram phase after a test's rounds (profile key
``response_histogram``): the profile and the plan, the engine with the FAKE fio
runner (order, resume), the confidence levels read from a histogram, and a real fio
run on a regular file whose report is rendered and read back."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF, sets
from tests.fakes.fio_runner import FakeClock, FakeFio
from tests.test_engine_rules import new_engine, resumed_engine
from tkbench import cli
from tkbench.analysis.confidence import LEVELS, histogram_phase
from tkbench.engine import clock as engine_clock
from tkbench.errors import Interrupted
from tkbench.fio.output import percentile_from_bins
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.rundir import store
from tkbench.rundir.records import Direction, PointResult, ResponseHistogram, TestPlan
from tkbench.rundir.store import load_run
from tkbench.targets.base import TargetInfo

GIB = 1024**3
ONLY_LATENCY = ["tests.iops.enabled=false", "tests.throughput.enabled=false"]
ONLY_LATENCY += ["tests.wsat.enabled=false", "tests.latency.rounds.max=3", *STAGED_OFF]
ONLY_LATENCY += ["tests.latency.rounds.window=3", "tests.latency.response_histogram=2s"]


# --------------------------------------------------------------------------- profile, plan


def test_pts_profiles_have_it_and_quick_has_not() -> None:
    target = TargetInfo("t", "block", 100 * GIB, 512)
    for name in ("pts-e", "pts-c"):
        plan = planmod.build(load_profile(name), target)
        points = {t.name: t.histogram_point for t in plan.tests}
        lat, wsat = points["latency"], points["wsat"]
        assert lat is not None and wsat is not None
        assert (lat.bs, lat.mix.read, lat.pattern, lat.runtime) == (4096, 0, "random", 1200.0)
        assert (lat.numjobs, lat.iodepth) == (1, 1)  # T1/QD1
        wl = load_profile(name).test("wsat").workload
        assert (wsat.numjobs, wsat.iodepth) == (wl.numjobs, wl.iodepth)  # the WSAT load
        others = [n for n in points if n not in ("latency", "wsat")]
        assert others and all(points[n] is None for n in others)
    quick = planmod.build(load_profile("quick"), target)
    assert all(t.histogram_point is None for t in quick.tests)


def test_the_plan_shows_and_counts_it() -> None:
    target = TargetInfo("t", "block", 100 * GIB, 512)
    with_it = planmod.build(load_profile("pts-e"), target)
    without = planmod.build(
        load_profile(
            "pts-e",
            ["tests.latency.response_histogram=0s", "tests.wsat.response_histogram=0s"],
        ),
        target,
    )
    assert with_it.estimate()[0] - without.estimate()[0] == pytest.approx(2400.0)
    text = planmod.describe(with_it)
    assert "histogram 20m 00s of 4k random writes at 1 job(s) x queue depth 1" in text
    data = planmod.to_json(with_it)
    lat = next(t for t in data["tests"] if t["name"] == "latency")
    assert lat["phases"][-1] == "response_histogram"
    assert lat["response_histogram"]["rw"] == "randwrite"
    assert lat["response_histogram"]["runtime"] == 1200.0


def test_a_bad_duration_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["plan", "--profile", "quick", "--target", str(tmp_path / "f"), "--size", "1G"]
    code = cli.main([*argv, "--set", "tests.latency.response_histogram=soon"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "tests.latency.response_histogram" in err


# --------------------------------------------------------------------------- the engine


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    c = FakeClock()
    monkeypatch.setattr(engine_clock, "source", c)
    yield c


def test_it_runs_after_the_last_round_and_before_the_result(
    tmp_path: Path, clock: FakeClock
) -> None:
    fake = FakeFio(10_000.0, clock=clock)
    eng, out = new_engine(tmp_path, fake, ONLY_LATENCY)
    assert eng.run().status == "complete"
    kinds = [r.kind for r in fake.runs]
    assert kinds == ["precondition", "round", "round", "round", "histogram"]
    phase = fake.runs[-1]
    assert phase.json_plus and [c.job for c in phase.calls] == ["p000_4k_0-100"]
    assert (phase.calls[0].numjobs, phase.calls[0].iodepth, phase.calls[0].rw) == (
        1,
        1,
        "randwrite",
    )
    # one point: no hand-off to wait for, no start delay
    assert "exec_prerun" not in phase.jobfile and "startdelay=0ms" in phase.jobfile
    run = load_run(out)
    rec = run.test("latency").response_histogram
    assert rec is not None and rec.after_round == 3 and rec.point.write.bins_ns
    assert rec.after == "steady state reached"
    d = out / "tests" / "latency"
    assert (d / "histogram.fio").exists() and (d / "histogram.out").exists()
    # stored before the result, after the last round
    assert rec.started >= run.test("latency").rounds[-1].ended
    assert run.test("latency").result is not None


def test_a_phase_not_done_runs_on_resume(tmp_path: Path, clock: FakeClock) -> None:
    fake = FakeFio(10_000.0, clock=clock)
    # stopped (as by Ctrl-C) once the rounds are stored: before the phase
    eng, out = new_engine(tmp_path, fake, ONLY_LATENCY, stop=lambda: len(fake.rounds()) >= 3)
    with pytest.raises(Interrupted):
        eng.run()
    assert not (out / "tests/latency/histogram.json").exists()
    assert load_run(out).test("latency").result is None
    clock.advance(30.0)
    again = FakeFio(10_000.0, clock=clock)
    assert resumed_engine(tmp_path, again).run().status == "complete"
    assert [r.kind for r in again.runs] == ["histogram"]  # the rounds were complete
    rec = load_run(out).test("latency").response_histogram
    assert rec is not None and rec.idle_seconds >= 30.0


# --------------------------------------------------------------------------- confidence levels


def test_confidence_levels_from_the_histogram() -> None:
    bins = {50_000: 900_000, 100_000: 99_000, 1_000_000: 990, 9_000_000: 10}
    write = Direction(
        io_bytes=1e6 * 4096, total_ios=1_000_000, lat_mean_ns=60_000.0,
        bins_ns={str(k): v for k, v in bins.items()}, percentiles_of="lat",
    )  # fmt: skip
    point = PointResult(bs=4096, read_pct=0, runtime=1200.0, write=write, lat_max_ns=9e6)
    plan = TestPlan(kind="steady", points=(point,))
    rec = ResponseHistogram(point=point, after="steady state reached", after_round=7)
    phase = histogram_phase(store.TestData(name="latency", plan=plan, response_histogram=rec))
    assert phase is not None and phase.ios == 1_000_000 and phase.seconds == 1200.0
    got = {lv.percent: lv.ms for lv in phase.levels}
    assert [lv.percent for lv in phase.levels] == list(LEVELS)
    assert got[50.0] == 0.05 and got[99.0] == 0.1
    assert got[99.9] == percentile_from_bins(bins, 99.9) / 1e6 == 1.0
    assert got[99.999] == 1.0  # 999,990 I/Os within 1 ms, exactly ten beyond: shown
    assert got[99.9999] is None  # needs 10,000,000 I/Os
    assert [lv.percent for lv in phase.missing] == [99.9999]
    assert "bins_ns" not in phase.to_dict()


# --------------------------------------------------------------------------- real fio


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
def test_real_run_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["run", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    argv += ["--yes", "--out", str(out), "--no-history"]
    assert cli.main([*argv, *sets(*ONLY_LATENCY)]) == 0
    rec = json.loads((out / "tests/latency/histogram.json").read_text())
    assert rec["schema"] == 1 and rec["after_round"] == 3
    bins = {int(k): int(v) for k, v in rec["point"]["write"]["bins_ns"].items()}
    total = sum(bins.values())
    assert total == rec["point"]["write"]["total_ios"] > 0
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    lat = next(t for t in shown["tests"] if t["name"] == "latency")
    median = next(lv for lv in lat["response_histogram"]["levels"] if lv["percent"] == 50.0)
    assert median["ms"] == percentile_from_bins(bins, 50.0) / 1e6
    text = subprocess.run(
        ["pdftotext", str(out / "report.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    flat = " ".join(text.split())
    assert "Response-time histogram and confidence levels" in flat
    assert f"with fio's full latency histogram of total latency (submission + completion): " \
        f"{total:,} I/Os" in flat  # fmt: skip
    assert "Response-time histogram and confidence levels. Left: the number of I/Os" in flat
