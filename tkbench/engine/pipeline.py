"""Rounds back to back (docs/methodology.md): while a round's fio runs, the next
round's (or stage part's) fio is started and held at its start by the hand-off, so
that it follows the running one as closely as the points of a round follow each other.
It is taken up once the running round is stored and has not ended the test, and
otherwise stopped and discarded, never stored.  Here: a round's fio started, at once or
after the one under way, its live figures, the wait for it, and the start ahead."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tkbench import kinds
from tkbench.analysis.stoprules import kind_of
from tkbench.engine import clock, events
from tkbench.engine.state import TestState
from tkbench.engine.steps import Steps
from tkbench.fio import jobfile
from tkbench.fio import logs as fiologs
from tkbench.fio.handoff import markers_time
from tkbench.fio.results import LiveFigures, counter_figures, point_at
from tkbench.fio.runner import STATUS_INTERVAL, FioFailed, FioProcess, FioRun
from tkbench.plan.model import PlannedTest, Point
from tkbench.rundir.records import Failure, Round, Series
from tkbench.targets.base import Target

FIO_STARTUP = 0.5  # seconds from starting fio to the first point's I/O, about
# How long before a round is expected to end the next round's fio is started and held
# (docs/methodology.md, "Rounds back to back"): well beyond fio's start-up and the
# threads' jobfile.LEAD, so the next round's first point is waiting when this one
# ends; a round shorter than that has its successor started at once.
START_AHEAD = 5.0
POLL = 0.05  # seconds between looks at a round whose successor is not yet started


class CounterSampler:
    """Live figures of a round from the target device's kernel counters, every
    :data:`STATUS_INTERVAL` seconds, for the point the schedule says is running
    (``startup``, fio's start-up of about half a second, is not counted; a round
    started ahead has none left when it is taken up).  Targets without a
    block device of this kernel (NBD) give none."""

    def __init__(
        self,
        target: Target,
        points: Sequence[Point],
        show: Callable[[LiveFigures], None],
        startup: float = FIO_STARTUP,
    ) -> None:
        self.target, self.points, self.show = target, points, show
        self.startup = startup  # seconds from now to the round's first I/O, about
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if target.io_counters() is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        t0 = last_t = clock.monotonic()
        last = self.target.io_counters()
        while not self._stop.wait(STATUS_INTERVAL):
            now, counters = clock.monotonic(), self.target.io_counters()
            point = point_at(self.points, now - t0 - self.startup)
            if last is not None and counters is not None and point is not None:
                fig = counter_figures(last, counters, now - last_t, point.label)
                if fig is not None:
                    with contextlib.suppress(Exception):  # a display, never the run's fault
                        self.show(fig)
            last, last_t = counters, now

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


@dataclass
class RoundRun:
    """A round's fio under way: started when its turn came, or ahead of time, after
    the round ``follows`` (then held at its start by the hand-off)."""

    number: int
    text: str  # its job file
    handoff: jobfile.Handoff | None
    process: FioProcess
    workdir: Path
    end_eta: float  # clock.monotonic() at which its last point is expected to end
    last: Point  # its last point (the one a round started after it waits for)
    follows: RoundRun | None = None
    sampler: CounterSampler | None = None
    last_done: float | None = None  # epoch seconds its last point ended (once known)
    series: dict[str, Series | None] | None = None  # per-interval samples by fio job


class Pipeline:
    """Rounds' fio runs of one engine: started (at once, or after one under way),
    watched, waited for, started ahead, discarded."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps

    def start(
        self,
        test: PlannedTest,
        n: int,
        rounds: Sequence[Round],
        after: RoundRun | None = None,
    ) -> RoundRun:
        """Start round ``n``'s fio: at once, or ``after`` a round that still runs, held at
        its start until that round's last point is over."""
        steps = self.steps
        handoff = steps.handoff()
        now = clock.monotonic()
        follow = None
        if after is not None:
            assert handoff is not None and after.handoff is not None
            shift = max(0.0, after.end_eta - now)
            follow = jobfile.Follow(after.handoff.directory, after.last, shift)
        else:
            shift = FIO_STARTUP
        text = self._round_text(test, handoff, rounds, follow)
        workdir, path = steps.write_jobfile(text)
        timeout = shift + test.round_seconds + steps.options.fio_timeout_margin
        try:
            for name, data in kinds.of_spec(test.spec).fio_files(test, steps.target).items():
                (workdir / name).write_bytes(data)  # a replay's iolog (tkbench.kinds.replay)
            steps.writing(test)
            process = steps.runner.start(
                path, workdir, json_plus=test.spec.histogram, timeout=timeout
            )
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return RoundRun(
            number=n,
            text=text,
            handoff=handoff,
            process=process,
            workdir=workdir,
            end_eta=now + shift + test.round_seconds,
            last=test.points[-1],
            follows=after,
        )

    def _round_text(
        self,
        test: PlannedTest,
        handoff: jobfile.Handoff | None,
        rounds: Sequence[Round] = (),
        follow: jobfile.Follow | None = None,
    ) -> str:
        # sequential streams go on where the stored rounds left them; a round started
        # ahead has none (may_start_ahead): the round before it is not stored yet.  A
        # part of a stage (tkbench.engine.parts) is its stage's first round: its streams
        # start where that round's would, wherever the part before it is
        starts = jobfile.stream_starts(test.points, rounds, test.active_bytes)
        assert follow is None or not starts or not rounds
        return jobfile.round_jobfile(
            test,
            self.steps.target.fio_options(test.spec.workload.ioengine),
            handoff,
            starts,
            follow,
        )

    def watch(self, test: PlannedTest, cur: RoundRun, points: Sequence[Point]) -> None:
        """Live figures of ``cur`` (its ``points``) for the progress display, as
        ``fio_status`` events of ``test``."""
        progress = self.steps.progress
        cur.sampler = CounterSampler(
            self.steps.target,
            points,
            lambda fig: progress.event(events.FioStatus(test, fig)),
            startup=FIO_STARTUP if cur.follows is None else 0.0,
        )

    def collect(self, test: PlannedTest, cur: RoundRun) -> FioRun:
        """Wait for a round's fio; a failed run is kept in ``failed/`` and raised."""
        try:
            run = cur.process.wait()
            if test.sample > 0:  # per-interval logs, read before the directory goes
                cur.series = {
                    p.job_name: fiologs.read_series(cur.workdir, p.job_name, test.sample)
                    for p in test.points
                }
            return run
        except FioFailed as exc:
            info = Failure(test=test.name, error=str(exc), fio=exc.run.call())
            self.steps.store.save_failure(
                test.name,
                f"round-{cur.number:04d}-{int(clock.time())}",
                exc.run.stdout,
                cur.text,
                info,
            )
            raise
        finally:
            if cur.sampler is not None:
                cur.sampler.stop()
            shutil.rmtree(cur.workdir, ignore_errors=True)

    def discard(self, test: PlannedTest, r: RoundRun, why: str) -> None:
        """Stop a round started ahead (if still running) and forget it: its output is
        never read, nothing of it is stored or counted."""
        stop_runs(r)
        self.steps.store.log(f"test {test.name}: round {r.number}, started ahead, discarded: {why}")
        self.steps.progress.event(events.RoundDiscarded(test, r.number, why))

    def may_start_ahead(self, state: TestState, cur: RoundRun) -> bool:
        """Whether the round after ``cur`` is started while ``cur`` runs: not without the
        hand-off (fio servers); not for a test with sequential points, whose streams
        start where the *stored* rounds left them (docs/methodology.md); not when ``cur``
        is certainly the test's last (a round or repetition limit)."""
        if not self.steps.options.back_to_back or cur.handoff is None:
            return False
        if any(p.pattern == "sequential" for p in state.test.points):
            return False
        standing = state.standing(self.steps.target.capacity, clock.time())
        record = self.steps.record(state.test)
        return not kind_of(record).next_is_last(record, standing)

    def await_next(self, state: TestState, cur: RoundRun) -> RoundRun | None:
        """While ``cur`` runs: start the next round ``START_AHEAD`` seconds before ``cur``
        is expected to end (at once for a shorter round), or None when no round is
        started ahead (see ``may_start_ahead``) or ``cur`` ended before that."""
        if not self.may_start_ahead(state, cur):
            return None
        test = state.test

        def start_next() -> RoundRun:
            self.steps.progress.event(events.RoundStartedAhead(test, cur.number + 1))
            return self.start(test, cur.number + 1, state.rounds, after=cur)

        return ahead_of(cur, start_next)


def stop_runs(*runs: RoundRun | None) -> None:
    """Stop the fio of each run still under way and drop its working directory."""
    for r in runs:
        if r is not None:
            r.process.stop()
            if r.sampler is not None:
                r.sampler.stop()
            shutil.rmtree(r.workdir, ignore_errors=True)


def ahead_of(cur: RoundRun, start: Callable[[], RoundRun]) -> RoundRun | None:
    """While ``cur`` runs: ``start`` the next fio ``START_AHEAD`` seconds before ``cur``
    is expected to end (at once for a shorter run); None when ``cur`` ended first."""
    due = cur.end_eta - START_AHEAD
    while not cur.process.finished():
        left = due - clock.monotonic()
        if left <= 0:
            return start()
        clock.sleep(min(POLL, left))
    return None


def last_point_done(r: RoundRun) -> float | None:
    """When the last point of a finished round ended: the time its clones left their
    hand-off markers (None without markers: no hand-off, or a fake fio)."""
    if r.handoff is None:
        return None
    return markers_time(r.handoff.directory, r.last.index)
