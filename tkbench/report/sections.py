"""What the report shows of each kind of test (pure).

A kind of test (:mod:`tkbench.analysis.kinds`: steady state, write saturation, fixed
repetitions) has a section here that says what its chapter holds and how it speaks:
its verdict sentence, its stop rule in words, what it says of a preconditioning it
does not have, how its outcome ends, and whether it shows per-point tables or a
saturation series.  A new kind of test is a new class here (and its kind), not a
branch in every module of the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.responses import ResponseTimes, saturation_responses
from ..analysis.steady import Verdict
from ..records import Round, TestPlan
from ..store import TestData
from . import fmt, saturation
from .model import Saturation


class Section:
    kind = ""
    per_point = True  # convergence plot, per-round table, result matrices, Little's law
    determinations = False  # the steady-state determination of every tracking variable
    no_precondition = "none (not part of this test's plan)"

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        """(steady?, one sentence for a customer, the basis of the window values)."""
        raise NotImplementedError

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        raise NotImplementedError

    def outcome_tail(self, t: TestData, capacity: int) -> str:
        """What the outcome paragraph adds after the rounds' times."""
        return ""

    def saturation(
        self, plan: TestPlan, rounds: Sequence[Round], capacity: int
    ) -> Saturation | None:
        return None

    def responses(
        self, plan: TestPlan, rounds: Sequence[Round], capacity: int
    ) -> ResponseTimes | None:
        """Response times per round against drive fills (write saturation's)."""
        return None


class SteadySection(Section):
    kind = "steady"
    determinations = True

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        if not verdicts:
            return False, "No round was completed: steady state was not determined.", "no rounds"
        span = fmt.rounds(list(window))
        if all(v.reached for v in verdicts.values()):
            return (
                True,
                f"Steady state reached in rounds {span} (after {n} round{'s' if n != 1 else ''}).",
                f"mean of rounds {span} (steady state)",
            )
        why = "; ".join(f"{k}: {v.reason}" for k, v in verdicts.items() if v.reason)
        return (
            False,
            f"Steady state NOT reached after {n} of at most {plan.rounds.max} rounds ({why}). "
            f"The values shown are means over the last rounds {span} and do not describe "
            "steady-state performance.",
            f"mean of rounds {span} (NOT steady state)",
        )

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        lim = plan.rounds
        return (
            f"steady state of every tracking variable over a window of {lim.window} "
            f"rounds (data excursion ≤ {fmt.limit(lim.max_excursion)} "
            f"and slope excursion ≤ {fmt.limit(lim.max_slope_excursion)} "
            f"of the window mean), or at most {lim.max} rounds"
        )


class SaturationSection(Section):
    kind = "saturation"
    per_point = False
    no_precondition = "none: write saturation starts from the purged drive, as PTS prescribes"

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        # the sentence comes from the saturation series (saturation.verdict)
        return None, "", f"mean of the last rounds {fmt.rounds(list(window))}"

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        mult = plan.stop_written_multiple
        return (
            f"{mult:g}× the user capacity written ({fmt.gb(mult * capacity)}) or "
            f"{fmt.duration(plan.max_duration)}, whichever comes first"
        )

    def outcome_tail(self, t: TestData, capacity: int) -> str:
        """Which limit ended the test."""
        if t.result is None or not t.rounds or not capacity:
            return ""
        written = t.rounds[-1].total_written_bytes
        mult = t.plan.stop_written_multiple
        if mult and written >= mult * capacity:
            return f" It stopped when {mult:g}× the user capacity had been written."
        return " It stopped at its time limit."

    def saturation(
        self, plan: TestPlan, rounds: Sequence[Round], capacity: int
    ) -> Saturation | None:
        return saturation.saturation(plan, rounds, capacity)

    def responses(
        self, plan: TestPlan, rounds: Sequence[Round], capacity: int
    ) -> ResponseTimes | None:
        return saturation_responses(plan, rounds, capacity)


class FixedSection(Section):
    kind = "fixed"

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        return (
            None,
            f"{n} repetition(s); values are means over all of them.",
            f"mean of rounds {fmt.rounds(list(window))}",
        )

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        return f"{plan.repeat} repetition(s)"


SECTIONS: dict[str, Section] = {
    s.kind: s for s in (SteadySection(), SaturationSection(), FixedSection())
}


def section_for(plan: TestPlan) -> Section:
    """The report section of a stored test's kind."""
    try:
        return SECTIONS[plan.kind]
    except KeyError:
        raise ValueError(f"no report section for test kind {plan.kind!r}") from None
