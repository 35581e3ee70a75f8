"""The one seam through which tkbench starts external programs.

Every child is started with an argument list (never a shell), gets a timeout,
is killed (with its process group) on any exception, and a failure raises
:class:`CommandError` carrying argv, exit code, stdout and stderr.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tkbench.errors import CommandError, ToolMissingError
from tkbench.typed import Typed


@dataclass(frozen=True)
class Completed(Typed):
    """A finished command, as recorded in run directories (its fields, in order)."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float = field(metadata={"digits": 3})


def which(tool: str) -> str | None:
    """Path of ``tool`` on PATH, or None."""
    return shutil.which(tool)


def require(tool: str, package: str | None = None) -> str:
    """Path of ``tool`` or a :class:`ToolMissingError` naming what to install."""
    path = shutil.which(tool)
    if path is None:
        hint = f" (install the Debian package '{package}')" if package else ""
        raise ToolMissingError(f"required program '{tool}' not found on PATH{hint}")
    return path


def run(
    argv: Sequence[str],
    *,
    timeout: float | None = 600.0,
    check: bool = True,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    term_grace: float = 5.0,
    on_line: Callable[[str], None] | None = None,
) -> Completed:
    """Run ``argv`` to completion and return its output.

    ``check=True`` raises :class:`CommandError` on a non-zero exit.  A missing
    program raises :class:`ToolMissingError`.  On timeout or any exception
    (including KeyboardInterrupt) the child's whole process group is stopped:
    SIGTERM first (fio then ends its jobs cleanly), SIGKILL after ``term_grace``.
    ``on_line`` is called with every line of stdout as it arrives (from a reader
    thread; an exception it raises is ignored), for live figures of a long run.
    """
    args = [str(a) for a in argv]
    if not args:
        raise ValueError("empty command")
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    if on_line is not None:
        # read as it comes (live figures); the same seam as a child started ahead
        child = spawn(
            args, timeout=timeout, env=env, cwd=cwd, on_line=on_line, term_grace=term_grace
        )
        completed = child.wait()
        if check and completed.returncode != 0:
            raise CommandError(args, completed.returncode, completed.stdout, completed.stderr)
        return completed
    start = time.monotonic()
    proc = _popen(args, full_env, cwd, stdin=input_text is not None)
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        raise CommandError(args, None, out, err, reason=f"timed out after {timeout:g} s") from None
    except BaseException:
        stop_group(proc, term_grace)
        raise
    done = Completed(args, proc.returncode, out, err, time.monotonic() - start)
    if check and proc.returncode != 0:
        raise CommandError(args, proc.returncode, out, err)
    return done


def _popen(
    args: list[str], env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None, stdin: bool
) -> subprocess.Popen[str]:
    try:
        return subprocess.Popen(
            args,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ToolMissingError(f"required program '{args[0]}' not found") from exc
    except PermissionError as exc:
        raise ToolMissingError(f"cannot execute '{args[0]}': permission denied") from exc


def spawn(
    argv: Sequence[str],
    *,
    timeout: float | None = 600.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_line: Callable[[str], None] | None = None,
    term_grace: float = 5.0,
) -> Running:
    """Start ``argv`` and return at once; :meth:`Running.wait` collects it.

    For a child that must be under way before the caller can wait for it (the
    next round's fio, held at its start while the current round runs).  Its
    stdout and stderr are read as they come (``on_line`` gets every stdout line),
    so it never blocks on a full pipe; ``timeout`` counts from now.
    """
    args = [str(a) for a in argv]
    if not args:
        raise ValueError("empty command")
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    return Running(args, _popen(args, full_env, cwd, stdin=False), timeout, on_line, term_grace)


class Running:
    """A child started by :func:`spawn`, in a process group of its own."""

    def __init__(
        self,
        argv: list[str],
        proc: subprocess.Popen[str],
        timeout: float | None,
        on_line: Callable[[str], None] | None,
        term_grace: float,
    ) -> None:
        self.argv = argv
        self.proc = proc
        self.timeout = timeout
        self.term_grace = term_grace
        self._t0 = time.monotonic()
        self._out: list[str] = []
        self._err: list[str] = []
        self._closed = False
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        def read_out() -> None:
            for line in stdout:
                self._out.append(line)
                if on_line is not None:
                    with contextlib.suppress(Exception):
                        on_line(line)

        def read_err() -> None:
            self._err.append(stderr.read())

        self._readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
        for t in self._readers:
            t.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def finished(self) -> bool:
        return self.proc.poll() is not None

    def wait(self) -> Completed:
        """Wait until the child ends.  Past its timeout its process group is killed and
        :class:`CommandError` raised; on any exception (Ctrl-C, SIGTERM) the group is
        stopped first (SIGTERM, SIGKILL after ``term_grace``)."""
        left = None
        if self.timeout is not None:
            left = max(0.0, self._t0 + self.timeout - time.monotonic())
        try:
            self.proc.wait(left)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            self.proc.wait()
            out, err = self._collect()
            raise CommandError(
                self.argv, None, out, err, reason=f"timed out after {self.timeout:g} s"
            ) from None
        except BaseException:  # stop fio first, or the readers never end
            self.stop()
            raise
        out, err = self._collect()
        return Completed(self.argv, self.proc.returncode, out, err, time.monotonic() - self._t0)

    def stop(self) -> None:
        """Stop the child and its process group (SIGTERM, SIGKILL after ``term_grace``)
        if it still runs; what it printed is dropped.  Safe to call more than once."""
        if self._closed:
            return  # collected: its process group is gone (and its id may be reused)
        if self.proc.poll() is None:
            stop_group(self.proc, self.term_grace)
        else:
            kill_group(self.proc)  # stragglers of the group (fio's helpers)
        self._collect()

    def _collect(self) -> tuple[str, str]:
        """Join the readers (they end once the process group is gone) and close the pipes."""
        if not self._closed:
            for t in self._readers:
                t.join()
            assert self.proc.stdout is not None and self.proc.stderr is not None
            self.proc.stdout.close()
            self.proc.stderr.close()
            self._closed = True
        return "".join(self._out), "".join(self._err)


def stop_group(proc: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process group of ``proc``, then SIGKILL it after ``grace`` seconds."""
    kill_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
    kill_group(proc)  # stragglers of the group (e.g. fio's helper processes)


def kill_group(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group of ``proc`` (started with a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
