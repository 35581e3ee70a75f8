"""What the engine tells its progress display, one frozen record per kind of event.

The engine calls ``progress.event(RoundStarted(...))``; a display dispatches on the
event's class (``match event: case RoundStarted(): ...``).  They replace keyword
arguments read back by name, so that a display reads only fields that exist and a
misspelt one is a type error rather than a ``KeyError`` halfway through a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tkbench.analysis.steady import Verdict
from tkbench.fio.results import LiveFigures
from tkbench.plan.build import Plan
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import Manifest, Result


@dataclass(frozen=True)
class RunStarted:
    plan: Plan
    run_dir: str


@dataclass(frozen=True)
class RunDone:
    manifest: Manifest


@dataclass(frozen=True)
class TestSkipped:
    test: PlannedTest
    reason: str


@dataclass(frozen=True)
class TestStarted:
    test: PlannedTest
    rounds_done: int  # rounds kept from before (a resumed run)


@dataclass(frozen=True)
class TestResumed:
    test: PlannedTest
    action: str  # what the resume does ("idle gap: new segment")
    rounds: int  # rounds kept


@dataclass(frozen=True)
class TestDone:
    test: PlannedTest
    result: Result


@dataclass(frozen=True)
class Phase:
    """A step of a test outside its rounds (purge, precondition, a part of a staged
    test, a copy) and, where known, the bytes it writes."""

    test: PlannedTest
    phase: str
    bytes: int | None = None


@dataclass(frozen=True)
class RoundStarted:
    test: PlannedTest
    round: int
    seconds: float  # its planned duration


@dataclass(frozen=True)
class RoundStartedAhead:
    """The round after the one under way, started while it runs (its RoundStarted
    follows once it is the round under way)."""

    test: PlannedTest
    round: int


@dataclass(frozen=True)
class RoundDone:
    test: PlannedTest
    round: int
    tracking: Mapping[str, float]  # tracking variable label -> its value this round
    total_written: int
    # the steady-state verdicts so far, per tracking variable (empty: a test without a
    # steady-state criterion)
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)


@dataclass(frozen=True)
class RoundDiscarded:
    test: PlannedTest
    round: int
    reason: str


@dataclass(frozen=True)
class RoundRetried:
    """A round whose fio stalled, run again once (tkbench.engine.rounds)."""

    test: PlannedTest
    round: int
    reason: str


@dataclass(frozen=True)
class FioStatus:
    """fio's live figures while a round or a phase runs."""

    test: PlannedTest
    figures: LiveFigures


Event = (
    RunStarted
    | RunDone
    | TestSkipped
    | TestStarted
    | TestResumed
    | TestDone
    | Phase
    | RoundStarted
    | RoundStartedAhead
    | RoundDone
    | RoundDiscarded
    | RoundRetried
    | FioStatus
)
