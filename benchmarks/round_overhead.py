#!/usr/bin/env python3
"""Idle time between the points of a tkbench round, and tkbench's IOPS overhead.

Run as root (it attaches a loop device):  .venv/bin/python benchmarks/round_overhead.py

In one run, on a loop device (direct I/O to a backing file):

1. gaps: a round of the quick profile's IOPS points is run the way the engine
   runs it (one fio process, points handed over by tkbench.handoff), with fio's
   own latency logs (``log_unix_epoch``, 1 ms averaging windows, one log per
   point).  The gap between two points is the first I/O of the next point minus
   the last completion of the previous one; a negative gap is an overlap and
   counts as a failure.  The same round with fio's ``stonewall`` instead of the
   hand-off is measured as the baseline.
2. ratio: tkbench's IOPS per point (rounds without logs) against the same
   point run as a hand-written fio command line, interleaved, summed over all
   points and repetitions.

The last line is ``median_gap_ms=X max_gap_ms=Y ratio=Z``.  Exit status 1 if any
point overlapped its predecessor.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from tkbench import jobfile, plan, profile
from tkbench.fiojson import parse
from tkbench.plan import Point

SECTION = re.compile(r"^\[(p\d{3})_[^\]]*\]$", re.MULTILINE)


def attach_loop(backing: Path, size: int) -> str:
    with open(backing, "wb") as fh:
        fh.truncate(size)
    # fill it once so reads hit allocated pages
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={backing}", "bs=1M", f"count={size >> 20}", "status=none"],
        check=True,
    )
    out = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def with_logs(text: str, logdir: Path) -> str:
    """Give every point its own epoch-stamped latency log (1 ms windows)."""

    def add(m: re.Match[str]) -> str:
        return f"{m.group(0)}\nwrite_lat_log={logdir}/{m.group(1)}\nlog_avg_msec=1"

    return SECTION.sub(add, text)


def stonewalled(text: str) -> str:
    """The baseline: fio's own sequencing (stonewall), no startdelay, no hand-off."""
    text = re.sub(r"^startdelay=.*$", "startdelay=0ms\nstonewall=1", text, flags=re.MULTILINE)
    return re.sub(r"^exec_(pre|post)run=.*\n", "", text, flags=re.MULTILINE)


def run_fio(text: str, workdir: Path) -> dict[str, float]:
    job = workdir / "job.fio"
    job.write_text(text)
    out = subprocess.run(
        ["fio", "--output-format=json", str(job)],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=True,
    )
    res = parse(out.stdout)
    return {j.name.split("_")[0]: j.read.iops + j.write.iops for j in res.jobs}


def spans(logdir: Path) -> dict[str, tuple[float, float]]:
    """Per point: (first I/O issue, last completion) in epoch ms."""
    out: dict[str, tuple[float, float]] = {}
    for f in logdir.glob("p*_lat.*.log"):
        point = f.name.split("_")[0]
        lo, hi = out.get(point, (float("inf"), float("-inf")))
        for line in f.read_text().splitlines():
            t_ms, lat_ns = (int(x) for x in line.split(",")[:2])
            # a window stamped t holds completions in (t-1, t]; issue = completion - latency
            lo = min(lo, t_ms - 1 - lat_ns / 1e6)
            hi = max(hi, t_ms)
        out[point] = (lo, hi)
    return out


def gaps(logdir: Path) -> list[float]:
    s = spans(logdir)
    keys = sorted(s)
    return [s[b][0] - s[a][1] for a, b in itertools.pairwise(keys)]


def hand_written(point: Point, dev: str, size: int) -> list[str]:
    args = [
        "fio",
        "--output-format=json",
        f"--name={point.job_name}",
        f"--filename={dev}",
        "--ioengine=libaio",
        "--direct=1",
        "--thread",
        "--group_reporting",
        f"--rw={point.rw}",
        f"--bs={point.bs}",
        f"--iodepth={point.iodepth}",
        f"--numjobs={point.numjobs}",
        "--time_based",
        f"--runtime={int(point.runtime * 1000)}ms",
        f"--size={size}",
        "--norandommap",
        "--randrepeat=0",
        "--refill_buffers",
    ]
    if point.rw in ("randrw", "rw"):
        args.append(f"--rwmixread={point.mix.read}")
    return args


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtime", type=float, default=1.0, help="seconds per point (default 1)")
    ap.add_argument("--reps", type=int, default=3, help="rounds measured (default 3)")
    ap.add_argument("--size-mib", type=int, default=256)
    args = ap.parse_args()

    size = args.size_mib << 20
    prof = profile.load("quick")
    with tempfile.TemporaryDirectory(prefix="tkbench-bench-") as tmp:
        tmpd = Path(tmp)
        dev = attach_loop(tmpd / "backing.img", size)
        try:
            pl = plan.build(prof, plan.TargetInfo(dev, "block", size, 512))
            test = pl.tests[0]
            test = replace(
                test, points=tuple(replace(p, runtime=args.runtime) for p in test.points)
            )
            opts = {"ioengine": "libaio", "filename": dev}
            all_gaps: list[float] = []
            base_gaps: list[float] = []
            tk_iops = 0.0
            hand_iops = 0.0
            for rep in range(args.reps):
                work = tmpd / f"rep{rep}"
                for sub in ("h", "logs", "base", "plain", "hplain", "hand"):
                    (work / sub).mkdir(parents=True)
                handoff = jobfile.Handoff(str(work / "h"))
                text = jobfile.round_jobfile(test, opts, handoff)
                run_fio(with_logs(text, work / "logs"), work / "h")
                all_gaps += gaps(work / "logs")
                run_fio(with_logs(stonewalled(text), work / "base"), work / "base")
                base_gaps += gaps(work / "base")
                # IOPS without logs: tkbench's round, then each point by hand
                plain = jobfile.round_jobfile(test, opts, jobfile.Handoff(str(work / "hplain")))
                tk = run_fio(plain, work / "hplain")
                for p in test.points:
                    out = subprocess.run(
                        hand_written(p, dev, test.active_bytes),
                        cwd=work / "hand",
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    job = parse(out.stdout).jobs[0]
                    hand_iops += job.read.iops + job.write.iops
                    tk_iops += tk[p.job_name.split("_")[0]]
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    overlaps = [g for g in all_gaps if g < 0]
    ratio = tk_iops / hand_iops if hand_iops else float("nan")
    print(
        json.dumps(
            {
                "points_per_round": len(test.points),
                "rounds": args.reps,
                "runtime_s": args.runtime,
                "gaps_ms": [round(g, 2) for g in all_gaps],
                "stonewall_baseline_median_gap_ms": round(statistics.median(base_gaps), 1),
                "overlaps": len(overlaps),
                "tkbench_iops_sum": round(tk_iops),
                "hand_written_iops_sum": round(hand_iops),
            }
        )
    )
    print(
        f"baseline (fio stonewall) median gap: {statistics.median(base_gaps):.1f} ms; "
        f"hand-off is {statistics.median(base_gaps) / max(statistics.median(all_gaps), 1e-9):.0f}x "
        "shorter"
    )
    if overlaps:
        print(
            f"FAIL: {len(overlaps)} point(s) overlapped the previous one "
            f"(worst {min(overlaps):.1f} ms)"
        )
    print(
        f"median_gap_ms={statistics.median(all_gaps):.2f} max_gap_ms={max(all_gaps):.2f} "
        f"ratio={ratio:.3f}"
    )
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main())
