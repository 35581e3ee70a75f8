"""tkbench at lab scale: the history, the dashboard and the full PTS-E outputs, timed.

    .venv/bin/python benchmarks/scale.py [--sizes 1000,10000,73000]
        [--backends sqlite,postgresql] [--import-dirs 1000] [--no-pts-e] [--tiny]
        [--cache DIR]

A lab's year: 200 drives (10 models of 20 drives, each model on two firmwares, the
second from mid-year), 50 rigs of four drives, one run per drive per night -- 73,000
entries.  For each size the history is built through tkbench's own insert code
(``History.put``, what ``tkbench run`` and ``history import`` index with) from
synthetic entries shaped like a nightly run's (some 30 headline numbers, the
acceptance checks, repeated points), in an SQLite file and in a real PostgreSQL
server started the way the tests start one (``tests/_postgres.py``).  Then each of
these runs as a child process, the way a user runs it, and is measured for its
wall-clock time, CPU time (user and system) and peak resident set size (``os.wait4``'s
rusage of that child; on a shared machine the wall-clock time follows the others'
load, the CPU time much less):

* ``history`` (the listing), ``history --json``, ``history --model M --serial S``;
* the nightly run-start check: the history check ``tkbench run`` makes before it
  touches the drive, then the baseline of the regression check (``History.previous``
  of a run of one of the drives);
* ``dashboard``, and its largest page loaded in headless Chromium (Debian's
  ``chromium``, driven as the dashboard tests drive it, ``tests/_chromium.py``):
  the page's size and the seconds to its load event;
* once per backend, ``history import`` of ``--import-dirs`` run directories (copies
  of a small real run, ``tests/data/rundirs/file-a``) into an empty history;
* once, ``show``, ``report``, ``export`` (OpenMetrics) and ``compare`` of a
  full-size synthetic PTS-E run (``tests/synthetic.py``, as benchmarks/report_render.py).

``--cache DIR`` keeps the SQLite histories it builds in DIR (named by size and by
:data:`LAB_VERSION`) and uses them again on the next run; PostgreSQL's are built
each time, in the server started for the run.

Growth is measured in one run of this script: for each command, between two
consecutive sizes, the exponent ``log(c2 / c1) / log(n2 / n1)`` of its CPU time
(1: linear; interpreter start-up makes small sizes look better than linear).
The goals at 73,000 entries: every command under 15 s and 500 MB, no dashboard
page over 2 MB, growth linear or better; the full PTS-E report under 20 s.  They
are judged twice, by CPU time (what counts on a shared machine, whose load average
is printed beside) and by wall-clock time (on a quiet one).  ``--tiny`` (a test runs
it) uses sizes 200 and 400, 20 run directories to import and, in place of the
PTS-E runs, two small kept runs (tests/data/rundirs): seconds, not figures to
quote.

The last line is machine-readable: ``sizes=N,... worst_seconds=X
worst_cpu_seconds=C worst_rss_mb=Y largest_page_mb=P page_load_seconds=L
worst_exponent=E report_seconds=R`` (the worst over every backend, size and
history command; the exponent between the two largest sizes; ``report_seconds``
-1 with ``--no-pts-e``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the PostgreSQL server, the browser, the runs: test tools
from tests._chromium import running_browser  # noqa: E402
from tests._postgres import running_server  # noqa: E402
from tests.synthetic import make_synthetic_run  # noqa: E402
from tkbench.history import Entry, EntryChecks, RepeatFigures, open_history  # noqa: E402

GOAL_SECONDS, GOAL_MB, GOAL_PAGE_MB, GOAL_REPORT_SECONDS = 15.0, 500.0, 2.0, 20.0
DRIVES, MODELS, RIGS = 200, 10, 50
DAY = 86400.0
YEAR_START = 1_767_225_600.0  # 2026-01-01 00:00 UTC
SMALL_RUN = ROOT / "tests" / "data" / "rundirs" / "file-a"

# the headline numbers of a nightly run: "TEST: METRIC BS MIX", with a typical value
HEADLINE = {
    **{f"iops: iops {bs} {mix}": 400_000.0 / (i + 1) for i, bs in enumerate(("4k", "8k", "64k"))
       for mix in ("0/100", "35/65", "65/35", "100/0")},
    **{f"throughput: bw {bs} {mix}": 3000.0 for bs in ("128k", "1024k")
       for mix in ("0/100", "100/0")},
    **{f"latency: lat_{m} {bs} {mix}": 0.08 if m == "mean" else 2.5 for m in ("mean", "max")
       for bs in ("4k", "8k") for mix in ("0/100", "65/35", "100/0")},
    "wsat: iops 4k 0/100": 90_000.0,
    "hir-5s: iops 4k 0/100": 120_000.0,
    "xsr: bw 128k 0/100": 2100.0,
}  # fmt: skip
CHECKS = ("steady state", "throughput steady state", "latency steady state", "wsat", "temperature")


@dataclass
class Measured:
    seconds: float
    rss_mb: float
    out_bytes: int = 0
    cpu: float = 0.0  # the child's user and system time: what other work on the machine
    # does not change (wall-clock time on a shared machine does)


def entries(n: int, seed: int = 0) -> Iterator[Entry]:
    """``n`` entries of the lab's year, night after night, each drive once a night."""
    rng = random.Random(seed)
    for i in range(n):
        night, drive = divmod(i, DRIVES)
        model = drive % MODELS
        started = YEAR_START + night * DAY + 3600.0 + (drive % 50) * 60.0
        status = "complete" if rng.random() > 0.02 else "interrupted"
        factor = rng.gauss(1.0, 0.04) * (0.85 if rng.random() < 0.01 else 1.0)
        checks = {
            "passed": rng.random() > 0.03,
            "checks": [
                {"name": c, "kind": "acceptance", "passed": True, "value": 1.0,
                 "limit": "reached", "message": f"{c}: reached in rounds 3-7 of 25"}
                for c in CHECKS
            ],
        }  # fmt: skip
        repeats = {
            f"4k-fsync 4k {mix}": RepeatFigures(120.0 * factor, 1.5, 2.1, 5)
            for mix in ("0/100", "100/0")
        }
        run_dir = f"/srv/tkbench/rig-{drive // 4:02d}/runs/{night:03d}-{drive:03d}"
        yield Entry(
            run_dir=run_dir,
            started=started,
            ended=started + 1800.0,
            status=status,
            profile="nightly",
            host=f"rig-{drive // 4:02d}",
            target=f"/dev/nvme{drive % 4}n1",
            model=f"Lab SSD model {model}",
            serial=f"S{drive:04d}X{model}",
            firmware="FW1.0" if night < 183 else "FW2.0",
            capacity=1_920_383_410_176,
            headline={k: v * factor * rng.gauss(1.0, 0.01) for k, v in HEADLINE.items()},
            checks=EntryChecks.read(checks, Path(run_dir)),
            rig=f"rig-{drive // 4:02d}",
            run_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            repeats=repeats,
        )


