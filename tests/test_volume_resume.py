"""A volume run killed outright (``kill -9`` of its process group, fio with it) in the
middle of a test, then ``tkbench run --resume``: the dead run's working directory is
reused, no stored run is repeated, a test repeated until its runs agree
(``repeat_until``) goes on counting the runs it kept, the result is complete, and
nothing is left behind on the volume.  Real fio on a loop-mounted ext4
(tests/test_volume.py's fixture); the report's recipe table read back from the PDF.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._helpers import layout_text, start_tkbench
from tests.test_volume import SMALL, _snapshot, ext4, needs_root
from tkbench.rundir.store import load_run
from tkbench.targets.volume import MARKER, PREFIX

__all__ = ["ext4"]  # the mounted filesystem, a fixture

# 64k: repeated until its runs lie within 0.0001 % of their mean, which real runs never
# do: it always runs to its maximum of 3 (the others: 2 runs each); its runs of 1 s
# leave the kill, 0.2 s into its third run, a margin on a busy machine
PROFILE = SMALL.replace(
    '[tests.64k]\npoint_runtime = "300ms"\nfile_size = "1m"\nrepeat = 2\n',
    '[tests.64k]\npoint_runtime = "1s"\nfile_size = "1m"\nrepeat = 2\n'
    'repeat_until = "0.0001%"\nrepeat_max = 3\n',
)
ORDER = ("4k", "4k-fsync", "64k", "64k-fsync", "1m", "1m-fsync")


def _stored(out: Path) -> list[Path]:
    return sorted(out.glob("tests/*/rounds/*.json"))


@needs_root
@pytest.mark.fio
def test_a_killed_volume_run_resumes_where_it_stopped(
    ext4: tuple[Path, str], tmp_path: Path
) -> None:
    assert "repeat_until" in PROFILE
    mnt, _ = ext4
    before = _snapshot(mnt)
    prof = tmp_path / "small.toml"
    prof.write_text(PROFILE, encoding="utf-8")
    out = tmp_path / "run"
    proc = start_tkbench(
        "run", "--profile", str(prof), "--target", str(mnt), "--out", str(out), "--no-history"
    )
    try:
        # 4k and 4k-fsync (2 runs each), then 64k's first two of three: kill in its third
        deadline = time.monotonic() + 120
        while len(_stored(out)) < 6:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        time.sleep(0.2)  # inside 64k's third run (1 s, started ahead: no fio start-up)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    killed = load_run(out)
    assert killed.manifest.status == "running"  # it died without a word
    kept = {p: p.read_bytes() for p in _stored(out)}
    done = {t.name: len(t.rounds) for t in killed.tests}
    assert done["4k"] == done["4k-fsync"] == 2 and done["64k"] == 2, done
    assert killed.test("64k").result is None
    # the dead run's working directory is still on the volume, with its marker
    (stale,) = [d for d in mnt.iterdir() if d.name.startswith(PREFIX)]
    assert (stale / MARKER).is_file()

    proc = start_tkbench("run", "--resume", str(out), "--no-history")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err

    run = load_run(out)
    assert run.manifest.status == "complete"
    assert [t.name for t in run.tests] == list(ORDER)
    runs = {t.name: [r.round for r in t.rounds] for t in run.tests}
    assert runs == {n: [1, 2, 3] if n == "64k" else [1, 2] for n in ORDER}
    for path, data in kept.items():  # no stored run was run again or rewritten
        assert path.read_bytes() == data, path
    assert all(t.result is not None for t in run.tests)
    log = (out / "events.log").read_text()
    assert f"volume: reusing the working directory {stale} of this run" in log
    # repetitions: the kept runs stay in the test's window however long the gap was
    resumed = [ln for ln in log.splitlines() if " resume " in ln]
    assert len(resumed) == 1 and ": continue (" in resumed[0], resumed
    assert "volume: removed the working directory" in log
    assert _snapshot(mnt) == before  # nothing left behind, nothing else touched

    shown = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tkbench", "show", str(out), "--json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    until = next(t for t in shown["tests"] if t["name"] == "64k")["repeat_until"]
    assert (until["runs"], until["met"], until["ended_by"]) == (3, False, "maximum")

    # the report: the recipe table on page 1, the runs of each test in its chapter
    text = layout_text(out / "report.pdf")
    assert "fsync / plain" in text
    rows = [ln.split() for ln in text.splitlines() if "runs)" in ln]
    assert len(rows) == 3  # 4k, 64k, 1m: plain and fsync side by side
    assert "Sixteen parallel 64 KiB random writers" in text
    assert "The fsync variant is the worst case" in " ".join(text.split())
    assert "not repeatable to 0.0001 % in 3 runs" in " ".join(text.split())
    assert text.count("Repeatability") >= 6
    assert "mean of rounds 1–3" in text  # 64k's window: all three runs
    # the headline rows of a recipe run plainly and with fsync name their test
    assert "4k random (4k)" in text and "4k random (4k-fsync)" in text
