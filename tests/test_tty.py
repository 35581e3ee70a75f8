"""The progress display a person sees: tkbench run on a real pseudo-terminal."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers import FAST, STAGED_OFF, merged
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) from bsdutils")
def test_run_on_a_terminal_shows_bars_and_finishes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    sets = " ".join(
        f"--set {shlex.quote(o)}"
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


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) from bsdutils")
def test_a_fleet_on_a_terminal_shows_a_line_per_drive_updated_in_place(tmp_path: Path) -> None:
    """Two file targets at once: one table line per drive with its test, round, fio's
    live IOPS (the children report every 5 s for the display) and time left, redrawn
    in place; the rounds' own lines stay in the runs' logs, not on the screen."""
    out = tmp_path / "fleet"
    sets = " ".join(
        f"--set {shlex.quote(o)}"
        for o in merged(
            "tests.iops.point_runtime=1.5s",  # 9 s rounds: live reports in each
            "tests.iops.rounds.max=2",
            "tests.iops.rounds.window=2",
            "tests.throughput.enabled=false",
            "tests.latency.enabled=false",
            "tests.wsat.enabled=false",
            *STAGED_OFF,
        )
    )
    cmd = (
        f"{sys.executable} -m tkbench run --profile quick --target {tmp_path}/a.img "
        f"--target {tmp_path}/b.img --size 16M --yes --no-report --out {out} {sets}"
    )
    proc = subprocess.run(
        ["script", "-qec", cmd, "/dev/null"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    raw = proc.stdout
    screen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", raw).replace("\r", "\n")
    assert proc.returncode == 0, screen[-3000:]
    assert "Traceback" not in screen
    assert re.search(r"\x1b\[\d*A", raw), "no cursor-up: the lines were not redrawn in place"
    assert re.search(r"drive\s+state\s+test\s+round\s+IOPS \(live\)\s+ETA", screen)
    for name in ("a.img", "b.img"):
        # during the round: its number, live IOPS of a point, the time left
        live = rf"^{re.escape(name)}\s+running\s+iops\s+[12] of ≤2\s+[\d,]+ \(\d+k \d+/\d+\)\s+\S"
        assert re.search(live, screen, re.M), f"{name}: no live line\n{screen[-3000:]}"
        assert re.search(rf"^{re.escape(name)}\s+exit 0: complete", screen, re.M)
        assert load_run(out / name).manifest.status == "complete"
        assert f"[{name}] " in screen  # its other lines, tagged, above the table
    assert "round start" not in screen and "round done" not in screen
    assert "Fleet " in screen  # the fleet summary after the display
