"""A copy test's rounds (tkbench.kinds.copyrun): copies in place of fio."""

from __future__ import annotations

from pathlib import Path

from tkbench.engine import clock, events
from tkbench.engine.state import TestState
from tkbench.engine.state import started as started_of
from tkbench.engine.state import written as written_of
from tkbench.engine.steps import Steps
from tkbench.errors import DeviceError
from tkbench.kinds import copyrun
from tkbench.rundir.records import Round


def copy_rounds(steps: Steps, state: TestState) -> str:
    """A copy test's runs (tkbench.kinds.copyrun) in place of fio's rounds: its file sets
    written (or found complete) first, then each round copies every set x data
    pattern once and is stored before the next begins; the test's kind says when
    to stop, as for any test.  Returns why it stopped."""
    test, rounds = state.test, state.rounds
    workdir = getattr(steps.target, "workdir", None)
    if workdir is None:
        raise DeviceError(f"test {test.name}: a copy test runs in a volume's working directory")
    session = copyrun.CopySession(test.spec, Path(workdir), steps.store.log, steps.options.stop)

    def announce(what: str, size: int) -> None:
        steps.progress.event(events.Phase(test, what, bytes=size))

    session.prepare(announce)
    state.total_written = written_of(rounds)
    state.started = started_of(rounds)
    while True:
        reason = steps.stop_reason(state)
        if reason is not None:
            break
        steps.check_stop()
        n = len(rounds) + 1
        steps.progress.event(events.RoundStarted(test, round=n, seconds=test.round_seconds))
        began = clock.time()
        copies = []
        for point in test.points:
            steps.check_stop()
            steps.progress.event(events.Phase(test, f"copy {point.tag}", bytes=point.size))
            copies.append(session.copy(point))
        written = sum(p.size for p in test.points)
        record = Round(
            test=test.name,
            round=n,
            segment=state.segment,
            started=began,
            ended=clock.time(),
            points=tuple(c.result() for c in copies),
            tracking={},
            written_bytes=written,
            total_written_bytes=state.total_written + written,
        )
        steps.store.save_copy_round(test.name, record, copyrun.round_log(copies))
        state.total_written = int(record.total_written_bytes)
        rounds.append(record)
        steps.progress.event(
            events.RoundDone(
                test,
                round=n,
                tracking={f"{c.point.copy_set} {c.point.data} MB/s": c.mb_s for c in copies},
                total_written=state.total_written,
            )
        )
    session.close()
    return reason
