"""Runs on the bundled SSD emulator: the issue's exact sequence, faults, the demo."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF, sets
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

TK = [sys.executable, "-m", "tkbench"]


def _emulate(sock: Path, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*TK, "emulate", "--socket", str(sock), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    limit = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < limit, "emulator did not start"
        time.sleep(0.05)
    return proc


@pytest.fixture
def stop_all() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.terminate()
        p.communicate(timeout=20)  # also closes the pipes


@pytest.mark.slow
def _run_never_steady(sock: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The quick profile on the emulator at ``sock``, with an IOPS test that keeps going
    (so the emulator's injected fault is sure to hit it)."""
    args = [
        *TK,
        "run",
        "--profile",
        "quick",
        "--target",
        f"nbd+unix:///?socket={sock}",
        "--yes",
        "--out",
        str(out),
        "--no-report",
        *sets("tests.iops.rounds.max_excursion=0.0000001"),
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)


def test_issue_sequence_reaches_steady_state_and_shows_saturation(
    tmp_path: Path, stop_all: list[subprocess.Popen[str]]
) -> None:
    sock = tmp_path / "S"
    stop_all.append(_emulate(sock, "--capacity", "256M", "--seed", "7"))
    out = tmp_path / "DIR"
    run = subprocess.run(
        [
            *TK,
            "run",
            "--profile",
            "quick",
            "--tests",  # the basic four (tests/test_emulator_stages.py: the others)
            "iops,throughput,latency,wsat",
            "--target",
            f"nbd+unix:///?socket={sock}",
            "--yes",
            "--out",
            str(out),
            "--no-report",
            # the emulator is CPU-bound: on a loaded machine its rounds are noisier, so
            # the test allows the PTS's usual round limit (25), not the quick profile's 12
            *sets("tests.iops.rounds.max=25"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    data = load_run(out)
    ident = data.manifest.target.identity
    assert ident["emulated"] is True and ident["model"] == "tkbench SSD emulator"
    iops = data.test("iops")
    assert iops.result is not None
    # steady state, or (beside make test's other workers, where the CPU-bound emulator's
    # rounds swing: it happened in two of four fresh-clone runs, with 0.2-s and 0.6-s
    # points) the round limit, named as what ended the test and no steady state claimed
    if not iops.result.steady_state:
        assert len(iops.rounds) == 25 and "round limit" in iops.result.stop_reason
        assert "NOT reached" in iops.result.summary
    # the slide from fresh into steady state is not asserted here: the emulator is
    # CPU-bound, and beside make test's other workers even its direction was lost once
    # (round 1 at 7,495 IOPS, the window at 8,757); the emulator's model is tested in
    # tests/test_emulator.py
    # write saturation ran until four times the capacity was written, or (on a loaded
    # machine, where each round writes less) until its round limit, which it names
    ws = data.test("wsat")
    assert ws.result is not None
    if ws.rounds[-1].total_written_bytes < 4 * (256 << 20):
        assert "limit" in ws.result.stop_reason, ws.result.stop_reason


def test_injected_io_errors_fail_the_run_with_4_and_keep_it_readable(
    tmp_path: Path, stop_all: list[subprocess.Popen[str]]
) -> None:
    sock = tmp_path / "S"
    stop_all.append(_emulate(sock, "--capacity", "32M", "--error-after", "4"))
    out = tmp_path / "run"
    run = _run_never_steady(sock, out)
    assert run.returncode == 4, run.stderr[-2000:]
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("tkbench:")]
    assert len(errors) == 1 and "Traceback" not in run.stderr
    assert "error" in errors[0].lower()
    data = load_run(out)
    assert data.manifest.status == "failed"
    assert list((out / "tests").glob("*/failed/*.out"))  # fio's output of the failed round kept
    show = subprocess.run(
        [*TK, "show", str(out), "--json"], capture_output=True, text=True, check=False
    )
    assert show.returncode == 0
    assert json.loads(show.stdout)["status"] == "failed"


def test_a_drive_that_disappears_mid_run(
    tmp_path: Path, stop_all: list[subprocess.Popen[str]]
) -> None:
    sock = tmp_path / "S"
    emu = _emulate(sock, "--capacity", "32M", "--disconnect-after", "4")
    stop_all.append(emu)
    out = tmp_path / "run"
    run = _run_never_steady(sock, out)
    assert run.returncode == 4, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert load_run(out).manifest.status == "failed"
    emu.communicate(timeout=20)
    assert emu.returncode == 0  # the emulator really went away (an injected disconnect)


def test_demo_command_runs_and_stops_its_emulator(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = [*TK, "demo", "--out", str(out), "--capacity", "32M"]
    args += sets(
        "tests.iops.rounds.max=2",
        "tests.iops.rounds.window=2",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        *STAGED_OFF,
        "tests.wsat.stop_written_multiple=1",
    )
    run = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"Run directory: {out}" in run.stdout
    data = load_run(out)
    assert data.manifest.status == "complete"
    assert data.manifest.target.identity["emulated"] is True
    # this demo's own emulator (its socket is in the run's target; other tests may run
    # demos of their own at the same time) is gone, and so is its socket directory
    sock = data.manifest.target.spec.partition("socket=")[2]
    assert sock and "tkbench-demo-" in sock
    assert subprocess.run(["pgrep", "-f", sock], capture_output=True).returncode == 1
    assert not Path(sock).parent.exists()
