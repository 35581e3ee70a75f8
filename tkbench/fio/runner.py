"""FioRunner: the one place that starts fio.

``LocalFio`` runs fio on this host; ``ClientFio`` drives fio servers
(``fio --server`` on each host) through fio's own client/server mode.

Two guards against a fio that stops doing I/O and never ends:

* fio starts with SIGCHLD blocked.  With ``thread`` every job is a thread of one
  process, and the exit of a child that one job's ``exec_prerun``/``exec_postrun``
  started (tkbench's hand-off) interrupts another job's ``io_getevents``; fio up to
  3.34 then waits again for events it has already reaped and hangs for ever in its
  last reaping (engines/libaio.c, fixed in fio 3.35: commit a8f6714e).  A blocked
  SIGCHLD wakes no thread; fio waits for its children with ``waitpid`` and has no
  handler for it.  Measured with fio 3.33 (a job file of 30 points of eight clones
  with both hooks, on a file): a hang in 3 runs of 3 without the mask, none in 15
  with it.
* a watchdog (:class:`Progress`): a run past its planned end (read from its job
  file, :func:`tkbench.fio.jobfile.planned_seconds`; from its start for a job of so
  many bytes whose jobs never pause, the preconditioning: ``busy``) in which no job
  thread of fio has run on a CPU for ``stall_after`` seconds is stopped (SIGTERM, SIGKILL after a
  grace) and fails as :class:`FioStalled`, whatever the cause (a lost I/O, a
  driver, fio itself).  A thread that submits or completes I/O runs; one that
  waits for an I/O that never completes does not.  The threads' run time comes
  from ``/proc`` (``schedstat``), not from fio's ``--status-interval`` reports:
  fio 3.33 writes a report only once every job thread has answered it
  (stat.c, ``rusage_sem``), and a thread in tkbench's hand-off, or hung, never
  does, so the reports of a round come at its end or never.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tkbench import proc
from tkbench.errors import (
    CommandError,
    DeviceError,
    FioJobError,
    FioParseError,
    InputError,
    TkbenchError,
    ToolMissingError,
)
from tkbench.fio.jobfile import planned_seconds
from tkbench.fio.output import FioOutput, check_jobs, parse
from tkbench.rundir.records import FioCall

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


class FioStalled(FioFailed):
    """fio was past its planned end and none of its job threads ran for too long (it
    waited for I/O that never completed): stopped."""


# Seconds between fio's status reports while a round runs (live figures).
STATUS_INTERVAL = 5
# Seconds in which no job thread of fio ran, past a run's planned end, after which
# fio is stopped and the run fails: twice the longest stall of a drive's firmware
# tkbench lets delay a round (a minute, see tkbench.fio.jobfile.STALL_MARGIN).
STALL_AFTER = 120.0


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
        busy: bool = False,
    ) -> FioProcess:
        """Start fio on a job file and return at once (``timeout`` counts from now).
        ``busy``: a job file without a planned duration whose jobs do I/O without a
        pause (the preconditioning) is watched from its start."""
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
        busy: bool = False,
    ) -> FioRun: ...

    @property
    def hosts(self) -> list[str]: ...


def _parse_version(text: str) -> tuple[int, ...]:
    m = re.search(r"fio-(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


class LocalFio:
    """fio on this host."""

    def __init__(self, binary: str = "fio", stall_after: float | None = None) -> None:
        self.binary = binary
        self._version: str | None = None
        self.stall_after = STALL_AFTER if stall_after is None else stall_after

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
        busy: bool = False,
    ) -> FioRun:
        """Run a job file.  With ``on_line``, fio reports its status every
        :data:`STATUS_INTERVAL` s and each line reaches ``on_line`` as it comes; of
        those reports only the final one is kept as the run's output."""
        return self.start(
            jobfile, workdir, json_plus=json_plus, timeout=timeout, expect_io=expect_io,
            on_line=on_line, busy=busy,
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
        busy: bool = False,
    ) -> LocalFioProcess:
        """Start fio on a job file (in ``workdir``) and return at once; with a planned
        duration in the job file, or ``busy`` (its jobs do I/O without a pause: watched
        from its start), and fio on this host, under the watchdog."""
        status = on_line is not None and self.live_status
        argv = self.command(jobfile, json_plus, status)
        planned = self._plan(jobfile)
        if planned is None and busy and not self.hosts:
            planned = 0.0
        started = time.time()
        with _sigchld_blocked():  # fio inherits the mask (see the module's docstring)
            running = proc.spawn(
                argv, timeout=timeout, cwd=workdir, on_line=on_line if status else None
            )
        watch = None
        if planned is not None:
            watch = Progress(planned, self.stall_after, ThreadActivity(running.pid).sample)
        deadline = time.monotonic() + timeout
        return LocalFioProcess(argv, running, started, status, expect_io, watch, deadline)

    def _plan(self, jobfile: Path) -> float | None:
        """The job file's planned duration (None: unknown); none for fio servers, whose
        threads are on other hosts."""
        if self.hosts:
            return None
        try:
            return planned_seconds(jobfile.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None


class LocalFioProcess:
    """A fio process of :class:`LocalFio` (or its client mode) under way."""

    def __init__(
        self,
        argv: list[str],
        running: proc.Running,
        started: float,
        status: bool,
        expect_io: bool,
        watch: Progress | None = None,
        deadline: float = float("inf"),
    ) -> None:
        self.argv, self.running, self.started = argv, running, started
        self.status, self.expect_io = status, expect_io
        self.watch, self.deadline = watch, deadline  # deadline: monotonic, its timeout

    @property
    def pid(self) -> int:
        return self.running.pid

    def finished(self) -> bool:
        return self.running.finished()

    def stop(self) -> None:
        self.running.stop()

    def _watch(self) -> str:
        """While fio runs: the watchdog's verdict every :data:`POLL` seconds; once it
        says stalled, fio is stopped and the verdict returned ("" when fio ended, or
        its timeout came, first: ``proc.Running.wait`` handles that)."""
        watch = self.watch
        if watch is None:
            return ""
        try:
            while not self.running.finished() and time.monotonic() < self.deadline:
                why = watch.stalled()
                if why:
                    self.running.stop()
                    return why
                time.sleep(POLL)
        except BaseException:  # Ctrl-C, SIGTERM: stop fio first, as proc.Running.wait does
            self.running.stop()
            raise
        return ""

    def wait(self) -> FioRun:
        argv, started, status = self.argv, self.started, self.status
        stalled = self._watch()
        try:
            done = self.running.wait()
        except CommandError as exc:  # timeout
            out = final_report(exc.stdout) if status else exc.stdout
            seconds = time.time() - started
            run = FioRun(argv, None, out, exc.stderr, seconds, started)
            raise FioFailed(str(exc), run) from None
        out = final_report(done.stdout) if status else done.stdout
        run = FioRun(argv, done.returncode, out, done.stderr, done.seconds, started)
        if stalled:
            raise FioStalled(f"{stalled} [command: {' '.join(argv)}]", run)
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


# Seconds between two looks of the watchdog at a running fio.
POLL = 1.0


class Progress:
    """The watchdog's view of a fio run: a run is stalled once it is past its
    ``planned`` end (seconds from its start) and ``activity`` (a reading that changes
    whenever a job thread runs: :class:`ThreadActivity`) has not changed for
    ``stall_after`` seconds.  A run's own planned waits (its turn in the hand-off, host
    idle) are within its plan."""

    def __init__(
        self,
        planned: float,
        stall_after: float,
        activity: Callable[[], object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.planned, self.stall_after = planned, stall_after
        self._activity, self._clock = activity, clock
        self.t0 = self.changed = clock()
        self._last = activity()

    def stalled(self) -> str:
        """Why the run counts as stalled now, or "" (reads the activity once)."""
        now = self._clock()
        reading = self._activity()
        if reading != self._last:
            self._last, self.changed = reading, now
        quiet_since = max(self.changed, self.t0 + self.planned)
        if now - quiet_since < self.stall_after:
            return ""
        past = (
            f", {now - self.t0 - self.planned:.0f} s past its planned {self.planned:.0f} s"
            if self.planned > 0
            else ""  # a job watched from its start (``busy``)
        )
        return (
            f"fio stalled: no thread of fio ran for {now - self.changed:.0f} s{past} "
            "(an I/O lost or never completed); stopped it"
        )


class ThreadActivity:
    """How much fio's job threads have run: ``sample()`` is the set of their ids and
    their total run time (nanoseconds, ``/proc/PID/task/TID/schedstat``; clock ticks
    from ``stat`` where the kernel keeps no schedstat).  fio's main thread (it polls
    on a timer) and its helper thread (disk statistics on a timer) are left out: the
    helper is the oldest of fio's other threads once fio's start-up threads (its
    clock's check, a thread per CPU) are gone, as it is started before any job
    (fio 3.33 backend.c, ``helper_thread_create`` before ``run_threads``) and lives
    until the end; during the start-up no job runs yet."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.helper: int | None = None
        self._started: dict[int, tuple[int, int]] = {}  # thread id -> start (cached)

    def sample(self) -> tuple[frozenset[int], int]:
        task = f"/proc/{self.pid}/task"
        try:
            tids = [int(t) for t in os.listdir(task) if t.isdigit()]
        except OSError:
            return frozenset(), 0  # gone: fio has ended, and wait() sees it
        others = [t for t in tids if t != self.pid]
        started = {t: self._started.get(t) or _started(f"{task}/{t}", t - self.pid) for t in others}
        self._started = started
        self.helper = min(others, key=started.__getitem__) if others else None
        jobs = frozenset(t for t in others if t != self.helper)
        return jobs, sum(_run_time(f"{task}/{t}") for t in jobs)


def _stat_fields(thread_dir: str) -> list[str]:
    """The fields of a thread's ``stat`` after its name (field 3 first)."""
    with open(f"{thread_dir}/stat", encoding="ascii", errors="replace") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def _started(thread_dir: str, offset: int) -> tuple[int, int]:
    """When a thread started (clock ticks since boot, then its id's distance from the
    process's, counted past a wrap of the ids): the earliest sorts first."""
    try:
        tick = int(_stat_fields(thread_dir)[19])  # starttime, field 22
    except (OSError, ValueError, IndexError):
        tick = 1 << 62
    return tick, offset % (1 << 22)  # ids wrap at pid_max, at most 2**22


def _run_time(thread_dir: str) -> int:
    """A thread's time on a CPU so far (0 once it is gone)."""
    try:
        with open(f"{thread_dir}/schedstat", encoding="ascii") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = _stat_fields(thread_dir)
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (OSError, ValueError, IndexError):
        return 0


@contextlib.contextmanager
def _sigchld_blocked() -> Iterator[None]:
    """SIGCHLD blocked in this thread while a child is started: the child keeps the
    mask across exec (see the module's docstring)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


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
