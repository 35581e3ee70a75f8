"""A fleet's reports rendered a few at a time (tkbench/fleet/reports.py): real
processes take the fleet's report slots; what is counted is which of them are inside
(each holds a file while it is), never how long anything took."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench import cli
from tkbench.fleet.reports import REPORTS_ENV, ReportSlots, report_turn

# a renderer: waits for its turn, says so once if it must, then holds its slot until
# the test lets it go (the file ``go``), marked by the file ``inside``
WORKER = """
import os, sys, time
from pathlib import Path
from tkbench.fleet.reports import report_turn
me = Path(sys.argv[1])
me.mkdir()
with report_turn(lambda n: (me / "waiting").touch()):
    (me / "inside").touch()
    while not (me / "go").exists():
        time.sleep(0.02)
    (me / "inside").unlink()
(me / "done").touch()
"""


def _wait(what: str, cond: Callable[[], bool], timeout: float = 120) -> None:
    """Until ``cond()`` holds (a bound against hanging, not a timing)."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"never: {what}"
        time.sleep(0.02)


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_at_most_n_render_at_once_the_others_wait_and_a_killed_one_frees_its_slot(
    tmp_path: Path, workers: list[subprocess.Popen[bytes]]
) -> None:
    slots = ReportSlots(2)
    env = {**os.environ, **slots.env()}
    dirs = [tmp_path / f"w{k}" for k in range(5)]
    for d in dirs:
        workers.append(subprocess.Popen([sys.executable, "-c", WORKER, str(d)], env=env))

    def inside() -> list[int]:
        return [k for k, d in enumerate(dirs) if (d / "inside").exists()]

    def waiting() -> list[int]:
        return [k for k, d in enumerate(dirs) if (d / "waiting").exists()]

    # two inside; the three others found every slot taken and wait
    _wait("two inside and three waiting", lambda: len(inside()) == 2 and len(waiting()) == 3)
    assert len(inside()) == 2
    first = inside()
    # one lets go: one waiting one takes its place, and still no more than two
    (dirs[first[0]] / "go").touch()
    _wait("the first to finish", lambda: (dirs[first[0]] / "done").exists())
    _wait("a waiting one inside", lambda: len(inside()) == 2)
    assert len(inside()) == 2 and first[1] in inside()
    # one inside is killed (SIGKILL: no cleanup of its own): its slot is free again
    victim = next(k for k in inside() if k != first[1])
    workers[victim].send_signal(signal.SIGKILL)
    workers[victim].wait()
    _wait("the killed one's slot taken", lambda: len([k for k in inside() if k != victim]) == 2)
    # the rest, one after another
    for _ in range(3):
        # the one let go before has left; a waiting one may take a moment to come in
        _wait("one inside", lambda: any(k != victim for k in inside()))
        now = [k for k in inside() if k != victim]
        assert len(now) <= 2
        (dirs[now[0]] / "go").touch()
        _wait("one more done", lambda k=now[0]: (dirs[k] / "done").exists())
    _wait("all done", lambda: all((d / "done").exists() for k, d in enumerate(dirs) if k != victim))
    assert [w.wait() for k, w in enumerate(workers) if k != victim] == [0, 0, 0, 0]
    slots.close()
    assert not slots.directory.exists()


def test_outside_a_fleet_or_once_its_slots_are_gone_a_report_renders_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = []
    monkeypatch.delenv(REPORTS_ENV, raising=False)
    with report_turn(lambda n: ran.append("waited")):
        ran.append("outside")
    slots = ReportSlots(1)
    monkeypatch.setenv(REPORTS_ENV, str(slots.directory))
    slots.close()
    with report_turn(lambda n: ran.append("waited")):
        ran.append("gone")
    assert ran == ["outside", "gone"]


@pytest.mark.fio
def test_a_run_of_a_fleet_renders_its_report_only_in_a_free_slot(tmp_path: Path) -> None:
    """The run's own report waits while the test holds the only slot, and is written
    once the test lets the slot go."""
    slots = ReportSlots(1)
    fd = os.open(slots.directory / "slot-0", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "tkbench", "run", "--profile", "quick", "--size", "16M"]
    argv += ["--yes", "--no-history", *sets(*TWO_IOPS_ROUNDS), "--out", str(out)]
    argv += ["--target", str(tmp_path / "t.img")]
    env = {**os.environ, **slots.env(), "TERM": "dumb"}
    log = tmp_path / "stderr"
    with log.open("w") as err:
        run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            _wait(
                "the run waiting for a slot, or its end",
                lambda: "report slot" in log.read_text() or run.poll() is not None,
                600,
            )
            assert "waiting for one of the fleet's 1 report slot(s)" in log.read_text()
            assert not (out / "report.pdf").exists() and run.poll() is None
            os.close(fd)  # the slot is free: the report is written, the run ends
            assert run.wait(timeout=600) == 0, log.read_text()[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert (out / "report.pdf").is_file()
    slots.close()


def test_report_jobs_is_a_whole_number_of_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0", "-1", "1.5", "x"):
        code = cli.main(["run", "--target", "a", "--target", "b", "--report-jobs", bad])
        assert code == 2
        err = capsys.readouterr().err
        assert "--report-jobs" in err and "Traceback" not in err and len(err.splitlines()) == 1
