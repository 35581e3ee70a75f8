"""Round summaries: fio's parsed output -> the per-point numbers tkbench stores (pure).

Units in stored summaries: bytes, bytes/s, IOPS, nanoseconds.  Metrics shown to
people (tracking variables, reports) use IOPS, MB/s (10^6 bytes/s) and ms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tkbench.errors import FioJobError, FioParseError
from tkbench.fio.combine import combine
from tkbench.fio.output import DirStats, FioOutput, JobStats, parse
from tkbench.plan.model import Point
from tkbench.profile.model import Tracking
from tkbench.rundir.records import Direction, HostResult, PointResult
from tkbench.rundir.records.base import dump
from tkbench.vocab import MB, metric


def dir_summary(d: DirStats, with_bins: bool = False) -> Direction:
    # Prefer total latency (submission + completion) when fio reported its percentiles.
    pct = d.lat_percentiles or d.percentiles
    bins = d.lat_bins or d.bins
    return Direction(
        io_bytes=d.io_bytes,
        total_ios=d.total_ios,
        iops=d.iops,
        bw_bytes=d.bw_bytes,
        runtime_ms=d.runtime_ms,
        lat_mean_ns=d.lat.mean,
        lat_min_ns=d.lat.min,
        lat_max_ns=d.lat.max,
        lat_stddev_ns=d.lat.stddev,
        clat_mean_ns=d.clat.mean,
        percentiles_of="lat" if d.lat_percentiles else "clat",
        percentiles_ns={f"{k:g}": v for k, v in sorted(pct.items())},
        bins_ns={str(k): v for k, v in sorted(bins.items())} if with_bins and bins else None,
    )


def _measured(point: Point, job: JobStats, with_bins: bool) -> dict[str, Any]:
    """What a job entry measured of a point: the fields a point and a host share."""
    r, w = job.read, job.write
    ios_r = r.total_ios if r.total_ios is not None else (r.io_bytes / point.bs if point.bs else 0)
    ios_w = w.total_ios if w.total_ios is not None else (w.io_bytes / point.bs if point.bs else 0)
    ios = ios_r + ios_w
    lat_mean = (r.lat.mean * ios_r + w.lat.mean * ios_w) / ios if ios else 0.0
    return {
        "error": job.error,
        "iops": r.iops + w.iops,
        "bw_bytes": r.bw_bytes + w.bw_bytes,
        "lat_mean_ns": lat_mean,
        "lat_max_ns": max(r.lat.max if ios_r else 0.0, w.lat.max if ios_w else 0.0),
        "read": dir_summary(r, with_bins),
        "write": dir_summary(w, with_bins),
    }


def point_summary(
    point: Point,
    job: JobStats,
    with_bins: bool = False,
    hosts: Sequence[HostResult] = (),
) -> PointResult:
    return PointResult(
        **dump(point.record()),
        fio_job=job.name,
        **_measured(point, job, with_bins),
        cpu_pct=job.cpu_pct,
        hosts=tuple(hosts),
    )


def host_label(job: JobStats) -> str:
    """The host of a client/server entry in fio's --client form: ``HOST,PORT``
    (``ip6:HOST,PORT`` for an IPv6 address) or ``sock:PATH`` for a unix socket."""
    host = job.hostname or "?"
    if host.startswith("/"):
        return f"sock:{host}"
    port = f",{job.port}" if job.port else ""
    return f"ip6:{host}{port}" if ":" in host else f"{host}{port}"


def _by_name(jobs: Sequence[JobStats]) -> dict[str, list[JobStats]]:
    groups: dict[str, list[JobStats]] = {}
    for job in jobs:
        groups.setdefault(job.name, []).append(job)
    return groups


def jobs_by_name(output: FioOutput) -> dict[str, JobStats]:
    """One entry per job section (several hosts or unmerged clones are combined)."""
    return {n: js[0] if len(js) == 1 else combine(js, n) for n, js in _by_name(output.jobs).items()}


def host_results(point: Point, jobs: Sequence[JobStats], with_bins: bool) -> list[HostResult]:
    """Each host's share of one point (its entries combined per host), sorted by
    host (fio reports them in the order they finish)."""
    per_host: dict[str, list[JobStats]] = {}
    for job in jobs:
        per_host.setdefault(host_label(job), []).append(job)
    return [
        HostResult(
            host=host,
            **_measured(point, js[0] if len(js) == 1 else combine(js, js[0].name), with_bins),
        )
        for host, js in sorted(per_host.items())
    ]


def summarize_round(
    points: Sequence[Point], output: FioOutput, with_bins: bool = False
) -> list[PointResult]:
    """Every point of a round; in client/server mode, with each host's share."""
    groups = _by_name(output.jobs)
    jobs = jobs_by_name(output)
    out = []
    for p in points:
        job = jobs.get(p.job_name)
        if job is None:
            raise FioJobError(f"fio output has no results for point {p.job_name}")
        hosts = host_results(p, groups[p.job_name], with_bins) if output.client_server else []
        out.append(point_summary(p, job, with_bins, hosts))
    return out


