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
    """Two rounds of the quick profile's IOPS points at 0.2 s, once, and the high-IOPS
    point once against hand-written fio: whatever other tests the quick profile plans,
    the benchmark runs its IOPS test alone."""
    argv = [sys.executable, str(ROOT / "benchmarks" / "round_overhead.py")]
    argv += ["--runtime", "0.2", "--rounds", "2", "--reps", "1", "--size-mib", "16"]
    argv += ["--iops-runtime", "0.3", "--iops-rounds", "1", "--iops-reps", "1"]
    argv += ["--iops-size-mib", "16"]
    # a bound, not a timing: a hang fails the test instead of holding the suite
    done = subprocess.run(
        argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    m = re.fullmatch(
        rf"median_gap_ms={FIGURE} max_gap_ms={FIGURE} median_round_gap_ms={FIGURE} "
        rf"ratio={FIGURE} high_iops_k={FIGURE} high_iops_ratio={FIGURE}",
        last,
    )
    assert m is not None, last
    assert all(math.isfinite(float(v)) for v in m.groups())
    assert float(m.group(4)) > 0  # tkbench measured IOPS, and so did hand-written fio
    assert float(m.group(5)) > 0 and float(m.group(6)) > 0  # and at high IOPS


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


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.chromium
def test_scale_runs_and_prints_its_figures(tmp_path: Path) -> None:
    """Histories of 200 and 400 entries on both backends, 20 directories imported,
    the small kept runs shown, reported, exported and compared: every command of
    benchmarks/scale.py once."""
    argv = [sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--tiny"]
    done = subprocess.run(
        argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    m = re.fullmatch(
        rf"sizes=200,400 worst_seconds={FIGURE} worst_cpu_seconds={FIGURE} worst_rss_mb={FIGURE} "
        rf"largest_page_mb={FIGURE} page_load_seconds={FIGURE} "
        rf"worst_exponent=(-?\d+\.\d+) report_seconds={FIGURE}",
        lines[-1],
    )
    assert m is not None, lines[-1]
    assert all(float(v) > 0 for v in m.groups()[:5]) and float(m.group(7)) > 0
    for what in (
        "sqlite history --json",
        "postgresql dashboard",
        "sqlite history import",
        "pts-e compare",
    ):
        assert any(line.startswith(what) for line in lines), what
