"""The report's result tables of a test: block size x R/W mix matrices, the latency
table with pooled percentiles (and, for a mixed point with histograms, a row of
reads and writes together), and the response-time histograms (pure)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tkbench.analysis.window import (
    DIRECTIONS,
    DirMean,
    PointMean,
    find_point,
    merge_bins,
    samples_needed,
)
from tkbench.fio.output import percentile_from_bins
from tkbench.report.labels import mix_caption, mix_label
from tkbench.report.model import Histogram, LatencyRow, Matrix
from tkbench.rundir.records import Round, TestPlan
from tkbench.units import size_label
from tkbench.vocab import MS

HIST_BINS_PER_DECADE = 12


def matrix(
    key: str,
    caption: str,
    unit: str,
    plan: TestPlan,
    means: Mapping[tuple[int, int], PointMean],
    value: Any,
) -> Matrix:
    """A block size x R/W mix table of ``value(point_mean)``."""
    sizes, mx = plan.block_sizes, plan.mixes
    rows = []
    for bs in sizes:
        row: list[float | None] = []
        for m in mx:
            pm = means.get((bs, m))
            v = value(pm) if pm is not None else None
            row.append(v if v is None or math.isfinite(v) else None)
        rows.append(tuple(row))
    return Matrix(
        key=key,
        caption=caption,
        unit=unit,
        row_title="Block size",
        col_title="R/W mix (% read / % write)",
        rows=tuple(size_label(b) for b in sizes),
        cols=tuple(mix_caption(m) for m in mx),
        values=tuple(rows),
    )


def matrices_for(
    metric: str, plan: TestPlan, means: Mapping[tuple[int, int], PointMean]
) -> tuple[Matrix, ...]:
    iops = matrix("iops", "IOPS", "IOPS", plan, means, lambda p: p.iops)
    bw = matrix("bw", "Throughput", "MB/s", plan, means, lambda p: p.bw_mbs)
    if metric == "iops":
        return (iops,)
    if metric == "bw":
        return (bw,)
    if metric == "lat_mean":
        return (
            matrix("lat_mean", "Mean response time", "ms", plan, means, lambda p: p.lat_mean_ms),
            matrix("lat_max", "Maximum response time", "ms", plan, means, lambda p: p.lat_max_ms),
            iops,
        )
    return (iops, bw)


def percentile_names(plan: TestPlan, means: Mapping[tuple[int, int], PointMean]) -> tuple[str, ...]:
    asked = [f"{p:g}" for p in plan.percentiles]
    if asked:
        return tuple(asked)
    found: set[str] = set()
    for pm in means.values():
        for d in pm.directions.values():
            found.update(d.percentiles_ms)
    return tuple(k for k in ("99", "99.9", "99.99", "99.999") if k in found)


COMBINED = "R+W"  # the latency table's direction for reads and writes together


def latency_rows(
    plan: TestPlan, means: Mapping[tuple[int, int], PointMean], names: Sequence[str]
) -> tuple[LatencyRow, ...]:
    """Every measured direction of every point, and after a mixed point's read and
    write rows its ``R+W`` row: percentiles of the summed histograms, IOPS of both,
    the point's I/O-weighted mean and its largest response time."""
    rows: list[LatencyRow] = []
    last: tuple[int, int] | None = None
    for bs, m, direction, d in measured_directions(plan, means):
        if last is not None and last != (bs, m):
            rows += _combined_row(means[last], names)
        last = (bs, m)
        rows.append(
            LatencyRow(
                bs=size_label(bs),
                mix=mix_label(m),
                direction=direction,
                iops=d.iops,
                mean_ms=d.mean_ms,
                max_ms=d.max_ms,
                percentiles_ms=tuple(d.percentiles_ms.get(n) for n in names),
                samples=d.samples,
            )
        )
    if last is not None:
        rows += _combined_row(means[last], names)
    return tuple(rows)


def _combined_row(pm: PointMean, names: Sequence[str]) -> list[LatencyRow]:
    c = pm.combined
    if c is None:
        return []
    return [
        LatencyRow(
            bs=size_label(pm.bs),
            mix=mix_label(pm.read_pct),
            direction=COMBINED,
            iops=sum(d.iops for d in pm.directions.values()),
            mean_ms=pm.lat_mean_ms,
            max_ms=pm.lat_max_ms,
            percentiles_ms=tuple(c.percentiles_ms.get(n) for n in names),
            samples=c.samples,
        )
    ]


