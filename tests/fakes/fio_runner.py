"""A FAKE fio runner for tkbench's tests -- NOT fio, and it touches no device.

:class:`FakeFio` implements tkbench.fio.runner's ``FioRunner`` protocol (``version()``,
``run(jobfile, workdir, json_plus=, timeout=, expect_io=)``, ``hosts``) so the
engine can be driven in milliseconds, with numbers a test chooses.  It reads the
job file tkbench wrote -- the ``[global]`` options and one section per workload
point (``rw``, ``bs``, ``numjobs``, ``iodepth``, ``rwmixread``, ``runtime``), or the
``[precondition]`` section (``io_size`` per job) -- and answers with the JSON
document fio 3.33 prints for it (``--output-format=json`` / ``json+``): the same
keys, units and layout as real fio 3.33 output kept in
tests/data/rundirs/*/tests/*/rounds/*.out, with ``group_reporting`` (one entry per
job section), the ``Saving output of prerun`` lines fio prints before the
document for sections with ``exec_prerun``, completion and total latencies
(``lat_percentiles=1``), percentiles at ``percentile_list`` and, for json+, the
latency histogram ``bins``.  It never runs the ``exec_prerun``/``exec_postrun``
hand-off commands: the points of a fake round do not wait for each other.

``start()`` (the engine's way) returns a :class:`FakeProcess` that "runs" until it
is waited for or stopped: the script is asked at the start, the answer given (and
the clock moved on) at ``wait()``, so a round the engine starts ahead of time
begins, on the fake's clock, when the round before it has been waited for.  A
stopped process leaves its :class:`Run` in ``discarded`` -- what it would have
done, never an answer -- and ``running()`` lists the processes neither waited for
nor stopped.  The engine starts a round ahead a few seconds before the current one
is expected to end, in real time: tests use sub-second points (tests/_helpers.py
FAST), so that is at once.

What the I/O looks like comes from a *script*: ``iops(call) -> float``, called for
every point of every round with a :class:`Call` (the test, the engine's round
number, the job section and its parameters).  From the IOPS the rest follows:
I/Os = IOPS x runtime, bytes = I/Os x block size, the R/W split by ``rwmixread``,
mean latency by Little's law (outstanding I/Os / IOPS), a fixed latency shape
around it.  Scripts such as "steady from round 5", "never steady" or "slower
after a resume" are a few lines (see tests/test_engine_rules.py).

The fake learns which test and round it runs from the engine's progress events:
pass ``fake.progress`` as the Engine's ``progress`` (it forwards every event to an
optional inner Progress).  With a :class:`FakeClock` the fake also moves time on
by each run's duration (``seconds_per_run`` on top of the points' runtimes), and
``pause(seconds)`` makes time pass between runs as a suspended machine would --
patch the engine's clock with ``monkeypatch.setattr(tkbench.engine.clock, "source", clock)``.
"""

from __future__ import annotations

import json
import math
import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkbench.engine import events
from tkbench.engine.events import Event
from tkbench.errors import FioJobError
from tkbench.fio import jobfile
from tkbench.fio.output import DEFAULT_PERCENTILES, check_jobs, parse
from tkbench.fio.runner import FioFailed, FioRun
from tkbench.units import parse_duration

FIO_VERSION = "fio-3.33"
FAKE_ARGV0 = "fio (FAKE: tests/fakes/fio_runner.py)"
# the latency distribution around the mean: (multiple of the mean, share of the I/Os)
LAT_SHAPE = ((0.4, 0.05), (0.6, 0.10), (0.8, 0.20), (1.0, 0.30), (1.3, 0.20), (1.8, 0.10),
             (3.0, 0.04), (6.0, 0.01))  # fmt: skip


@dataclass(frozen=True)
class Call:
    """One workload point (or the preconditioning) of one fake fio run."""

    test: str  # the planned test's name; "" when the engine did not say
    round: int  # the engine's round number (0 for preconditioning)
    job: str  # fio job section, e.g. "p005_4k_0-100" or "precondition"
    rw: str
    bs: int
    read_pct: int
    numjobs: int
    iodepth: int
    runtime: float  # seconds (0 for preconditioning, which is sized by io_size)
    json_plus: bool


