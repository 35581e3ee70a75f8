"""A fleet's reports rendered a few at a time, not all at once.

The runs of a fleet often end together, and each renders its own report as it ends
(150-300 MB each while it renders: sixteen at once took 2.34 GB).  The fleet makes
``count`` *slots*, one lock file each in a private directory, and names the directory
to its children in ``TKBENCH_FLEET_REPORTS``; a child renders its report only while it
holds a slot (:func:`report_turn`), so at most ``count`` render at once and the others
wait their turn.  A lock (``flock``) goes with its holder: a child that dies, even by
SIGKILL, frees its slot.  Outside a fleet, or when the directory is gone (its fleet
ended), a report renders at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tkbench.fleet.host import cpu_cores

REPORTS_ENV = "TKBENCH_FLEET_REPORTS"
MOST = 4  # reports rendered at once by default, on a host with as many CPU cores
POLL = 0.2  # seconds between looks for a free slot


def default_jobs() -> int:
    """Reports rendered at once unless ``--report-jobs`` says: one per CPU core this
    process may use, at most :data:`MOST` (rendering is one core's work; each more at
    once costs its memory)."""
    return max(1, min(cpu_cores(), MOST))


class ReportSlots:
    """``count`` report slots for a fleet's children; :meth:`close` removes them."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"report slots: {count} (at least 1)")
        self.count = count
        self.directory = Path(tempfile.mkdtemp(prefix="tkbench-reports-"))
        for k in range(count):
            (self.directory / f"slot-{k}").touch()

    def env(self) -> dict[str, str]:
        """What a child's environment gets, so that it takes a slot for its report."""
        return {REPORTS_ENV: str(self.directory)}

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def report_turn(waiting: Callable[[int], None] | None = None) -> Iterator[None]:
    """Hold one of the fleet's report slots while the body runs (in a child of a fleet);
    ``waiting(count)`` is called once when every slot is taken, before the wait."""
    named = os.environ.get(REPORTS_ENV)
    slots = sorted(Path(named).glob("slot-*")) if named else []
    told = False
    while slots:
        for slot in slots:
            try:
                fd = os.open(slot, os.O_RDWR)
            except OSError:  # the fleet is gone and took its slots: render at once
                slots = []
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            try:
                yield
            finally:
                os.close(fd)  # and with it the lock
            return
        else:
            if not told and waiting is not None:
                waiting(len(slots))
                told = True
            time.sleep(POLL)
    yield
