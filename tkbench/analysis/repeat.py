"""Repeatability of a repeated measurement (pure): every run, the mean, the mean
absolute deviation and its share of the mean (what published AS SSD and NIOBench
comparisons call the "error" of their runs), the sample standard deviation and a
95 % confidence interval of the mean (Student's t).  A fixed test's point, run
``repeat`` times, is described by one :class:`Repeatability`; ``show``, the report
and ``compare`` read it from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from tkbench.rundir.records import Round, TestPlan
from tkbench.typed import Typed

MIB = 1024 * 1024

# two-sided 95 % quantiles of Student's t, by degrees of freedom
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95 % quantile of Student's t with ``df`` degrees of freedom
    (a table to 30, beyond it the Cornish-Fisher expansion around z = 1.96)."""
    if df < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    if df <= len(_T95):
        return _T95[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Repeatability(Typed):
    runs: tuple[float, ...]
    mean: float
    mean_abs_dev: float
    mean_abs_dev_pct: float | None  # None when the mean is 0
    stdev: float | None  # sample standard deviation; None for a single run
    ci95: tuple[float, float] | None  # None for a single run


def repeatability(values: Sequence[float]) -> Repeatability:
    """The figures of ``values`` (one per run, in run order)."""
    if not values:
        raise ValueError("no runs")
    n = len(values)
    mean = math.fsum(values) / n
    mad = math.fsum(abs(v - mean) for v in values) / n
    pct = 100.0 * mad / abs(mean) if mean else None
    if n < 2:
        return Repeatability(tuple(values), mean, mad, pct, None, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t95(n - 1) * sd / math.sqrt(n)
    return Repeatability(tuple(values), mean, mad, pct, sd, (mean - half, mean + half))


def point_runs(rounds: Sequence[Round]) -> dict[tuple[int, int], list[float]]:
    """MiB/s (read plus write) of every point in each round, by point key, in round order
    (the cells of a test type's own table apart)."""
    out: dict[tuple[int, int], list[float]] = {}
    for r in rounds:
        for p in r.points:
            # the cells of a test type's own table (a sweep's, a copy test's) share keys
            if p.keyed:
                out.setdefault(p.key, []).append(p.bw_bytes / MIB)
    return out


def point_repeatability(rounds: Sequence[Round]) -> dict[tuple[int, int], Repeatability]:
    """Each point's repeatability in MiB/s over ``rounds`` (a fixed test's runs)."""
    return {k: repeatability(v) for k, v in point_runs(rounds).items()}


# --------------------------------------------------------------------------- repeat_until


def until_bounds(repeat: int, repeat_max: int) -> tuple[int, int]:
    """The fewest and the most runs of a test repeated until its runs agree: at least
    ``repeat`` and at least 2 (one run has no deviation), at most ``repeat_max``."""
    least = max(repeat, 2)
    return least, max(least, repeat_max)


def deviation_pct(rep: Repeatability) -> float:
    """A point's mean absolute deviation in % of its mean; a mean of 0 counts as no
    deviation when every run was 0 (the only way to have it)."""
    if rep.mean_abs_dev_pct is not None:
        return rep.mean_abs_dev_pct
    return 0.0 if rep.mean_abs_dev == 0 else math.inf


@dataclass(frozen=True)
class UntilStanding(Typed):
    """Where a test repeated until its runs agree (``repeat_until``) stands, from its
    stored runs: the limit, the bounds, the runs so far and the worst point's deviation
    (its JSON: the fields but ``point``, then whether it is met and what ended it)."""

    DERIVED = ("met", "ended_by")

    limit_pct: float
    min_runs: int
    max_runs: int
    runs: int
    deviation_pct: float | None  # the largest over the test's points; None before 2 runs
    # the point with that deviation ("4k 0/100")
    point: str = field(default="", metadata={"internal": True})

    @property
    def met(self) -> bool:
        """At least the minimum of runs, and every point within the limit."""
        return (
            self.runs >= self.min_runs
            and self.deviation_pct is not None
            and self.deviation_pct <= self.limit_pct
        )

    @property
    def exhausted(self) -> bool:
        return self.runs >= self.max_runs

    @property
    def ended_by(self) -> str | None:
        """``limit`` (the runs agree), ``maximum`` (repeat_max ended it first), or None
        while the test would run again."""
        if self.met:
            return "limit"
        return "maximum" if self.exhausted else None

    def sentence(self) -> str:
        """The outcome in words: met after N runs, or not repeatable to L % in N runs."""
        dev = "-" if self.deviation_pct is None else f"{self.deviation_pct:.2f} %"
        if self.met:
            return (
                f"repeatable to {self.limit_pct:g} %: the runs were within {dev} of their "
                f"mean after {self.runs} runs"
            )
        if self.exhausted:
            return (
                f"not repeatable to {self.limit_pct:g} % in {self.runs} runs: the maximum "
                f"ended it at a deviation of {dev}" + (f" ({self.point})" if self.point else "")
            )
        return f"{self.runs} of {self.min_runs}-{self.max_runs} runs, deviation {dev} so far"


def until_standing(plan: TestPlan, rounds: Sequence[Round]) -> UntilStanding | None:
    """Where a test with ``repeat_until`` stands after its stored ``rounds`` (None for a
    test without it): the decision the stop rule makes, and what show and the report say."""
    if not plan.repeat_until:
        return None
    lo, hi = until_bounds(plan.repeat, plan.repeat_max)
    reps = point_repeatability(rounds)
    worst: float | None = None
    point = ""
    if len(rounds) >= 2 and reps:
        key, rep = max(reps.items(), key=lambda kv: deviation_pct(kv[1]))
        worst = deviation_pct(rep)
        point = next((p.label for p in plan.points if p.key == key), "")
    return UntilStanding(plan.repeat_until, lo, hi, len(rounds), worst, point)


# --------------------------------------------------------------------------- two runs' means


def difference_noise(a: Repeatability, b: Repeatability) -> float | None:
    """Half the width of the 95 % confidence interval of ``b.mean - a.mean`` (Welch:
    each side's own variance, Student's t with the Welch-Satterthwaite degrees of
    freedom, rounded down), in the unit of the means.  A difference of the means
    smaller than this is within the runs' own noise: the interval holds zero.  None
    when a side has a single run (its spread is unknown)."""
    return welch_noise(a.stdev, len(a.runs), b.stdev, len(b.runs))


def welch_noise(sd_a: float | None, n_a: int, sd_b: float | None, n_b: int) -> float | None:
    """:func:`difference_noise` from each side's sample standard deviation and number
    of runs (what the history keeps of a volume figure)."""
    if sd_a is None or sd_b is None or n_a < 2 or n_b < 2:
        return None
    va, vb = sd_a**2 / n_a, sd_b**2 / n_b
    se2 = va + vb
    if se2 == 0:
        return 0.0
    df = se2**2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    return t95(max(1, math.floor(df))) * math.sqrt(se2)
