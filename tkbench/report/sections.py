"""What the report shows of each kind of test (pure).

A kind of test (:mod:`tkbench.analysis.stoprules`: steady state, write saturation, fixed
repetitions) has a section here that says what its chapter holds and how it speaks:
its verdict sentence, its stop rule in words, what it says of a preconditioning it
does not have, how its outcome ends, and whether it shows per-point tables or a
saturation series.  A new kind of test is a new class here (and its kind), not a
branch in every module of the report.  A stage's section (:class:`StageSection`, by
:data:`STAGES`) is the staged test types' report part (:mod:`.parts`, which also
says which section a stored test gets: ``section_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tkbench.analysis.repeat import until_bounds
from tkbench.analysis.responses import ResponseTimes, saturation_responses
from tkbench.analysis.steady import Verdict
from tkbench.kinds.results.analysed import Analysed
from tkbench.report import fmt, saturation, stages
from tkbench.report.model import Saturation
from tkbench.rundir.records import Round, TestPlan
from tkbench.rundir.store import TestData


class Section:
    kind = ""
    per_point = True  # convergence plot, per-round table
    matrices = True  # result matrices, Little's law, latency table, histograms
    determinations = False  # the steady-state determination of every tracking variable
    no_precondition = "none (not part of this test's plan)"

    def convergence_title(self, plan: TestPlan, title: str) -> str:
        return title

    def stage(self, a: Analysed) -> stages.StagePart | None:
        """The chapter of a stage of a test of several stages (None: the generic one),
        from what the stage measured (``a.staged``)."""
        return None

    def procedure(self, plan: TestPlan) -> tuple[str, ...]:
        """Paragraphs of the procedure beyond the parameter table."""
        return ()

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
    matrices = False
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
        if plan.repeat_until:
            lo, hi = until_bounds(plan.repeat, plan.repeat_max)
            return (
                f"until every point's runs lie within {plan.repeat_until:g} % of their mean "
                f"(mean absolute deviation): {lo} to {hi} repetitions"
            )
        return f"{plan.repeat} repetition(s)"


class CopySection(FixedSection):
    """A copy test (tkbench.kinds.copy): its sets' table (report/copy.py) in place of
    the per-point tables, whose block size x mix cells would merge its sets."""

    kind = "copy"
    per_point = False
    matrices = False
    no_precondition = "none (a volume benchmark)"

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        return (
            None,
            f"{n} run(s) of every file set and data pattern; each run is shown below.",
            "every run",
        )

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        return f"{plan.repeat} run(s) of every file set and data pattern"


Builder = Callable[[Analysed], "stages.StagePart"]


class StageSection(Section):
    """A stage of a test of several stages (tkbench.kinds.staged): its kind's verdict and
    stop rule, and in place of the per-point tables (whose block size x mix cells
    would merge its loads, groups or wait states) the stage's own chapter
    (:mod:`.stages`); a preconditioning stage keeps the generic steady-state evidence."""

    def __init__(
        self,
        base: Section,
        build: Builder | None,
        *,
        per_point: bool,
        preconditions: bool = False,
        first: bool = False,
    ) -> None:
        self.base = base
        self.kind = base.kind
        self.build = build
        self.per_point = per_point
        self.preconditions = preconditions  # the test's preconditioning: its intervals
        self.matrices = False
        self.determinations = base.determinations
        if preconditions:
            self.no_precondition = "none: this stage is the test's preconditioning"
        elif first:  # the test's one stage
            self.no_precondition = base.no_precondition
        else:
            self.no_precondition = "none: the stage follows the test's preconditioning stage"

    def verdict(
        self, plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
    ) -> tuple[bool | None, str, str]:
        steady, sentence, basis = self.base.verdict(plan, verdicts, window, n)
        if self.kind == "fixed":
            sentence = f"{n} round{'s' if n != 1 else ''}: {plan.title or plan.name}, as below."
        return steady, sentence, basis

    def stop_rule(self, plan: TestPlan, capacity: int) -> str:
        if self.kind == "fixed":
            return "one round"
        return self.base.stop_rule(plan, capacity)

    def convergence_title(self, plan: TestPlan, title: str) -> str:
        tracked = next((p for p in plan.points if not p.role), None)
        if tracked is None or not plan.tracking:
            return title
        if self.preconditions:
            n = len(plan.points)
            return f"IOPS of the tracked interval (#{tracked.index + 1} of {n}) per round"
        return f"IOPS of the tracked load, T{tracked.numjobs}/Q{tracked.iodepth}, per round"

    def stage(self, a: Analysed) -> stages.StagePart | None:
        return self.build(a) if self.build is not None else None

    def procedure(self, plan: TestPlan) -> tuple[str, ...]:
        text = stages.interval_text(plan) if self.preconditions else ""
        return (text,) if text else ()


SECTIONS: dict[str, Section] = {
    s.kind: s for s in (SteadySection(), SaturationSection(), FixedSection(), CopySection())
}


# stage -> its section (the staged types' part, tkbench.report.parts): its chapter,
# whether the convergence plot and per-round table stay, whether it is the test's
# preconditioning, whether it is the test's first stage
STAGES: dict[str, Callable[[Section], StageSection]] = {
    "precondition": lambda b: StageSection(b, None, per_point=True, preconditions=True),
    "recovery": lambda b: StageSection(b, stages.host_idle, per_point=False),
    "groups": lambda b: StageSection(b, stages.cross_stimulus, per_point=False, first=True),
    "intensity": lambda b: StageSection(b, stages.intensity, per_point=True),
    "operating": lambda b: StageSection(b, stages.operating, per_point=False),
}
