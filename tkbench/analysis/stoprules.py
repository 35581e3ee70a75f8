"""Stop rules: what makes a steady-state test, write saturation or a fixed test differ.

A test's *kind* (``kind`` in a profile and in ``test.json``: steady, saturation,
fixed, copy) names its stop rule, which owns its measurement window, the sentence its
result states and what a resume after an idle gap does.  The engine asks the kind
when to stop; analysis asks it for the window; nothing else branches on a kind's name
for these rules.  A new stop rule is a new class here and its report section
(:mod:`tkbench.report.sections`); a new *type* of test (a sweep, a copy test, the
stages of a PTS test, ...) is a module of :mod:`tkbench.kinds`, whose stages choose
among these rules.  Pure: plans and rounds are the stored records.

This module was ``tkbench.analysis.stoprules`` until the test types became the package
``tkbench.kinds``; ``tkbench.analysis`` still exports ``KINDS``, ``TestKind``,
``kind_of`` and ``test_result``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tkbench.analysis.repeat import until_bounds, until_standing
from tkbench.analysis.segments import reached, segment_rounds, segment_verdicts
from tkbench.rundir.records import Result, Round, TestPlan
from tkbench.units import format_duration, human_bytes

# whatever its segments, a steady-state test never runs more than this many times its
# round limit
ROUND_CAP = 4


@dataclass(frozen=True)
class RoundSpec:
    """What bounds a planned test's rounds (its profile's numbers)."""

    window: int
    max_rounds: int
    repeat: int
    max_duration: float  # seconds
    round_seconds: float
    max_excursion: float = 0.2
    max_slope_excursion: float = 0.1
    stop_written_multiple: float = 4.0
    tracking: tuple[str, ...] = ()  # tracking variable labels
    repeat_until: float = 0.0  # fixed: % deviation that ends the runs (0: exactly repeat)
    repeat_max: int = 10  # fixed, with repeat_until: the most runs


@dataclass(frozen=True)
class Standing:
    """Where a test stands when its stop rule is asked."""

    rounds: Sequence[Round]  # every stored round of the test
    segment: int  # the current segment
    total_written: int  # bytes written by all rounds
    started: float  # epoch seconds: the first round's start
    now: float  # epoch seconds: the moment judged
    capacity: int  # bytes of the target


class TestKind:
    name = ""
    has_steady_state = False  # a steady-state verdict decides and is reported
    on_volume = False  # a volume benchmark's test may be of this kind (a fixed number of runs)
    idle_starts_segment = False  # an idle gap inside a run begins a new segment

    def round_bounds(self, spec: RoundSpec) -> tuple[int, int]:
        """The fewest and the most rounds a test of this kind runs."""
        raise NotImplementedError

    def state(self, steady: bool | None, window: Sequence[int], written: float) -> str:
        """How ``tkbench show`` states where the test got to."""
        raise NotImplementedError

    def stop_text(self, spec: RoundSpec) -> str:
        """The stop rule as ``tkbench plan`` states it."""
        raise NotImplementedError

    def stop_reason(self, plan: TestPlan, p: Standing) -> str | None:
        """Why the test stops now (recorded in its result), or None to run a round."""
        raise NotImplementedError

    def next_is_last(self, plan: TestPlan, p: Standing) -> bool:
        """Whether a round run after ``p.rounds`` is certainly the test's last, whatever
        it measures (a round or repetition limit): the engine then starts no further
        round ahead of it.  False when only its measurement can tell."""
        return False

    def window(self, plan: TestPlan, segment: Sequence[Round]) -> tuple[int, ...]:
        """Round numbers of the measurement window, from the last segment's rounds."""
        return tuple(r.round for r in segment[-plan.rounds.window :])

    def outcome(
        self, plan: TestPlan, rounds: Sequence[Round], steady: bool, total: int, capacity: int
    ) -> tuple[list[int], str]:
        """The result's window (as result.json states it) and its one-line summary."""
        raise NotImplementedError

    def resume_action(self, gap: float, resume_gap: float, preconditioned: bool) -> str:
        """What a resume after ``gap`` idle seconds does: continue, re-precondition,
        new-segment or restart (docs/resume.md)."""
        if gap <= resume_gap:
            return "continue"
        return "re-precondition" if preconditioned else "new-segment"


