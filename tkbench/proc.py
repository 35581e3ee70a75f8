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
from dataclasses import dataclass

from .errors import CommandError, ToolMissingError


@dataclass(frozen=True)
class Completed:
    """A finished command, as recorded in run directories."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def to_dict(self) -> dict[str, object]:
        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "seconds": round(self.seconds, 3),
        }


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
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ToolMissingError(f"required program '{args[0]}' not found") from exc
    except PermissionError as exc:
        raise ToolMissingError(f"cannot execute '{args[0]}': permission denied") from exc
    try:
        if on_line is None:
            out, err = proc.communicate(input=input_text, timeout=timeout)
        else:
            out, err = _stream(proc, on_line, timeout)
    except subprocess.TimeoutExpired as exc:
        kill_group(proc)
        if on_line is None:
            out, err = proc.communicate()
        else:
            out, err = str(exc.output or ""), str(exc.stderr or "")
        raise CommandError(args, None, out, err, reason=f"timed out after {timeout:g} s") from None
    except BaseException:
        stop_group(proc, term_grace)
        raise
    done = Completed(args, proc.returncode, out, err, time.monotonic() - start)
    if check and proc.returncode != 0:
        raise CommandError(args, proc.returncode, out, err)
    return done


def _stream(
    proc: subprocess.Popen[str], on_line: Callable[[str], None], timeout: float | None
) -> tuple[str, str]:
    """Wait for ``proc`` like communicate(), passing each stdout line on as it comes."""
    assert proc.stdout is not None and proc.stderr is not None
    out: list[str] = []
    err: list[str] = []
    stdout, stderr = proc.stdout, proc.stderr

    def read_out() -> None:
        for line in stdout:
            out.append(line)
            with contextlib.suppress(Exception):
                on_line(line)

    def read_err() -> None:
        err.append(stderr.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
    for t in readers:
        t.start()

    def finish() -> None:  # the readers end once the process group is gone
        for t in readers:
            t.join()
        stdout.close()
        stderr.close()

    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.wait()
        finish()
        raise subprocess.TimeoutExpired(
            proc.args, timeout or 0.0, output="".join(out), stderr="".join(err)
        ) from None
    except BaseException:  # Ctrl-C, SIGTERM: stop fio first, or the readers never end
        stop_group(proc, 5.0)
        finish()
        raise
    finish()
    return "".join(out), "".join(err)


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
