"""What every command shares at the edge of the process: -v/-q, informational lines,
closed pipes and the report of an internal error.  Used by the CLI only.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tkbench.cli.terminal import printable
from tkbench.errors import EXIT_INTERNAL, DeviceError
from tkbench.units import timestamp


@dataclass
class Session:
    """Per-invocation state: verbosity, and the run directory once a run has one."""

    verbose: bool = False
    quiet: bool = False
    run_dir: Path | None = None


SESSION = Session()


def info(text: str) -> None:
    """An informational line on stderr (where a file went, a summary); not under -q."""
    if not SESSION.quiet:
        sys.stderr.write(printable(text.removesuffix("\n"), lines=True) + "\n")


def command_name(argv0: str | None = None) -> str:
    """How the user should type tkbench: ``tkbench`` when that is on PATH and is this
    very program, else the path this process was started by (``.venv/bin/tkbench``),
    or ``python -m tkbench`` with this interpreter."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0 or argv0 == "-c" or os.path.basename(argv0) == "__main__.py":
        return f"{shlex.quote(sys.executable)} -m tkbench"
    on_path = shutil.which("tkbench")
    me = shutil.which(argv0) if os.sep not in argv0 else argv0
    if on_path and me and os.path.realpath(on_path) == os.path.realpath(me):
        return "tkbench"
    return shlex.quote(argv0 if os.sep in argv0 else (me or argv0))


def _reader_gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe or socket whose reading end is closed."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))


def silence(stream: Any) -> None:
    """Point ``stream``'s file descriptor at /dev/null, so that the flush at exit
    cannot fail again (and Python prints no 'Exception ignored ... BrokenPipeError')."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def closed_output() -> bool:
    """After a BrokenPipeError: True (and stdout/stderr silenced) when it was our own
    output whose reader went away, as in ``tkbench history | head -n 1``."""
    gone = [s for s in (sys.stdout, sys.stderr) if _reader_gone(s)]
    for s in gone:
        silence(s)
    return bool(gone)


def internal_error(exc: BaseException) -> int:
    """A bug in tkbench: one line on stderr; the traceback into the run's events.log
    when there is a run directory, and on stderr with -v or TKBENCH_DEBUG."""
    text = "".join(traceback.format_exception(exc))
    where = ""
    log = SESSION.run_dir / "events.log" if SESSION.run_dir else None
    if log is not None and log.is_file():
        stamp = timestamp()
        try:
            with log.open("a", encoding="utf-8") as fh:
                fh.write(f"{stamp} internal error, traceback:\n{text}")
            where = f"traceback in {log}; "
        except OSError:
            pass
    if SESSION.verbose or os.environ.get("TKBENCH_DEBUG"):
        sys.stderr.write(text)
    elif not where:
        where = "run with -v for the traceback; "
    message = printable(str(exc).splitlines()[0]) if str(exc) else ""
    sys.stderr.write(
        f"tkbench: error: internal error: {type(exc).__name__}"
        f"{': ' + message if message else ''} ({where}please report it)\n"
    )
    return EXIT_INTERNAL


def one_line(text: str) -> str:
    """``text`` with its control characters escaped: an error stays one line even when it
    quotes a path with a newline in it (scripts read the first line of stderr)."""
    return printable(text)


def say(text: str = "") -> None:
    """A line (or lines) of a command's output for people on stdout, control
    characters escaped (:func:`tkbench.cli.terminal.printable`); JSON goes out as it is."""
    print(printable(text, lines=True))


def warn(text: str) -> None:
    """A warning on stderr, one line, control characters escaped."""
    sys.stderr.write(f"tkbench: warning: {printable(text)}\n")


class GuardedOutput:
    """Standard output whose failed writes (a full disk, ``>/dev/full``, an I/O
    error) are a :class:`DeviceError` of one line, not an internal error; a closed
    pipe stays a BrokenPipeError (see :func:`closed_output`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def _failed(self, exc: OSError) -> DeviceError:
        silence(self.inner)  # what is still buffered goes nowhere, not to a second error
        return DeviceError(f"standard output: cannot write: {exc.strerror or exc}")

    def write(self, text: str) -> int:
        try:
            return int(self.inner.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        try:
            self.inner.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._failed(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