Script = Callable[[Call], float]


class FakeClock:
    """A clock for the engine: ``time()`` is under the test's control; every other
    attribute is the real :mod:`time` module's (strftime, monotonic_ns...)."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


class _Tracker:
    """The Progress the engine is given: remembers the running test and round."""

    def __init__(self, fake: FakeFio, inner: Any = None) -> None:
        self.fake = fake
        self.inner = inner

    def event(self, event: Event) -> None:
        test = getattr(event, "test", None)
        number = getattr(event, "round", None)
        if isinstance(event, events.RoundStarted | events.RoundStartedAhead):
            self.fake.test, self.fake.round = event.test.name, event.round
            self.fake.phase = ""
        elif isinstance(event, events.Phase | events.TestStarted | events.TestResumed):
            self.fake.test, self.fake.round = event.test.name, 0
            self.fake.phase = event.phase if isinstance(event, events.Phase) else ""
        self.fake.events.append((type(event).__name__, getattr(test, "name", None), number))
        if self.inner is not None:
            self.inner.event(event)


@dataclass
class Run:
    """What one fake fio run was asked to do."""

    test: str
    round: int
    kind: str  # "round" | "precondition" | "histogram" (the phase after the rounds)
    jobfile: str
    json_plus: bool
    calls: list[Call] = field(default_factory=list)
    ahead: bool = False  # started ahead: its first point follows another fio's last
    iops: dict[str, float] = field(default_factory=dict)  # per job section, from the script
    pause_after: float = 0.0  # seconds the script paused the machine for, after this run

    def written(self) -> int:
        """Bytes this run writes (or would have written, if it was stopped)."""
        return sum(round(self.iops[c.job] * c.runtime * (100 - c.read_pct) / 100) * c.bs
                   for c in self.calls)  # fmt: skip


class FakeFio:
    """A FioRunner that answers from a script instead of running fio."""

    def __init__(
        self,
        iops: Script | float = 10_000.0,
        *,
        clock: FakeClock | None = None,
        seconds_per_run: float = 0.05,
        precondition_bw: float = 500e6,
        error: Callable[[Call], int] | None = None,
        hosts: tuple[str, ...] = (),
        inner_progress: Any = None,
    ) -> None:
        self.script: Script = iops if callable(iops) else (lambda call, v=float(iops): v)
        self.clock = clock
        self.seconds_per_run = seconds_per_run
        self.precondition_bw = precondition_bw  # bytes/s of the fake preconditioning
        self.error = error  # errno of a job (fio's "error"), 0 for none
        self._hosts = list(hosts)
        self.progress = _Tracker(self, inner_progress)
        self.test = ""
        self.round = 0
        self.phase = ""  # the engine's last "phase" event since a round started
        self.runs: list[Run] = []  # runs waited for, in that order
        self.discarded: list[Run] = []  # runs stopped before they were waited for
        self.started: list[FakeProcess] = []
        self.before_wait: Callable[[Run], None] | None = None  # e.g. raise KeyboardInterrupt
        self.events: list[tuple[str, str | None, Any]] = []
        self._pause = 0.0

    # ------------------------------------------------------------ the protocol
    def version(self) -> str:
        return FIO_VERSION

    @property
    def hosts(self) -> list[str]:
        return list(self._hosts)

    def run(
        self,
        jobfile: Path,
        workdir: Path,
        *,
        json_plus: bool,
        timeout: float,
        expect_io: bool = True,
        on_line: Callable[[str], None] | None = None,  # no live figures from the fake
        busy: bool = False,  # no watchdog in the fake
    ) -> FioRun:
        return self.start(
            jobfile, workdir, json_plus=json_plus, timeout=timeout, expect_io=expect_io
        ).wait()

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
    ) -> FakeProcess:
        text = jobfile.read_text(encoding="utf-8")
        sections = parse_jobfile(text)
        glob = sections.pop("global", {})
        kind = "precondition" if "precondition" in sections else "round"
        if kind == "round" and self.phase == "response-time histogram":
            kind = "histogram"  # one point after the rounds, its round number 0
        if kind == "round" and not self.round:
            raise AssertionError("FakeFio: pass fake.progress to the Engine (progress=...)")
        rnd = self.round if kind == "round" else 0
        outside, self._pause = self._pause, 0.0  # asked for outside any script
        first = next(iter(sections.values()), {})
        ahead = kind == "round" and "exec_prerun" in first
        run = Run(self.test, rnd, kind, text, json_plus, ahead=ahead)
        jobs, preamble, seconds = [], [], 0.0
        for index, (name, opts) in enumerate(sections.items()):
            call = _call(self.test, rnd, name, opts, json_plus)
            run.calls.append(call)
            if kind == "precondition":
                written = int(opts["io_size"]) * call.numjobs
                dur = written / self.precondition_bw
                iops = written / call.bs / dur
            else:
                dur = call.runtime
                iops = float(self.script(call))
            run.iops[name] = iops
            errno = self.error(call) if self.error else 0
            jobs.append(job_entry(index, name, opts, call, iops, dur, glob, errno))
            if "exec_prerun" in opts:
                preamble.append(f"{name} : Saving output of prerun in {name}.prerun.txt")
            seconds += dur
        # a pause the script asked for comes after this run, whenever it is waited for
        run.pause_after, self._pause = self._pause, outside
        process = FakeProcess(self, run, jobs, glob, preamble, seconds, jobfile, expect_io)
        self.started.append(process)
        return process

    def running(self) -> list[FakeProcess]:
        """Processes started and neither waited for nor stopped."""
        return [p for p in self.started if p.state == "running"]

    # ------------------------------------------------------------ for tests
    def pause(self, seconds: float) -> None:
        """Let ``seconds`` pass after the current run (a suspended machine, Ctrl-Z): from a
        script, after the run it is asked for; otherwise after the next run waited for."""
        self._pause += seconds

    def rounds(self, test: str | None = None) -> list[Run]:
        return [r for r in self.runs if r.kind == "round" and test in (None, r.test)]

    def preconditions(self, test: str | None = None) -> list[Run]:
        return [r for r in self.runs if r.kind == "precondition" and test in (None, r.test)]


class FakeProcess:
    """One fake fio process: "runs" from ``start()`` until ``wait()`` or ``stop()``."""

    def __init__(
        self,
        fake: FakeFio,
        run: Run,
        jobs: list[dict[str, Any]],
        glob: Mapping[str, str],
        preamble: list[str],
        seconds: float,
        jobfile: Path,
        expect_io: bool,
    ) -> None:
        self.fake, self.run, self.jobs, self.glob = fake, run, jobs, glob
        self.preamble, self.seconds, self.jobfile = preamble, seconds, jobfile
        self.expect_io = expect_io
        self.state = "running"  # -> "waited" | "stopped"

    def finished(self) -> bool:
        return self.state != "running"

    def stop(self) -> None:
        if self.state == "running":
            self.state = "stopped"
            self.fake.discarded.append(self.run)

    def wait(self) -> FioRun:
        if self.state != "running":
            raise AssertionError(f"FakeFio: wait() on a {self.state} process")
        fake = self.fake
        if fake.before_wait is not None:
            fake.before_wait(self.run)
        self.state = "waited"
        fake.runs.append(self.run)
        started = fake.clock.time() if fake.clock else _time.time()
        seconds = self.seconds + fake.seconds_per_run
        if fake.clock:  # the run, then any pause after it (not part of the run)
            fake.clock.advance(seconds + self.run.pause_after + fake._pause)
        fake._pause = 0.0
        doc = document(self.jobs, self.glob, started)
        stdout = "".join(line + "\n" for line in self.preamble) + json.dumps(doc, indent=2) + "\n"
        fmt = "json+" if self.run.json_plus else "json"
        argv = [FAKE_ARGV0, f"--output-format={fmt}", str(self.jobfile)]
        result = FioRun(argv, 0, stdout, "", seconds, started, parse(stdout))
        try:
            assert result.output is not None
            check_jobs(result.output, expect_io=self.expect_io)  # as LocalFio does
        except FioJobError as exc:
            result.returncode = 1
            raise FioFailed(f"{exc} [command: {' '.join(argv)}]", result) from None
        return result


# --------------------------------------------------------------------------- job files


def parse_jobfile(text: str) -> dict[str, dict[str, str]]:
    """fio job file -> {section: {option: value}} (comments and blank lines skipped)."""
    return jobfile.sections(text)


def _call(test: str, rnd: int, name: str, opts: Mapping[str, str], json_plus: bool) -> Call:
    rw = opts.get("rw", "read")
    if rw in ("read", "randread"):
        read_pct = 100
    elif rw in ("write", "randwrite"):
        read_pct = 0
    else:
        read_pct = int(opts.get("rwmixread", "50"))
    # preconditioning is sized by io_size (its runtime, if any, is only a limit)
    runtime = (
        parse_duration(opts["runtime"]) if "runtime" in opts and "io_size" not in opts else 0.0
    )
    return Call(
        test=test,
        round=rnd,
        job=name,
        rw=rw,
        bs=int(opts.get("bs", "4096")),
        read_pct=read_pct,
        numjobs=int(opts.get("numjobs", "1")),
        iodepth=int(opts.get("iodepth", "1")),
        runtime=runtime,
        json_plus=json_plus,
    )


# --------------------------------------------------------------------------- fio 3.33 JSON


def _latency_bins(mean_ns: float, ios: int) -> dict[int, int]:
    """A histogram of ``ios`` latencies shaped by LAT_SHAPE around ``mean_ns``."""
    bins: dict[int, int] = {}
    left = ios
    for i, (mult, share) in enumerate(LAT_SHAPE):
        n = left if i == len(LAT_SHAPE) - 1 else min(left, round(ios * share))
        if n > 0:
            key = max(1, int(mean_ns * mult))
            bins[key] = bins.get(key, 0) + n
        left -= n
    return bins


def _percentiles(bins: Mapping[int, int], pcts: list[float]) -> dict[str, int]:
    """fio's definition: the smallest bucket value with at least p % of the I/Os at or below."""
    total = sum(bins.values())
    out = {}
    for p in pcts:
        running, value = 0, max(bins)
        for v in sorted(bins):
            running += bins[v]
            if running * 100 >= p * total:
                value = v
                break
        out[f"{p:f}"] = value
    return out


