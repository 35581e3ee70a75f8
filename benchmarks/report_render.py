"""Time and peak memory to render the report of a full-size synthetic PTS-E run.

    .venv/bin/python benchmarks/report_render.py [--repeat N] [--keep DIR]

Builds the synthetic run (IOPS 25 rounds x 56 points, Throughput 1024k and 128k,
Latency with histograms, Write Saturation of 1,440 rounds) in a temporary
directory, then runs ``tkbench report`` on it in a child process, the way a user
does, N times.  The time is the child's wall-clock time, interpreter start and
imports included; the memory is the child's peak resident set size
(``getrusage(RUSAGE_CHILDREN).ru_maxrss``; the run is built with threads in this
process, so no other child counts).  Goal on the 2-core reference machine:
<= 15 s and <= 600 MB.

The last line is machine-readable: ``render_seconds=X peak_rss_mb=Y pages=Z``
(median time over the repeats, largest peak RSS).
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
from pathlib import Path

from tkbench.report.synthetic import make_synthetic_run

GOAL_SECONDS = 15.0
GOAL_RSS_MB = 600.0


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


def render_once(run: Path, out: Path) -> float:
    cmd = [sys.executable, "-m", "tkbench", "report", str(run), "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"tkbench report failed ({proc.returncode}): {proc.stderr.strip()}")
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
        times = []
        for i in range(args.repeat):
            seconds = render_once(run, out)
            times.append(seconds)
            print(f"render {i + 1}: {seconds:.2f} s")
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
        pages = page_count(out)
        median = statistics.median(times)
        ok = median <= GOAL_SECONDS and peak_mb <= GOAL_RSS_MB
        print(f"goal <= {GOAL_SECONDS:g} s and <= {GOAL_RSS_MB:g} MB: {'met' if ok else 'NOT met'}")
        print(f"render_seconds={median:.2f} peak_rss_mb={peak_mb:.0f} pages={pages}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
