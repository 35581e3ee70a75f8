"""Time and peak memory to render the report of a full-size synthetic PTS-E run.

    .venv/bin/python benchmarks/report_render.py [--repeat N] [--keep DIR]

Builds the synthetic run (IOPS 25 rounds x 56 points, Throughput 1024k and 128k,
Latency with histograms, Write Saturation of 1,440 rounds, and the stages of Host
Idle Recovery, Cross-Stimulus Recovery, Composite Block Size and DIRTH: 55,800
HIR samples, a 7 x 7 demand-intensity grid, six operating points with full
histograms) in a temporary directory, then runs ``tkbench report`` on it in a
child process, the way a user does, N times.  The time is the child's wall-clock
time, interpreter start and imports included; the memory is the child's peak resident set size
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``; the run is built with threads in this
process, so no other child counts).  Goal on the 2-core reference machine:
<= 20 s and <= 800 MB with all eight tests (it was 15 s and 600 MB for the basic four).

Then it builds a second synthetic run of a slower drive and times
``tkbench compare RUN_1 RUN_2 --out cmp.pdf`` (tables plus overlaid plots of
both full runs) the same way; its time is also given as a ratio to the single
report's, measured in the same run of this script.

The last line is machine-readable: ``render_seconds=X peak_rss_mb=Y pages=Z
compare_seconds=C compare_ratio=R`` (median times over the repeats, largest
peak RSS of all the children).
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the synthetic run is a test tool
from tests.synthetic import DriveModel, make_synthetic_run

GOAL_SECONDS = 20.0
GOAL_RSS_MB = 800.0


def page_count(pdf: Path) -> int:
    """Pages of the PDF (pdfinfo when installed, else the page objects in the file)."""
    if shutil.which("pdfinfo"):
        out = subprocess.run(
            ["pdfinfo", str(pdf)], check=True, capture_output=True, text=True
        ).stdout
        m = re.search(r"^Pages:\s+(\d+)", out, re.M)
        if m:
            return int(m.group(1))
    return len(re.findall(rb"/Type\s*/Page\b", pdf.read_bytes()))


def timed(*args: str) -> float:
    """Wall-clock seconds of ``tkbench ARGS...`` in a child process."""
    cmd = [sys.executable, "-m", "tkbench", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"tkbench {args[0]} failed ({proc.returncode}): {proc.stderr.strip()}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="renders to time (default 1)")
    ap.add_argument("--keep", type=Path, help="keep the run directory and report here")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tkbench-bench-") as tmp:
        base = args.keep or Path(tmp)
        run = base / "synthetic-pts-e"
        t0 = time.perf_counter()
        make_synthetic_run(run, seed=args.seed)
        print(f"synthetic run built in {time.perf_counter() - t0:.1f} s: {run}")
        out = base / "report.pdf"
        slower = replace(DriveModel(), write_iops_steady=80_000.0, seq_write_bw=3.1e9)
        other = make_synthetic_run(base / "synthetic-pts-e-2", seed=args.seed + 1, drive=slower)
        cmp_pdf = base / "compare.pdf"
        times, cmp_times = [], []
        for i in range(args.repeat):
            times.append(timed("report", str(run), "--out", str(out)))
            print(f"render {i + 1}: {times[-1]:.2f} s")
            cmp_times.append(timed("compare", str(run), str(other), "--out", str(cmp_pdf)))
            print(f"compare {i + 1}: {cmp_times[-1]:.2f} s")
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        pages = page_count(out)
        median, cmp_median = statistics.median(times), statistics.median(cmp_times)
        ok = median <= GOAL_SECONDS and peak_mb <= GOAL_RSS_MB
        print(f"goal <= {GOAL_SECONDS:g} s and <= {GOAL_RSS_MB:g} MB: {'met' if ok else 'NOT met'}")
        print(
            f"render_seconds={median:.2f} peak_rss_mb={peak_mb:.0f} pages={pages} "
            f"compare_seconds={cmp_median:.2f} compare_ratio={cmp_median / median:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