def _stats(mean: float, ios: int, bins: Mapping[int, int]) -> dict[str, Any]:
    return {
        "min": min(bins) if bins else 0,
        "max": max(bins) if bins else 0,
        "mean": mean,
        "stddev": mean * 0.5 if ios else 0.0,
        "N": ios,
    }


def direction(
    iops: float, seconds: float, bs: int, outstanding: float, json_plus: bool, pcts: list[float]
) -> dict[str, Any]:
    """One direction (read or write) of a job entry, as fio 3.33 reports it."""
    ios = max(0, round(iops * seconds))
    io_bytes = ios * bs
    runtime_ms = round(seconds * 1000) if ios else 0
    lat_mean = outstanding / iops * 1e9 if ios else 0.0  # Little's law
    slat_mean = lat_mean * 0.01
    bins = _latency_bins(lat_mean, ios) if ios else {}
    clat_bins = _latency_bins(lat_mean - slat_mean, ios) if ios else {}
    clat = _stats(lat_mean - slat_mean, ios, clat_bins)
    lat = _stats(lat_mean, ios, bins)
    if ios:
        clat["percentile"] = _percentiles(clat_bins, pcts)
        lat["percentile"] = _percentiles(bins, pcts)
        if json_plus:
            clat["bins"] = {str(k): v for k, v in sorted(clat_bins.items())}
            lat["bins"] = {str(k): v for k, v in sorted(bins.items())}
    bw_bytes = round(io_bytes / seconds) if ios and seconds else 0
    return {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": ios / seconds if ios and seconds else 0.0,
        "runtime": runtime_ms,
        "total_ios": ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": _stats(slat_mean, ios, {int(slat_mean): ios} if ios else {}),
        "clat_ns": clat,
        "lat_ns": lat,
        "bw_min": 0,
        "bw_max": 0,
        "bw_agg": 0.0,
        "bw_mean": 0.0,
        "bw_dev": 0.0,
        "bw_samples": 0,
        "iops_min": 0,
        "iops_max": 0,
        "iops_mean": 0.0,
        "iops_stddev": 0.0,
        "iops_samples": 0,
    }


