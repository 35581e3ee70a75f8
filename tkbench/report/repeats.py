"""A repeated test's part of the report (pure): each point's runs and their spread
(:mod:`tkbench.analysis.repeat`), whether ``repeat_until`` was met, and for a run
whose recipes each ran plainly and with an fsync after every write (the ``ars``
profile) one table of the recipes side by side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tkbench.analysis.repeat import Repeatability
from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.sweep import sweep_in
from tkbench.rundir.records import TestPlan


@dataclass(frozen=True)
class RepeatRow:
    """One point over its runs, MiB/s."""

    label: str  # "4k 0/100"
    runs: tuple[float, ...]
    mean: float
    mean_abs_dev: float
    mean_abs_dev_pct: float | None
    ci95: tuple[float, float] | None


@dataclass(frozen=True)
class RepeatPart:
    """A fixed test's runs: a row per point, and the repeat_until outcome ("" without it)."""

    rows: tuple[RepeatRow, ...]
    until: str = ""


@dataclass(frozen=True)
class RecipeRow:
    """One recipe, written plainly and with an fsync after every write (MiB/s)."""

    recipe: str  # the plain test's title
    plain_test: str
    fsync_test: str
    plain: RepeatRow
    fsync: RepeatRow
    fsync_share_pct: float | None  # the fsync variant's mean in % of the plain one's


@dataclass(frozen=True)
class RecipeTable:
    rows: tuple[RecipeRow, ...]
    reading: str  # the table in words


def _plain_fixed(a: Analysed) -> bool:
    """A fixed test whose rounds are repetitions (not a stage, not a sweep)."""
    plan = a.plan
    return (
        plan.kind == "fixed" and not plan.procedure and bool(a.test.rounds) and sweep_in(a) is None
    )


def _row(plan: TestPlan, key: tuple[int, int], rep: Repeatability) -> RepeatRow:
    label = next((p.label for p in plan.points if p.key == key), "")
    return RepeatRow(label, rep.runs, rep.mean, rep.mean_abs_dev, rep.mean_abs_dev_pct, rep.ci95)


def repeat_part(a: Analysed) -> RepeatPart | None:
    """The runs of a plain fixed test (None for any other test)."""
    if not _plain_fixed(a):
        return None
    rows = tuple(_row(a.plan, k, rep) for k, rep in a.repeats.items())
    until = a.until
    sentence = ""
    if until is not None:
        sentence = (
            f"Repeated until the runs agree within {until.limit_pct:g} %: {until.sentence()}."
        )
    return RepeatPart(rows, sentence)


def _recipe_key(plan: TestPlan) -> tuple[object, ...]:
    """What a recipe is, its fsync aside: the points and the load."""
    wl = plan.workload
    points = tuple((p.bs, p.read_pct, p.pattern) for p in plan.points)
    return (points, wl.numjobs, wl.iodepth, wl.direct, plan.ioengine_used, wl.end_fsync)


def recipe_table(tests: Sequence[Analysed]) -> RecipeTable | None:
    """The recipes that ran both plainly and with an fsync after every write, a row each
    (tests of one point each); None when no recipe ran both ways."""
    plain: dict[tuple[object, ...], Analysed] = {}
    synced: dict[tuple[object, ...], Analysed] = {}
    for t in tests:
        if not _plain_fixed(t) or len(t.plan.points) != 1:
            continue
        fsync = t.plan.workload.fsync
        if fsync in (0, 1):  # plainly, or an fsync after every write
            (synced if fsync else plain).setdefault(_recipe_key(t.plan), t)
    rows = []
    for key, p in plain.items():
        s = synced.get(key)
        if s is None:
            continue
        (pk, prep), (sk, srep) = (next(iter(x.repeats.items())) for x in (p, s))
        share = 100.0 * srep.mean / prep.mean if prep.mean else None
        rows.append(
            RecipeRow(
                recipe=p.plan.title or p.name,
                plain_test=p.name,
                fsync_test=s.name,
                plain=_row(p.plan, pk, prep),
                fsync=_row(s.plan, sk, srep),
                fsync_share_pct=share,
            )
        )
    if not rows:
        return None
    return RecipeTable(tuple(rows), _reading(rows))


def _reading(rows: Sequence[RecipeRow]) -> str:
    shares = [r.fsync_share_pct for r in rows if r.fsync_share_pct is not None]
    text = (
        "Each recipe ran twice: plainly, where the page cache and the filesystem may gather "
        "writes, and with an fsync after every write, where each write must reach the drive "
        "before the next is issued. The fsync variant is the worst case: what an application "
        "that syncs every write (a database, a mail server) sees from this volume."
    )
    if shares:
        lo, hi = min(shares), max(shares)
        span = f"{lo:.1f} %" if len(shares) == 1 else f"{lo:.1f} % to {hi:.1f} %"
        text += f" Here it reached {span} of the plain recipe's throughput."
    return text