class Steady(TestKind):
    """Rounds until every tracking variable holds the PTS criteria, or the round limit."""

    name = "steady"
    has_steady_state = True
    idle_starts_segment = True

    def round_bounds(self, spec: RoundSpec) -> tuple[int, int]:
        return spec.window, spec.max_rounds

    def state(self, steady: bool | None, window: Sequence[int], written: float) -> str:
        if steady and window:
            return f"steady state in rounds {window[0]}-{window[-1]}"
        return "steady state not reached"

    def stop_text(self, spec: RoundSpec) -> str:
        return (
            f"steady state of {', '.join(spec.tracking)}: window {spec.window}, data excursion "
            f"<= {spec.max_excursion:.0%}, slope excursion <= {spec.max_slope_excursion:.0%}; "
            f"at most {spec.max_rounds} rounds"
        )

    def stop_reason(self, plan: TestPlan, p: Standing) -> str | None:
        # the round limit applies per segment: a new segment starts a new series
        limit = plan.rounds.max
        if reached(segment_verdicts(plan, p.rounds, p.segment)):
            return "steady state reached"
        if len(segment_rounds(p.rounds, p.segment)) >= limit:
            return f"round limit of {limit} reached"
        if len(p.rounds) >= ROUND_CAP * limit:
            return f"at most {ROUND_CAP * limit} rounds over all segments"
        return None

    def next_is_last(self, plan: TestPlan, p: Standing) -> bool:
        limit = plan.rounds.max
        after = len(segment_rounds(p.rounds, p.segment)) + 1
        return after >= limit or len(p.rounds) + 1 >= ROUND_CAP * limit

    def window(self, plan: TestPlan, segment: Sequence[Round]) -> tuple[int, ...]:
        verdicts = segment_verdicts(plan, segment)
        if verdicts:
            return next(iter(verdicts.values())).rounds
        return super().window(plan, segment)

    def outcome(
        self, plan: TestPlan, rounds: Sequence[Round], steady: bool, total: int, capacity: int
    ) -> tuple[list[int], str]:
        if steady:
            window = list(self.window(plan, rounds))
            return window, f"steady state reached in rounds {window[0]}-{window[-1]}"
        return [], f"steady state NOT reached after {len(rounds)} rounds"


class Saturation(TestKind):
    """Write saturation: continuous rounds until a multiple of the capacity is written
    or a time limit passes."""

    name = "saturation"

    def round_bounds(self, spec: RoundSpec) -> tuple[int, int]:
        return 1, max(1, math.ceil(spec.max_duration / max(spec.round_seconds, 1e-9)))

    def state(self, steady: bool | None, window: Sequence[int], written: float) -> str:
        return f"{human_bytes(written)} written"

    def stop_text(self, spec: RoundSpec) -> str:
        return (
            f"after {spec.stop_written_multiple:g}x user capacity written "
            f"or {format_duration(spec.max_duration)}"
        )

    def stop_reason(self, plan: TestPlan, p: Standing) -> str | None:
        multiple = plan.stop_written_multiple
        if p.rounds and p.total_written >= multiple * p.capacity:
            return f"{multiple:g}x the capacity written"
        limit = plan.max_duration
        if p.now - p.started >= limit:
            return f"time limit of {limit:g} s reached"
        return None

    def outcome(
        self, plan: TestPlan, rounds: Sequence[Round], steady: bool, total: int, capacity: int
    ) -> tuple[list[int], str]:
        return [], f"{len(rounds)} rounds, {total / capacity:.2f}x capacity written"

    def resume_action(self, gap: float, resume_gap: float, preconditioned: bool) -> str:
        # a continuous history of writes: a gap lets the drive recover, which would
        # show as a false recovery; start again
        return "restart" if gap > resume_gap else "continue"


