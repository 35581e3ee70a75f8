"""Render fio job files (pure).

A round is one fio process with one job section per workload point, run back to
back.  fio's own sequencing leaves the drive idle between jobs (``stonewall``
~300 ms here; ``startdelay`` alone jitters by up to 100 ms because fio's main
loop polls at that period, so points overlap or idle).  Instead, ``startdelay``
brings each point's threads up ``LEAD`` seconds early and ``exec_prerun`` runs
:mod:`tkbench.fio.handoff`, which releases the point the moment the previous one is
over (see that module and docs/methodology.md for the measurements).

Rounds hand over the same way: the engine starts the next round's fio while the
current round runs, and that round's first point waits for the markers of the
current round's last point (:class:`Follow`).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tkbench import cache
from tkbench.fio import logs as fiologs
from tkbench.fiovalue import escape as _escape
from tkbench.fiovalue import filename_value
from tkbench.plan.model import PlannedTest, Point, Precondition
from tkbench.rundir.records import Round
from tkbench.units import fio_duration

# bytes of each random-then-zeros region of compressible data (fio buffer_compress_chunk)
COMPRESS_CHUNK = 512
# Nominal idle time between points when fio schedules them by startdelay alone.
DEFAULT_GUARD = 0.005
# How far ahead of its nominal start a point's threads are brought up.
LEAD = 1.0
# Nominal allowance per point for hand-off and teardown, so threads are early enough.
SLACK = 0.05
# How long fio may run beyond its plan before tkbench gives up on it, and so also how
# long a point waits beyond its predecessor's runtime: an I/O that stalls for a minute
# (a drive's firmware, a host's storage) delays the points after it, it does not fail
# the round (a stall of 60 s did, with a 60 s hand-off margin, while tkbench itself
# would have waited ten minutes for the round).  A fio none of whose job threads runs
# any more, past its plan, is stopped sooner (tkbench.fio.runner.STALL_AFTER).
STALL_MARGIN = 600.0


@dataclass(frozen=True)
class Handoff:
    """How points hand over to each other inside fio (see tkbench.fio.handoff)."""

    # the markers' directory: a private one on a local filesystem (handoff.private_dir),
    # never the run directory, which may be on NFS, CIFS or 9p
    directory: str
    python: str = sys.executable
    timeout_margin: float = STALL_MARGIN  # beyond the previous point's runtime
    # the run's scratch directory, named on the hand-off's command line (``-X``) so
    # that a resume finds and stops the helpers a killed run left (runs.stop_leftovers)
    owner: str = ""

    def prerun(
        self, prev: Point | None, directory: str | None = None, drop: Point | None = None
    ) -> str:
        """Wait for every clone of ``prev`` to leave its marker in ``directory`` (this
        hand-off's own, or for a round's first point the previous round's; no ``prev``:
        no wait); then, for ``drop``, drop the host's page cache once (tkbench.cache)."""
        script = str(Path(__file__).with_name("handoff.py"))
        timeout = (prev.runtime * 1.5 if prev is not None else 0.0) + self.timeout_margin
        # -I with -X joined (one word, so the arguments keep their places): an option
        # Python keeps and ignores (sys._xoptions), which puts the run's scratch
        # directory on the helper's command line, where stop_leftovers looks for it
        isolated = f"-IXtkbench-run={self.owner}" if self.owner else "-I"
        args = [
            self.python,
            "-S",
            isolated,
            script,
            directory or self.directory,
            str(prev.index if prev is not None else -1),
            str(prev.numjobs if prev is not None else 0),
            f"{timeout:.0f}",
        ]
        if drop is not None:
            args += [self.directory, str(drop.index)]
        # fio hands this string to system(); every word is quoted for sh.
        return " ".join(shlex.quote(a) for a in args)

    def postrun(self, point: Point) -> str:
        # ':' is a shell builtin: the marker costs no exec; $$ is unique per clone.
        return f": > {shlex.quote(self.directory)}/done.{point.index}.$$"


