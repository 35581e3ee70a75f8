"""The fio side of a captured workload (pure, but for :func:`write_iolog`):

* **native replay** — the trace written as a fio iolog (version 3: a timestamp in µs
  per I/O) and the job options that replay it on a target with ``read_iolog``,
  ``replay_redirect`` (the target named twice: in the log and as the redirect, so the
  log can never reach another device), at the captured timing or as fast as possible
  (``replay_no_stall``), offsets kept, scaled or wrapped to the target's capacity;
* **the applied workload** — the streams that cover at least ``coverage`` of the
  I/Os as one fio job: per-direction ``bssplit``, ``rwmixread``, per-direction
  ``percentage_random`` and a ``zoned`` ``random_distribution`` from the LBA heat.

Both return job options (a mapping of fio option to value) for one job section;
the caller adds the target's own options (ioengine, direct, run time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tkbench.errors import InputError
from tkbench.fiovalue import check_value
from tkbench.workload.tkw import Stream, Workload
from tkbench.workload.trace import DIRECTIONS

MAPPINGS = ("keep", "scale", "wrap")
TIMINGS = ("captured", "fast")
DEFAULT_COVERAGE = 0.9
# neighbouring heat buckets within this factor of their zone's mean are one zone
UNIFORM_SPREAD = 0.25
MAX_QUEUE_DEPTH = 256
PAD_NOTE = (
    "fio drops the I/Os in flight at the end of a replayed log: the log ends with "
    "iodepth - 1 reads of one block at offset 0 to be dropped instead"
)


def map_offsets(
    offsets: np.ndarray, sizes: np.ndarray, source: int, target: int, how: str, align: int
) -> np.ndarray:
    """Offsets of a trace from a device of ``source`` bytes on one of ``target`` bytes:
    ``keep`` (InputError when an I/O would pass the target's end), ``scale`` (in
    proportion) or ``wrap`` (modulo the target's capacity), aligned down to ``align``
    bytes and moved back where an I/O would pass the end."""
    if how not in MAPPINGS:
        raise InputError(f"offset mapping {how!r}: use one of {', '.join(MAPPINGS)}")
    if align <= 0 or align & (align - 1):
        raise InputError(f"alignment {align}: give a power of two")
    off = offsets.astype(np.int64)
    size = sizes.astype(np.int64)
    if len(off) and int(size.max()) > target:
        raise InputError(f"the trace has I/Os of {int(size.max())} bytes, more than the target")
    if how == "keep":
        if len(off) and int((off + size).max()) > target:
            raise InputError(
                f"the trace reaches byte {int((off + size).max())}, past the target's "
                f"{target}: scale or wrap the offsets"
            )
    elif how == "scale":
        off = (off.astype(np.float64) * (target / source)).astype(np.int64)
    else:
        off = off % target
    off -= off % align
    over = off + size - target
    off[over > 0] -= over[over > 0]
    off -= off % align
    return np.maximum(off, 0).astype(np.uint64)


def replay_depth(workload: Workload) -> int:
    """The replay's ``iodepth``: the largest queue depth the capture saw (1 to 256)."""
    depth = int(workload.reduction.queue_depth.max or 1)
    return max(1, min(depth, MAX_QUEUE_DEPTH))


def iolog_text(
    workload: Workload,
    target: str,
    target_bytes: int,
    *,
    mapping: str = "wrap",
    align: int = 512,
) -> str:
    """The trace as a fio version 3 iolog on ``target`` (trims included).

    fio 3.33 does not complete the I/Os still in flight when its replay reaches the
    end of the log (up to ``iodepth - 1``, whatever the engine: counted in
    ``total_ios``, never done; measured at depths 2, 4 and 8).  So the log ends with
    :func:`replay_depth` ``- 1`` reads of ``align`` bytes at offset 0 for it to drop in
    their place: fio's read count includes them (:data:`PAD_NOTE`), and a real I/O
    slower than them may still be dropped."""
    check_value(target, "replay target")
    trace = workload.trace
    off = map_offsets(
        trace.offset, trace.size, workload.capacity_bytes, target_bytes, mapping, align
    )
    us = (trace.issue_ns // np.uint64(1000)).tolist()
    name = target.replace(" ", "\\ ")
    lines = ["fio version 3 iolog", f"0 {name} add", f"0 {name} open"]
    actions = [DIRECTIONS[o] for o in range(3)]
    for t, o, s, op in zip(us, off.tolist(), trace.size.tolist(), trace.op.tolist(), strict=True):
        lines.append(f"{t} {name} {actions[op]} {o} {s}")
    last = us[-1] if us else 0
    lines += [f"{last} {name} read 0 {align}"] * (replay_depth(workload) - 1)
    lines.append(f"{last} {name} close")
    return "\n".join(lines) + "\n"


def write_iolog(path: Path, text: str) -> None:
    """The iolog to a new file of the caller's own (a run directory's scratch)."""
    with open(path, "x", encoding="ascii") as fh:
        fh.write(text)


def replay_options(
    workload: Workload, target: str, iolog: Path, *, timing: str = "captured"
) -> dict[str, object]:
    """Job options that replay ``iolog`` (from :func:`iolog_text`) on ``target``."""
    if timing not in TIMINGS:
        raise InputError(f"replay timing {timing!r}: use one of {', '.join(TIMINGS)}")
    check_value(target, "replay target")
    check_value(str(iolog), "iolog")
    return {
        "read_iolog": str(iolog),
        "replay_redirect": target,
        "replay_no_stall": timing == "fast",
        "iodepth": replay_depth(workload),
    }


def percentages(weights: Sequence[float]) -> list[int]:
    """Whole percentages of ``weights`` that add up to exactly 100 (largest remainder):
    fio's ``bssplit`` and ``zoned`` take whole numbers only."""
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("no weight")
    exact = [100.0 * w / total for w in weights]
    out = [math.floor(e) for e in exact]
    order = sorted(range(len(exact)), key=lambda i: (out[i] - exact[i], i))
    for i in order[: 100 - sum(out)]:
        out[i] += 1
    return out


@dataclass(frozen=True)
class Applied:
    """The applied workload: its job options and the streams it was made of."""

    options: dict[str, object]
    streams: list[Stream]
    coverage_pct: float  # of the captured reads' and writes' I/Os


def select_streams(streams: Sequence[Stream], coverage: float = DEFAULT_COVERAGE) -> list[Stream]:
    """The most frequent streams until they hold at least ``coverage`` of the I/Os."""
    if not 0 < coverage <= 1:
        raise InputError(f"stream coverage {coverage}: give more than 0 and at most 1")
    ranked = sorted(streams, key=lambda s: -s.share_ios)
    chosen: list[Stream] = []
    held = 0.0
    for s in ranked:
        if held >= coverage * 100 - 1e-9:
            break
        chosen.append(s)
        held += s.share_ios
    return chosen


def zoned(heat: Sequence[int]) -> str:
    """``random_distribution`` from a heat map (accesses per 1/len of the capacity).

    Neighbouring buckets merge into one zone while each stays within the zone's mean
    by :data:`UNIFORM_SPREAD` or by three standard deviations of counting noise; one
    zone is ``random``, more are ``zoned:ACCESS/SIZE:...`` in whole percentages."""
    zones: list[list[int]] = []  # [accesses, buckets]
    for h in heat:
        if zones:
            accesses, buckets = zones[-1]
            mean = accesses / buckets
            if abs(h - mean) <= max(UNIFORM_SPREAD * mean, 3 * math.sqrt(max(mean, 1.0))):
                zones[-1] = [accesses + h, buckets + 1]
                continue
        zones.append([h, 1])
    if len(zones) <= 1 or sum(heat) <= 0:
        return "random"
    access = percentages([a for a, _ in zones])
    size = percentages([n for _, n in zones])
    return "zoned:" + ":".join(f"{a}/{s}" for a, s in zip(access, size, strict=True))


def applied_options(workload: Workload, coverage: float = DEFAULT_COVERAGE) -> Applied:
    """One fio job applying the workload's main streams (see the module's docstring)."""
    red = workload.reduction
    chosen = select_streams(red.streams, coverage)
    if not chosen:
        raise InputError("the workload has no reads or writes to apply")
    by_dir: dict[str, list[Stream]] = {"read": [], "write": []}
    for s in chosen:
        by_dir[s.rw].append(s)
    ios = {d: sum(s.ios for s in ss) for d, ss in by_dir.items()}
    splits: list[str] = []
    random_pct: list[str] = []
    for d in ("read", "write"):
        sizes: dict[int, int] = {}
        for s in by_dir[d]:
            sizes[s.bs] = sizes.get(s.bs, 0) + s.ios
        if not sizes:
            splits.append("")
            random_pct.append("0")
            continue
        bss = sorted(sizes)
        shares = percentages([sizes[b] for b in bss])
        splits.append(":".join(f"{b}/{p}" for b, p in zip(bss, shares, strict=True)))
        rand = sum(s.ios for s in by_dir[d] if s.pattern == "rand")
        random_pct.append(str(round(100 * rand / ios[d])))
    total = ios["read"] + ios["write"]
    rw = "randrw" if ios["read"] and ios["write"] else "randread" if ios["read"] else "randwrite"
    # norandommap: with fio's map of used blocks, an I/O is cut short where the next
    # blocks were used already, and the block sizes drift from the split (measured:
    # 233 of about 3,400 writes 128 KiB instead of about 1,500, the rest cut to 4-124 KiB)
    options: dict[str, object] = {"rw": rw, "norandommap": True}
    if rw == "randrw":
        options["rwmixread"] = round(100 * ios["read"] / total)
        options["bssplit"] = ",".join(splits)
        options["percentage_random"] = ",".join(random_pct)
    else:
        one = 0 if rw == "randread" else 1
        options["bssplit"] = splits[one]
        options["percentage_random"] = random_pct[one]
    options["random_distribution"] = zoned(red.heat)
    held = sum(s.share_ios for s in chosen)
    return Applied(options, chosen, round(held, 3))
