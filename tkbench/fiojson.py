"""Parse fio's JSON / json+ output, robustly across fio versions.

Pure functions, no I/O.  See docs/fio-json.md for the version differences handled.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LatStats:
    """Latency summary in nanoseconds (fio 2.x microseconds are converted)."""

    mean: float = 0.0
    min: float = 0.0
    max: float = 0.0
    stddev: float = 0.0
    samples: int | None = None


@dataclass(frozen=True)
class DirStats:
    """One I/O direction (read, write or trim) of one job entry."""

    io_bytes: int = 0  # bytes (fio 2.x reports KiB here: converted)
    total_ios: int | None = None
    iops: float = 0.0
    bw_bytes: float = 0.0  # bytes per second
    runtime_ms: float = 0.0
    lat: LatStats = field(default_factory=LatStats)  # total latency (submission + completion)
    clat: LatStats = field(default_factory=LatStats)
    slat: LatStats = field(default_factory=LatStats)
    # completion-latency percentiles: percent (e.g. 99.99) -> nanoseconds
    percentiles: dict[float, float] = field(default_factory=dict)
    # json+ completion-latency histogram: bucket latency in ns -> count (non-zero buckets)
    bins: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class JobStats:
    """One entry of ``jobs`` (or ``client_stats``)."""

    name: str
    groupid: int = 0
    error: int = 0
    read: DirStats = field(default_factory=DirStats)
    write: DirStats = field(default_factory=DirStats)
    trim: DirStats = field(default_factory=DirStats)
    job_runtime_ms: float | None = None
    elapsed_s: float | None = None
    hostname: str | None = None
    port: int | None = None
    options: dict[str, str] = field(default_factory=dict)  # "job options"
    job_start_ms: int | None = None  # epoch ms (fio >= 3.35)


@dataclass(frozen=True)
class FioOutput:
    """A whole fio JSON document."""

    fio_version: str
    jobs: list[JobStats]  # per-job entries; in client/server mode the per-client entries
    timestamp: int | None = None
    timestamp_ms: int | None = None
    global_options: dict[str, str] = field(default_factory=dict)
    aggregate: JobStats | None = None  # the "All clients" entry in client/server mode
    client_server: bool = False
    preamble: str = ""  # any text fio printed before the JSON document
    disk_util: list[dict[str, object]] = field(default_factory=list)


def parse(text: str) -> FioOutput:
    """Parse fio output text (JSON or json+, possibly with text before it)."""
    raise NotImplementedError


def check_jobs(output: FioOutput, expect_io: bool = True) -> None:
    """Raise FioJobError if a job reported an error or (with expect_io) did no I/O."""
    raise NotImplementedError
