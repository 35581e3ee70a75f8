"""Write saturation's response times against drive fills (pure).

The PTS write-saturation test reports, beside IOPS, the response times of every
round against the data written: the average (ART, fio's mean of total latency),
"five nines" (the 99.999th percentile) and the maximum (MRT).  Every round's record
holds them already.  Drive fills are the total bytes the test had written at the
end of the round divided by the user capacity.

A round's five nines is fio's own percentile of that round (or, for a round that
kept its json+ histogram, read from it); it is left out of a round with fewer
than :func:`~.window.samples_needed` I/Os (1,000,000 for 99.999 %: ten I/Os beyond
it), and the reason is stated.  Over a range of rounds the five nines are pooled as
the measurement window pools its percentiles (:func:`~.window.pooled_percentiles`):
from the merged histograms when every round kept one, else the largest per-round
value, an upper bound.  A mixed point's percentile over reads and writes together
needs both histograms; without them it is left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tkbench.analysis.window import (
    DIRECTIONS,
    find_point,
    merge_bins,
    pooled_percentiles,
    samples_needed,
)
from tkbench.fio.output import percentile_from_bins
from tkbench.rundir.records import Direction, PointResult, Round, TestPlan
from tkbench.vocab import MS

FIVE_NINES = "99.999"
NEEDED = samples_needed(float(FIVE_NINES))  # 1,000,000 I/Os
# interval widths (drive fills) the summary table may use: the smallest that gives at
# most MAX_ROWS rows
STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0)
MAX_ROWS = 8


@dataclass(frozen=True)
class ResponseRound:
    """One round of write saturation: its response times (ms) and the drive fills."""

    round: int
    drive_fills: float  # total written by the end of the round / user capacity
    ios: int  # I/Os of the round (both directions)
    art_ms: float  # average response time
    five_nines_ms: float | None  # 99.999 %; None: too few I/Os (or a mixed point without bins)
    mrt_ms: float  # maximum response time


@dataclass(frozen=True)
class ResponseSpan:
    """Rounds ``first``..``last`` together: I/O-weighted ART, pooled five nines, MRT."""

    label: str  # "0.50–1.00×" or "last 5 rounds"
    first: int
    last: int
    rounds: int
    fills_from: float
    fills_to: float
    ios: int
    art_ms: float
    five_nines_ms: float | None
    five_nines_basis: str  # "histogram", "largest per-round value" or "" (left out)
    mrt_ms: float


@dataclass(frozen=True)
class ResponseTimes:
    point: tuple[int, int]  # (block size, read %)
    percentiles_of: str  # "lat" (submission + completion) or "clat" (completion only)
    rounds: tuple[ResponseRound, ...]
    spans: tuple[ResponseSpan, ...]  # by drive-fill interval, then the last rounds
    needed: int  # I/Os a five nines needs
    missing: int  # rounds whose five nines is left out
    most_ios: int  # the most I/Os of any round

    @property
    def note(self) -> str:
        """Why five nines is missing where it is ("" when it never is)."""
        if not self.missing:
            return ""
        n = len(self.rounds)
        which = "every round" if self.missing == n else f"{self.missing:,} of {n:,} rounds"
        return (
            f"The 99.999 % response time is left out of {which}: a round needs at least "
            f"{self.needed:,} I/Os for it (ten beyond it), and the largest round had "
            f"{self.most_ios:,}."
        )

    def to_dict(self) -> dict[str, Any]:
        """For ``tkbench show --json`` (a view, kept by hand: the point as an object,
        ``needed`` under another name, the note computed)."""
        return {
            "point": {"bs": self.point[0], "read_pct": self.point[1]},
            "percentiles_of": self.percentiles_of,
            "five_nines_needs_ios": self.needed,
            "rounds": [asdict(r) for r in self.rounds],
            "spans": [asdict(s) for s in self.spans],
            "note": self.note,
        }


def _active(p: PointResult) -> list[Direction]:
    return [d for d in (getattr(p, name) for name in DIRECTIONS) if d.io_bytes > 0]


def _ios(dirs: Sequence[Direction]) -> int:
    return int(sum(int(d.total_ios or 0) for d in dirs))


def _five_nines(points: Sequence[PointResult]) -> tuple[float | None, str]:
    """Five nines (ns) of some rounds of one point, and how it was read."""
    per_dir = [[d for p in points if (d := getattr(p, n)).io_bytes > 0] for n in DIRECTIONS]
    used = [dirs for dirs in per_dir if dirs]
    if len(used) == 1:
        found, _, basis = pooled_percentiles(used[0], [FIVE_NINES])
        return found.get(FIVE_NINES), basis if FIVE_NINES in found else ""
    # reads and writes together: only from their histograms, never from two percentiles
    dirs = [d for group in used for d in group]
    if not dirs or not all(d.bins_ns for d in dirs):
        return None, ""
    merged = merge_bins(dirs)
    if sum(merged.values()) < NEEDED:
        return None, ""
    return percentile_from_bins(merged, float(FIVE_NINES)), "histogram"


def _span(label: str, rows: Sequence[tuple[Round, PointResult, ResponseRound]]) -> ResponseSpan:
    points = [p for _, p, _ in rows]
    ios = sum(r.ios for _, _, r in rows)
    weighted = math.fsum(r.art_ms * r.ios for _, _, r in rows)
    art = weighted / ios if ios else math.fsum(r.art_ms for _, _, r in rows) / len(rows)
    nines, basis = _five_nines(points)
    return ResponseSpan(
        label=label,
        first=rows[0][2].round,
        last=rows[-1][2].round,
        rounds=len(rows),
        fills_from=rows[0][2].drive_fills,
        fills_to=rows[-1][2].drive_fills,
        ios=ios,
        art_ms=art,
        five_nines_ms=None if nines is None else nines / MS,
        five_nines_basis=basis,
        mrt_ms=max(r.mrt_ms for _, _, r in rows),
    )


def _step(total: float) -> float:
    for step in STEPS:
        if total / step <= MAX_ROWS:
            return step
    return STEPS[-1] * math.ceil(total / (STEPS[-1] * MAX_ROWS))


def _fills(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x < 10 else f"{x:.0f}"


def saturation_responses(
    plan: TestPlan, rounds: Sequence[Round], capacity: int
) -> ResponseTimes | None:
    """ART, five nines and MRT of every round of a write-saturation test."""
    if not rounds or not plan.points or capacity <= 0:
        return None
    key = plan.points[0].key
    rows: list[tuple[Round, PointResult, ResponseRound]] = []
    for r in rounds:
        p = find_point(r, *key)
        if p is None or not (dirs := _active(p)):
            continue
        nines, _ = _five_nines([p])
        row = ResponseRound(
            round=r.round,
            drive_fills=r.total_written_bytes / capacity,
            ios=_ios(dirs),
            art_ms=p.lat_mean_ns / MS,
            five_nines_ms=None if nines is None else nines / MS,
            mrt_ms=p.lat_max_ns / MS,
        )
        rows.append((r, p, row))
    if not rows:
        return None
    step = _step(rows[-1][2].drive_fills)
    groups: dict[int, list[tuple[Round, PointResult, ResponseRound]]] = {}
    for item in rows:
        # a round belongs to the interval its fills end in (exactly k x step: the k-th)
        k = max(0, math.ceil(item[2].drive_fills / step - 1e-9) - 1)
        groups.setdefault(k, []).append(item)
    spans = [
        _span(f"{_fills(k * step)}–{_fills((k + 1) * step)}×", group)
        for k, group in sorted(groups.items())
    ]
    tail = rows[-plan.rounds.window :]
    spans.append(_span(f"last {len(tail)} round{'s' if len(tail) != 1 else ''}", tail))
    percentiles_of = next((d.percentiles_of for d in _active(rows[0][1])), "clat")
    per_round = tuple(row for _, _, row in rows)
    return ResponseTimes(
        point=key,
        percentiles_of=percentiles_of,
        rounds=per_round,
        spans=tuple(spans),
        needed=NEEDED,
        missing=sum(1 for r in per_round if r.five_nines_ms is None),
        most_ios=max(r.ios for r in per_round),
    )
