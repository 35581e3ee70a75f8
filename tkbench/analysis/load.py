"""Checks of a test's own numbers against each other, and its write-saturation series (pure).

* **Little's law**: I/Os in flight = IOPS x mean response time.  fio keeps jobs x
  queue depth I/Os outstanding, so every point should come out close to that
  number.  Far below it, the host (CPU, interrupts, the I/O engine) limited the
  rate rather than the drive; above it, the IOPS and the response times of the point
  disagree.  Each round's product is taken, then their mean (the product of the
  window means would overstate it whenever IOPS and response time move against
  each other from round to round).
* **Write saturation**: the saturation point's IOPS and response times per round,
  over time and over data written, and the mean of the last rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tkbench.analysis.window import find_point
from tkbench.rundir.records import Round, TestPlan
from tkbench.vocab import MS

QUEUE_LOW = 0.8  # below this share of the configured queue the host may be the limit
QUEUE_HIGH = 1.05  # above it IOPS and response times cannot both be right


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


@dataclass(frozen=True)
class QueueShare:
    """One point's I/Os in flight as a share of what fio was given."""

    bs: int
    read_pct: int
    share: float  # mean over the window's rounds of IOPS x mean response time / queue
    queue: int  # jobs x queue depth

    @property
    def low(self) -> bool:
        return self.share < QUEUE_LOW

    @property
    def high(self) -> bool:
        return self.share > QUEUE_HIGH


def queue_shares(plan: TestPlan, records: Sequence[Round]) -> list[QueueShare]:
    """Little's law for every planned point over ``records`` (the window's rounds),
    lowest share first."""
    planned = {p.key: p for p in plan.points}
    products: dict[tuple[int, int], list[float]] = {}
    for r in records:
        for p in r.points:
            if p.iops > 0 and p.lat_mean_ns > 0:
                products.setdefault(p.key, []).append(p.iops * p.lat_mean_ns / 1e9)
    out = []
    for key, values in products.items():
        point = planned.get(key)
        if point is None:
            continue
        queue = point.numjobs * point.iodepth
        out.append(QueueShare(key[0], key[1], _mean(values) / queue, queue))
    return sorted(out, key=lambda q: (q.share, -q.bs, -q.read_pct))


@dataclass(frozen=True)
class SaturationSeries:
    """The write-saturation point per round, and its mean over the last rounds."""

    bs: int
    read_pct: int
    rounds: tuple[int, ...]
    minutes: tuple[float, ...]  # end of each round since the test's first round started
    written_bytes: tuple[float, ...]  # total written at the end of each round
    iops: tuple[float, ...]
    lat_mean_ms: tuple[float, ...]
    lat_max_ms: tuple[float, ...]
    final_rounds: tuple[int, ...]  # the last rounds, whose mean is the "saturated" value
    final_iops: float
    final_lat_ms: float


def saturation_series(plan: TestPlan, rounds: Sequence[Round]) -> SaturationSeries | None:
    if not rounds or not plan.points:
        return None
    bs, m = plan.points[0].key
    t0 = rounds[0].started
    rows = [(r, p) for r in rounds if (p := find_point(r, bs, m)) is not None]
    if not rows:
        return None
    nums = tuple(r.round for r, _ in rows)
    iops = tuple(p.iops for _, p in rows)
    lat = tuple(p.lat_mean_ns / MS for _, p in rows)
    tail = slice(-plan.rounds.window, None)
    return SaturationSeries(
        bs=bs,
        read_pct=m,
        rounds=nums,
        minutes=tuple((r.ended - t0) / 60.0 for r, _ in rows),
        written_bytes=tuple(r.total_written_bytes for r, _ in rows),
        iops=iops,
        lat_mean_ms=lat,
        lat_max_ms=tuple(p.lat_max_ns / MS for _, p in rows),
        final_rounds=nums[tail],
        final_iops=_mean(iops[tail]),
        final_lat_ms=_mean(lat[tail]),
    )
