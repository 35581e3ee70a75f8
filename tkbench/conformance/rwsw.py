"""A replay test (tkbench.kinds.replay) against SNIA's Real World Storage Workload
(RWSW) test specification, as tkbench reads it (pure).

What the rows rest on (docs/replay.md, "Against SNIA RWSW"): the specification's
abstract (RWSW Performance Test Specification for Datacenter Storage, working
draft 1.0.5 of 2017 and the Technical Position of May 2018: IO capture,
characterization, methodology, test suite and reporting, with a captured workload as
the test stimulus), SNIA's paper "Data Center Real World Storage Workloads" (2018:
capture at the block IO level, workloads as changing combinations of IO streams and
demand intensity) and SNIA's page of Reference Real World Workloads (IO streams,
IOPS and queue depths of each).  Its clauses were not at hand, so every row is
second-hand (:data:`SECONDHAND`) and none is quoted; a departure says what tkbench
does in place of what those sources describe.

Each row looks at one stage's ``test.json`` (and, for a run, at how the stage ended)
and gives the departures it finds: :func:`departures`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from tkbench.conformance.pts import Departure
from tkbench.kinds.replay import PROCEDURE
from tkbench.rundir.records import Result, TestPlan
from tkbench.units import format_size
from tkbench.workload.tkw import Reduction

SPEC = "SNIA RWSW Performance Test Specification 1.0.5 (2017) / Technical Position (2018), abstract"
PAPER = "SNIA, Data Center Real World Storage Workloads (2018)"
REFERENCE = "SNIA, Reference Real World Workloads (IO streams, IOPS, queue depths)"
SECONDHAND = "SNIA's pages on the RWSW specification"

_HELD = re.compile(r"the applied workload: (\d+) stream\(s\) holding ([\d.]+) %")


@dataclass(frozen=True)
class Row:
    """One requirement of a replay test's stage: its name, its source and its check
    (the stage's plan, its result or None: a plan, or a stage that has not ended)."""

    name: str
    stage: str
    source: str
    check: Callable[[TestPlan, Result | None, bool], list[tuple[str, str]]]


def _completions(plan: TestPlan, result: Result | None, planned: bool) -> list[tuple[str, str]]:
    if Reduction.parse(plan.capture).queue_depth.p50 is not None:
        return []
    return [
        (
            "the queue depths of the capture (each IO's issue and completion)",
            "the capture holds no completions: replayed at queue depth 1, without "
            "queue depths or service times",
        )
    ]


def _whole_trace(plan: TestPlan, result: Result | None, planned: bool) -> list[tuple[str, str]]:
    depth = max((p.iodepth for p in plan.points if p.iolog), default=1)
    if depth <= 1:
        return []
    return [
        (
            "every captured IO replayed",
            f"fio 3.33 leaves up to {depth - 1} IOs in flight at the end of the log "
            "undone; the log ends with as many one-block reads for it to drop instead",
        )
    ]


def _range(plan: TestPlan, result: Result | None, planned: bool) -> list[tuple[str, str]]:
    source = Reduction.parse(plan.capture).capacity_bytes
    if not source or source == plan.active_bytes:
        return []
    return [
        (
            "the captured offsets",
            f"offsets of a {format_size(source)} device mapped (wrapped or scaled) onto "
            f"{format_size(plan.active_bytes)} of the drive",
        )
    ]


def _streams(plan: TestPlan, result: Result | None, planned: bool) -> list[tuple[str, str]]:
    held = next((m for m in map(_HELD.search, plan.notes) if m), None)
    share = f"the streams holding {held.group(2)} % of the IOs" if held else "the main streams"
    return [
        (
            "the workload's IO streams, each its own block size, direction and access",
            f"{share} as one fio job: block sizes per direction, the random share per "
            "direction, not per stream",
        )
    ]


def _steady(plan: TestPlan, result: Result | None, planned: bool) -> list[tuple[str, str]]:
    if planned or result is None or result.steady_state:
        return []
    return [("the applied workload at steady state", "steady state not reached")]


ROWS: tuple[Row, ...] = (
    Row("IO capture with completions", "replay", PAPER, _completions),
    Row("native replay", "replay", SPEC, _whole_trace),
    Row("LBA range", "replay", REFERENCE, _range),
    Row("IO streams as the test stimulus", "applied", REFERENCE, _streams),
    Row("steady state", "applied", PAPER, _steady),
)


def _replays(
    tests: Sequence[tuple[TestPlan, Result | None]],
) -> Iterator[tuple[TestPlan, Result | None]]:
    """The replay stages among a run's (or plan's) tests."""
    for plan, result in tests:
        if plan.procedure != PROCEDURE:
            continue
        yield plan, result


def departures(tests: Sequence[tuple[TestPlan, Result | None]], planned: bool) -> list[Departure]:
    """The departures of a run's (or plan's) replay stages from the RWSW rows."""
    out: list[Departure] = []
    for plan, result in _replays(tests):
        for row in ROWS:
            if row.stage != plan.stage:
                continue
            for required, actual in row.check(plan, result, planned):
                out.append(Departure(plan.name, row.name, required, actual, plan.title))
    return out


def words(d: Departure) -> str:
    """``LBA range: offsets of a 1 GiB device mapped ... (RWSW: the captured offsets)``."""
    return f"{d.requirement}: {d.actual} (RWSW: {d.required})"


def lines(tests: Sequence[tuple[TestPlan, Result | None]], planned: bool) -> list[str]:
    """For ``plan``: the replay stages' standing against the RWSW rows in the shape of
    the PTS's (:meth:`tkbench.conformance.pts.Judgement.lines`): a statement, then the
    departures by stage.  None for a plan or run without a replay test."""
    if next(_replays(tests), None) is None:
        return []
    found = departures(tests, planned)
    what = "This plan" if planned else "This run"
    reading = "SNIA RWSW as tkbench reads SNIA's pages on it (docs/replay.md)"
    if not found:
        return [f"{what} departs from {reading} in none of its rows; that is no RWSW claim."]
    n = len(found)
    out = [f"{what} departs from {reading} in {n} way{'s' if n != 1 else ''}:"]
    by_stage: dict[str, list[str]] = {}
    for d in found:
        by_stage.setdefault(d.title or str(d.test), []).append(words(d))
    for stage, items in by_stage.items():
        out.append(f"  {stage}:")
        out += [f"    {w}" for w in items]
    return out