@dataclass(frozen=True)
class Follow:
    """A round started while the previous round still runs (docs/methodology.md,
    "Rounds back to back"): its first point waits for the previous round's last
    point to leave its markers, and its schedule begins ``shift`` seconds after
    its fio starts, when the previous round is expected to end."""

    directory: str  # the previous round's hand-off directory
    last: Point  # the previous round's last point
    shift: float  # seconds from this round's fio start to the previous round's expected end


def _section(name: str, options: Mapping[str, object]) -> list[str]:
    lines = [f"[{name}]"]
    for key, value in options.items():
        if value is None:
            continue
        if value is True:
            lines.append(f"{key}=1")
        elif value is False:
            lines.append(f"{key}=0")
        else:
            lines.append(f"{key}={_escape(str(value))}")
    return lines


def global_options(
    target_options: Mapping[str, object],
    *,
    active_bytes: int,
    data_pattern: str,
    direct: bool,
    percentiles: Sequence[float] = (),
    compress_percentage: int = 0,
) -> dict[str, object]:
    opts: dict[str, object] = dict(target_options)
    opts.update(
        {
            "direct": direct,
            # jobs as threads of the one fio process: as processes each job calls
            # setsid() (fio 3.33 backend.c), so stopping fio's process group (SIGKILL
            # after a grace) would leave them running, with no check for their parent's
            # death.  Processes ran no faster, beyond the noise, at ~900k IOPS (benchmarks/
            # round_overhead.py); only on a machine with other load they take more CPU, a
            # share per job under autogroup scheduling
            "thread": True,
            "group_reporting": True,
            "size": active_bytes,
            "offset": 0,
            "randrepeat": False,
            "norandommap": True,
            "random_generator": "tausworthe64",
            "log_unix_epoch": True,
        }
    )
    if data_pattern == "zero":
        opts["zero_buffers"] = True
    else:
        # fresh random contents in every buffer: incompressible, not dedupable
        opts["refill_buffers"] = True
    if data_pattern == "compressible":
        # every 512-byte chunk of a buffer: random bytes, then zeros for the given
        # percentage of it (fio 3.33 buffer_compress_chunk, its default spelled out),
        # so that any compressor with a window of a chunk or more sees the ratio
        opts["buffer_compress_percentage"] = compress_percentage
        opts["buffer_compress_chunk"] = COMPRESS_CHUNK
    if percentiles:
        opts["percentile_list"] = ":".join(f"{p:g}" for p in percentiles)
    return opts