class Fixed(TestKind):
    """A fixed number of repetitions, without a steady-state rule; with
    ``repeat_until``, repetitions until every point's runs lie within that
    percentage of their mean (mean absolute deviation), between ``max(repeat, 2)``
    and ``repeat_max`` runs.  Decided from the stored runs only, so a resumed test
    counts the runs it kept and stops where the uninterrupted one would have."""

    name = "fixed"
    on_volume = True

    def round_bounds(self, spec: RoundSpec) -> tuple[int, int]:
        if spec.repeat_until:
            return until_bounds(spec.repeat, spec.repeat_max)
        return spec.repeat, spec.repeat

    def state(self, steady: bool | None, window: Sequence[int], written: float) -> str:
        return "fixed repetitions"

    def stop_text(self, spec: RoundSpec) -> str:
        if spec.repeat_until:
            lo, hi = until_bounds(spec.repeat, spec.repeat_max)
            return (
                f"until every point's runs lie within {spec.repeat_until:g} % of their mean "
                f"(mean absolute deviation): at least {lo}, at most {hi} runs"
            )
        return f"after {spec.repeat} repetition(s)"

    def stop_reason(self, plan: TestPlan, p: Standing) -> str | None:
        until = until_standing(plan, p.rounds)
        if until is not None:
            if until.ended_by is None:
                return None
            dev = f"{until.deviation_pct:.2f} %"
            if until.met:
                return f"runs within {dev} <= {until.limit_pct:g} % after {until.runs} runs"
            return f"at most {until.max_runs} runs: deviation {dev} > {until.limit_pct:g} %"
        repeat = plan.repeat
        return f"{repeat} repetition(s) done" if len(p.rounds) >= repeat else None

    def next_is_last(self, plan: TestPlan, p: Standing) -> bool:
        if plan.repeat_until:  # only the repeat_max is certain; the runs decide before it
            return len(p.rounds) + 1 >= until_bounds(plan.repeat, plan.repeat_max)[1]
        return len(p.rounds) + 1 >= plan.repeat

    def window(self, plan: TestPlan, segment: Sequence[Round]) -> tuple[int, ...]:
        return tuple(r.round for r in segment)

    def resume_action(self, gap: float, resume_gap: float, preconditioned: bool) -> str:
        # repetitions are independent runs, each starting from the state its predecessor
        # left: an idle gap before one is no different from the gap between two tests,
        # so the kept runs stay in the window (and count towards repeat/repeat_until).
        # A preconditioned fixed test is preconditioned again as before.
        if not preconditioned:
            return "continue"
        return super().resume_action(gap, resume_gap, preconditioned)

    def outcome(
        self, plan: TestPlan, rounds: Sequence[Round], steady: bool, total: int, capacity: int
    ) -> tuple[list[int], str]:
        until = until_standing(plan, rounds)
        if until is not None:
            return [r.round for r in rounds], f"{len(rounds)} repetition(s), {until.sentence()}"
        return [r.round for r in rounds], f"{len(rounds)} repetition(s)"


class Copy(Fixed):
    """A copy test (tkbench.kinds.copy): ``repeat`` runs, each copying every file set x
    data pattern once, not by fio (the engine's copy step, tkbench.kinds.copyrun)."""

    name = "copy"

    def state(self, steady: bool | None, window: Sequence[int], written: float) -> str:
        return "copy runs"

    def stop_text(self, spec: RoundSpec) -> str:
        return f"after {spec.repeat} run(s) of every file set and data pattern"

    def outcome(
        self, plan: TestPlan, rounds: Sequence[Round], steady: bool, total: int, capacity: int
    ) -> tuple[list[int], str]:
        return [r.round for r in rounds], f"{len(rounds)} copy run(s)"

    def resume_action(self, gap: float, resume_gap: float, preconditioned: bool) -> str:
        # every run starts alike (no copy left, the sources' pages dropped): the runs
        # kept stand, whatever the gap
        return "continue"


KINDS: dict[str, TestKind] = {k.name: k for k in (Steady(), Saturation(), Fixed(), Copy())}


def kind_of(plan: TestPlan) -> TestKind:
    """The kind of a stored test."""
    return kind_named(plan.kind)


def kind_named(name: str) -> TestKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown test kind {name!r} (kinds: {', '.join(KINDS)})") from None


def test_result(
    plan: TestPlan,
    rounds: Sequence[Round],
    capacity: int,
    segment: int = 1,
    total_written: int | None = None,
    segment_rounds_run: int | None = None,
    stop_reason: str | None = None,
) -> Result:
    """A finished test's result.json: its verdicts and a one-line summary."""
    verdicts = segment_verdicts(plan, rounds, segment if segment_rounds_run else None)
    kind = kind_of(plan)
    steady = reached(verdicts)
    if total_written is None:
        total_written = int(rounds[-1].total_written_bytes) if rounds else 0
    window, summary = kind.outcome(plan, rounds, steady, total_written, capacity)
    return Result(
        test=plan.name,
        kind=kind.name,
        status="complete",
        steady_state=steady if kind.has_steady_state else None,
        rounds=len(rounds),
        segment=segment,
        window=tuple(window),
        verdicts={k: v.record() for k, v in verdicts.items()},
        total_written_bytes=total_written,
        ended=rounds[-1].ended if rounds else time.time(),
        summary=summary,
        stop_reason=stop_reason,
    )
