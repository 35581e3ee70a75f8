#!/usr/bin/env python3
"""Make the schema-1 run directories kept under tests/data/rundirs/ (NOT run by the tests).

The directories were written once by a real ``tkbench run`` with real fio, so that
tests/test_rundir_compat.py can check that later tkbench versions still read them
and compute the same numbers from them.  Regenerating them replaces that
evidence with whatever the tkbench of the day writes: do it only to add a new
kind of run directory, never to make a failing compatibility test pass.

    .venv/bin/python tests/data/rundirs/make_rundirs.py            # runs + golden
    .venv/bin/python tests/data/rundirs/make_rundirs.py --golden   # golden outputs only

The runs are made in a scratch directory (``--work``, default a new temporary
directory) with relative ``--target``/``--out`` paths, then copied here.  The
golden outputs (golden/*.json) are computed from the copies by
tests/_rundir_outputs.py, the same code the test uses.  README.md (beside this
file) records how and when the kept directories were made.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

TK = [sys.executable, "-m", "tkbench"]

# the quick profile shrunk as in tests/_helpers.py: 0.2 s points, 1x preconditioning
FAST = [
    "tests.iops.point_runtime=0.2s",
    "tests.throughput.point_runtime=0.2s",
    "tests.latency.point_runtime=0.2s",
    "tests.wsat.point_runtime=0.2s",
    "precondition.capacity_multiple=1.0",
]
# file-a, file-b: all four tests, three rounds each.  IOPS limits so loose that it is
# steady after exactly 3 rounds; latency limits so tight that it never is (3 rounds,
# the limit); throughput judged for real; write saturation to 3x capacity written.
FOUR_TESTS = [
    *FAST,
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=3",
    "tests.iops.rounds.max_excursion=9",
    "tests.iops.rounds.max_slope_excursion=9",
    "tests.throughput.rounds.max=3",
    "tests.throughput.rounds.window=3",
    "tests.latency.rounds.max=3",
    "tests.latency.rounds.window=3",
    "tests.latency.rounds.max_excursion=0.000001",
    "tests.wsat.stop_written_multiple=3",
]
# emu: the bundled SSD emulator over NBD; IOPS judged for real (at most 3 rounds),
# write saturation to 1x capacity.
EMULATOR = [
    *FAST,
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=3",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.stop_written_multiple=1",
]
# resumed: IOPS never steady (exactly 3 rounds), throughput steady once it has 3 rounds
# in one segment.
RESUMED = [
    *FAST,
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=3",
    "tests.iops.rounds.max_excursion=0.000001",
    "tests.throughput.rounds.max=3",
    "tests.throughput.rounds.window=3",
    "tests.throughput.rounds.max_excursion=9",
    "tests.throughput.rounds.max_slope_excursion=9",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
]

NAMES = ("file-a", "file-b", "emu", "resumed")


def sets(overrides: list[str]) -> list[str]:
    out: list[str] = []
    for o in overrides:
        out += ["--set", o]
    return out


def run(work: Path, *args: str, ok: tuple[int, ...] = (0, 1)) -> None:
    """``tkbench ARGS`` in ``work``; exit 1 (a check failed: a test not steady) is fine."""
    print("+ tkbench", " ".join(args), flush=True)
    done = subprocess.run([*TK, *args], cwd=work, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        sys.exit(f"tkbench {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")


def start(work: Path, *args: str) -> subprocess.Popen[str]:
    print("+ tkbench", " ".join(args), "&", flush=True)
    return subprocess.Popen(
        [*TK, *args],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(proc: subprocess.Popen[str], path: Path, timeout: float = 120) -> None:
    limit = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"run ended before {path} appeared: {proc.communicate()[1][-3000:]}")
        if time.monotonic() > limit:
            sys.exit(f"{path} did not appear")
        time.sleep(0.02)


def sigterm(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the run (its process group, as systemd or a shell's kill would)."""
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode != 130:
        sys.exit(f"interrupted run exited {proc.returncode}, not 130: {err[-3000:]}")


def run_args(target: str, out: str, *extra: str) -> list[str]:
    return ["run", "--profile", "quick", "--target", target, "--yes", "--out", out,
            "--no-report", "--no-history", *extra]  # fmt: skip


def make_file_runs(work: Path) -> None:
    # file-a and file-b: two runs of the same "drive" (the same 16 MiB file)
    run(work, *run_args("drive.img", "file-a", "--size", "16M", *sets(FOUR_TESTS)))
    run(work, *run_args("drive.img", "file-b", *sets(FOUR_TESTS)))


def make_emulator_run(work: Path) -> None:
    sock = work / "ssd.sock"
    emu = subprocess.Popen(
        [*TK, "emulate", "--socket", str(sock), "--capacity", "32M", "--seed", "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        limit = time.monotonic() + 30
        while not sock.exists():
            if emu.poll() is not None or time.monotonic() > limit:
                sys.exit(f"emulator did not start: {emu.communicate()[1][-2000:]}")
            time.sleep(0.05)
        run(work, *run_args(f"nbd+unix:///?socket={sock}", "emu", *sets(EMULATOR)))
    finally:
        emu.terminate()
        emu.communicate(timeout=30)


def make_resumed_run(work: Path) -> None:
    """SIGTERM after IOPS round 2, resume at once (the rounds continue); SIGTERM after
    throughput round 1, resume with --resume-gap 0 (re-preconditioned, segment 2)."""
    rounds = work / "resumed" / "tests"
    proc = start(work, *run_args("resumed.img", "resumed", "--size", "16M", *sets(RESUMED)))
    wait_for(proc, rounds / "iops" / "rounds" / "0002.json")
    sigterm(proc)
    proc = start(work, "run", "--resume", "resumed", "--yes", "--no-report", "--no-history")
    wait_for(proc, rounds / "throughput" / "rounds" / "0001.json")
    sigterm(proc)
    run(work, "run", "--resume", "resumed", "--resume-gap", "0", "--yes", "--no-report",
        "--no-history")  # fmt: skip


def provenance(work: Path) -> dict[str, object]:
    def out(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, cwd=REPO).stdout.strip()

    return {
        "commit": out("git", "rev-parse", "HEAD"),
        # the last commit that changed the product code (tkbench/, profiles/)
        "tkbench_code_commit": out("git", "log", "-1", "--format=%H", "--", "tkbench", "profiles"),
        "tkbench_code_modified": bool(out("git", "status", "--porcelain", "tkbench", "profiles")),
        "fio": out("fio", "--version"),
        "python": sys.version.split()[0],
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "work_directory": str(work),
    }


def write_golden() -> None:
    from tests import _rundir_outputs as outputs

    golden = HERE / "golden"
    golden.mkdir(exist_ok=True)
    for name, data in outputs.all_outputs(HERE).items():
        path = golden / f"{name}.json"
        path.write_text(outputs.dumps(data), encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    ap.add_argument("--golden", action="store_true", help="only recompute golden/*.json")
    args = ap.parse_args()
    if not args.golden:
        work = args.work or Path(tempfile.mkdtemp(prefix="tkbench-rundirs-"))
        work.mkdir(parents=True, exist_ok=True)
        make_file_runs(work)
        make_emulator_run(work)
        make_resumed_run(work)
        for name in NAMES:
            dest = HERE / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(work / name, dest)
        (HERE / "provenance.json").write_text(json.dumps(provenance(work), indent=1) + "\n")
    write_golden()
    return 0


if __name__ == "__main__":
    sys.exit(main())
