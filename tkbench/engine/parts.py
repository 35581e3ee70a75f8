"""A stage run in parts (``PlannedTest.in_parts``): its one long round as one fio per
point, each started ahead of the one before it ends and held by the hand-off
(:mod:`tkbench.engine.pipeline`), so the points follow each other as closely as in one
fio run, and each stored as it ends (``rounds/0001.parts/``); on a resume, or after a
part's fio stalled, the lead-in that lets the next part follow its stimulus as planned
(docs/resume.md)."""

from __future__ import annotations

import functools
import math

from tkbench.engine import clock, events
from tkbench.engine.pipeline import Pipeline, RoundRun, ahead_of, last_point_done, stop_runs
from tkbench.engine.rounds import stalled_once
from tkbench.engine.state import TestState
from tkbench.engine.state import written as written_of
from tkbench.engine.steps import Steps
from tkbench.fio.results import tracking_values
from tkbench.fio.runner import FioStalled
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import Round


def in_parts(steps: Steps, test: PlannedTest) -> bool:
    """Whether the engine runs ``test`` in parts: a stage of one long round, with the
    hand-off that lets a part follow the one before it closely (not with fio
    servers, whose hosts run no hand-off: there one fio runs the whole round)."""
    return test.in_parts and not steps.runner.hosts


def parts_kept(steps: Steps, test: PlannedTest) -> int:
    """The parts of a stage run in parts that a resume keeps: every stored one (the
    last may run again before the next, as a lead-in: :func:`run_parts`)."""
    return len(steps.store.load_parts(test.name))


def run_parts(steps: Steps, pipeline: Pipeline, state: TestState) -> None:
    """The one round of a stage run in parts (:func:`_run_parts`).  A part whose fio
    stalled (fio up to 3.34 can hang in its last reaping: :class:`FioStalled`) is run
    again once, as a resume would run it: after the part before it as a lead-in (not
    before a pre-write), so that it follows its stimulus as planned; the stall is said
    as a round's is (:func:`tkbench.engine.rounds.stalled_once`) and the lead-in kept
    as evidence; a second stall of the same part fails the run, which ``--resume``
    continues."""
    stalled: set[int] = set()  # parts whose fio stalled once (and ran again)
    while True:
        try:
            _run_parts(steps, pipeline, state)
            return
        except FioStalled as exc:  # stopped by the watchdog, kept in failed/
            k = len(steps.store.load_parts(state.test.name)) + 1  # the part it was at
            if k in stalled:
                raise
            stalled.add(k)
            what = f"part {k} of {len(state.test.points)} of round 1"
            stalled_once(steps, state.test, what, 1, exc)
            steps.store.add_stalled_part(state.test.name, k)


def _run_parts(steps: Steps, pipeline: Pipeline, state: TestState) -> None:
    """The one round of a stage run in parts: its parts not yet stored, one fio each,
    each started ahead of the one before it ends.  Once all are stored they form the
    round, the record one fio run would have made, appended to ``state.rounds``; the
    round loop then sees the stage done.

    Resumed with parts stored, the stored parts stand.  The next part must follow
    its stimulus directly, as planned, not a drive that rested: unless it is a
    pre-write (which conditions the drive itself), the last stored part runs again
    first as a *lead-in*, kept beside the parts but never in place of the first
    attempt's record (docs/resume.md)."""
    test, store, progress = state.test, steps.store, steps.progress
    parts = store.load_parts(test.name)
    count = len(test.points)
    todo = [(k + 1, test.part(k)) for k in range(len(parts), count)]
    if parts and todo and test.points[len(parts)].role != "prewrite":
        todo.insert(0, (0, test.part(len(parts) - 1)))  # 0: the lead-in
        store.log(
            f"test {test.name}: part {len(parts)} of {count} runs again as a lead-in "
            f"(its first record stands), so that part {len(parts) + 1} follows it as planned"
        )
    progress.event(
        events.RoundStarted(test, round=1, seconds=math.fsum(p.round_seconds for _, p in todo))
    )
    thermal = steps.thermal()
    written = int(parts[-1].total_written_bytes) if parts else written_of(state.rounds)
    cur: RoundRun | None = None
    ahead: RoundRun | None = None
    try:
        for at, (k, part) in enumerate(todo):
            steps.check_stop()
            if ahead is None:
                cur = pipeline.start(part, 1, ())
            else:
                cur, ahead = ahead, None
                cur.end_eta = clock.monotonic() + part.round_seconds
            point = part.points[0]
            what = f"part {k} of {count}" if k else f"lead-in: part {point.index + 1} again"
            progress.event(events.Phase(test, f"{what}: {point.tag or point.label}"))
            pipeline.watch(test, cur, part.points)
            if at + 1 < len(todo) and steps.options.back_to_back and cur.handoff is not None:
                following = todo[at + 1][1]
                ahead = ahead_of(
                    cur, functools.partial(pipeline.start, following, 1, (), after=cur)
                )
            run = pipeline.collect(part, cur)
            cur.last_done = last_point_done(cur)
            began = run.started
            if cur.follows is not None:
                began = cur.follows.last_done or began  # when the part before it ended
                cur.follows = None
            record = steps.round_record(
                part, 1, state.segment, run, cur.text, began, written, cur.series
            )
            written = int(record.total_written_bytes)
            if k:
                store.save_part(test.name, k, record, run.stdout, cur.text)
                store.log(f"test {test.name}: part {k} of {count} stored")
                parts.append(record)
            else:
                store.save_lead_in(test.name, point.index + 1, record, run.stdout, cur.text)
            cur = None
    finally:
        stop_runs(cur, ahead)  # never stored: a resume runs them again
    points = tuple(p for part_round in parts for p in part_round.points)
    record = Round(
        test=test.name,
        round=1,
        segment=state.segment,
        started=parts[0].started,
        ended=parts[-1].ended,
        fio=parts[0].fio,
        points=points,
        tracking=tracking_values(list(points), test.tracking),
        written_bytes=math.fsum(p.written_bytes for p in parts),
        total_written_bytes=written,
    )
    store.save_round_of_parts(test.name, record, len(parts))
    record = steps.temperature(test, thermal, record)
    state.rounds.append(record)
    progress.event(
        events.RoundDone(
            test, round=1, tracking=record.tracking, total_written=int(record.total_written_bytes)
        )
    )
