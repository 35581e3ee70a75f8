"""The round loop: rounds until the test's kind says stop, each stored before the next
is used, the next one started ahead while one runs (:mod:`tkbench.engine.pipeline`);
an idle gap between rounds (a suspended machine, a stopped tkbench) begins a new
segment, after preconditioning again (docs/resume.md).  A round whose fio stalled
(:class:`tkbench.fio.runner.FioStalled`: fio up to 3.34 can hang in its last reaping)
is run again, once: its fio's output is kept in ``failed/``, the stall is in
events.log, on the user's screen and among the test's notes (the report lists them); a
second stall of the same round fails the run, which ``--resume`` continues."""

from __future__ import annotations

from tkbench.analysis.segments import segment_of
from tkbench.analysis.stoprules import kind_named
from tkbench.engine import clock, events
from tkbench.engine.options import IDLE_GAP_MIN
from tkbench.engine.pipeline import Pipeline, RoundRun, last_point_done, stop_runs
from tkbench.engine.state import TestState
from tkbench.engine.steps import Steps
from tkbench.fio.runner import FioStalled
from tkbench.plan.model import PlannedTest


def stalled_once(steps: Steps, test: PlannedTest, what: str, n: int, exc: FioStalled) -> None:
    """``what`` of ``test`` (its round ``n``, or a part of its one round ``n``) stalled
    for the first time and was stopped: say so where the user, the run's log and its
    report see it, before it runs again."""
    why = str(exc).split(" [command:", 1)[0]
    steps.store.log(f"test {test.name}: {what}: {why}; running {what} again")
    detail = why.removeprefix("fio stalled: ").removesuffix("; stopped it")
    steps.store.add_test_note(
        test.name,
        f"{what[:1].upper()}{what[1:]}'s fio stalled ({detail}) and was stopped; "
        f"{what} was run again (what fio printed is kept in failed/).",
    )
    reason = why if what == f"round {n}" else f"{what}: {why}"
    steps.progress.event(events.RoundRetried(test, n, reason))


class RoundLoop:
    """The rounds of a test, run by one engine."""

    def __init__(self, steps: Steps, pipeline: Pipeline) -> None:
        self.steps = steps
        self.pipeline = pipeline

    def run(self, state: TestState) -> str:
        """Rounds until the test's kind says stop; returns why it stopped.  While a round
        runs, the next one is started ahead and held at its start by the hand-off
        (``Pipeline.await_next``), so the rounds follow each other as closely as the
        points of a round; it is used only once the round before it is stored and has
        not ended the test, otherwise it is stopped and discarded, never stored
        (docs/methodology.md, "Rounds back to back")."""
        steps, pipeline, test = self.steps, self.pipeline, state.test
        rounds = state.rounds
        state.total_written = int(sum(r.written_bytes for r in rounds))
        state.started = rounds[0].started if rounds else clock.time()
        cur: RoundRun | None = None
        ahead: RoundRun | None = None  # the next round, started while ``cur`` runs
        thermal = steps.thermal()
        stalled: set[int] = set()  # rounds whose fio stalled once (and ran again)
        try:
            while True:
                n = len(rounds) + 1
                reason = steps.stop_reason(state)
                if reason is not None:
                    if ahead is not None:
                        pipeline.discard(test, ahead, f"round {n - 1} ended the test ({reason})")
                        ahead = None
                    break
                steps.check_stop()
                if ahead is None:
                    self.after_idle(state)
                    steps.progress.event(events.RoundStarted(test, n, test.round_seconds))
                    cur = pipeline.start(test, n, rounds)
                else:
                    cur, ahead = ahead, None  # under way since the last round ended
                    cur.end_eta = clock.monotonic() + test.round_seconds  # from now, not drifting
                    steps.progress.event(events.RoundStarted(test, n, test.round_seconds))
                pipeline.watch(test, cur, test.points)
                ahead = pipeline.await_next(state, cur)
                try:
                    run = pipeline.collect(test, cur)
                except FioStalled as exc:  # stopped by the watchdog, kept in failed/
                    if n in stalled:
                        raise
                    stalled.add(n)
                    cur = None
                    if ahead is not None:
                        pipeline.discard(test, ahead, f"round {n}'s fio stalled")
                        ahead = None
                    self.stalled_once(state, n, exc)
                    continue
                cur.last_done = last_point_done(cur)
                began = run.started
                if cur.follows is not None:
                    # it began when the round before it ended its last point
                    began = cur.follows.last_done or began
                    cur.follows = None
                    if self.idle_gap(state, began):
                        # released long after the round before it ended (nothing in tkbench
                        # waits that long; the machine stood still): the drive may have
                        # recovered before it, so it is no round of this segment
                        pipeline.discard(test, cur, "it began after an idle gap")
                        if ahead is not None:
                            pipeline.discard(test, ahead, f"round {n} was discarded")
                            ahead = None
                        cur = None
                        continue
                record = steps.round_record(
                    test, n, state.segment, run, cur.text, began, state.total_written, cur.series
                )
                steps.store.save_round(test.name, record, run.stdout, cur.text)
                # read once the round is stored (the next round, started ahead, runs)
                record = steps.temperature(test, thermal, record)
                state.total_written = int(record.total_written_bytes)
                rounds.append(record)
                cur = None  # stored; ``ahead`` (if any) still knows when it ended
                steps.progress.event(
                    events.RoundDone(
                        test, n, record.tracking, state.total_written, steps.verdicts(state)
                    )
                )
        finally:
            # an error or an interrupt: the fio of the round under way, and of one started
            # ahead of it, are stopped; neither is stored (a later resume runs them anew)
            stop_runs(cur, ahead)
        return reason

    def stalled_once(self, state: TestState, n: int, exc: FioStalled) -> None:
        """Round ``n``'s fio stalled for the first time: say so (:func:`stalled_once`);
        the loop then runs the round again (after an idle gap's new segment, when the
        stall was that long: :meth:`after_idle`)."""
        stalled_once(self.steps, state.test, f"round {n}", n, exc)

    def after_idle(self, state: TestState) -> None:
        """A gap between rounds longer than ``resume_gap`` (the machine was suspended,
        tkbench was stopped) lets the drive recover: start a new segment, after
        preconditioning again, so no steady-state window spans the gap."""
        if not self.idle_gap(state, clock.time()):
            return
        test, rounds = state.test, state.rounds
        gap = clock.time() - rounds[-1].ended
        state.segment += 1
        self.steps.store.log(
            f"test {test.name}: {gap:.0f} s idle since round {rounds[-1].round}; "
            f"new segment {state.segment}"
        )
        self.steps.progress.event(events.TestResumed(test, "idle gap: new segment", len(rounds)))
        if test.precondition is not None:
            self.steps.precondition(test, state.segment)

    def idle_gap(self, state: TestState, at: float) -> bool:
        """Whether a round beginning at ``at`` (epoch seconds) follows the last stored
        round after an idle gap the drive could have recovered in: longer than
        ``resume_gap`` and than IDLE_GAP_MIN, for a kind whose idle gaps begin a segment."""
        test, rounds, segment = state.test, state.rounds, state.segment
        if (
            not rounds
            or not kind_named(test.spec.kind).idle_starts_segment
            or segment_of(rounds[-1]) != segment
        ):
            # no rounds, or a segment a resume has just begun (after preconditioning
            # again): the gap before it is already dealt with
            return False
        return at - rounds[-1].ended > max(self.steps.options.resume_gap, IDLE_GAP_MIN)