def filled_columns(rows: Sequence[Sequence[float | None]]) -> tuple[int, ...]:
    """The columns (indexes) of ``rows`` with a value in at least one row: a table
    leaves out a percentile column no row has enough I/Os for."""
    width = max((len(r) for r in rows), default=0)
    return tuple(i for i in range(width) if any(i < len(r) and r[i] is not None for r in rows))


def blank_note(rows: Sequence[LatencyRow], names: Sequence[str]) -> str:
    """What the latency table lacks for too few I/Os (:func:`samples_needed`): the
    percentile columns no row has enough for (the table leaves them out,
    :func:`filled_columns`) and every dash of the others, with its row's I/Os ("" when
    nothing is missing)."""
    need = {n: samples_needed(float(n)) for n in names}
    shown = {names[i] for i in filled_columns([r.percentiles_ms for r in rows])}
    left_out = [n for n in names if n not in shown] if rows else []
    dashes = []
    for row in rows:
        short = [
            n
            for n, v in zip(names, row.percentiles_ms, strict=True)
            if n in shown and v is None and row.samples < need[n]
        ]
        if short:
            dashes.append(
                f"{row.bs} {row.mix} {row.direction} ({row.samples:,} I/Os): "
                + ", ".join(f"{n} % (needs {need[n]:,})" for n in short)
            )
    short_everywhere = [n for n in left_out if all(r.samples < need[n] for r in rows)]
    unrecorded = [n for n in left_out if n not in short_everywhere]
    text = []
    if short_everywhere:
        needs = ", ".join(f"{n} % needs {need[n]:,}" for n in short_everywhere)
        text.append(
            f"No row has enough I/Os for {_and(short_everywhere)}, so the table leaves "
            f"{_them(short_everywhere)} out ({needs})."
        )
    if unrecorded:
        text.append(
            f"No round recorded {_and(unrecorded)}, so the table leaves {_them(unrecorded)} out."
        )
    if dashes:
        text.append(f"A dash marks a percentile its row has too few I/Os for: {'; '.join(dashes)}.")
    return " ".join(text)


def _them(names: Sequence[str]) -> str:
    return "it" if len(names) == 1 else "them"


def _and(names: Sequence[str]) -> str:
    """``99.9 %, 99.99 % and 99.999 %``."""
    words = [f"{n} %" for n in names]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def measured_directions(
    plan: TestPlan, means: Mapping[tuple[int, int], PointMean]
) -> Iterator[tuple[int, int, str, DirMean]]:
    """(block size, read %, direction, its window means) of every planned point's
    direction that did I/O in the window, in the plan's order (sizes, then mixes)."""
    for bs in plan.block_sizes:
        for m in plan.mixes:
            pm = means.get((bs, m))
            if pm is None:
                continue
            for direction in DIRECTIONS:
                d = pm.directions.get(direction)
                if d is not None:
                    yield bs, m, direction, d


def log_histogram(
    bins: Mapping[int, int], per_decade: int = HIST_BINS_PER_DECADE
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Re-bin fio's buckets onto logarithmically spaced edges in ms."""
    values = np.array(sorted(bins), dtype=float) / MS
    counts = np.array([bins[k] for k in sorted(bins)], dtype=float)
    values = np.maximum(values, 1e-6)
    lo = math.floor(math.log10(values.min()) * per_decade) / per_decade
    hi = (math.floor(math.log10(values.max()) * per_decade) + 1) / per_decade
    n = max(1, round((hi - lo) * per_decade))
    edges = np.logspace(lo, hi, n + 1)
    hist, _ = np.histogram(values, bins=edges, weights=counts)
    return tuple(float(e) for e in edges), tuple(int(c) for c in hist)


def histograms(
    plan: TestPlan,
    records: Sequence[Round],
    means: Mapping[tuple[int, int], PointMean],
) -> tuple[Histogram, ...]:
    out = []
    for bs, m, direction, dm in measured_directions(plan, means):
        bins = merge_bins(
            getattr(p, direction) for r in records if (p := find_point(r, bs, m)) is not None
        )
        if not bins:
            continue
        edges, counts = log_histogram(bins)
        out.append(
            Histogram(
                point=f"{size_label(bs)} {mix_label(m)}",
                bs=size_label(bs),
                mix=mix_label(m),
                direction=direction,
                edges_ms=edges,
                counts=counts,
                total=sum(bins.values()),
                mean_ms=dm.mean_ms,
                p9999_ms=percentile_from_bins(bins, 99.99) / MS,
                max_ms=dm.max_ms,
            )
        )
    return tuple(out)