def point_options(
    point: Point,
    active_bytes: int,
    startdelay: float,
    prerun: str | None = None,
    postrun: str | None = None,
    start: int = 0,
    sample: float = 0.0,
) -> dict[str, object]:
    opts: dict[str, object] = {
        "new_group": True,
        "rw": point.rw,
        "bs": point.bs if not point.bssplit else None,
        "bssplit": point.bssplit or None,
        "random_distribution": point.zones or None,
        "numjobs": point.numjobs,
        "iodepth": point.iodepth,
        "time_based": True,
        "runtime": fio_duration(point.runtime),
        "startdelay": fio_duration(startdelay),
        "direct": point.direct,  # None: the test's (global)
        "fadvise_hint": point.fadvise or None,
    }
    if point.file:
        # one file for every point of the test, laid out once by fio before the first
        # point (create_serialize)
        opts["filename"] = filename_value(point.file)
    # the page cache at the point's start (tkbench.cache): a cold point drops the file's
    # cached pages when it opens it, after the hand-off, and again at every pass
    # (invalidate: fio 3.33 filesetup.c); a warm one reads it in first (pre_read)
    opts.update(cache.fio_options(point.cache))
    if point.idle > 0:
        # host idle: no I/O at all for ``idle`` seconds after every ``busy`` seconds of I/O
        opts["thinktime"] = fio_duration(point.idle)
        opts["thinktime_iotime"] = fio_duration(point.busy)
    if sample > 0:  # per-interval logs (tkbench.fio.logs)
        for log in ("write_iops_log", "write_bw_log", "write_lat_log"):
            opts[log] = fiologs.prefix(point.job_name)
        opts["log_avg_msec"] = max(1, round(sample * 1000))
    if prerun:
        opts["exec_prerun"] = prerun
    if postrun:
        opts["exec_postrun"] = postrun
    if point.rw in ("randrw", "rw"):
        opts["rwmixread"] = point.mix.read
    if point.random_pct:
        opts["percentage_random"] = point.random_pct
    if point.iolog:
        # a captured trace replayed (tkbench.kinds.replay): the log says what to do and
        # when; ``runtime`` is a cap, not a duration (render_round adds the redirect)
        for key in ("rw", "rwmixread", "bs", "bssplit", "random_distribution"):
            opts.pop(key, None)
        opts["read_iolog"] = point.iolog
        opts["replay_no_stall"] = point.replay == "fast"
        opts["time_based"] = False
        return opts
    if point.once:
        # one pass, each of its job's blocks once: size-based (``runtime`` a cap), a
        # random map for random points, each job its own slice of the region, so no
        # block is read or written twice by the point (a cold cache stays cold)
        region = _slice(active_bytes, point.numjobs, point.bs)
        opts["time_based"] = False
        opts["size"] = region
        if point.pattern == "random":
            opts["norandommap"] = False
        if point.numjobs > 1:
            opts["offset_increment"] = region
    elif point.pattern == "sequential":
        # The stream starts ``start`` bytes into its region (the ActiveRange, or with
        # several jobs each job's own slice of it) and runs to the region's end.  A
        # time-based sequential job that reaches the end of its region goes on from
        # its own ``offset`` (fio 3.33, io_u.c get_next_seq_offset), never past it.
        region = _slice(active_bytes, point.numjobs, point.bs)
        opts["offset"] = start
        opts["size"] = region - start
        if point.numjobs > 1:
            opts["offset_increment"] = region
    return opts


def _slice(total: int, parts: int, align: int) -> int:
    s = total // parts
    return max(align, s - s % align)


def stream_starts(
    points: Sequence[Point], rounds: Iterable[Round], active_bytes: int
) -> dict[str, int]:
    """Where the stream of each sequential point starts in the round after ``rounds``
    (the test's stored round records), by fio job name: where a stream that wraps at
    the end of its region would be after the bytes the point moved in those rounds.

    A point's stream moves by the larger of its read and write bytes of a round
    (fio keeps one position per direction, both starting at the job's offset);
    with several jobs each job's stream is taken to move by its share.  The result
    is aligned down to the block size.  It depends only on the stored rounds, so a
    resumed run continues exactly as the uninterrupted one would have.
    """
    moved: Counter[tuple[int, int]] = Counter()  # bytes by point (bs, read %)
    for record in rounds:
        for p in record.points:
            moved[p.key] += int(max(p.read.io_bytes, p.write.io_bytes))
    out: dict[str, int] = {}
    for point in points:
        if point.pattern != "sequential" or point.file:
            continue  # a point of a shared test file reads or writes it front to back
        region = _slice(active_bytes, point.numjobs, point.bs)
        pos = moved[(point.bs, point.mix.read)] // point.numjobs % region
        out[point.job_name] = pos - pos % point.bs
    return out


_MS = re.compile(r"(\d+)ms")


def planned_seconds(text: str) -> float | None:
    """How long fio should run a job file rendered here, in seconds from its start:
    the latest planned end of a section (its ``startdelay``, ``LEAD`` more with a
    hand-off, plus its ``runtime``), and at least the sum of the runtimes (points that
    follow each other by stonewall).  None when a section has no runtime (a run of so
    many bytes, such as the preconditioning) or a duration is not one this module
    writes: no plan, so no watchdog (tkbench.fio.runner)."""
    try:
        parsed = sections(text)
    except ValueError:
        return None
    common = parsed.pop("global", {})
    ends: list[float] = []
    total = 0.0
    for own in parsed.values():
        opts = {**common, **own}
        runtime = _seconds(opts.get("runtime"))
        delay = _seconds(opts.get("startdelay", "0ms"))
        if runtime is None or delay is None:
            return None
        lead = LEAD if "exec_prerun" in opts else 0.0
        ends.append(delay + lead + runtime)
        total += runtime
    return max(total, *ends) if ends else None


