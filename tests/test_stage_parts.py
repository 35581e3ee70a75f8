"""A stage of one long round (hir-recovery, xsr, the operating points) runs in parts:
one fio per point, back to back, each stored as it ends; an interruption loses at
most the part under way and the one before it, which runs again.  Real fio on a
file target; the interruption is the engine's own stop check (as a SIGTERM's)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests._helpers import FAST
from tkbench.conformance import judge_run
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import Interrupted
from tkbench.outputs.show import format_summary, run_summary
from tkbench.outputs.show import shown as show
from tkbench.report import analysis as report_analysis
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

ONLY_XSR = [f"tests.{t}.enabled=false" for t in ("iops", "throughput", "latency", "wsat")]
ONLY_XSR += ["tests.hir.enabled=false", "tests.cbw.enabled=false", "tests.dirth.enabled=false"]
GROUP_POINTS = [(0, "sequential"), (1, "random"), (2, "sequential")]
GROUPS = 'tests.xsr.groups=["128k sequential 1s", "4k random 1s", "128k sequential 1s"]'


def _request(tmp: Path, stop: Callable[[], bool] = lambda: False) -> RunRequest:
    overrides = [o for o in FAST if not o.startswith("tests.xsr.groups")]
    return RunRequest(
        profile="quick",
        target=str(tmp / "t.img"),
        size=32 << 20,
        out=tmp / "run",
        assume_yes=True,
        overrides=[*overrides, *ONLY_XSR, GROUPS],
        stop=stop,
    )


def _parts(run: Path) -> Path:
    return run / "tests" / "xsr" / "rounds" / "0001.parts"


def test_a_stage_runs_in_parts_that_form_its_round(tmp_path: Path) -> None:
    out, manifest = start(_request(tmp_path))
    assert manifest.status == "complete"
    parts = _parts(out)
    assert sorted(p.name for p in parts.glob("*.json")) == ["01.json", "02.json", "03.json"]
    records = [json.loads((parts / f"0{k}.json").read_text()) for k in (1, 2, 3)]
    assert [len(r["points"]) for r in records] == [1, 1, 1]
    xsr = load_run(out).test("xsr")
    assert len(xsr.rounds) == 1 and xsr.result is not None
    # the round is the parts' points, in order, with their per-interval samples
    assert [(p.index, p.pattern) for p in xsr.rounds[0].points] == GROUP_POINTS
    assert [p.job for p in xsr.rounds[0].points] == [r["points"][0]["job"] for r in records]
    assert all(p.series for p in xsr.rounds[0].points)
    assert xsr.rounds[0].written_bytes == pytest.approx(sum(r["written_bytes"] for r in records))
    # parts 2 and 3 were started ahead and held by the hand-off until the part before ended
    assert "exec_prerun" not in (parts / "01.fio").read_text()
    assert "exec_prerun" in (parts / "02.fio").read_text()
    assert "exec_prerun" in (parts / "03.fio").read_text()
    # each part began after the one before it (how soon after is a matter of the
    # machine's load; the gaps between points are benchmarks/round_overhead.py's)
    for before, after in itertools.pairwise(records):
        assert before["started"] < after["started"]
    # the round's own files hold the parts' files, each named
    fio = (out / "tests/xsr/rounds/0001.fio").read_text()
    assert "# part 3 of 3: 0001.parts/03.fio" in fio and "bs=4096" in fio
    departures = judge_run(load_run(out)).departures
    assert all(d.requirement != "stage run without a break" for d in departures)


def test_a_resumed_stage_runs_the_part_before_the_break_again(tmp_path: Path) -> None:
    parts = _parts(tmp_path / "run")
    with pytest.raises(Interrupted):
        start(_request(tmp_path, stop=lambda: (parts / "02.json").exists()))
    assert load_run(tmp_path / "run").manifest.status == "interrupted"
    assert not (tmp_path / "run/tests/xsr/rounds/0001.json").exists()
    first = (parts / "01.json").read_bytes()
    second = json.loads((parts / "02.json").read_text())
    # what was kept is told: show (text and JSON) and the report's status line
    interrupted = load_run(tmp_path / "run").test("xsr")
    assert interrupted.parts == 2 and not interrupted.rounds
    shown = run_summary(load_run(tmp_path / "run"))
    (xsr,) = [t for t in shown["tests"] if t["name"] == "xsr"]
    assert (xsr["parts_stored"], xsr["parts"], xsr["status"]) == (2, 3, "running or interrupted")
    assert "2 of 3 parts of its round stored (a resume goes on from them)" in format_summary(
        show(load_run(tmp_path / "run"))
    )
    _, line = report_analysis.test_status(interrupted, "interrupted", "")
    assert line == (
        "INTERRUPTED before the test finished; 0 complete rounds shown "
        "(2 of 3 parts of its round stored, kept for a resume)."
    )

    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True))
    assert manifest.status == "complete"
    # parts 1 and 2 stand as they were; part 2 ran again as a lead-in, kept beside them
    assert (parts / "01.json").read_bytes() == first
    assert json.loads((parts / "02.json").read_text()) == second
    (lead_in,) = parts.glob("lead-in-*-02.json")
    assert json.loads(lead_in.read_text())["started"] > second["ended"]
    third = json.loads((parts / "03.json").read_text())
    # part 3 followed the lead-in, not the first attempt of part 2
    assert third["started"] <= json.loads(lead_in.read_text())["ended"]
    resume = manifest.resumes[-1]
    assert (resume.test, resume.action, resume.parts_kept) == ("xsr", "continue-parts", 2)
    assert (
        "part 2 of 3 runs again as a lead-in (its first record stands), so that part 3 "
        "follows it as planned" in (out / "events.log").read_text()
    )
    run = load_run(out)
    assert [(p.index, p.pattern) for p in run.test("xsr").rounds[0].points] == GROUP_POINTS
    # the round is the stored parts: part 2's first attempt, not the lead-in
    assert run.test("xsr").rounds[0].points[1].iops == second["points"][0]["iops"]
    # no purge on the resume: the stage goes on from its parts
    assert len(list((out / "tests/xsr").glob("discarded-*"))) == 0
    split = [d for d in judge_run(run).departures if d.requirement == "stage run without a break"]
    assert len(split) == 1 and split[0].test == "xsr"
    assert split[0].actual == (
        "interrupted and resumed: parts 1 and 2 measured before the interruption; part 2 ran "
        "again after it as a lead-in (its first record stands), directly followed by part 3"
    )


def test_a_stage_with_only_its_first_part_stored_goes_on_from_it(tmp_path: Path) -> None:
    parts = _parts(tmp_path / "run")
    with pytest.raises(Interrupted):
        start(_request(tmp_path, stop=lambda: (parts / "01.json").exists()))
    first = (parts / "01.json").read_bytes()
    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True))
    assert manifest.status == "complete"
    assert (manifest.resumes[-1].action, manifest.resumes[-1].parts_kept) == (
        "continue-parts",
        1,
    )
    # no new purge: part 1 (measured from the purged drive) stands, its lead-in beside it
    assert (parts / "01.json").read_bytes() == first
    assert list(parts.glob("lead-in-*-01.json"))
    assert not list((out / "tests/xsr").glob("discarded-*"))
    assert len(load_run(out).test("xsr").rounds[0].points) == 3


ONLY_CBW = [*(t for t in ONLY_XSR if "cbw" not in t), "tests.xsr.enabled=false"]


def test_no_lead_in_before_a_pre_write(tmp_path: Path) -> None:
    """The operating stage: pre-write, measurement, for MaxIOPS, MidIOPS, MinIOPS.
    Interrupted after MaxIOPS's measurement, the resume begins with MidIOPS's
    pre-write, which conditions the drive itself: no lead-in."""
    parts = tmp_path / "run" / "tests" / "cbw-operating" / "rounds" / "0001.parts"
    request = RunRequest(
        profile="quick",
        target=str(tmp_path / "t.img"),
        size=32 << 20,
        out=tmp_path / "run",
        assume_yes=True,
        overrides=[*FAST, *ONLY_CBW],
        stop=lambda: (parts / "02.json").exists(),
    )
    with pytest.raises(Interrupted):
        start(request)
    roles = [p.role for p in load_run(tmp_path / "run").test("cbw-operating").plan.points]
    assert roles[:3] == ["prewrite", "", "prewrite"]
    out, manifest = start(RunRequest(resume=tmp_path / "run", assume_yes=True))
    assert manifest.status == "complete"
    assert not list(parts.glob("lead-in-*"))
    assert sorted(p.name for p in parts.glob("0*.json")) == [f"0{k}.json" for k in range(1, 7)]
    split = [
        d
        for d in judge_run(load_run(out)).departures
        if d.requirement == "stage run without a break"
    ]
    assert [d.actual for d in split] == [
        "interrupted and resumed: parts 1 and 2 measured before the interruption; part 3, "
        "a pre-write, began after it"
    ]
