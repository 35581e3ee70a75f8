"""The reduction of a trace to what describes its workload (pure functions).

What it keeps (docs/replay.md): the I/O streams — block size × read/write ×
random/sequential — with their shares of I/Os and bytes; the read percentage; IOPS
and MB/s over time; the queue depth seen; the inter-arrival times; the device's
service times; the LBA heat (accesses per 1 % of the capacity).  Trims are counted
beside the streams, not in them.

An I/O is *sequential* when it starts where one of the last :data:`WINDOW` I/Os of
the same direction ended (several sequential streams interleave on a server), else
*random*.  The queue depth *seen* by an I/O is the number of I/Os outstanding when it
was issued, itself included (from the issue/completion pairs; I/Os whose completion
was not captured are left out of it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tkbench.workload.trace import DIRECTIONS, READ, TRIM, WRITE, Trace

WINDOW = 32  # recent I/O ends per direction a sequential I/O may continue
HEAT_BUCKETS = 100  # one per 1 % of the capacity
MAX_INTERVALS = 600  # points of the time series at most
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def sequential(trace: Trace, window: int = WINDOW) -> np.ndarray:
    """True for each I/O that starts where one of the ``window`` I/Os of its direction
    issued before it ended."""
    flags = np.zeros(len(trace), dtype=bool)
    for op in (READ, WRITE, TRIM):
        where = np.flatnonzero(trace.op == op)
        off = trace.offset[where]
        end = off + trace.size[where]
        mine = np.zeros(len(where), dtype=bool)
        for k in range(1, min(window, len(where) - 1) + 1):
            mine[k:] |= off[k:] == end[:-k]
        flags[where] = mine
    return flags


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def streams(trace: Trace, seq: np.ndarray) -> list[dict[str, Any]]:
    """The read and write streams (``rw``, ``bs`` in bytes, ``pattern``), most I/Os first,
    each with its I/Os, bytes and shares (percent) of the reads' and writes' I/Os and bytes."""
    rw = trace.op != TRIM
    total_ios = int(rw.sum())
    total_bytes = int(trace.size[rw].sum(dtype=np.uint64))
    # one key per stream: direction, size, sequential
    key = trace.op[rw].astype(np.int64) << 34 | trace.size[rw].astype(np.int64) << 1
    key |= seq[rw].astype(np.int64)
    found, counts = np.unique(key, return_counts=True)
    keys = {
        (k >> 34, (k >> 1) & ((1 << 33) - 1), bool(k & 1)): n
        for k, n in zip(found.tolist(), counts.tolist(), strict=True)
    }
    out: list[dict[str, Any]] = [
        {
            "rw": DIRECTIONS[op],
            "bs": size,
            "pattern": "seq" if s else "rand",
            "ios": n,
            "bytes": n * size,
            "share_ios": _pct(n, total_ios),
            "share_bytes": _pct(n * size, total_bytes),
        }
        for (op, size, s), n in keys.items()
    ]
    out.sort(key=lambda d: (-int(d["ios"]), str(d["rw"]), int(d["bs"]), str(d["pattern"])))
    return out


def _interval(duration_s: float) -> float:
    """The time series' step: 1 s, or more so that there are at most MAX_INTERVALS."""
    step = 1.0
    while duration_s / step > MAX_INTERVALS:
        step *= 2
    return step


def timeline(trace: Trace, duration_s: float) -> dict[str, Any]:
    """IOPS and MB/s (10^6 bytes) per interval, reads and writes apart."""
    step = _interval(duration_s)
    n = max(1, int(np.ceil(duration_s / step)))
    where = np.minimum((trace.issue_ns / 1e9 / step).astype(np.int64), n - 1)
    out: dict[str, Any] = {"interval_s": step}
    for op in (READ, WRITE):
        mine = trace.op == op
        ios = np.bincount(where[mine], minlength=n)
        nbytes = np.bincount(where[mine], weights=trace.size[mine].astype(np.float64), minlength=n)
        name = DIRECTIONS[op]
        out[f"{name}_iops"] = [round(float(v) / step, 3) for v in ios]
        out[f"{name}_mbps"] = [round(float(v) / step / 1e6, 3) for v in nbytes]
    return out


def _summary(values: np.ndarray, scale: float = 1.0) -> dict[str, Any]:
    if len(values) == 0:
        return {"samples": 0}
    v = values.astype(np.float64) / scale
    out: dict[str, Any] = {"samples": len(v), "mean": round(float(v.mean()), 3)}
    for p in PERCENTILES:
        out[f"p{p:g}"] = round(float(np.percentile(v, p)), 3)
    out["max"] = round(float(v.max()), 3)
    return out


def queue_depth(trace: Trace) -> dict[str, Any]:
    """The queue depth each I/O saw when issued (see the module's docstring), summarised,
    with the share (percent) of I/Os per depth."""
    known = trace.latency_ns >= 0
    issued = trace.issue_ns[known].astype(np.int64)
    done = np.sort(issued + trace.latency_ns[known])
    depth = np.arange(1, len(issued) + 1) - np.searchsorted(done, issued, side="right")
    out = _summary(depth)
    counts = np.bincount(depth) if len(depth) else np.zeros(0, dtype=np.int64)
    out["share"] = {str(d): _pct(int(c), len(depth)) for d, c in enumerate(counts) if c}
    return out


def heat(trace: Trace, capacity_bytes: int, buckets: int = HEAT_BUCKETS) -> list[int]:
    """Reads and writes that start in each 1/``buckets`` of the capacity."""
    rw = trace.op != TRIM
    if capacity_bytes <= 0:
        return [0] * buckets
    where = (trace.offset[rw].astype(np.float64) * buckets / capacity_bytes).astype(np.int64)
    return [int(c) for c in np.bincount(np.clip(where, 0, buckets - 1), minlength=buckets)]


def reduce(trace: Trace, capacity_bytes: int, duration_s: float) -> dict[str, Any]:
    """The whole reduction of ``trace``, captured for ``duration_s`` on a device of
    ``capacity_bytes``, as the workload file stores it (JSON types only)."""
    duration_s = max(duration_s, 1e-9)
    seq = sequential(trace)
    rw = trace.op != TRIM
    reads = trace.op == READ
    n_rw = int(rw.sum())
    rw_bytes = int(trace.size[rw].sum(dtype=np.uint64))
    latency: dict[str, Any] = {}
    for op in (READ, WRITE):
        mine = (trace.op == op) & (trace.latency_ns >= 0)
        latency[DIRECTIONS[op]] = _summary(trace.latency_ns[mine], scale=1e3)
    return {
        "ios": n_rw,
        "bytes": rw_bytes,
        "trims": int((~rw).sum()),
        "trim_bytes": int(trace.size[~rw].sum(dtype=np.uint64)),
        "duration_s": round(duration_s, 6),
        "capacity_bytes": capacity_bytes,
        "read_pct": _pct(int(reads.sum()), n_rw),
        "read_bytes_pct": _pct(int(trace.size[reads].sum(dtype=np.uint64)), rw_bytes),
        "random_pct": _pct(int((rw & ~seq).sum()), n_rw),
        "iops": round(n_rw / duration_s, 3),
        "mbps": round(rw_bytes / duration_s / 1e6, 3),
        "streams": streams(trace, seq),
        "timeline": timeline(trace, duration_s),
        "queue_depth": queue_depth(trace),
        "interarrival_us": _summary(np.diff(trace.issue_ns[rw].astype(np.int64)), scale=1e3),
        "latency_us": latency,
        "heat": heat(trace, capacity_bytes),
    }
