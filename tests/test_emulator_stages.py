"""Host idle recovery and cross-stimulus recovery on the bundled emulator, with real fio:
idle time lets the emulated drive recover (more idle, more recovery), and switching
between sequential and random writes shows a transition that takes time to settle.

The drive is 64 MiB (so fresh-to-steady takes seconds, not minutes) and starts its
background garbage collection after 400 ms of idle (default 100 ms): the short wait
state stays below that and recovers nothing, the long one frees the whole spare area,
a difference no scheduling noise of a shared machine hides.  The stages are shrunk
with --set to keep the test near 45 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests._helpers import sets
from tkbench.emulator import start_emulator

pytestmark = [pytest.mark.fio, pytest.mark.slow]

TK = [sys.executable, "-m", "tkbench"]
BURSTS = 6

STAGES = sets(
    # preconditioning: 1-second rounds until steady state (about 14 on 64 MiB)
    "tests.hir.point_runtime=0.5s",
    "tests.hir.rounds.max=25",
    "tests.hir.rounds.window=5",
    # six 0.3-second write bursts after 0.3 s and after 1.2 s of host idle
    'tests.hir.wait_states=["0.3s", "1.2s"]',
    f"tests.hir.bursts={BURSTS}",
    "tests.hir.burst=0.3s",
    "tests.hir.baseline=1s",
    "tests.hir.sample=0.1s",
    'tests.xsr.groups=["128k sequential 3s", "4k random 3s", "128k sequential 3s"]',
    "tests.xsr.sample=0.25s",
)


@pytest.fixture(scope="module")
def procedures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``show --json``'s procedures of one hir + xsr run on a fresh emulator."""
    tmp = tmp_path_factory.mktemp("stages")
    out = tmp / "run"
    with start_emulator(tmp / "S", "64M", seed=7, idle_ms=400) as emu:
        run = subprocess.run(
            [
                *TK,
                "run",
                "--profile",
                "quick",
                "--tests",
                "hir,xsr",
                "--target",
                emu.uri,
                "--yes",
                "--out",
                str(out),
                "--no-report",
                "--no-history",
                *STAGES,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    show = subprocess.run(
        [*TK, "show", str(out), "--json"], capture_output=True, text=True, check=True
    )
    procs: dict[str, Any] = json.loads(show.stdout)["procedures"]
    return procs


def test_host_idle_recovery_is_measured_in_each_wait_state(
    procedures: dict[str, Any],
) -> None:
    states = procedures["hir"]["wait_states"]
    assert [w["idle_s"] for w in states] == [0.3, 1.2]
    # every burst found whole (a late log line is no gap: tkbench/fio/logs.py); the
    # last may be cut by the end of the wait state's time, which fio 3.33 spends
    # partly on a longer first burst
    assert all(BURSTS - 1 <= w["bursts"] <= BURSTS for w in states), states
    # each wait state's bursts measured against the steady state; how much more a
    # long idle recovers than a short one is a speed ratio a busy CPU narrows (the
    # emulator's own overhead caps both): benchmarks/emulator_recovery.py measures
    # the idle recovery, test_idle_time_lets_background_gc_recover asserts it in the
    # flash model's own time
    assert all(w["recovery"] > 0 for w in states), states


def test_switching_between_sequential_and_random_writes_shows_transitions(
    procedures: dict[str, Any],
) -> None:
    to_random, to_sequential = procedures["xsr"]["transitions"]
    assert (to_random["from"], to_random["to"]) == ("128k sequential", "4k random")
    assert (to_sequential["from"], to_sequential["to"]) == ("4k random", "128k sequential")
    # throughput drops with random writes, and both new stimuli take time to settle
    assert to_random["settled_mbs"] < 0.5 * to_sequential["settled_mbs"]
    assert to_random["recovery_s"] is not None and to_random["recovery_s"] > 0
    assert to_sequential["recovery_s"] is not None and to_sequential["recovery_s"] > 0
