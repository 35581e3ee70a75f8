"""Repeatability of a repeated measurement (pure): every run, the mean, the mean
absolute deviation and its share of the mean (what published AS SSD and NIOBench
comparisons call the "error" of their runs), the sample standard deviation and a
95 % confidence interval of the mean (Student's t).  A fixed test's point, run
``repeat`` times, is described by one :class:`Repeatability`; ``show``, the report
and ``compare`` read it from here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..records import Round

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
class Repeatability:
    runs: tuple[float, ...]
    mean: float
    mean_abs_dev: float
    mean_abs_dev_pct: float | None  # None when the mean is 0
    stdev: float | None  # sample standard deviation; None for a single run
    ci95: tuple[float, float] | None  # None for a single run

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": list(self.runs),
            "mean": self.mean,
            "mean_abs_dev": self.mean_abs_dev,
            "mean_abs_dev_pct": self.mean_abs_dev_pct,
            "stdev": self.stdev,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
        }


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
    (a bulk-I/O sweep's cells and a copy test's sets apart)."""
    out: dict[tuple[int, int], list[float]] = {}
    for r in rounds:
        for p in r.points:
            # a sweep's and a virtual file's cells and a copy test's sets share keys:
            # tkbench.analysis.sweep, .vfile, .copy
            if p.role not in ("sweep", "vfile", "copy"):
                out.setdefault(p.key, []).append(p.bw_bytes / MIB)
    return out


def point_repeatability(rounds: Sequence[Round]) -> dict[tuple[int, int], Repeatability]:
    """Each point's repeatability in MiB/s over ``rounds`` (a fixed test's runs)."""
    return {k: repeatability(v) for k, v in point_runs(rounds).items()}
