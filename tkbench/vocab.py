"""The metric vocabulary: every number tkbench reads from a workload point (pure).

One registry says, for each metric, its name, unit, how a column of it is captioned,
which way is better, whether it can be a steady-state tracking variable, how its
window value is formed and how to read it from a stored point summary.  Profiles
(tracking variables, acceptance criteria), analysis, checks, comparisons and reports
all look metrics up here; a new metric is one entry.

Units: IOPS; MB/s = 10^6 bytes/s; milliseconds.  Stored point summaries hold bytes,
bytes/s and nanoseconds (docs/run-directory.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the stored point a metric is read from (records import nothing of this)
    from tkbench.rundir.records import PointResult

MB = 1e6  # bytes per MB
MS = 1e6  # ns per ms
MIB = 1024 * 1024  # bytes per MiB (volume benchmarks report MiB/s, as the ars recipes do)


@dataclass(frozen=True)
class Metric:
    key: str  # as profiles write it: "iops", "bw", "lat_mean", "lat_max", "p99.99"
    name: str  # for people: "IOPS", "Throughput", "Mean response time"
    unit: str  # "IOPS", "MB/s", "ms"
    higher_is_better: bool
    trackable: bool  # may be a steady-state tracking variable
    read: Callable[[PointResult], float]  # from one round's point summary
    # how a window value is formed from the per-round values: "mean", "max", or
    # "pooled" (percentiles: read from the window's merged histograms, never averaged)
    window: str = "mean"

    @property
    def quantity(self) -> str:
        """What a column of values is, with its unit: "IOPS", "MB/s" for rates,
        "mean response time, ms" for times."""
        if self.higher_is_better:
            return self.unit
        return f"{self.name[0].lower()}{self.name[1:]}, {self.unit}"

    @property
    def percentile(self) -> str | None:
        """The percentile key of the stored summaries (``"99.99"``) for ``pNN``."""
        return self.key[1:] if self.window == "pooled" else None


def _iops(p: PointResult) -> float:
    return p.iops


def _bw(p: PointResult) -> float:
    return p.bw_bytes / MB


def _mib_s(p: PointResult) -> float:
    return p.bw_bytes / MIB


def _lat_mean(p: PointResult) -> float:
    return p.lat_mean_ns / MS


def _lat_max(p: PointResult) -> float:
    return p.lat_max_ns / MS


def _percentile_reader(key: str) -> Callable[[PointResult], float]:
    def read(p: PointResult) -> float:
        """The worse of read and write of one round (a mixed point has both)."""
        vals = [
            d.percentiles_ns[key]
            for d in (p.read, p.write)
            if d.io_bytes and key in d.percentiles_ns
        ]
        return max(vals) / MS if vals else math.nan

    return read


BASE: dict[str, Metric] = {
    m.key: m
    for m in (
        Metric("iops", "IOPS", "IOPS", True, True, _iops),
        Metric("bw", "Throughput", "MB/s", True, True, _bw),
        Metric("lat_mean", "Mean response time", "ms", False, True, _lat_mean),
        Metric("lat_max", "Maximum response time", "ms", False, False, _lat_max, "max"),
        Metric("mib_s", "Throughput", "MiB/s", True, False, _mib_s),
    )
}
# the percentiles profiles may name (fio reports these by default, tkbench asks for them)
PERCENTILES = ("99", "99.9", "99.99", "99.999")
_PCT_RE = re.compile(r"p(\d{1,2}(?:\.\d+)?)")


def metric(key: str) -> Metric:
    """The metric named ``key``: a base metric or a percentile ``pNN``; ValueError else."""
    found = BASE.get(key)
    if found is not None:
        return found
    m = _PCT_RE.fullmatch(key)
    if m and 0 < float(m.group(1)) < 100:
        pct = f"{float(m.group(1)):g}"
        return Metric(
            f"p{pct}",
            f"{pct} % response time",
            "ms",
            False,
            False,
            _percentile_reader(pct),
            "pooled",
        )
    raise ValueError(f"unknown metric {key!r} (metrics: {', '.join(names())})")


def names(trackable: bool = False) -> tuple[str, ...]:
    """Metric names a profile may use: tracking variables, or any (acceptance)."""
    base = tuple(k for k, m in BASE.items() if m.trackable or not trackable)
    return base if trackable else (*base, *(f"p{p}" for p in PERCENTILES))
