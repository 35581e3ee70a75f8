#!/usr/bin/env python3
"""How much of its write performance the SSD emulator recovers after host idle time
and after a purge, measured with real fio: figures tests/test_emulator.py no longer
asserts.

    .venv/bin/python benchmarks/emulator_recovery.py [--reps N]

Per repetition, on a new emulator (16 MiB, the configuration of
``test_idle_time_recovers_part_of_the_performance``: much spare flash and costly
erases, background garbage collection after 500 ms of idle): 2.5 x its capacity of
random writes, then 4 KiB random writes for 0.4 s ("busy"), 1.5 s of idle, and
the same 0.4 s again ("rested").  The recovery is rested IOPS / busy IOPS.

The emulator is a Python program serving fio over NBD: on a busy CPU its own
overhead, not the flash model, limits both measurements, and the ratio shrinks
towards 1 (the issue that moved it here: 1.22 on a loaded 2-core machine, where
the test asked for 1.3).  The test keeps what load cannot change: background
garbage collection relocated pages during the idle time.  The same recovery in
the flash model's own simulated time is asserted exactly by
``test_idle_time_lets_background_gc_recover``.

Then, per repetition, on another new emulator (16 MiB, defaults, the flow of
``test_sustained_random_writes_cost_gc_and_a_purge_is_seen``): random-write IOPS
fresh, after 4 x its capacity of random writes ("steady") and after a purge (a
whole trim), for the same reason measured here and not asserted there.

Then, per repetition, on a third new emulator (16 MiB, 80 MB/s, the flow of
``test_queue_depth_block_size_and_direction``): 4 KiB random reads at T1/QD1 and at
T2/QD8, whose IOPS and mean latencies that test no longer compares (the emulator's
own overhead on a busy CPU narrows both ratios; the model's latency growth with
depth is what they show).

The last line is ``idle_recovery_median=X min=Y max=Z fresh_over_steady=F
purged_over_steady=P qd16_over_qd1=Q latency_qd16_over_qd1=R reps=N load=L`` (X,
Y, Z: rested / busy; F, P, Q, R: medians; L: the one-minute load average when the
measurement ended).

Last measured (fio 3.33, Debian 12, 2 cores shared with other jobs), 5
repetitions each time: first the idle recovery alone, at a load average of
2.3-7 (4.2 at its end), busy 6,000-6,200 IOPS:

    idle_recovery_median=1.54 min=1.44 max=1.59 reps=5 load=4.2

then everything, at a load average of 1.7 (fresh 8,800-9,100 IOPS, steady
3,050-3,150, purged 7,900-9,000):

    idle_recovery_median=1.59 min=1.58 max=1.62 fresh_over_steady=2.92
    purged_over_steady=2.85 reps=5 load=1.7   (one line)

then with the queue depths' ratios, at a load average of 16 (busy 3,400-5,800
IOPS; one repetition's idle recovery fell to 0.71):

    idle_recovery_median=1.21 min=0.71 max=1.26 fresh_over_steady=2.64
    purged_over_steady=2.61 qd16_over_qd1=3.59 latency_qd16_over_qd1=4.49
    reps=3 load=15.8   (one line)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ of this checkout

from tests.test_emulator import IDLE_RECOVERY, fio, fresh_steady_purged, iops, queue_depths
from tkbench.emulator.launcher import start_emulator


def one(tmp: Path) -> tuple[float, float, dict[str, object]]:
    """(busy IOPS, rested IOPS, the emulator's counters) of one new emulator."""
    e = start_emulator(tmp / "e.sock", "16M", seed=1, **IDLE_RECOVERY)
    try:
        fio(e.uri, "randwrite", runtime=None, io_size="20M", iodepth=16)  # 2.5x capacity
        busy = iops(fio(e.uri, "randwrite", runtime="400ms"))
        time.sleep(1.5)
        rested = iops(fio(e.uri, "randwrite", runtime="400ms"))
    finally:
        e.stop()
    return busy, rested, e.stats() or {}


def purge(tmp: Path) -> tuple[float, float, float]:
    """(fresh, steady, purged) random-write IOPS of one new emulator."""
    e = start_emulator(tmp / "p.sock", "16M", seed=1)
    try:
        return fresh_steady_purged(e.uri)
    finally:
        e.stop()


def depth(tmp: Path) -> tuple[float, float]:
    """(QD16 over QD1 random-read IOPS, their mean latencies' ratio) of a new emulator."""
    e = start_emulator(tmp / "q.sock", "16M", seed=1, max_mbps=80)
    try:
        qd1, qd16, _, _ = queue_depths(e.uri)
    finally:
        e.stop()
    lat1, lat16 = (r["read"]["clat_ns"]["mean"] for r in (qd1, qd16))
    return iops(qd16) / iops(qd1), lat16 / lat1


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    args = ap.parse_args()
    ratios, slowed, restored, deeper, longer = [], [], [], [], []
    for _ in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="tkbemu-", dir="/tmp") as tmp:
            busy, rested, stats = one(Path(tmp))
            fresh, steady, purged = purge(Path(tmp))
            qd_iops, qd_lat = depth(Path(tmp))
        deeper.append(qd_iops)
        longer.append(qd_lat)
        ratios.append(rested / busy)
        slowed.append(fresh / steady)
        restored.append(purged / steady)
        print(
            json.dumps(
                {
                    "busy_iops": round(busy),
                    "rested_iops": round(rested),
                    "recovery": round(rested / busy, 3),
                    "bg_gc_pages_relocated": stats.get("bg_gc_pages_relocated"),
                    "fresh_iops": round(fresh),
                    "steady_iops": round(steady),
                    "purged_iops": round(purged),
                    "qd16_over_qd1_iops": round(qd_iops, 3),
                    "qd16_over_qd1_latency": round(qd_lat, 3),
                }
            )
        )
    print(
        f"idle_recovery_median={statistics.median(ratios):.2f} min={min(ratios):.2f} "
        f"max={max(ratios):.2f} fresh_over_steady={statistics.median(slowed):.2f} "
        f"purged_over_steady={statistics.median(restored):.2f} "
        f"qd16_over_qd1={statistics.median(deeper):.2f} "
        f"latency_qd16_over_qd1={statistics.median(longer):.2f} reps={len(ratios)} "
        f"load={os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
