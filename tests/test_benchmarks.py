"""The benchmarks in benchmarks/ still run on the current tree: each once, reduced to
seconds, with its last line checked for its figures (not their values: those are
measurements, see each benchmark's docstring and the README)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIGURE = r"(\d+\.\d+)"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0, reason="attaching a loop device needs root")
def test_round_overhead_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """Two rounds of the quick profile's IOPS points at 0.2 s, once: whatever other
    tests the quick profile plans, the benchmark runs its IOPS test alone."""
    argv = [sys.executable, str(ROOT / "benchmarks" / "round_overhead.py")]
    argv += ["--runtime", "0.2", "--rounds", "2", "--reps", "1", "--size-mib", "16"]
    # a bound, not a timing: a hang fails the test instead of holding the suite
    done = subprocess.run(
        argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    m = re.fullmatch(
        rf"median_gap_ms={FIGURE} max_gap_ms={FIGURE} median_round_gap_ms={FIGURE} "
        rf"ratio={FIGURE}",
        last,
    )
    assert m is not None, last
    assert all(math.isfinite(float(v)) for v in m.groups())
    assert float(m.group(4)) > 0  # tkbench measured IOPS, and so did hand-written fio


@pytest.mark.fio
def test_emulator_recovery_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """One repetition: the speed ratios test_emulator.py leaves to this benchmark."""
    argv = [sys.executable, str(ROOT / "benchmarks" / "emulator_recovery.py"), "--reps", "1"]
    done = subprocess.run(
        argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    m = re.fullmatch(
        rf"idle_recovery_median={FIGURE} min={FIGURE} max={FIGURE} "
        rf"fresh_over_steady={FIGURE} purged_over_steady={FIGURE} qd16_over_qd1={FIGURE} "
        rf"latency_qd16_over_qd1={FIGURE} reps=1 load={FIGURE}",
        last,
    )
    assert m is not None, last
    assert float(m.group(1)) > 0 and m.group(1) == m.group(2) == m.group(3)
