"""Several fio jobs' results as one: the clones of a job (``numjobs``) and the hosts of
a client/server run, summed as fio sums its jobs' reports, their latency statistics
and distributions merged (:func:`combine`, :func:`combine_dirs`).  Pure functions."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

from tkbench.fio.output import (
    DEFAULT_PERCENTILES,
    DirStats,
    JobStats,
    LatStats,
    percentile_from_bins,
)

_T = TypeVar("_T")


def combine(jobs: list[JobStats], name: str) -> JobStats:
    """Merge several entries of one workload into one, as if reported together.

    Intended for entries that ran at the same time: numjobs without group_reporting,
    or the same job on several hosts in client/server mode.  Per direction:

    * io_bytes, total_ios, iops and bw_bytes are summed; runtime_ms is the maximum;
    * slat/clat/lat: mean weighted by sample count (``N``; else total_ios; else
      io_bytes), minimum of minima, maximum of maxima, standard deviation pooled
      about the merged mean (exactly as fio merges with group_reporting when the
      weights are sample counts);
    * bins are summed and percentiles recomputed from them.  Without bins, a single
      contributing entry keeps its percentiles; with several, each percentile is the
      MAXIMUM over the entries: a conservative upper bound, since a mixture's p-th
      percentile never exceeds the largest p-th percentile of its parts.

    Job level: error is the first non-zero one, job_runtime_ms is summed (as fio does
    for merged jobs), elapsed_s is the maximum, options/hostname/port are kept where
    all entries agree, job_start_ms is the earliest.
    """
    if not jobs:
        raise ValueError("combine() needs at least one job")
    first = jobs[0]
    return JobStats(
        name=name,
        groupid=first.groupid,
        error=next((j.error for j in jobs if j.error != 0), 0),
        read=combine_dirs([j.read for j in jobs]),
        write=combine_dirs([j.write for j in jobs]),
        trim=combine_dirs([j.trim for j in jobs]),
        mixed=combine_dirs([j.mixed for j in jobs]),
        job_runtime_ms=_sum_opt(j.job_runtime_ms for j in jobs),
        elapsed_s=_max_opt(j.elapsed_s for j in jobs),
        hostname=_common(j.hostname for j in jobs),
        port=_common(j.port for j in jobs),
        options=_common_items([j.options for j in jobs]),
        job_start_ms=_min_opt(j.job_start_ms for j in jobs),
    )


def combine_dirs(dirs: list[DirStats]) -> DirStats:
    """Merge one direction of several concurrent entries (see :func:`combine`)."""
    if not dirs:
        return DirStats()
    totals = [d.total_ios for d in dirs]
    pcts, bins = _merge_distribution(dirs, lambda d: (d.percentiles, d.bins))
    lat_pcts, lat_bins = _merge_distribution(dirs, lambda d: (d.lat_percentiles, d.lat_bins))
    return DirStats(
        io_bytes=sum(d.io_bytes for d in dirs),
        total_ios=None if None in totals else sum(t or 0 for t in totals),
        iops=sum(d.iops for d in dirs),
        bw_bytes=sum(d.bw_bytes for d in dirs),
        runtime_ms=max(d.runtime_ms for d in dirs),
        lat=_merge_lat(dirs, lambda d: d.lat),
        clat=_merge_lat(dirs, lambda d: d.clat),
        slat=_merge_lat(dirs, lambda d: d.slat),
        percentiles=pcts,
        bins=bins,
        lat_percentiles=lat_pcts,
        lat_bins=lat_bins,
    )


def _merge_lat(dirs: list[DirStats], pick: Callable[[DirStats], LatStats]) -> LatStats:
    lats = [pick(d) for d in dirs]
    weights, counted = _lat_weights(dirs, lats)
    samples = [s.samples for s in lats]
    merged_samples = None if None in samples else sum(s or 0 for s in samples)
    parts = [(w, s) for w, s in zip(weights, lats, strict=True) if w > 0]
    if not parts:
        return LatStats(samples=merged_samples)
    total = sum(w for w, _ in parts)
    mean = sum(w * s.mean for w, s in parts) / total
    spread = sum(w * (s.mean - mean) ** 2 for w, s in parts)
    if counted:  # unbiased (n - 1) form, as fio reports it
        within = sum((w - 1) * s.stddev**2 for w, s in parts)
        variance = (within + spread) / (total - 1) if total > 1 else 0.0
    else:
        variance = (sum(w * s.stddev**2 for w, s in parts) + spread) / total
    return LatStats(
        mean=mean,
        min=min(s.min for _, s in parts),
        max=max(s.max for _, s in parts),
        stddev=math.sqrt(max(variance, 0.0)),
        samples=merged_samples,
    )


def _lat_weights(dirs: list[DirStats], lats: list[LatStats]) -> tuple[list[float], bool]:
    """Weights for merging latency summaries and whether they are sample counts."""
    if all(s.samples is not None for s in lats):
        return [float(s.samples or 0) for s in lats], True
    if all(d.total_ios is not None for d in dirs):
        return [float(d.total_ios or 0) for d in dirs], True
    return [float(d.io_bytes) for d in dirs], False


def _merge_distribution(
    dirs: list[DirStats],
    pick: Callable[[DirStats], tuple[dict[float, float], dict[int, int]]],
) -> tuple[dict[float, float], dict[int, int]]:
    """Merged (percentiles, bins) of the entries that did I/O in this direction."""
    active = [pick(d) for d in dirs if d.did_io]
    if not active:
        return {}, {}
    if all(bins for _, bins in active):
        merged = _sum_bins(bins for _, bins in active)
        wanted = sorted({p for pcts, _ in active for p in pcts}) or list(DEFAULT_PERCENTILES)
        return {p: percentile_from_bins(merged, p) for p in wanted}, merged
    if len(active) == 1:
        return dict(active[0][0]), {}
    common = set.intersection(*(set(pcts) for pcts, _ in active))
    return {p: max(pcts[p] for pcts, _ in active) for p in sorted(common)}, {}


def _sum_bins(all_bins: Iterable[dict[int, int]]) -> dict[int, int]:
    merged: Counter[int] = Counter()
    for bins in all_bins:
        merged.update(bins)
    return dict(sorted(merged.items()))


def _sum_opt(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _max_opt(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _min_opt(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _common(values: Iterable[_T | None]) -> _T | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _common_items(dicts: list[dict[str, str]]) -> dict[str, str]:
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}
