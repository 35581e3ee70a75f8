"""Real runs killed at varied moments, then resumed; a full results filesystem."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import FAST, STAGED_OFF
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

OVERRIDES = [
    *FAST,
    "tests.iops.rounds.max_excursion=0.000001",
    "tests.iops.rounds.max=6",
    "tests.throughput.rounds.max_excursion=0.000001",
    "tests.throughput.rounds.max=5",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
]


# the resumed rounds continue (what these tests check is the stop and the state it
# leaves); without it a resume more than a second later re-preconditions
# (docs/resume.md; tests/test_engine_rules.py, tests/test_examples.py)
CONTINUE = ("--resume-gap", "3600")


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test() -> Iterator[None]:
    """A failed assertion must not leave a run (and its fio) going into the next tests."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def _start(tmp: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "tkbench",
        "run",
        "--profile",
        "quick",
        "--yes",
        "--no-report",
        "--target",
        str(tmp / "t.img"),
        "--out",
        str(out),
        *extra,
    ]
    if "--resume" not in extra:
        args += ["--size", "16M"]
        for o in OVERRIDES:
            args += ["--set", o]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    _STARTED.append(proc)
    return proc


def _rounds(out: Path) -> int:
    return len(list(out.glob("tests/*/rounds/*.json")))


# Bounds on waits, never timings: a loaded host's disk has stalled I/O for a minute
# (the hand-off waits it out, tkbench.fio.jobfile.STALL_MARGIN), and the run must be given
# that long before a test calls it stuck.
PATIENCE = 300.0


def _wait_rounds(proc: subprocess.Popen[str], out: Path, n: int, timeout: float = PATIENCE) -> None:
    limit = time.monotonic() + timeout
    while _rounds(out) < n:
        assert proc.poll() is None, proc.communicate()
        if time.monotonic() >= limit:
            log = out / "events.log"
            tail = log.read_text().splitlines()[-5:] if log.exists() else []
            raise AssertionError(f"no {n} rounds in {timeout:g} s; the run's log ends: {tail}")
        time.sleep(0.05)


def _all_json_complete(out: Path) -> None:
    """No half-written file anywhere: every JSON file parses."""
    for f in out.rglob("*.json"):
        json.loads(f.read_text())


def test_sigterm_stops_cleanly_with_130_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _start(tmp_path, out)
    _wait_rounds(proc, out, 2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("tkbench: error: interrupted")
    data = load_run(out)
    assert data.manifest.status == "interrupted"
    kept = _rounds(out)
    assert kept >= 2
    # fio was stopped with its process group: nothing is left running
    assert subprocess.run(["pgrep", "-f", str(out)], capture_output=True).returncode == 1
    # a resume would silently ignore another profile: refused, the run untouched
    other = subprocess.run(
        [sys.executable, "-m", "tkbench", "run", "--resume", str(out), "--profile", "pts-c"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.returncode == 2, other.stderr
    assert "differs from the run's profile quick" in other.stderr
    assert _rounds(out) == kept
    proc = _start(tmp_path, out, "--resume", str(out), *CONTINUE)
    _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    data = load_run(out)
    assert data.manifest.status == "complete"
    assert [len(t.rounds) for t in data.tests] == [6, 5]
    assert all(t.result is not None for t in data.tests)


def test_a_burst_of_signals_still_ends_interrupted_and_resumable(tmp_path: Path) -> None:
    """systemd's stop, a double Ctrl-C: signals that arrive while tkbench is stopping fio
    and marking the run must not cut that short."""
    out = tmp_path / "run"
    proc = _start(tmp_path, out)
    _wait_rounds(proc, out, 2)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGINT):
        os.killpg(proc.pid, sig)
        time.sleep(0.01)
    _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert load_run(out).manifest.status == "interrupted"
    _all_json_complete(out)
    proc = _start(tmp_path, out, "--resume", str(out), *CONTINUE)
    _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    assert load_run(out).manifest.status == "complete"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_of_the_process_group_then_resume(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    out = tmp_path / "run"
    proc = _start(tmp_path, out)
    _wait_rounds(proc, out, rng.randint(1, 7))
    time.sleep(rng.uniform(0.0, 1.2))  # anywhere inside a round, a purge or a precondition
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    _all_json_complete(out)
    before = load_run(out)
    assert before.manifest.status == "running"  # the process died without a word
    kept = {t.name: [r.round for r in t.rounds] for t in before.tests}
    proc = _start(tmp_path, out, "--resume", str(out), *CONTINUE)
    _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0, err
    after = load_run(out)
    assert after.manifest.status == "complete"
    for t in after.tests:
        numbers = [r.round for r in t.rounds]
        assert numbers == list(range(1, len(numbers) + 1))
        # every round that was complete before the kill is still there, unchanged
        assert numbers[: len(kept.get(t.name, []))] == kept.get(t.name, [])
    assert [len(t.rounds) for t in after.tests] == [6, 5]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_full_results_filesystem_fails_with_4_and_stays_readable(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)], check=True)
    try:
        out = mnt / "run"
        proc = _start(tmp_path, out)
        _, err = proc.communicate(timeout=PATIENCE)
        assert proc.returncode == 4, err
        lines = [ln for ln in err.splitlines() if ln.startswith("tkbench:")]
        assert lines and "full" in lines[-1], err
        assert "Traceback" not in err
        _all_json_complete(out)
        show = subprocess.run(
            [sys.executable, "-m", "tkbench", "show", str(out), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert show.returncode == 0, show.stderr
        assert json.loads(show.stdout)["tests"]
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