LAT_KEYS = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")


def _shares(keys: tuple[str, ...], full: str | None = None) -> dict[str, float]:
    """fio's percentage tables (iodepth_level, latency_ms...): 100 % in ``full``."""
    return {k: 100.0 if k == full else 0.0 for k in keys}


def _idle_direction() -> dict[str, Any]:
    return direction(0.0, 0.0, 4096, 1, False, [])


def job_entry(
    index: int,
    name: str,
    opts: Mapping[str, str],
    call: Call,
    iops: float,
    seconds: float,
    glob: Mapping[str, str],
    error: int = 0,
) -> dict[str, Any]:
    """One entry of ``jobs`` (group_reporting: all clones of a section together)."""
    pcts = list(DEFAULT_PERCENTILES)
    if "percentile_list" in glob:
        pcts = [float(p) for p in glob["percentile_list"].split(":")]
    outstanding = call.numjobs * call.iodepth
    r_iops = iops * call.read_pct / 100.0
    w_iops = iops - r_iops
    # the outstanding I/Os are shared by the directions in proportion to their I/Os
    r_out = outstanding * call.read_pct / 100.0
    w_out = outstanding - r_out
    read, write = _idle_direction(), _idle_direction()
    if r_iops > 0:
        read = direction(r_iops, seconds, call.bs, r_out, call.json_plus, pcts)
    if w_iops > 0:
        write = direction(w_iops, seconds, call.bs, w_out, call.json_plus, pcts)
    return {
        "jobname": name,
        "groupid": index,
        "error": error,
        "eta": 2147483647,
        "elapsed": max(1, math.ceil(seconds)),
        "job options": dict(opts),
        "read": read,
        "write": write,
        "trim": _idle_direction(),
        "sync": {"total_ios": 0, "lat_ns": _stats(0.0, 0, {})},
        "job_runtime": round(seconds * 1000) * call.numjobs,
        "usr_cpu": 1.0,
        "sys_cpu": 3.0,
        "ctx": 100,
        "majf": 0,
        "minf": 100,
        "iodepth_level": _shares(("1", "2", "4", "8", "16", "32", ">=64"), "8"),
        "iodepth_submit": _shares(("0", "4", "8", "16", "32", "64", ">=64"), "4"),
        "iodepth_complete": _shares(("0", "4", "8", "16", "32", "64", ">=64"), "4"),
        "latency_ns": _shares(LAT_KEYS),
        "latency_us": _shares(LAT_KEYS),
        "latency_ms": _shares((*LAT_KEYS, "2000", ">=2000"), "4"),
        "latency_depth": call.iodepth,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    }


def document(jobs: list[dict[str, Any]], glob: Mapping[str, str], started: float) -> dict[str, Any]:
    """The whole fio 3.33 results document."""
    return {
        "fio version": FIO_VERSION,
        "timestamp": int(started),
        "timestamp_ms": int(started * 1000),
        "time": _time.strftime("%a %b %d %H:%M:%S %Y", _time.gmtime(started)),
        "global options": dict(glob),
        "jobs": jobs,
        "disk_util": [],
    }