def build_history(location: str, n: int) -> float:
    """Index ``n`` entries through ``History.put``, a night (200 runs) per transaction."""
    history = open_history(location)
    t0 = time.perf_counter()
    batch: list[Entry] = []
    for e in entries(n):
        batch.append(e)
        if len(batch) == DRIVES:
            history.put(batch)
            batch = []
    if batch:
        history.put(batch)
    return time.perf_counter() - t0


LAB_VERSION = 1  # of the entries() above: a history kept by --cache is rebuilt when it changes


def cached_history(where: Path, n: int) -> Path:
    """The SQLite history of ``n`` entries kept in ``where`` (built there the first time,
    under a temporary name until it is whole)."""
    path = where / f"history-{n}-lab{LAB_VERSION}.sqlite"
    if not path.exists():
        where.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".part")
        part.unlink(missing_ok=True)
        built = build_history(str(part), n)
        part.rename(path)
        print(f"--- sqlite {n}: history built in {built:.1f} s, kept in {path}", flush=True)
    return path


def child(argv: list[str], out: Path | None = None) -> Measured:
    """Run ``argv`` (a child process); its wall-clock time and peak RSS."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    sink = open(out or os.devnull, "wb")  # noqa: SIM115 (closed below)
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, env=env)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        sink.close()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv[:4])} ... failed ({proc.returncode}): {err.decode()[-800:]}"
        )
    size = out.stat().st_size if out is not None and out.is_file() else 0
    return Measured(seconds, usage.ru_maxrss / 1024.0, size, usage.ru_utime + usage.ru_stime)


def tkbench(*args: str, out: Path | None = None) -> Measured:
    return child([sys.executable, "-m", "tkbench", *args], out)


START_CHECK = """
import sys
from tkbench.history import open_history
from tkbench.engine.runs import check_outputs
from tkbench.rundir.store import load_run
check_outputs(history_db=sys.argv[1])
base = open_history(sys.argv[1]).previous(load_run(sys.argv[2]))
assert base is not None, "no baseline found"
"""


def small_runs(where: Path, count: int) -> list[Path]:
    """``count`` copies of a small real run (its files hard-linked, its manifest its
    own: a run id, a drive and a start time of the lab's)."""
    manifest = json.loads((SMALL_RUN / "manifest.json").read_text())
    dirs = []
    for i in range(count):
        d = where / f"run-{i:04d}"
        shutil.copytree(SMALL_RUN, d, copy_function=os.link)
        drive = i % DRIVES
        m = json.loads(json.dumps(manifest))
        m["run_id"] = str(uuid.UUID(int=i + 1, version=4))
        m["started"] = YEAR_START + 400 * DAY + i * 60.0
        m["ended"] = m["started"] + 1800.0
        ident = m["target"]["identity"]
        ident["model"], ident["serial"] = (
            f"Lab SSD model {drive % MODELS}",
            f"S{drive:04d}X{drive % MODELS}",
        )
        m["profile"]["name"] = "nightly"
        (d / "manifest.json").unlink()
        (d / "manifest.json").write_text(json.dumps(m, indent=1))
        dirs.append(d)
    return dirs


def largest_page(site: Path) -> Path:
    return max(site.glob("*.html"), key=lambda p: p.stat().st_size)


def page_load(browser: object, page: Path) -> float:
    tab = browser.new_page()  # type: ignore[attr-defined]
    try:
        t0 = time.perf_counter()
        tab.goto(page.as_uri())
        return time.perf_counter() - t0
    finally:
        tab.close()


def show(what: str, n: int | str, m: Measured, extra: str = "") -> None:
    out = f", {m.out_bytes / 1e6:.1f} MB out" if m.out_bytes else ""
    print(
        f"{what:<36} {n!s:>6}: {m.seconds:7.2f} s {m.cpu:7.2f} s CPU {m.rss_mb:6.0f} MB peak"
        f"{out}{extra}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,73000", help="history sizes, comma-separated")
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--import-dirs", type=int, default=1000, help="run directories to import")
    ap.add_argument("--no-pts-e", action="store_true", help="skip the full PTS-E run")
    ap.add_argument("--tiny", action="store_true", help="a check that it runs (sizes 200,400)")
    ap.add_argument(
        "--cache",
        type=Path,
        help="keep the SQLite histories built here, to use them again",
    )
    args = ap.parse_args(argv)
    if args.tiny:
        args.sizes, args.import_dirs = "200,400", 20
    sizes = sorted(int(s) for s in args.sizes.split(","))
    backends = args.backends.split(",")
    if not set(backends) <= {"sqlite", "postgresql"}:
        ap.error(f"--backends: sqlite and/or postgresql, not {args.backends}")

    load_before = os.getloadavg()[0]
    times: dict[tuple[str, str], dict[int, float]] = {}
    worst_s = worst_cpu = worst_mb = page_mb = page_s = 0.0

    def note(backend: str, what: str, n: int | str, m: Measured) -> None:
        nonlocal worst_s, worst_cpu, worst_mb
        if isinstance(n, int):
            times.setdefault((backend, what), {})[n] = m.cpu
        worst_s, worst_mb = max(worst_s, m.seconds), max(worst_mb, m.rss_mb)
        worst_cpu = max(worst_cpu, m.cpu)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tkbench-scale-")))
        browser = stack.enter_context(contextlib.contextmanager(running_browser)())
        server = None
        if "postgresql" in backends:
            server = stack.enter_context(contextlib.contextmanager(running_server)())
        dirs = small_runs(tmp / "small", args.import_dirs)
        for backend in backends:
            for n in sizes:
                label = f"{backend} {n}"
                if backend == "sqlite" and args.cache is not None:
                    loc = str(cached_history(args.cache, n))
                    print(f"--- {label}: history kept in {loc}", flush=True)
                else:
                    if backend == "sqlite":
                        loc = str(tmp / f"history-{n}.sqlite")
                    else:
                        assert server is not None
                        loc = server.new_database(f"scale{n}")
                    built = build_history(loc, n)
                    print(f"--- {label}: history built in {built:.1f} s", flush=True)
                for what, extra in (
                    ("history", []),
                    ("history --json", ["--json"]),
                    ("history --model --serial",
                     ["--model", "Lab SSD model 3", "--serial", "S0003X3"]),
                ):  # fmt: skip
                    m = tkbench("history", "--history", loc, *extra, out=tmp / "out")
                    show(f"{backend} {what}", n, m)
                    note(backend, what, n, m)
                m = child([sys.executable, "-c", START_CHECK, loc, str(dirs[0])])
                show(f"{backend} run-start check + baseline", n, m)
                note(backend, "run-start check", n, m)
                site = tmp / f"site-{backend}-{n}"
                m = tkbench("dashboard", "--history", loc, "--out", str(site))
                page = largest_page(site)
                size_mb = page.stat().st_size / 1e6
                load = page_load(browser, page)
                page_mb, page_s = max(page_mb, size_mb), max(page_s, load)
                show(
                    f"{backend} dashboard",
                    n,
                    m,
                    f"; largest page {size_mb:.2f} MB, {load:.2f} s to load",
                )
                note(backend, "dashboard", n, m)
                shutil.rmtree(site)
            if backend == "sqlite":
                loc = str(tmp / "import.sqlite")
            else:
                assert server is not None
                loc = server.new_database("scaleimport")
            m = tkbench("history", "import", "--history", loc, *map(str, dirs))
            show(f"{backend} history import", f"{len(dirs)}d", m)
            note(backend, "history import", f"{len(dirs)}d", m)

        report_s = report_cpu = -1.0
        if not args.no_pts_e:
            if args.tiny:  # the commands, not their figures: two small kept runs
                run, other = SMALL_RUN, SMALL_RUN.parent / "file-b"
            else:
                run, other = tmp / "pts-e", tmp / "pts-e-2"
                t0 = time.perf_counter()
                make_synthetic_run(run)
                print(f"--- full PTS-E synthetic run built in {time.perf_counter() - t0:.1f} s")
                make_synthetic_run(other, seed=1)
            show("pts-e show", "1", tkbench("show", str(run)))
            m = tkbench("report", str(run), "--out", str(tmp / "report.pdf"))
            report_s, report_cpu = m.seconds, m.cpu
            show("pts-e report", "1", m)
            show(
                "pts-e export openmetrics",
                "1",
                tkbench("export", "--format", "openmetrics", str(run), out=tmp / "om"),
            )
            show("pts-e compare", "2", tkbench("compare", str(run), str(other)))

    print("growth exponents of CPU time (1 = linear), between consecutive sizes:")
    worst_exp = 0.0
    for (backend, what), by_n in times.items():
        ns = sorted(by_n)
        pairs = list(itertools.pairwise(ns))
        exps = [math.log(by_n[b] / by_n[a]) / math.log(b / a) for a, b in pairs]
        if exps:
            worst_exp = max(worst_exp, exps[-1])
            print(
                f"  {backend} {what}: "
                + ", ".join(f"{a}->{b} {e:.2f}" for (a, b), e in zip(pairs, exps, strict=True))
            )
    sized = worst_mb <= GOAL_MB and page_mb <= GOAL_PAGE_MB

    def verdict(seconds: float, report: float) -> str:
        ok = sized and seconds <= GOAL_SECONDS and report <= GOAL_REPORT_SECONDS
        return "met" if ok else "NOT met"

    # on a shared machine the wall-clock time follows the others' load: CPU time is
    # the figure to judge by there, wall-clock time on a quiet machine
    print(
        f"goals (<= {GOAL_SECONDS:g} s, {GOAL_MB:g} MB, pages <= {GOAL_PAGE_MB:g} MB, "
        f"report <= {GOAL_REPORT_SECONDS:g} s) at {sizes[-1]}: "
        f"{verdict(worst_cpu, report_cpu)} in CPU time, "
        f"{verdict(worst_s, report_s)} in wall-clock time; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(
        f"sizes={','.join(map(str, sizes))} worst_seconds={worst_s:.2f} "
        f"worst_cpu_seconds={worst_cpu:.2f} "
        f"worst_rss_mb={worst_mb:.1f} "
        f"largest_page_mb={page_mb:.2f} page_load_seconds={page_s:.2f} "
        f"worst_exponent={worst_exp:.2f} report_seconds={report_s:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
