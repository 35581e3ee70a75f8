"""A round's record (``tests/<test>/rounds/NNNN.json``) and its parts.

Units: bytes, bytes/s, IOPS, nanoseconds (people see MB/s and ms: :mod:`tkbench.vocab`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tkbench.rundir.records.base import Context, Record

NUMERIC_KEYS = {"numeric_keys": True}
OMIT = {"omit_default": True}


@dataclass(frozen=True)
class FioCall:
    """One fio process: the exact command, how it ended, how long it took."""

    argv: tuple[str, ...] = ()
    returncode: int | None = None  # None: fio did not end by itself (timeout)
    seconds: float = 0.0
    started: float = 0.0  # epoch seconds
    stderr: str = ""


@dataclass(frozen=True)
class Direction:
    """Reads or writes of one point in one round, as fio measured them."""

    io_bytes: float = 0.0
    total_ios: float | None = None  # fio 2.x does not say
    iops: float = 0.0
    bw_bytes: float = 0.0
    runtime_ms: float = 0.0
    lat_mean_ns: float = 0.0
    lat_min_ns: float = 0.0
    lat_max_ns: float = 0.0
    lat_stddev_ns: float = 0.0
    clat_mean_ns: float = 0.0
    percentiles_of: str = "clat"  # "lat" (submission + completion) when fio reported it
    # percentile ("99.99") -> ns
    percentiles_ns: Mapping[str, float] = field(default_factory=dict, metadata=NUMERIC_KEYS)
    # histogram tests: bin (ns, as a string) -> I/Os (fio's json+ bins)
    # (left out of the file when there are none, as format 1 did: its readers refuse null)
    bins_ns: Mapping[str, float] | None = field(
        default=None, metadata={**NUMERIC_KEYS, "omit_none": True}
    )


# the roles of the points of block size x mix tables (tkbench.plan.model.Point, the
# tests of several stages); a test type with a table of its own gives its cells a role
# of its own
POINT_ROLES = ("", "interval", "grid", "prewrite")


@dataclass(frozen=True)
class PlannedPoint:
    """One workload point as planned: block size, mix, load, duration."""

    bs: int
    read_pct: int
    index: int = 0
    label: str = ""  # "4k 65/35"
    job: str = ""  # its fio job section
    pattern: str = "random"
    rw: str = ""  # fio's rw
    numjobs: int = 1
    iodepth: int = 1
    runtime: float = 0.0  # seconds
    # what the point is to its test (the defaults are left out of the file): one of
    # POINT_ROLES (a point of the block size x mix tables: "" measured, and what a
    # tracking variable reads; "interval": measured, one of a point's repeated
    # intervals; "grid": measured, a demand-intensity load that is not tracked;
    # "prewrite": writes that condition the drive, not measured), or the role a test
    # type gives the cells of its own table (tkbench.kinds: each type's ROLE)
    role: str = field(default="", metadata=OMIT)
    bssplit: str = field(default="", metadata=OMIT)  # fio bssplit (bs 0: "composite")
    zones: str = field(default="", metadata=OMIT)  # fio random_distribution
    idle: float = field(default=0.0, metadata=OMIT)  # seconds of host idle (fio thinktime) ...
    busy: float = field(default=0.0, metadata=OMIT)  # ... after each this many seconds of I/O
    # a point with an access of its own (a bulk-I/O sweep's cells, tkbench.kinds.sweep):
    # the point's own O_DIRECT (None: the test's), fio's
    # fadvise_hint ("": fio's default, "0": none, "sequential") and the one test file
    # every point of the test shares (fio filename in the working directory)
    direct: bool | None = field(default=None, metadata={"omit_none": True})
    fadvise: str = field(default="", metadata=OMIT)
    file: str = field(default="", metadata=OMIT)
    # a copy test's (tkbench.kinds.copy: one file set x data pattern): the set's kind,
    # the data pattern, its files and bytes
    copy_set: str = field(default="", metadata=OMIT)
    data: str = field(default="", metadata=OMIT)
    files: int = field(default=0, metadata=OMIT)
    size: int = field(default=0, metadata=OMIT)
    # the page cache at the point's start (tkbench.cache): "cold", "warm"; "": as-is,
    # not controlled (every point before tkbench stated it, but a sweep's: cold)
    cache: str = field(default="", metadata=OMIT)
    # one pass over its region, every block once, ended then or at ``runtime``
    # (tkbench.plan.model.Point.once: a virtual-file test's cold points)
    once: bool = field(default=False, metadata=OMIT)
    # a replay test (tkbench.kinds.replay): fio percentage_random per direction; the
    # iolog a captured trace was replayed from and its timing ("captured", "fast")
    random_pct: str = field(default="", metadata=OMIT)
    iolog: str = field(default="", metadata=OMIT)
    replay: str = field(default="", metadata=OMIT)

    @property
    def key(self) -> tuple[int, int]:
        return (self.bs, self.read_pct)

    @property
    def measured(self) -> bool:
        return self.role != "prewrite"

    @property
    def keyed(self) -> bool:
        """A point of the block size x mix tables, which its :attr:`key` names (not a
        cell of a test type's own table, whose keys repeat)."""
        return self.role in POINT_ROLES


@dataclass(frozen=True)
class Series:
    """A point sampled per interval (fio's IOPS, bandwidth and latency logs averaged
    over ``interval`` seconds, all its jobs summed): one value per sample, the
    sample's end in seconds from the point's start.  Reads and writes together."""

    interval: float
    t_s: tuple[float, ...] = ()
    iops: tuple[float, ...] = ()
    bw_bytes: tuple[float, ...] = ()
    lat_mean_ns: tuple[float, ...] = ()  # completion latency, I/O-weighted over the jobs


@dataclass(frozen=True)
class HostResult:
    """What one host measured of one point, in fio's client/server mode (``fio
    --client``): the point's own numbers are all hosts together."""

    host: str  # as fio reported it, in --client form: "HOST,PORT" or "sock:PATH"
    error: int = 0
    iops: float = 0.0
    bw_bytes: float = 0.0
    lat_mean_ns: float = 0.0
    lat_max_ns: float = 0.0
    read: Direction = field(default_factory=Direction)
    write: Direction = field(default_factory=Direction)


@dataclass(frozen=True)
class PointResult(PlannedPoint):
    """One workload point of one round: the point as planned, and what it measured."""

    fio_job: str = ""
    error: int = 0
    iops: float = 0.0
    bw_bytes: float = 0.0
    lat_mean_ns: float = 0.0
    lat_max_ns: float = 0.0
    read: Direction = field(default_factory=Direction)
    write: Direction = field(default_factory=Direction)
    series: Series | None = field(default=None, metadata={"omit_none": True})
    cpu_pct: float = field(default=0.0, metadata=OMIT)  # fio's usr_cpu + sys_cpu
    # fio's client/server mode: each host's share, sorted by host
    # (left out of the file when empty, as in every run without fio servers)
    hosts: tuple[HostResult, ...] = field(default=(), metadata=OMIT)


@dataclass(frozen=True)
class Thermal:
    """What the drive reported about heat, read after the round was stored: its
    counters as changes since the previous reading (``since``; None: no earlier
    reading close enough to tell), the critical warning byte as read."""

    source: str = ""  # "nvme smart-log" | "smartctl"
    read_at: float = 0.0  # epoch seconds
    since: float | None = None  # epoch seconds of the previous reading
    critical_warning: int | None = None  # NVMe; bit 1: temperature
    warning_minutes: float | None = None  # minutes above the warning temperature (WCTEMP)
    critical_minutes: float | None = None  # minutes above the critical temperature (CCTEMP)
    throttle_transitions: float | None = None  # into thermal management levels 1 and 2
    throttle_seconds: float | None = None  # seconds in thermal management levels 1 and 2


@dataclass(frozen=True)
class Round(Record):
    """One round: every point of the test's matrix once, in one fio run.

    Format history: 1 (no ``schema`` field) — ``segment`` could be missing (a run
    before resumes kept segments: segment 1); 2 — ``schema`` written, ``segment``
    always present; 3 — ``temperature_c``, the drive's temperature read after the
    round was stored (null: not available; null in every version 2 file), and
    ``thermal``, the rest of that reading (left out when there was none).  Within
    version 3, ``hosts`` on a point: each fio server's share in client/server mode,
    left out when empty, so no version step (a reader that lacks it reads the
    totals as before, and a file without it kept no per-host values)."""

    VERSION = 3

    round: int
    points: tuple[PointResult, ...]
    tracking: Mapping[str, float]  # tracking variable label -> its value this round
    test: str = ""
    segment: int = 1
    # epoch seconds: when the round began (its fio's start, or for a round started
    # ahead the end of the previous round's last point) and when its fio ended
    started: float = 0.0
    ended: float = 0.0
    fio: FioCall = field(default_factory=FioCall)
    written_bytes: float = 0.0
    total_written_bytes: float = 0.0
    temperature_c: float | None = None  # degrees Celsius; None: not available
    thermal: Thermal | None = field(default=None, metadata={"omit_none": True})

    def point(self, bs: int, read_pct: int) -> PointResult:
        for p in self.points:
            if p.bs == bs and p.read_pct == read_pct:
                return p
        raise KeyError(f"no point {bs} {read_pct}")


def _round_v1(data: dict[str, Any], context: Context) -> dict[str, Any]:
    data.setdefault("segment", 1)
    return data


def _round_v2(data: dict[str, Any], context: Context) -> dict[str, Any]:
    data.setdefault("temperature_c", None)  # tkbench did not read it before version 3
    return data


Round.UPGRADES = {1: _round_v1, 2: _round_v2}
