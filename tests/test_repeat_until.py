"""``repeat_until``: a fixed test repeated until its runs agree (docs/volume.md,
"Repeatability").

The rule itself with a FAKE fio (tests/fakes/fio_runner.py) whose MiB/s per run the
test chooses, so the run at which the limit is met is known exactly, also across an
interrupt and a resume; the outcome of real fio runs on a regular file in tmp_path
(a huge limit stops at the minimum, a tiny one runs to the maximum); the bad values
of the profile keys, each one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import STAGED_OFF, sets
from tests.fakes.fio_runner import Call, FakeFio
from tests.test_engine_rules import clock, interrupted_after, new_engine, resumed_engine
from tkbench import cli
from tkbench.analysis.repeat import until_bounds, until_standing
from tkbench.analysis.stoprules import kind_named
from tkbench.profile.build import load as load_profile
from tkbench.rundir.store import load_run

__all__ = ["clock"]  # the engine's fake clock, a fixture

# the quick profile's IOPS test made a fixed test of one point, the others off
FIXED = [
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
    "tests.iops.kind=fixed",
    "tests.iops.tracking=[]",
    'tests.iops.block_sizes=["4k"]',
    'tests.iops.mixes=["0/100"]',
    "tests.iops.purge=false",
    "tests.iops.precondition=false",
]


def converging(call: Call) -> float:
    """1,000 IOPS, then 1,300, then 1,150 for ever: the runs' mean absolute deviation
    is 13.0 %, 8.7 %, 6.5 %, 5.2 %, 4.3 % ... of their mean after 2, 3, 4, 5, 6 runs."""
    return {1: 1000.0, 2: 1300.0}.get(call.round, 1150.0)


def _runs(tmp: Path) -> list[int]:
    return [r.round for r in load_run(tmp / "run").test("iops").rounds]


def _result(tmp: Path) -> dict[str, Any]:
    res = load_run(tmp / "run").test("iops").result
    assert res is not None
    return res.to_json()


# --------------------------------------------------------------------------- the rule


def test_the_runs_stop_at_the_first_run_within_the_limit(tmp_path: Path, clock: Any) -> None:
    eng, _ = new_engine(
        tmp_path,
        FakeFio(converging, clock=clock),
        [*FIXED, 'tests.iops.repeat_until="5%"', "tests.iops.repeat_max=10"],
    )
    eng.run()
    assert _runs(tmp_path) == [1, 2, 3, 4, 5, 6]  # 5.2 % after 5 runs, 4.3 % after 6
    res = _result(tmp_path)
    assert res["stop_reason"] == "runs within 4.35 % <= 5 % after 6 runs"
    assert "repeatable to 5 %" in res["summary"] and "after 6 runs" in res["summary"]
    run = load_run(tmp_path / "run")
    until = until_standing(run.test("iops").plan, run.test("iops").rounds)
    assert until is not None and until.met and until.ended_by == "limit"


def test_the_maximum_ends_runs_that_never_agree_and_says_so(tmp_path: Path, clock: Any) -> None:
    eng, _ = new_engine(
        tmp_path,
        FakeFio(converging, clock=clock),
        [*FIXED, 'tests.iops.repeat_until="3%"', "tests.iops.repeat_max=4"],
    )
    eng.run()
    assert _runs(tmp_path) == [1, 2, 3, 4]
    res = _result(tmp_path)
    assert res["stop_reason"] == "at most 4 runs: deviation 6.52 % > 3 %"
    assert "not repeatable to 3 % in 4 runs" in res["summary"]


def test_repeat_is_the_least_number_of_runs(tmp_path: Path, clock: Any) -> None:
    # within 50 % after 2 runs, but repeat asks for 3 at least
    overrides = [*FIXED, 'tests.iops.repeat_until="50%"', "tests.iops.repeat=3"]
    eng, _ = new_engine(tmp_path, FakeFio(converging, clock=clock), overrides)
    eng.run()
    assert _runs(tmp_path) == [1, 2, 3]


def test_a_resumed_test_counts_its_stored_runs(tmp_path: Path, clock: Any) -> None:
    overrides = [*FIXED, 'tests.iops.repeat_until="5%"', "tests.iops.repeat_max=10"]
    interrupted_after(tmp_path, FakeFio(converging, clock=clock), overrides, rounds=3)
    kept = {p.name: p.read_bytes() for p in (tmp_path / "run/tests/iops/rounds").iterdir()}
    assert len(_runs(tmp_path)) == 3
    fake = FakeFio(converging, clock=clock)
    resumed_engine(tmp_path, fake).run()
    # the same end as without the interrupt: runs 4 to 6 added, 1 to 3 kept as stored
    assert [r.round for r in fake.rounds()] == [4, 5, 6]
    assert _runs(tmp_path) == [1, 2, 3, 4, 5, 6]
    for name, data in kept.items():
        assert (tmp_path / "run/tests/iops/rounds" / name).read_bytes() == data
    assert _result(tmp_path)["stop_reason"] == "runs within 4.35 % <= 5 % after 6 runs"


def test_without_repeat_until_a_fixed_test_runs_exactly_repeat_times(
    tmp_path: Path, clock: Any
) -> None:
    eng, _ = new_engine(tmp_path, FakeFio(converging, clock=clock), [*FIXED, "tests.iops.repeat=3"])
    eng.run()
    assert _runs(tmp_path) == [1, 2, 3]
    assert _result(tmp_path)["stop_reason"] == "3 repetition(s) done"
    assert "repeat_until" not in json.loads((tmp_path / "run/tests/iops/test.json").read_text())


# --------------------------------------------------------------------------- the plan


def test_the_plan_estimates_from_the_least_to_the_most_runs() -> None:
    prof = load_profile("ars", ['tests.4k.repeat_until="3%"', "tests.4k.repeat_max=7"])
    spec = prof.test("4k")
    assert (spec.repeat_until, spec.repeat_max) == (3.0, 7)
    assert until_bounds(3, 7) == (3, 7) and until_bounds(1, 10) == (2, 10)
    from tkbench.analysis.stoprules import RoundSpec

    rs = RoundSpec(window=5, max_rounds=25, repeat=3, max_duration=0, round_seconds=60)
    fixed = kind_named("fixed")
    assert fixed.round_bounds(rs) == (3, 3)
    until = RoundSpec(5, 25, 3, 0, 60, repeat_until=3.0, repeat_max=7)
    assert fixed.round_bounds(until) == (3, 7)
    assert "within 3 % of their mean" in fixed.stop_text(until)
    assert "at least 3, at most 7 runs" in fixed.stop_text(until)


def test_plan_shows_the_runs_and_the_duration_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "t.img"
    args = ["plan", "--profile", "quick", "--target", str(target), "--size", "16M", "--json"]
    one = "tests.iops.repeat_until=10%"
    assert cli.main([*args, *sets(*FIXED, one, "tests.iops.repeat_max=5")]) == 0
    plan = json.loads(capsys.readouterr().out)
    (t,) = plan["tests"]
    assert (t["min_rounds"], t["max_rounds"]) == (2, 5)
    est = plan["estimate"]
    assert est["max_seconds"] == pytest.approx(est["min_seconds"] * 5 / 2)


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("tests.iops.repeat_until=0%", "above 0 %"),
        ("tests.iops.repeat_until=-3%", "above 0 %"),
        ("tests.iops.repeat_until=101%", "at most 100 %"),
        ("tests.iops.repeat_until=3", 'a percentage such as "3%"'),
        ("tests.iops.repeat_until=three%", 'a percentage such as "3%"'),
        ("tests.iops.repeat_max=2", "less than the least number of runs, 3"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, says: str
) -> None:
    base = [*FIXED, "tests.iops.repeat=3", "tests.iops.repeat_until=3%"]
    overrides = [o for o in base if o.split("=", 1)[0] != setting.split("=", 1)[0]]
    args = ["plan", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    assert cli.main([*args, *sets(*overrides, setting)]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert says in lines[0], lines[0]


def test_repeat_until_is_for_plain_fixed_tests_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    assert cli.main([*args, *sets("tests.iops.repeat_until=3%")]) == 2
    assert "kind fixed only" in capsys.readouterr().err


# --------------------------------------------------------------------------- real fio


def _real_run(tmp: Path, capsys: pytest.CaptureFixture[str], *overrides: str) -> dict[str, Any]:
    """A run of the fixed test with real fio on a 16 MiB file; its show --json entry."""
    out = tmp / "run"
    args = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--size", "16M"]
    args += ["--yes", "--out", str(out), "--no-history", "--no-report"]
    assert cli.main([*args, *sets(*FIXED, *overrides)]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(out), "--json"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["tests"]
    return dict(t)


@pytest.mark.fio
def test_real_runs_with_a_huge_limit_stop_at_the_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _real_run(tmp_path, capsys, "tests.iops.repeat=3", "tests.iops.repeat_until=100%")
    assert t["rounds"] == 3
    until = t["repeat_until"]
    assert until["met"] is True and until["ended_by"] == "limit" and until["runs"] == 3
    assert (until["min_runs"], until["max_runs"], until["limit_pct"]) == (3, 10, 100.0)
    (p,) = t["points"]
    assert until["deviation_pct"] == pytest.approx(p["mean_abs_dev_pct"])
    assert until["text"].startswith("repeatable to 100 %")


@pytest.mark.fio
def test_real_runs_with_a_tiny_limit_run_to_the_maximum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _real_run(tmp_path, capsys, "tests.iops.repeat_until=0.0001%", "tests.iops.repeat_max=4")
    assert t["rounds"] == 4 and len(t["points"][0]["runs"]) == 4
    until = t["repeat_until"]
    assert until["met"] is False and until["ended_by"] == "maximum"
    assert until["deviation_pct"] > 0.0001
    assert until["text"].startswith("not repeatable to 0.0001 % in 4 runs")
    assert t["stop_reason"].startswith("at most 4 runs: deviation")
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "run")]) == 0
    assert "not repeatable to 0.0001 % in 4 runs" in capsys.readouterr().out
