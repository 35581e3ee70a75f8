"""The demo's own reductions of the quick profile (tkbench.engine.runs.DEMO_REDUCTIONS): the
profile they make is valid, a user's ``--set`` wins over them, and another profile
gets none of them.  The demo itself runs in tests/test_run_emulator.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._helpers import sets
from tkbench import cli
from tkbench.engine.runs import DEMO_REDUCTIONS, demo_overrides
from tkbench.kinds.staged.common import own
from tkbench.profile.build import load as load_profile

STAGED = ("hir", "xsr", "cbw", "dirth")


def test_the_demo_runs_every_test_of_quick_reduced_further() -> None:
    demo = load_profile("quick", demo_overrides("quick", []))
    quick = load_profile("quick")
    assert [t.name for t in demo.tests] == [t.name for t in quick.tests]
    assert demo.rounds.window == 3 < quick.rounds.window
    assert own(demo.test("cbw")).threads == (4, 1) and own(demo.test("dirth")).iodepths == (8, 1)
    assert demo.test("iops").point_runtime < quick.test("iops").point_runtime
    assert demo.test("cbw").rounds.max < quick.test("cbw").rounds.max
    assert "demo" in demo.report.title  # page 1 says whose numbers these are


def test_the_demos_reductions_are_listed_as_departures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What page 1 of the demo's report lists (the same judgement of the plan)."""
    argv = ["plan", "--profile", "quick", "--target", str(tmp_path / "x.img"), "--size", "64M"]
    assert cli.main([*argv, *sets(*demo_overrides("quick", []))]) == 0
    departures = capsys.readouterr().out.split("departs from SNIA PTS-E", 1)[1]
    assert "steady-state window: 3 rounds" in departures
    flat = " ".join(departures.split())
    grid = "thread count 4, 1 (outer) x queue depth 8, 1 (inner), 4 loads"
    assert f"demand-intensity grid: {grid} (PTS" in flat
    # each departure one clean sentence: the requirement is not repeated in what the test does
    assert "of writes before the first idle period, as fio 3.33 extends" in flat
    assert "wait state: the first burst of each wait state" not in flat
    assert "maximum response time per minute: each sample has throughput, IOPS and" in flat
    assert "per minute: per minute" not in flat
    assert "preconditioning round: 3 intervals of 500 ms" in flat
    assert "point duration: 500 ms per point" in departures


def test_a_users_set_replaces_the_demos_value() -> None:
    mine = "tests.wsat.max_duration=10s"
    got = demo_overrides("quick", [mine])
    assert got[-1] == mine
    assert not any(o.startswith("tests.wsat.max_duration=") for o in got[:-1])
    assert len(got) == len(DEMO_REDUCTIONS)  # one of the demo's left out, the user's in
    assert load_profile("quick", got).test("wsat").max_duration == 10


def test_another_profile_gets_none_of_the_demos_reductions() -> None:
    assert demo_overrides("pts-e", ["rounds.max=30"]) == ["rounds.max=30"]
    for name in STAGED:
        assert any(o.startswith(f"tests.{name}.") for o in DEMO_REDUCTIONS)
