"""What a run of the engine is given besides its plan: its options and the progress
display it reports to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from tkbench.engine.events import Event
from tkbench.fio import jobfile

# Seconds of idle between two rounds after which the drive may have recovered
# (docs/resume.md): the default --resume-gap, and the least gap inside a run that
# begins a new segment.  tkbench itself leaves a few ms between rounds started ahead,
# and where it cannot start them ahead (sequential points, fio servers) ~5 ms of its
# own between one fio's end and the next one's start, plus fio's start-up of about
# 0.4 s; any longer idle is an interruption, and SSDs recover within seconds (the
# PTS measures it in its Host Idle Recovery test).
IDLE_GAP_MIN = 1.0


class Progress(Protocol):
    """What the engine tells the user interface (the CLI renders it): one of the
    records of tkbench/engine/events.py."""

    def event(self, event: Event) -> None: ...


class NullProgress:
    def event(self, event: Event) -> None:
        pass


@dataclass
class EngineOptions:
    resume_gap: float = IDLE_GAP_MIN  # seconds of idle after which a test re-preconditions
    fio_timeout_margin: float = jobfile.STALL_MARGIN  # beyond a fio run's planned duration
    stop: Callable[[], bool] = field(default=lambda: False)  # polled between steps
    # start each round's successor while it runs (docs/methodology.md); off: a new
    # fio after each round (the benchmark's baseline)
    back_to_back: bool = True
    # called once every test is done and the writes have ended, before the manifest
    # says complete (runs._execute keeps the own-data mark there, so that no signal
    # between "complete" and the mark can lose it)
    before_complete: Callable[[], None] | None = None