def find_point(summaries: Sequence[PointResult], bs: int, read_pct: int) -> PointResult:
    """The point a tracking variable of ``bs`` and ``read_pct`` reads: of several
    such points (repeated intervals, a demand-intensity grid) the one whose role is
    "" (tkbench.kinds.staged)."""
    for s in summaries:
        if s.bs == bs and s.read_pct == read_pct and not s.role:
            return s
    raise KeyError(f"no point {bs} {read_pct}")


def tracking_values(
    summaries: Sequence[PointResult], tracking: Sequence[Tracking]
) -> dict[str, float]:
    out = {}
    for t in tracking:
        v = metric(t.metric).read(find_point(summaries, t.bs, t.mix.read))
        if not math.isfinite(v):
            raise FioJobError(f"tracking variable {t.label} is not a finite number")
        out[t.label] = v
    return out


def written_bytes(summaries: Sequence[PointResult]) -> int:
    return int(sum(s.write.io_bytes for s in summaries))


# --------------------------------------------------------------------------- live figures


@dataclass(frozen=True)
class LiveFigures:
    """What fio did since its previous status report, for people watching a round."""

    point: str  # the point's label, "4k 0/100"
    iops: float
    mbs: float  # MB/s (10^6 bytes/s)
    lat_ms: float  # mean response time
    seconds: float  # the interval the figures cover


@dataclass(frozen=True)
class _Totals:
    """What a job section has done so far, by one status report (clones summed)."""

    ios: float = 0.0
    nbytes: float = 0.0
    latsum: float = 0.0  # latency times I/Os, ns
    runtime: float = 0.0  # ms, the longest of its clones' and directions'

    def __add__(self, other: _Totals) -> _Totals:
        return _Totals(
            self.ios + other.ios,
            self.nbytes + other.nbytes,
            self.latsum + other.latsum,
            max(self.runtime, other.runtime),
        )


def _totals(output: FioOutput) -> dict[str, _Totals]:
    """Per job name: what its entries report."""
    out: dict[str, _Totals] = {}
    for job in output.jobs:
        done = _Totals()
        for d in (job.read, job.write):
            n = float(d.total_ios or 0)
            # the directions' own runtime is I/O time; the job's also counts the wait
            # for its turn (startdelay, the hand-off)
            done += _Totals(n, d.io_bytes, d.lat.mean * n, d.runtime_ms)
        out[job.name] = out.get(job.name, _Totals()) + done
    return out


class StatusStream:
    """Reads fio's output line by line while it runs with ``--status-interval`` (a JSON
    document per interval) and reports the point that did I/O since the previous
    document: its IOPS, MB/s and mean response time over that interval."""

    def __init__(self, labels: Mapping[str, str], report: Callable[[LiveFigures], None]) -> None:
        self.labels = labels  # fio job name -> point label
        self.report = report
        self._doc: list[str] | None = None
        self._prev: dict[str, _Totals] = {}

    def feed(self, line: str) -> None:
        if self._doc is None:
            if line.startswith("{"):
                self._doc = [line]
            return
        self._doc.append(line)
        if line.rstrip() == "}":  # fio closes each document at the start of a line
            text, self._doc = "".join(self._doc), None
            try:
                totals = _totals(parse(text))
            except FioParseError:
                return
            figures = self._figures(totals)
            self._prev = totals
            if figures is not None:
                self.report(figures)

    def _figures(self, totals: Mapping[str, _Totals]) -> LiveFigures | None:
        found = None
        for name, now in totals.items():
            prev = self._prev.get(name, _Totals())
            dios, dt = now.ios - prev.ios, (now.runtime - prev.runtime) / 1000.0
            if dios > 0 and dt > 0:
                found = LiveFigures(
                    point=self.labels.get(name, name),
                    iops=dios / dt,
                    mbs=(now.nbytes - prev.nbytes) / dt / MB,
                    lat_ms=(now.latsum - prev.latsum) / dios / 1e6,
                    seconds=dt,
                )
        return found


def point_at(points: Sequence[Point], elapsed: float) -> Point | None:
    """The point of a round running ``elapsed`` seconds after its first began (the
    points run back to back, each for its runtime)."""
    t = 0.0
    for p in points:
        t += p.runtime
        if elapsed < t:
            return p
    return None


def counter_figures(
    before: tuple[int, int, int], after: tuple[int, int, int], seconds: float, point: str
) -> LiveFigures | None:
    """Figures from two readings of a block device's counters (I/Os, bytes, ms busy)."""
    ios = after[0] - before[0]
    if ios <= 0 or seconds <= 0:
        return None
    return LiveFigures(
        point=point,
        iops=ios / seconds,
        mbs=(after[1] - before[1]) / seconds / MB,
        lat_ms=(after[2] - before[2]) / ios,
        seconds=seconds,
    )
