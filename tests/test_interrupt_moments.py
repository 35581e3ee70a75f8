"""Signals at the moments a run could not come back from: during a file target's
purge.  Real runs with real fio on tiny files; the signal is a real one, sent by the
process to itself at that exact moment (from inside the purge's first sync)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tkbench import cli
from tkbench import target as targetmod
from tkbench.store import load_run

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
    """``os`` as tkbench.target sees it, whose first ``fsync`` -- the purge's first
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
