"""Signals at the two moments a run could not come back from: during a file target's
purge, and after "run complete" before its checks.  Real runs with real fio on tiny
files; the signal is a real one, sent by the process to itself at that exact moment
(from inside the purge's first sync, or as the checks begin)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench import cli
from tkbench.rundir.store import load_run
from tkbench.targets import file as targetmod

pytestmark = pytest.mark.fio

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _signals_as_they_were() -> Iterator[None]:
    """A signalled run leaves its process ignoring further signals (it is on its way
    out); the next test in this process needs them back."""
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def _run(tmp: Path, *extra: str) -> int:
    args = ["run", "--profile", "quick", "--yes", "--no-report", "--target", str(tmp / "t.img")]
    return cli.main([*args, "--out", str(tmp / "run"), *extra])


class _SignalAtFirstSync:
    """``os`` as tkbench.targets sees it, whose first ``fsync`` -- the purge's first
    step done -- comes with a SIGTERM to this process (the handler tkbench's CLI
    installs raises there, as it would for systemd's stop)."""

    def __init__(self) -> None:
        self.sent = False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        os.fsync(fd)
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)


def test_sigterm_during_a_file_purge_leaves_a_target_the_resume_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _SignalAtFirstSync()
    monkeypatch.setattr(targetmod, "os", hook)
    img = tmp_path / "t.img"
    assert _run(tmp_path, "--size", "16M", *sets(*TWO_IOPS_ROUNDS)) == 130
    assert hook.sent
    data = load_run(tmp_path / "run")
    assert data.manifest.status == "interrupted"
    assert data.tests[0].purge is None  # stopped inside it
    assert img.stat().st_size == 16 * MiB  # never shrunk
    monkeypatch.undo()
    assert _run(tmp_path, "--resume", str(tmp_path / "run")) == 0
    after = load_run(tmp_path / "run")
    assert after.manifest.status == "complete"
    purge = after.tests[0].purge
    assert purge is not None and "size kept" in purge.notes[0]
    assert img.stat().st_size == 16 * MiB


def test_sigint_after_run_complete_is_finished_by_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C between the last round stored and checks.json: the resume makes the
    checks (and the report, and the history entry) and exits with their code."""
    from tkbench.engine import runs

    real = runs.finish_checks

    def interrupted(*args: Any, **kw: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)  # "run complete" is in the log by now
        return real(*args, **kw)

    monkeypatch.setattr(runs, "finish_checks", interrupted)
    # the checks run after tkbench's own handler is gone, so Python's default one meets
    # the SIGINT, as in a shell; pytest-xdist's workers ignore SIGINT, which would not
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    # a steady state two rounds cannot reach: the checks fail, exit 1 when made
    failing = sets(*TWO_IOPS_ROUNDS, "tests.iops.rounds.max_excursion=0.000001")
    failing += ["--set", "acceptance.steady_state=true"]
    try:
        assert _run(tmp_path, "--size", "16M", *failing) == 130
    finally:
        signal.signal(signal.SIGINT, old_handler)
    run = tmp_path / "run"
    assert "run complete" in (run / "events.log").read_text()
    assert load_run(run).manifest.status == "complete"
    assert not (run / "checks.json").exists()
    # the mark was kept before the manifest said complete
    from tkbench.device import owndata

    mark = owndata.left_by_tkbench(str(tmp_path / "t.img"))
    assert mark is not None and mark.run == str(run.absolute())
    monkeypatch.undo()
    capsys.readouterr()
    assert _run(tmp_path, "--resume", str(run)) == 1
    done = load_run(run)
    assert done.checks is not None and not done.checks.passed
    assert "its checks follow" in (run / "events.log").read_text()
    assert "FAIL" in capsys.readouterr().err
    # now it is finished: nothing left to resume
    assert _run(tmp_path, "--resume", str(run)) == 2
