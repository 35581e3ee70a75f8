"""The chapter "Your workload on this drive" of a replay test (tkbench.kinds.replay;
pure): part of the chapter of its ``replay`` stage, read from the run's stored
stages.

* the captured workload: its origin, mix and rates, its stream table (the streams the
  applied workload is made of marked), IOPS over time and the LBA heat (the reduction
  each stage's ``test.json`` holds as ``capture``);
* the replay: IOPS and response times of the trace replayed at its captured timing and
  as fast as possible, beside the capture's (the device's service times on the
  server);
* the applied workload: its steady state (the ``applied`` stage's window), the
  demand-intensity grid and plot (:func:`.stages.intensity`) and the operating points
  (:func:`.stages.operating`);
* when the run also holds the PTS IOPS test: the applied workload's steady-state IOPS
  beside the drive's PTS IOPS at the block size and mix nearest the workload's.

The other stages and the PTS IOPS test are read as the run analysed them
(:meth:`~tkbench.kinds.results.analysed.Analysed.stage_of`, ``peers``): their windows
and what they measured are computed once, for their own chapters and this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tkbench.conformance import rwsw
from tkbench.kinds.replay import PROCEDURE
from tkbench.kinds.results.analysed import Analysed
from tkbench.report import fmt, stages
from tkbench.report.labels import mix_label
from tkbench.rundir.records import PointResult
from tkbench.rundir.store import RunData
from tkbench.units import format_size
from tkbench.workload.tkw import Reduction, Summary

HEADING = "Your workload on this drive"
PTS_IOPS = "iops"  # the PTS IOPS test's name in the bundled profiles


@dataclass(frozen=True)
class StreamRow:
    rw: str
    bs: int
    pattern: str
    share_ios: float
    share_bytes: float
    ios: int
    applied: bool  # one of the streams the applied workload is made of

    @property
    def size(self) -> str:
        return format_size(self.bs)


@dataclass(frozen=True)
class ReplayRow:
    """IOPS and response times (ms) of the capture or of one replay."""

    what: str
    ios: int
    seconds: float
    read_iops: float
    write_iops: float
    read_ms: tuple[float | None, ...]  # mean, p99, p99.9
    write_ms: tuple[float | None, ...]

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops


@dataclass(frozen=True)
class PtsRow:
    """The applied workload's steady-state IOPS beside the PTS IOPS test's nearest cell."""

    workload_iops: float
    workload_what: str
    pts_iops: float
    pts_what: str


@dataclass(frozen=True)
class WorkloadChapter:
    heading: str
    text: tuple[str, ...]
    streams: tuple[StreamRow, ...]
    timeline_s: float  # seconds per point of the time series
    read_iops: tuple[float, ...]
    write_iops: tuple[float, ...]
    heat: tuple[int, ...]  # reads and writes per 1 % of the capacity
    replays: tuple[ReplayRow, ...]
    applied: str  # the applied workload's steady state in words
    applied_iops: float | None
    intensity: stages.Intensity | None
    operating: stages.Operating | None
    pts: PtsRow | None


PERCENTILES = ("99", "99.9")


def _capture_row(red: Reduction) -> ReplayRow:
    dur = red.duration_s
    tl = red.timeline

    def ms(s: Summary) -> tuple[float | None, ...]:
        return tuple(v / 1e3 if v is not None else None for v in (s.mean, s.p99, s.p99_9))

    reads = math.fsum(tl.read_iops) * tl.interval_s
    writes = math.fsum(tl.write_iops) * tl.interval_s
    return ReplayRow(
        what="captured on the server",
        ios=red.ios,
        seconds=dur,
        read_iops=reads / dur if dur else 0.0,
        write_iops=writes / dur if dur else 0.0,
        read_ms=ms(red.read_latency_us),
        write_ms=ms(red.write_latency_us),
    )


def _replay_row(p: PointResult) -> ReplayRow:
    def ms(d: Any) -> tuple[float | None, ...]:
        if not d.total_ios:
            return (None, None, None)
        pct = {f"{float(k):g}": v for k, v in d.percentiles_ns.items()}
        return (d.lat_mean_ns / 1e6, *(pct[k] / 1e6 if k in pct else None for k in PERCENTILES))

    seconds = max(p.read.runtime_ms, p.write.runtime_ms) / 1e3
    what = (
        "replayed at the captured timing"
        if p.replay == "captured"
        else "replayed as fast as possible"
    )
    return ReplayRow(
        what=what,
        ios=int((p.read.total_ios or 0) + (p.write.total_ios or 0)),
        seconds=seconds,
        read_iops=p.read.iops,
        write_iops=p.write.iops,
        read_ms=ms(p.read),
        write_ms=ms(p.write),
    )


def _stage(a: Analysed, stage: str) -> Analysed | None:
    """The replay test's stage ``stage`` among the run's tests, as analysed (a
    profile's test's stages share its name and its procedure)."""
    return a.stage_of(a.plan.spec, stage)


def _window_iops(a: Analysed) -> float | None:
    means = a.analysis.means
    return next(iter(means.values())).iops if means else None


def nearest(bs: float, sizes: Sequence[int]) -> int | None:
    """The block size of ``sizes`` nearest ``bs`` on a log scale."""
    good = [s for s in sizes if s > 0]
    if not good or bs <= 0:
        return None
    return min(good, key=lambda s: abs(math.log2(s / bs)))


def _pts(a: Analysed, iops: float | None, red: Reduction, read: int) -> PtsRow | None:
    """The PTS IOPS test's window IOPS at the block size nearest the workload's most
    frequent one and the mix nearest its read share."""
    peers = a.peers.values()
    pts = next((x for x in peers if x.plan.spec == PTS_IOPS and not x.plan.procedure), None)
    streams = red.streams
    if pts is None or iops is None or not streams:
        return None
    means = pts.analysis.means
    if not means:
        return None
    top = max(streams, key=lambda s: s.ios)
    bs = nearest(float(top.bs), [k[0] for k in means])
    if bs is None:
        return None
    mix = min((k[1] for k in means if k[0] == bs), key=lambda r: abs(r - read))
    return PtsRow(
        workload_iops=iops,
        workload_what=(f"the applied workload ({mix_label(read)}, mostly {format_size(top.bs)})"),
        pts_iops=means[(bs, mix)].iops,
        pts_what=f"PTS IOPS, {format_size(bs)} random {mix_label(mix)}",
    )


def chapter(a: Analysed) -> WorkloadChapter | None:
    """The chapter of a replay test, in its ``replay`` stage (None for any other test),
    with its run's other stages as analysed (``a.peers``)."""
    t, plan = a.test, a.plan
    if plan.procedure != PROCEDURE or plan.stage != "replay" or not plan.capture:
        return None
    red = Reduction.parse(plan.capture, f"test {plan.name}'s capture")
    applied_stage = _stage(a, "applied")
    applied_test = applied_stage.test if applied_stage is not None else None
    chosen = applied_test.plan.points[0] if applied_test and applied_test.plan.points else None
    bssplit = chosen.bssplit if chosen is not None else ""
    sizes = {
        (d, int(part.split("/")[0]))
        for d, half in zip(("read", "write"), bssplit.split(","), strict=False)
        for part in half.split(":")
        if part
    }
    if bssplit and "," not in bssplit:  # one direction: the split is its own
        sizes = {("read" if chosen and chosen.read_pct else "write", b) for _, b in sizes}
    rows = tuple(
        StreamRow(
            rw=s.rw,
            bs=s.bs,
            pattern=s.pattern,
            share_ios=s.share_ios,
            share_bytes=s.share_bytes,
            ios=s.ios,
            applied=(s.rw, s.bs) in sizes,
        )
        for s in red.streams
    )
    qd = red.queue_depth
    text = [
        f"The workload was captured for {fmt.duration(red.duration_s)}: "
        f"{red.ios:,} reads and writes ({red.read_pct:g} % "
        f"reads, {red.random_pct:g} % random), "
        f"{fmt.sig(red.iops)} IOPS and {fmt.sig(red.mbps)} "
        f"MB/s on average"
        + (
            f", queue depth {qd.p50:g} (median) to {qd.max:g}"
            if qd.p50 is not None and qd.max is not None
            else ", no queue depth (the capture saw no completions)"
        )
        + f", on a device of {fmt.capacity(red.capacity_bytes)}."
    ]
    replays: list[ReplayRow] = [_capture_row(red)]
    rnd = t.rounds[-1] if t.rounds else None
    if rnd is not None:
        replays += [_replay_row(p) for p in rnd.points if p.replay]
    applied_iops = _window_iops(applied_stage) if applied_stage is not None else None
    if applied_test is None:
        applied = "The applied workload did not run."
    else:
        res = applied_test.result
        how = (
            "reached its steady state"
            if res is not None and res.steady_state
            else "did not reach its steady state"
            if res is not None
            else "had not finished"
        )
        applied = (
            f"The applied workload ({chosen.label if chosen else ''}: "
            f"fio bssplit {bssplit}, percentage_random "
            f"{chosen.random_pct if chosen else ''}, random_distribution "
            f"{chosen.zones if chosen else ''}) {how} after {len(applied_test.rounds)} "
            "round(s)"
            + (
                f": {fmt.sig(applied_iops)} IOPS over its measurement window."
                if applied_iops is not None
                else "."
            )
        )
    inten = _stage(a, "intensity")
    oper = _stage(a, "operating")
    return WorkloadChapter(
        heading=HEADING,
        text=tuple(text),
        streams=rows,
        timeline_s=red.timeline.interval_s,
        read_iops=red.timeline.read_iops,
        write_iops=red.timeline.write_iops,
        heat=red.heat,
        replays=tuple(replays),
        applied=applied,
        applied_iops=applied_iops,
        intensity=stages.intensity(inten) if inten is not None and inten.test.rounds else None,
        operating=stages.operating(oper) if oper is not None and oper.test.rounds else None,
        pts=_pts(a, applied_iops, red, chosen.read_pct if chosen else 0),
    )


def rwsw_warnings(run: RunData) -> tuple[str, ...]:
    """Page 1's list of a run's departures from SNIA RWSW, as tkbench reads it
    (tkbench.conformance.rwsw): one banner, none for a run without a replay test."""
    found = rwsw.departures([(t.plan, t.result) for t in run.tests], planned=False)
    if not found:
        return ()
    return (
        "Departures from SNIA's Real World Storage Workload test specification (as tkbench "
        "reads SNIA's pages on it, docs/replay.md): "
        + "; ".join(f"{d.title}: {rwsw.words(d)}" for d in found)
        + ".",
    )
