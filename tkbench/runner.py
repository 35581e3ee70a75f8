"""FioRunner: the one place that starts fio.

``LocalFio`` runs fio on this host; ``ClientFio`` drives fio servers
(``fio --server`` on each host) through fio's own client/server mode.
"""

from __future__ import annotations

import re
import time
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

    def info(self) -> dict[str, object]:
        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "seconds": round(self.seconds, 3),
            "started": self.started,
            "stderr": self.stderr[-4000:],
        }


class FioFailed(DeviceError):
    """fio failed; carries the run so the caller can keep its output."""

    def __init__(self, message: str, run: FioRun) -> None:
        super().__init__(message)
        self.run = run


class FioRunner(Protocol):
    def version(self) -> str: ...

    def run(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
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

    def command(self, jobfile: Path, json_plus: bool) -> list[str]:
        fmt = "json+" if json_plus else "json"
        return [self.binary, f"--output-format={fmt}", *self._job_args(jobfile.absolute())]

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
    ) -> FioRun:
        argv = self.command(jobfile, json_plus)
        started = time.time()
        t0 = time.monotonic()
        try:
            done = proc.run(argv, timeout=timeout, check=False, cwd=workdir)
        except CommandError as exc:  # timeout
            run = FioRun(argv, None, exc.stdout, exc.stderr, time.monotonic() - t0, started)
            raise FioFailed(str(exc), run) from None
        run = FioRun(argv, done.returncode, done.stdout, done.stderr, done.seconds, started)
        try:
            run.output = parse(done.stdout)
        except FioParseError as exc:
            why = _last_line(done.stderr) or str(exc)
            raise FioFailed(
                f"fio failed (exit code {done.returncode}): {why} [command: {' '.join(argv)}]", run
            ) from None
        try:
            check_jobs(run.output, expect_io=expect_io)
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
