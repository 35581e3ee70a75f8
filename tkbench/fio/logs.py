"""fio's per-interval logs (``write_iops_log``, ``write_bw_log``, ``write_lat_log``
with ``log_avg_msec``) read back as one :class:`~tkbench.rundir.records.Series` per point.

fio writes one file per job clone, ``<prefix>_<kind>.<clone>.log``, each line
``time_ms, value, direction, bs, offset``: the value averaged over the window
that ends at ``time_ms`` (IOPS; KiB/s for bandwidth; nanoseconds for latency).
A window in which a clone did no I/O has no line (fio 3.33), so host idle
(``thinktime``) shows as missing windows; they become samples of 0 I/O here.
The clones' windows end within milliseconds of each other; a clone's window is
given to the sample whose nominal end is nearest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from tkbench.errors import FioJobError
from tkbench.rundir.records import Series

KIB = 1024
LATE = 2.5  # windows: a later line is the first after a gap without I/O


def prefix(job: str) -> str:
    """The log file prefix of a job section (relative to fio's working directory)."""
    return f"log_{job}"


def _lines(paths: Iterable[Path]) -> list[tuple[str, int, float, int]]:
    """(clone, time_ms, value, direction) of every line of ``paths``."""
    out = []
    for path in sorted(paths):
        clone = path.name.rsplit(".", 2)[-2]
        try:
            text = path.read_text(encoding="ascii", errors="replace")
        except OSError as exc:
            raise FioJobError(f"cannot read fio's log {path.name}: {exc.strerror}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split(",")]
            try:
                out.append((clone, int(parts[0]), float(parts[1]), int(parts[2])))
            except (IndexError, ValueError):
                raise FioJobError(f"fio's log {path.name}, line {n}: not a log line") from None
    return out


def _slots(
    lines: list[tuple[str, int, float, int]], first: int, step: float
) -> dict[tuple[str, int], int]:
    """The sample each (clone, window end) belongs to.  fio's windows are a little
    longer than asked (1,508 ms for 1,500), so nominal times drift apart from real
    ones over a long run; each clone's windows are therefore counted along its own
    lines: a line within LATE windows of the one before is the next sample (on a
    loaded machine fio writes a line up to about one and a half windows late), a
    longer gap of n windows (host idle, which is always longer) skips n - 1."""
    out: dict[tuple[str, int], int] = {}
    by_clone: dict[str, list[int]] = {}
    for clone, t, _, _ in lines:
        by_clone.setdefault(clone, []).append(t)
    for clone, times in by_clone.items():
        prev = None
        b = 0
        for t in sorted(set(times)):
            if prev is None:
                b = max(0, math.floor((t - first) / step + 0.5))
            elif t - prev < LATE * step:
                b += 1  # the next window, however late fio wrote its line
            else:
                b += math.floor((t - prev) / step + 0.5)
            out[(clone, t)] = b
            prev = t
    return out


def read_series(workdir: Path, job: str, interval: float) -> Series | None:
    """The per-interval samples of the job section ``job`` (all its clones and both
    directions summed; latency I/O-weighted), or None when fio wrote no log."""
    base = prefix(job)
    iops = _lines(workdir.glob(f"{base}_iops.*.log"))
    if not iops:
        return None
    bw = _lines(workdir.glob(f"{base}_bw.*.log"))
    lat = _lines(workdir.glob(f"{base}_lat.*.log"))
    step = interval * 1000.0
    first = min(t for _, t, _, _ in iops)
    slot = _slots(iops, first, step)

    def bucket(clone: str, t: int) -> int:
        return slot.get((clone, t), max(0, math.floor((t - first) / step + 0.5)))

    n = max(slot.values()) + 1
    io = [0.0] * n
    bws = [0.0] * n
    lat_weight = [0.0] * n
    lat_sum = [0.0] * n
    weights: dict[tuple[str, int, int], float] = {}
    for clone, t, value, direction in iops:
        b = bucket(clone, t)
        io[b] += value
        weights[(clone, b, direction)] = weights.get((clone, b, direction), 0.0) + value
    for clone, t, value, _ in bw:
        b = bucket(clone, t)
        if b < n:
            bws[b] += value * KIB
    for clone, t, value, direction in lat:
        b = bucket(clone, t)
        w = weights.get((clone, b, direction), 0.0)
        if b < n and w > 0:
            lat_sum[b] += value * w
            lat_weight[b] += w
    return Series(
        interval=interval,
        t_s=tuple(round((i + 1) * interval, 3) for i in range(n)),
        iops=tuple(round(v, 3) for v in io),
        bw_bytes=tuple(round(v, 1) for v in bws),
        lat_mean_ns=tuple(
            round(s / w, 1) if w > 0 else 0.0 for s, w in zip(lat_sum, lat_weight, strict=True)
        ),
    )