def sections(text: str) -> dict[str, dict[str, str]]:
    """A job file's sections: {section: {option: value}}, in order (comments and blank
    lines skipped); ValueError for an option outside a section."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1], {})
            continue
        if current is None:
            raise ValueError(f"option outside a section: {line!r}")
        key, _, value = line.partition("=")
        current[key.strip()] = value.strip()
    return out


def _seconds(value: str | None) -> float | None:
    m = _MS.fullmatch(value or "")
    return int(m.group(1)) / 1000 if m else None


def schedule(points: Sequence[Point], slack: float = DEFAULT_GUARD + SLACK) -> list[float]:
    """Nominal start times (seconds from fio's start) of back-to-back points.

    With the hand-off the slack is 0: a point lasts at least its runtime, so the
    sum of the previous runtimes is the earliest it can start, and its threads,
    brought up ``LEAD`` before that, are never late however long the round.
    """
    delays = []
    t = 0.0
    for p in points:
        delays.append(t)
        t += p.runtime + slack
    return delays


def render_round(
    points: Sequence[Point],
    target_options: Mapping[str, object],
    *,
    active_bytes: int,
    data_pattern: str = "random",
    direct: bool = True,
    percentiles: Sequence[float] = (),
    handoff: Handoff | None = None,
    extra_global: Mapping[str, object] | None = None,
    starts: Mapping[str, int] | None = None,
    follow: Follow | None = None,
    sample: float = 0.0,
    compress_percentage: int = 0,
    drop_caches: bool = False,
    stonewall: bool = False,
) -> str:
    """The job file of one round: one section per point, run back to back.

    Without ``handoff`` the points are only scheduled by ``startdelay`` (for
    ``tkbench plan``'s display and for fio servers that cannot run the helper).
    With it every point leaves its markers, the last one too, so that a round
    started ahead (``follow``) can take over from this one.  ``starts``
    (:func:`stream_starts`) places each sequential point's stream; a point without
    one starts at the beginning of its region (the first round).  ``drop_caches``:
    every cold point drops the host's page cache in its hand-off (tkbench.cache).

    ``stonewall``: the points follow each other by fio's stonewall (fio creates a
    point's threads only when the previous point has ended) instead of waiting in the
    hand-off.  A virtual-file test's points run up to 128 threads each, and when points
    run longer than planned (pre-reads, write-through) the threads of many later points
    would otherwise be up early, each with its own hand-off helper, and starve the point
    that runs (seen: a 1-thread point doing one I/O in 2 s).  They still leave the
    hand-off's markers, and a round's first point still waits for the round before.
    """
    if follow is not None and handoff is None:
        raise ValueError("a round that follows another needs the hand-off")
    g = global_options(
        target_options,
        active_bytes=active_bytes,
        data_pattern=data_pattern,
        direct=direct,
        percentiles=percentiles,
        compress_percentage=compress_percentage,
    )
    if extra_global:
        g.update(extra_global)
    lines = ["# tkbench round: points run back to back (see docs/methodology.md)"]
    lines += _section("global", g)
    prev: Point | None = None
    nominal_starts = schedule(points, 0.0 if handoff is not None else DEFAULT_GUARD + SLACK)
    shift = follow.shift if follow is not None else 0.0
    for point, nominal in zip(points, nominal_starts, strict=True):
        lines.append("")
        prerun = postrun = None
        delay = nominal
        if handoff is not None:
            delay = max(0.0, shift + nominal - LEAD)
            drop = point if drop_caches and point.cache == "cold" else None
            if prev is not None:
                if not stonewall or drop is not None:
                    prerun = handoff.prerun(prev, drop=drop)
            elif follow is not None:
                prerun = handoff.prerun(follow.last, follow.directory, drop=drop)
            elif drop is not None:
                prerun = handoff.prerun(None, drop=drop)
            postrun = handoff.postrun(point)
        start = (starts or {}).get(point.job_name, 0)
        opts = point_options(point, active_bytes, delay, prerun, postrun, start, sample)
        if point.iolog:  # the log's I/Os go to the target, whatever file it names
            opts["replay_redirect"] = target_options.get("filename")
        if stonewall and prev is not None:
            opts["stonewall"] = True
            # no start delay: fio starts it when the point before it ends, however
            # early (a point of one pass ends when its pass is done)
            opts["startdelay"] = None
        lines += _section(point.job_name, opts)
        prev = point
    return "\n".join(lines) + "\n"


def render_precondition(
    pre: Precondition,
    target_options: Mapping[str, object],
    *,
    active_bytes: int,
    data_pattern: str = "random",
    direct: bool = True,
    compress_percentage: int = 0,
) -> str:
    """Sequential writes of ``pre.total_bytes`` confined to the ActiveRange: each job
    writes its share within its own slice (``size``), wrapping at the slice's end as
    often as its share needs (``io_size`` larger than ``size``)."""
    g = global_options(
        target_options,
        active_bytes=active_bytes,
        data_pattern=data_pattern,
        direct=direct,
        compress_percentage=compress_percentage,
    )
    slice_bytes = _slice(active_bytes, pre.numjobs, pre.bs)
    per_job = pre.total_bytes // pre.numjobs
    per_job -= per_job % pre.bs
    job: dict[str, object] = {
        "rw": "write",
        "bs": pre.bs,
        "numjobs": pre.numjobs,
        "iodepth": pre.iodepth,
        "size": slice_bytes,
        "offset_increment": slice_bytes,
        "io_size": max(per_job, pre.bs),
    }
    if pre.max_duration > 0:
        job["runtime"] = fio_duration(pre.max_duration)  # whichever comes first
    lines = ["# tkbench workload-independent preconditioning"]
    lines += _section("global", g)
    lines.append("")
    lines += _section("precondition", job)
    return "\n".join(lines) + "\n"


def round_jobfile(
    test: PlannedTest,
    target_options: Mapping[str, object],
    handoff: Handoff | None,
    starts: Mapping[str, int] | None = None,
    follow: Follow | None = None,
) -> str:
    """The job file of one round of a planned test, as the engine runs it; ``starts``
    from :func:`stream_starts` of the test's rounds so far (none: the first round);
    ``follow`` for a round started while the previous one runs."""
    wl = test.spec.workload
    extra: dict[str, object] = {"lat_percentiles": True}
    if test.spec.fsync:
        extra["fsync"] = test.spec.fsync
    if test.spec.end_fsync:
        extra["end_fsync"] = True
    if test.spec.sync:
        extra["sync"] = True  # O_SYNC: a write returns once its data is on the device
    if test.node_size:
        # a virtual-file test's database file is laid out with data (not only
        # allocated) before its first point, also when that point writes
        extra["overwrite"] = True
    return render_round(
        test.points,
        target_options,
        active_bytes=test.active_bytes,
        data_pattern=wl.data_pattern,
        direct=wl.direct,
        percentiles=test.spec.percentiles,
        handoff=handoff,
        extra_global=extra,
        starts=starts,
        follow=follow,
        sample=test.sample,
        compress_percentage=wl.compress_percentage,
        drop_caches=test.spec.drop_caches,
        stonewall=test.stonewall,
    )


def precondition_jobfile(test: PlannedTest, target_options: Mapping[str, object]) -> str:
    """The preconditioning job file of a planned test (which must have one)."""
    if test.precondition is None:
        raise ValueError(f"test {test.name} has no preconditioning")
    wl = test.spec.workload
    return render_precondition(
        test.precondition,
        target_options,
        active_bytes=test.active_bytes,
        data_pattern=wl.data_pattern,
        direct=wl.direct,
        compress_percentage=wl.compress_percentage,
    )
