"""Several drives on one host, in parallel: one independent ``tkbench run`` per target.

Design: the parent starts one child ``tkbench run`` process per target, with that one
target and ``--out DIR/NAME``.  Each child keeps every guarantee a single run has (its
own lock, guards, confirmation, purge, write-cache session, steady-state loop, signal
handling, resume and exit code), and a child that crashes cannot take the others down.
The parent only checks the command line once, names the run directories, hands each
block device the ``--confirm`` ID that names it, tags the children's lines with the
drive, forwards SIGINT/SIGTERM/SIGHUP to them, waits for all, and keeps
``DIR/fleet.json`` (:class:`~tkbench.fleet.record.FleetRecord`).  A child started by a
fleet ends its run as interrupted when the parent dies, even by SIGKILL
(:func:`bind_to_parent`).

Library code: nothing here prints; lines go to the ``emit`` callback the CLI passes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tkbench.errors import EXIT_INTERRUPTED, Interrupted
from tkbench.fleet.outcomes import SEVERITY, outcome, worst
from tkbench.fleet.record import FleetRecord, RunEntry

PARENT_ENV = "TKBENCH_FLEET_PARENT"


def child_command(args: Sequence[str]) -> list[str]:
    """The child: this very tkbench, whatever the working directory holds.  ``python
    -m tkbench`` would look in the working directory first and import a folder named
    ``tkbench`` there instead; ``-P`` leaves it off the module path, and the
    directory this package was imported from goes first."""
    root = str(Path(__file__).resolve().parent.parent.parent)
    code = f"import sys; sys.path.insert(0, {root!r}); from tkbench.cli import main; "
    code += "sys.exit(main())"
    return [sys.executable, "-P", "-c", code, *args]


@dataclass
class Child:
    entry: RunEntry
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    readers: list[threading.Thread] = field(default_factory=list)


class Fleet:
    """Runs the children, tags their lines, forwards signals, keeps ``fleet.json``."""

    def __init__(
        self,
        root: Path,
        record: FleetRecord,
        emit: Callable[[str, str], None],
        env: dict[str, str] | None = None,
        on_end: Callable[[RunEntry], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.record = record
        self.emit = emit
        self.env = env
        self.on_end = on_end  # called with a run's entry once its exit code is recorded
        self.children: list[Child] = []
        self.interrupted = False
        self._lock = threading.Lock()

    def forward(self, signum: int) -> None:
        """The first SIGINT/SIGTERM/SIGHUP goes to every running child; each stops its
        fio and marks its run interrupted.  Later ones are not passed on (a child
        ignores them anyway, and the parent goes on waiting)."""
        if self.interrupted:
            return
        self.interrupted = True
        for c in self.children:
            if c.proc is not None and c.proc.poll() is None:
                with contextlib.suppress(OSError):
                    c.proc.send_signal(signum)

    def _read(self, child: Child, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("tkbench: error: "):
                child.entry.error = line[len("tkbench: error: ") :]
            with self._lock:
                self.emit(child.entry.name, line)
        stream.close()

    def run(self, jobs: Sequence[tuple[RunEntry, list[str]]]) -> int:
        """Start every child, wait for all; the worst exit code (with this run's
        untouched entries' codes)."""
        env = dict(os.environ if self.env is None else self.env)
        env[PARENT_ENV] = str(os.getpid())
        self.record.save(self.root)
        for entry, argv in jobs:
            child = Child(entry, argv)
            self.children.append(child)
            if self.interrupted:  # a signal while the others started: this one never runs
                entry.exit_code, entry.error = EXIT_INTERRUPTED, "not started: interrupted"
                continue
            entry.started, entry.ended, entry.exit_code, entry.error = time.time(), None, None, None
            # its own session: a Ctrl-C on the terminal reaches the parent only, which
            # passes it on once (a child gets one signal, never two at different times);
            # no stdin: a fleet never prompts (a block device needs its --confirm)
            child.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
            for s in (child.proc.stdout, child.proc.stderr):
                assert s is not None
                t = threading.Thread(target=self._read, args=(child, s), daemon=True)
                t.start()
                child.readers.append(t)
        self.record.save(self.root)
        pending = [c for c in self.children if c.proc is not None]
        while pending:
            for c in list(pending):
                assert c.proc is not None
                rc = c.proc.poll()
                if rc is None:
                    continue
                for t in c.readers:
                    t.join(timeout=5)
                c.entry.ended, c.entry.exit_code = time.time(), rc
                if rc not in SEVERITY and c.entry.error is None:
                    c.entry.error = outcome(rc)
                pending.remove(c)
                self.record.save(self.root)
                if self.on_end is not None:
                    self.on_end(c.entry)
            if pending:
                time.sleep(0.1)
        # a run with no exit code recorded (its fleet was killed) ended unfinished
        codes = [EXIT_INTERRUPTED if r.exit_code is None else r.exit_code for r in self.record.runs]
        code = EXIT_INTERRUPTED if self.interrupted else worst(codes)
        self.record.ended, self.record.exit_code = time.time(), code
        self.record.save(self.root)
        return code


def bind_to_parent() -> None:
    """In a child of a fleet: end like SIGTERM (the run marked interrupted, resumable)
    when the parent dies, even by SIGKILL, rather than run on unwatched.  Linux only
    (prctl PR_SET_PDEATHSIG); elsewhere a no-op."""
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    if str(os.getppid()) != parent:  # the parent died before prctl took effect
        raise Interrupted("the fleet that started this run is gone")
