"""FioRunner: the one place that starts fio.

``LocalFio`` runs fio on this host; ``ClientFio`` drives fio servers
(``fio --server`` on each host) through fio's own client/server mode.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import proc
from .errors import (
    CommandError,
    DeviceError,
    FioJobError,
    FioParseError,
    InputError,
    TkbenchError,
    ToolMissingError,
)
from .fiojson import FioOutput, check_jobs, parse
from .records import FioCall

MIN_FIO = (3, 1)


@dataclass
class FioRun:
    """A finished fio process (successful or not)."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    started: float  # epoch seconds
    output: FioOutput | None = None

    def call(self) -> FioCall:
        """The run as the run directory records it (the end of stderr only)."""
        return FioCall(
            argv=tuple(self.argv),
            returncode=self.returncode,
            seconds=round(self.seconds, 3),
            started=self.started,
            stderr=self.stderr[-4000:],
        )


class FioFailed(DeviceError):
    """fio failed; carries the run so the caller can keep its output."""

    def __init__(self, message: str, run: FioRun) -> None:
        super().__init__(message)
        self.run = run


# Seconds between fio's status reports while a round runs (live figures).
STATUS_INTERVAL = 5


class FioProcess(Protocol):
    """A fio process started by :meth:`FioRunner.start` and not yet collected."""

    def finished(self) -> bool: ...

    def wait(self) -> FioRun:
        """Its result once it ends; :class:`FioFailed` for a failed run."""
        ...

    def stop(self) -> None:
        """Stop it (its whole process group) and drop what it printed; idempotent."""
        ...


class FioRunner(Protocol):
    def version(self) -> str: ...

    def start(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
        on_line: Callable[[str], None] | None = None,
    ) -> FioProcess:
        """Start fio on a job file and return at once (``timeout`` counts from now)."""
        ...

    def run(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
        on_line: Callable[[str], None] | None = None,
    ) -> FioRun: ...

    @property
    def hosts(self) -> list[str]: ...


