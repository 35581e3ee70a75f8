"""One judge: the requirement table applied to the tests of a plan or of a run (pure).

:mod:`.plan` and :mod:`.run` gather what only a plan or only a run can tell (the
purge a target will get or got, the write cache, how each test ended) and call
:func:`judge` with it; the table's rows (tkbench.conformance.requirements) are applied
here alike to both.  An operator choice is stated (:class:`~tkbench.conformance.pts.Stated`),
never counted; a limit a plan may break (``plan_only``) departs in a run only if it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tkbench.conformance import requirements as table
from tkbench.conformance.pts import (
    BY_NAME,
    TESTS,
    VARIANTS,
    WSAT_OPTIONS,
    Departure,
    Judgement,
    Stated,
    TestRequirement,
    wsat_option,
)
from tkbench.conformance.ptsstages import STAGED
from tkbench.conformance.requirements import basic
from tkbench.rundir.records import TestPlan

# the stages of the tests beyond the basic four that start with a purge
PURGED = ("precondition", "groups")


@dataclass(frozen=True)
class Judged:
    """A planned or run test as the judge takes it: its ``test.json`` and what only a
    plan or only a run can tell of it."""

    plan: TestPlan
    departures: Sequence[Departure] = ()  # its purge; a run's: cut short, how it ended
    histogram: float | None = 0.0  # its response-time histogram phase, s (table.Ctx)
    finished: bool = True  # False: a run's test without a result (how it ended is said)


@dataclass
class Collect:
    """The departures, choices and rows judged so far."""

    items: list[Departure] = field(default_factory=list)
    choices: list[Stated] = field(default_factory=list)
    rows: dict[tuple[str, str], str] = field(default_factory=dict)  # (family, row) -> kind

    def add(
        self, test: str | None, title: str, requirement: str, required: str, actual: str
    ) -> None:
        self.items.append(Departure(test, requirement, required, actual, title))

    def count(self, key: str, row: table.Requirement) -> None:
        self.rows.setdefault((key, row.name), row.source.kind)


def starts_alone(plan: TestPlan) -> bool:
    """A test (or first stage) that starts with its own purge, not from the stage before."""
    return not plan.stage or plan.stage in PURGED


def apply(out: Collect, key: str, ctx: table.Ctx) -> None:
    """The rows of ``key`` applied to one planned test."""
    plan = ctx.plan
    title = plan.title or (ctx.ref.title if ctx.ref is not None else plan.name)
    for row in table.rows_for(key):
        if row.choice:
            words = row.state(ctx) if row.state else None
            if words:
                out.choices.append(Stated(plan.name, row.name, words, title))
            continue
        out.count(key, row)
        if row.check is None or (row.plan_only and not ctx.planned):
            continue  # judged from the target or the run's records (.plan, .run)
        for f in row.check(ctx):
            out.add(plan.name, title, f.requirement or row.name, f.required, f.actual)


def _group(
    out: Collect,
    ref: TestRequirement,
    plans: Sequence[TestPlan],
    variant: str,
    skipped: str | None,
    sector: int,
) -> None:
    title = plans[0].title if len(plans) == 1 and plans[0].title else ref.title
    if not plans:
        out.add(ref.name, ref.title, "test run", "run", skipped or "not run")
        return
    for row in table.GROUP_ROWS.get(ref.name, ()):
        if not row.choice:
            out.count(ref.name, row)
    var = VARIANTS[variant]
    for f in basic.group(ref, plans, var, sector):
        out.add(ref.name, title, f.requirement, f.required, f.actual)
    for requirement, words in basic.group_choices(ref, plans, var):
        out.choices.append(Stated(ref.name, requirement, words, ref.title))


def judge(
    variant: str | None,
    tests: Sequence[Judged],
    profile_tests: Sequence[str],
    skipped: Mapping[str, str],
    capacity: int,
    sector: int,
    planned: bool,
    run_wide: Sequence[Departure],
) -> Judgement:
    """Apply the table to the tests of a plan or run.

    ``tests``: each with what only a plan or a run tells of it; ``profile_tests``: the
    profile's test sections (a PTS test there without a planned test was skipped:
    ``skipped`` says why); ``run_wide``: what only a plan or a run can tell of them all
    (the write cache).
    """
    if variant is None or variant not in VARIANTS:
        return Judgement(None, planned=planned)
    var = VARIANTS[variant]

    def context(t: Judged, ref: object) -> table.Ctx:
        return table.Ctx(t.plan, var, ref, capacity, planned, t.histogram, t.finished)

    out = Collect()
    out.items += run_wide
    plans = [t.plan for t in tests]
    by_spec: dict[str, list[Judged]] = {}
    for t in tests:
        by_spec.setdefault(t.plan.spec or t.plan.name, []).append(t)
    judged: list[str] = []
    for ref in TESTS:
        mine = by_spec.get(ref.name, [])
        if not mine and ref.name not in profile_tests:
            continue  # not in the profile: the claim does not cover it
        judged.append(ref.name)
        if ref.name == "wsat" and len(mine) == 1:  # one of its optional workloads?
            only = mine[0].plan
            points = [(p.pattern, p.bs, p.read_pct) for p in only.points]
            option = wsat_option(points)
            if option is not None:
                name = next(k for k, v in WSAT_OPTIONS.items() if [v] == points)
                out.choices.append(
                    Stated(only.name, "optional workload", name, only.title or ref.title)
                )
                ref = option
        _group(out, ref, [t.plan for t in mine], variant, skipped.get(ref.name), sector)
        for t in mine:
            apply(out, ref.name, context(t, ref))
            out.items += t.departures
    for spec, mine in by_spec.items():
        if spec in BY_NAME:
            continue
        staged = STAGED.get(mine[0].plan.procedure)
        if staged is not None:
            judged.append(spec)
            for t in mine:
                apply(out, table.family(t.plan), context(t, staged))
                out.items += t.departures
            continue
        for p in (t.plan for t in mine):
            out.add(
                p.name,
                p.title or p.name,
                "test",
                "one of the PTS tests " + ", ".join(r.title for r in TESTS),
                f"{p.title or p.name}, a test PTS 2.0.2 does not define",
            )
    if not judged:
        out.add(None, "", "tests", "at least one of " + ", ".join(r.title for r in TESTS), "none")
    kinds = list(out.rows.values())
    return Judgement(
        variant,
        tuple(judged),
        tuple(_shared(out.items, plans)),
        planned,
        tuple(out.choices),
        len(kinds),
        sum(1 for k in kinds if k == table.IMPL),
    )


def _shared(items: list[Departure], plans: Sequence[TestPlan]) -> list[Departure]:
    """A departure every test has alike (the purge of a regular file) once, for them all,
    after the run's own."""
    # a later stage of a test beyond the basic four goes on from the stage before it:
    # what every test that starts on its own has alike is said for all
    names = {p.name for p in plans if starts_alone(p)}
    if len(names) < 2:
        return items

    def what(d: Departure) -> tuple[str, str, str]:
        return (d.requirement, d.required, d.actual)

    common = [
        w
        for w in dict.fromkeys(what(d) for d in items if d.test in names)
        if {d.test for d in items if what(d) == w} >= names
    ]
    own = [d for d in items if d.test is None]
    rest = [d for d in items if d.test is not None and what(d) not in common]
    return [*own, *(Departure(None, *w) for w in common), *rest]


def purge_departure(test: str, title: str, actual: str) -> Departure:
    return Departure(test, "purge", "a PTS-compliant purge before the test", actual, title)


def skipped_notes(notes: Sequence[str]) -> dict[str, str]:
    """``test iops skipped: ...`` notes of a plan, by the test's profile section."""
    out: dict[str, str] = {}
    for n in notes:
        words = n.split()
        if len(words) > 2 and words[0] == "test" and words[2].startswith("skipped"):
            spec = words[1].split("-")[0] if words[1] not in BY_NAME else words[1]
            out[spec] = n.split(" ", 2)[2]
    return out
