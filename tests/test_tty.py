"""The progress display a person sees: tkbench run on a real pseudo-terminal."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers import FAST, STAGED_OFF
from tkbench.store import load_run

pytestmark = pytest.mark.fio


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) from bsdutils")
def test_run_on_a_terminal_shows_bars_and_finishes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    sets = " ".join(
        f"--set {o}"
        for o in [
            *FAST,
            "tests.iops.rounds.max=2",
            "tests.iops.rounds.window=2",
            "tests.throughput.enabled=false",
            "tests.latency.enabled=false",
            *STAGED_OFF,
            "tests.wsat.stop_written_multiple=1",
        ]
    )
    cmd = (
        f"{sys.executable} -m tkbench run --profile quick --target {tmp_path}/t.img "
        f"--size 16M --yes --no-report --out {out} {sets}"
    )
    proc = subprocess.run(
        ["script", "-qec", cmd, "/dev/null"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    screen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", proc.stdout)
    assert proc.returncode == 0, screen[-2000:]
    assert "Traceback" not in screen
    assert "━" in screen  # rich bars were drawn
    assert "ETA" in screen
    assert "iops round 2: iops 4k 0/100" in screen
    assert "Write Saturation:" in screen
    assert load_run(out).manifest.status == "complete"