def _parse_version(text: str) -> tuple[int, ...]:
    m = re.search(r"fio-(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


class LocalFio:
    """fio on this host."""

    def __init__(self, binary: str = "fio") -> None:
        self.binary = binary
        self._version: str | None = None

    @property
    def hosts(self) -> list[str]:
        return []

    def version(self) -> str:
        if self._version is None:
            proc.require(self.binary, "fio")
            out = proc.run([self.binary, "--version"], timeout=30).stdout.strip()
            if _parse_version(out) < MIN_FIO:
                raise ToolMissingError(
                    f"{out or 'fio'} is too old: tkbench needs fio 3.1 or newer "
                    "(fix: apt-get install fio, or a newer fio on PATH)"
                )
            self._version = out
        return self._version

    # fio's client mode prints no status reports in JSON: live figures are local only
    live_status = True

    def command(self, jobfile: Path, json_plus: bool, status: bool = False) -> list[str]:
        fmt = "json+" if json_plus else "json"
        every = [f"--status-interval={STATUS_INTERVAL}"] if status else []
        return [self.binary, f"--output-format={fmt}", *every, *self._job_args(jobfile.absolute())]

    def _job_args(self, jobfile: Path) -> list[str]:
        return [str(jobfile)]

    def run(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
        on_line: Callable[[str], None] | None = None,
    ) -> FioRun:
        """Run a job file.  With ``on_line``, fio reports its status every
        :data:`STATUS_INTERVAL` s and each line reaches ``on_line`` as it comes; of
        those reports only the final one is kept as the run's output."""
        return self.start(
            jobfile, workdir, json_plus=json_plus, timeout=timeout, expect_io=expect_io,
            on_line=on_line,
        ).wait()  # fmt: skip

    def start(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
        on_line: Callable[[str], None] | None = None,
    ) -> LocalFioProcess:
        """Start fio on a job file (in ``workdir``) and return at once."""
        status = on_line is not None and self.live_status
        argv = self.command(jobfile, json_plus, status)
        started = time.time()
        running = proc.spawn(
            argv, timeout=timeout, cwd=workdir, on_line=on_line if status else None
        )
        return LocalFioProcess(argv, running, started, status, expect_io)


class LocalFioProcess:
    """A fio process of :class:`LocalFio` (or its client mode) under way."""

    def __init__(
        self, argv: list[str], running: proc.Running, started: float, status: bool, expect_io: bool
    ) -> None:
        self.argv, self.running, self.started = argv, running, started
        self.status, self.expect_io = status, expect_io

    @property
    def pid(self) -> int:
        return self.running.pid

    def finished(self) -> bool:
        return self.running.finished()

    def stop(self) -> None:
        self.running.stop()

    def wait(self) -> FioRun:
        argv, started, status = self.argv, self.started, self.status
        try:
            done = self.running.wait()
        except CommandError as exc:  # timeout
            out = final_report(exc.stdout) if status else exc.stdout
            seconds = time.time() - started
            run = FioRun(argv, None, out, exc.stderr, seconds, started)
            raise FioFailed(str(exc), run) from None
        out = final_report(done.stdout) if status else done.stdout
        run = FioRun(argv, done.returncode, out, done.stderr, done.seconds, started)
        try:
            run.output = parse(out)
        except FioParseError as exc:
            why = _last_line(done.stderr) or str(exc)
            raise FioFailed(
                f"fio failed (exit code {done.returncode}): {why} [command: {' '.join(argv)}]", run
            ) from None
        try:
            check_jobs(run.output, expect_io=self.expect_io)
        except FioJobError as exc:
            raise FioFailed(f"{exc} [command: {' '.join(argv)}]", run) from None
        if done.returncode != 0:
            why = _last_line(done.stderr) or "no message"
            raise FioFailed(
                f"fio exited with code {done.returncode}: {why} [command: {' '.join(argv)}]", run
            )
        return run


class ClientFio(LocalFio):
    """fio's client/server mode: the job file runs on every ``fio --server`` host."""

    def __init__(self, servers: list[str], binary: str = "fio") -> None:
        super().__init__(binary)
        if not servers:
            raise TkbenchError("no fio servers given")
        self.servers = servers

    live_status = False

    @property
    def hosts(self) -> list[str]:
        return list(self.servers)

    def version(self) -> str:
        """The local fio's version, once every server answers (checked before a run
        touches its target, not at its first round)."""
        out = super().version()
        for server in self.servers:
            _reach(server)
        return out

    def _job_args(self, jobfile: Path) -> list[str]:
        return [arg for host in self.servers for arg in (f"--client={host}", str(jobfile))]


def final_report(stdout: str) -> str:
    """fio's output with ``--status-interval`` less all but its last JSON document: the
    interval reports are cumulative snapshots of the same jobs, and the last one is
    the result (text fio printed outside the documents, warnings, is kept)."""
    lines = stdout.splitlines(keepends=True)
    kept: list[str] = []
    doc: list[str] | None = None
    last: list[str] = []
    for line in lines:
        if doc is None and line.startswith("{"):
            doc = [line]
        elif doc is not None:
            doc.append(line)
            if line.rstrip() == "}":
                last, doc = doc, None
        else:
            kept.append(line)
    return "".join(kept + last + (doc or []))


FIO_SERVER_PORT = 8765  # fio's default


def parse_server(spec: str) -> tuple[str, int]:
    """``HOST`` or ``HOST,PORT`` (fio's --client syntax) -> (host, port)."""
    host, _, port_text = spec.partition(",")
    if not host.strip() or host != host.strip():
        raise InputError(f"--fio-server {spec!r}: no host")
    if not port_text:
        return host, FIO_SERVER_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InputError(f"--fio-server {spec!r}: the port must be a number from 1 to 65535")
    return host, int(port_text)


def _reach(spec: str, timeout: float = 5.0) -> None:
    """Connect once to a fio server (``sock:PATH``, ``ip6:HOST[,PORT]`` or
    ``HOST[,PORT]``); an InputError naming it when nothing answers."""
    import socket

    try:
        if spec.startswith("sock:"):
            where = spec[5:]
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(where)
        else:
            host, port = parse_server(spec.removeprefix("ip6:"))
            where = f"{host} port {port}"
            with socket.create_connection((host, port), timeout=timeout):
                pass
    except OSError as exc:
        raise InputError(
            f"--fio-server {spec}: cannot connect to {where} "
            f"({exc.strerror or exc}); is 'fio --server' running there?"
        ) from None


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()[:200]
    return ""
