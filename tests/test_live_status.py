"""fio's live figures during a round: --status-interval reports parsed while fio runs,
only the final report kept as the round's raw output.  Real fio on a small file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF
from tkbench.fio.output import parse
from tkbench.fio.results import LiveFigures, StatusStream
from tkbench.fio.runner import final_report

pytestmark = pytest.mark.fio


def _fio_with_status(tmp_path: Path) -> str:
    """Two jobs one after the other, 3 s each, a status report every second."""
    job = tmp_path / "two.fio"
    job.write_text(
        "[global]\n"
        f"filename={tmp_path / 't.img'}\nsize=16m\nioengine=libaio\ndirect=1\n"
        "time_based=1\nruntime=3\niodepth=4\n"
        "[first]\nrw=randwrite\nbs=4k\n"
        "[second]\nstonewall\nrw=randread\nbs=64k\n"
    )
    done = subprocess.run(
        ["fio", "--output-format=json", "--status-interval=1", str(job)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def test_status_reports_become_figures_of_the_running_point(tmp_path: Path) -> None:
    stdout = _fio_with_status(tmp_path)
    assert stdout.count("\n{") + stdout.startswith("{") >= 4  # several reports
    seen: list[LiveFigures] = []
    stream = StatusStream({"first": "4k 0/100", "second": "64k 100/0"}, seen.append)
    for line in stdout.splitlines(keepends=True):
        stream.feed(line)
    assert {f.point for f in seen} == {"4k 0/100", "64k 100/0"}
    final = parse(final_report(stdout))
    by_name = {j.name: j for j in final.jobs}
    # each interval's IOPS of a point lies near that point's final mean (one machine,
    # one file; intervals straddling a start are shorter, never wrong by 10x)
    for f in seen:
        job = by_name["first" if f.point == "4k 0/100" else "second"]
        total = job.read.iops + job.write.iops
        assert total / 10 < f.iops < total * 10, (f, total)
        assert f.lat_ms > 0 and f.mbs > 0 and 0 < f.seconds <= 2.5


def test_only_the_final_report_is_kept(tmp_path: Path) -> None:
    stdout = _fio_with_status(tmp_path)
    kept = final_report(stdout)
    assert kept.count("\n}") + kept.startswith("}") <= 1 and kept.lstrip().startswith("{")
    last = stdout[stdout.rindex("\n{") + 1 :]
    assert parse(kept).jobs == parse(last).jobs
    # the interval reports were cumulative: the first one had less I/O than the last
    first = stdout[: stdout.index("\n}\n") + 3]
    assert parse(first).jobs[0].write.io_bytes < parse(kept).jobs[0].write.io_bytes


def test_a_run_shows_live_figures_and_stores_one_report(tmp_path: Path) -> None:
    args = [
        sys.executable,
        "-m",
        "tkbench",
        "-v",
        "run",
        "--target",
        str(tmp_path / "t.img"),
        "--size",
        "16M",
        "--yes",
        "--no-report",
        "--no-history",
        "--out",
        str(tmp_path / "run"),
    ]
    for s in (
        "tests.iops.point_runtime=6s",
        'tests.iops.block_sizes=["4k"]',
        'tests.iops.mixes=["0/100"]',
        'tests.iops.tracking=["iops 4k 0/100"]',
        "tests.iops.rounds.max=2",
        "tests.iops.rounds.window=2",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        "tests.wsat.enabled=false",
        *STAGED_OFF,
        "precondition.capacity_multiple=1.0",
    ):
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    status = [ln for ln in done.stderr.splitlines() if " status test=iops point=4k_0/100 " in ln]
    assert len(status) >= 2, done.stderr  # with -v: every report (each 5 s)
    raw = (tmp_path / "run/tests/iops/rounds/0001.out").read_text()
    # beside the JSON only fio's notes on the hand-off's commands (their output is kept
    # in files of fio's scratch directory); of the status reports, the last one
    notes = [ln for ln in raw.split("{", 1)[0].splitlines() if ln.strip()]
    assert all(" : Saving output of postrun in " in ln for ln in notes), notes
    assert raw.count("\n}") + raw.startswith("}") <= 1
    assert parse(raw).jobs
