"""The report's chapters of the stages of the tests beyond the basic four (pure).

A test of several stages (:mod:`tkbench.kinds.staged`: host idle recovery,
cross-stimulus recovery, composite block size, demand intensity) is stored as one
test directory per stage.  The preconditioning stages keep the generic
steady-state chapter; the others have a chapter of their own, built here from the
records and what the stage measured (:mod:`tkbench.kinds.staged.results`, kept on the
test's :class:`~tkbench.kinds.results.analysed.Analysed` as ``staged``: the same
record ``tkbench show --json`` prints, through :mod:`tkbench.outputs.showparts`):

* ``recovery`` (HIR wait states): IOPS of every sample in order, a row per wait
  state (bursts, their mean IOPS, recovery against the preconditioning stage's
  steady state, the return to baseline);
* ``groups`` (XSR): throughput and mean response time of every sample across the
  access groups, and the transitions with their recovery time;
* ``intensity`` (CBW, DIRTH): the thread count x queue depth grid of the
  measurement window (IOPS, mean response time, CPU);
* ``operating``: MaxIOPS, MidIOPS and MinIOPS as measured, with percentiles of
  reads and writes together and their histograms.

Computed here, not in the analysis: the timeline of samples (each point's samples
placed after the points before it: a point lasts its planned runtime, or longer
when fio's last sample ends later) and each access group's mean throughput and
response time over its samples.  Everything else comes from
:mod:`tkbench.kinds.staged.results`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

from tkbench.analysis.confidence import Level
from tkbench.analysis.window import merge_bins, samples_needed
from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.staged import results as stages
from tkbench.kinds.staged.common import TITLES
from tkbench.report import fmt
from tkbench.report.labels import mix_label
from tkbench.report.matrix import Matrix
from tkbench.rundir.records import PlannedPoint, PointResult, Round, TestPlan
from tkbench.units import format_size

MANY = 400  # more samples than this are drawn as dots


def bs_label(plan: TestPlan, p: PlannedPoint | None = None) -> str:
    """A point's block size as the report says it: a mix of sizes is "composite"."""
    bs = p.bs if p is not None else (plan.block_sizes or [0])[0]
    return "composite (block-size mix)" if bs == 0 else format_size(bs)


def load(numjobs: int, iodepth: int) -> str:
    return f"T{numjobs}/Q{iodepth}"


@dataclass(frozen=True)
class Span:
    """A part of a sampled timeline: a wait state, a return to baseline, an access group."""

    label: str
    start_s: float
    end_s: float
    shaded: bool  # drawn shaded (host idle in it, or every other access group)


@dataclass(frozen=True)
class Timeline:
    """Every sample of a stage's round in order, in seconds from its first point's start."""

    interval: float  # seconds per sample
    t_s: tuple[float, ...]
    iops: tuple[float, ...]
    mbs: tuple[float, ...]
    lat_ms: tuple[float, ...]  # mean (completion) response time of the sample; 0: no I/O
    spans: tuple[Span, ...]

    @property
    def minutes(self) -> bool:
        """Long enough to plot in minutes."""
        return bool(self.t_s) and self.t_s[-1] > 600


def timeline(
    points: Sequence[PointResult], labels: Sequence[str], shaded: Sequence[bool]
) -> Timeline | None:
    """The samples of ``points`` (run back to back) on one time axis."""
    t: list[float] = []
    iops: list[float] = []
    mbs: list[float] = []
    lat: list[float] = []
    spans = []
    start = 0.0
    interval = 0.0
    for p, label, shade in zip(points, labels, shaded, strict=True):
        s = p.series
        end = start + p.runtime
        if s is not None and s.t_s:
            interval = interval or s.interval
            t += [start + x for x in s.t_s]
            iops += list(s.iops)
            mbs += [b / 1e6 for b in s.bw_bytes] or [0.0] * len(s.t_s)
            lat += [v / 1e6 for v in s.lat_mean_ns] or [0.0] * len(s.t_s)
            end = max(end, start + s.t_s[-1])
        spans.append(Span(label=label, start_s=start, end_s=end, shaded=shade))
        start = end
    if not t:
        return None
    return Timeline(interval, tuple(t), tuple(iops), tuple(mbs), tuple(lat), tuple(spans))


# --------------------------------------------------------------------------- host idle recovery


@dataclass(frozen=True)
class WaitRow:
    idle_s: float
    bursts: int
    burst_s: float  # the configured burst
    mean_iops: float
    recovery: float | None  # of the preconditioning stage's steady-state IOPS
    baseline_iops: float | None


@dataclass(frozen=True)
class HostIdle:
    heading = "Wait states and recovery"
    kind = "recovery"
    text: tuple[str, ...]
    steady_iops: float | None
    steady_basis: str  # where the steady-state IOPS come from, in words
    waits: tuple[WaitRow, ...]
    timeline: Timeline | None

    @property
    def summary(self) -> str:
        known = [w for w in self.waits if w.recovery is not None]
        if not known:
            return f"{len(self.waits)} wait state(s); no steady-state IOPS to recover to."
        return (
            "Recovery (mean IOPS of the write bursts ÷ steady-state IOPS): "
            + ", ".join(
                f"{100 * (w.recovery or 0):.1f} % after idle {fmt.duration(w.idle_s)}"
                for w in known
            )
            + "."
        )


def _measured(a: Analysed, kind: type[stages.R]) -> stages.R:
    """What the stage of ``a`` measured, as its chapter's builder expects it (the
    stage's type makes it: :meth:`tkbench.kinds.base.TestType.stage_result`)."""
    found = stages.staged_as(a, kind)
    if found is None:
        raise ValueError(f"test {a.name} has no {kind.__name__.lower()} results")
    return found


def host_idle(a: Analysed) -> HostIdle:
    t, plan = a.test, a.plan
    rnd = t.rounds[-1] if t.rounds else None
    measured = _measured(a, stages.Recovery)
    base = measured.steady_iops
    pre = measured.precondition
    basis = "no preconditioning stage with rounds in this run"
    if pre is not None and base is not None:
        basis = (
            f"{pre.plan.title or pre.name}, mean of the tracked interval's IOPS in rounds "
            f"{fmt.rounds(list(measured.precondition_window))}"
        )
    found = measured.waits
    busy = {p.idle: p.busy for p in plan.points if p.idle > 0}
    waits = tuple(
        WaitRow(
            idle_s=w.idle_s,
            bursts=len(w.bursts),
            burst_s=busy.get(w.idle_s, 0.0),
            mean_iops=w.mean_iops,
            recovery=w.recovery,
            baseline_iops=w.baseline_iops,
        )
        for w in found
    )
    pts = list(rnd.points) if rnd else []
    line = timeline(
        pts,
        [f"idle {fmt.duration(p.idle)}" if p.idle > 0 else "baseline" for p in pts],
        [p.idle > 0 for p in pts],
    )
    states = [p for p in plan.points if p.idle > 0]
    baseline = next((p.runtime for p in plan.points if p.idle <= 0), 0.0)
    p0 = plan.points[0] if plan.points else None
    text = [
        f"After the preconditioning stage, for each wait state in turn "
        f"({', '.join(fmt.duration(p.idle) for p in states)}): "
        + (
            f"{round(states[0].runtime / (states[0].busy + states[0].idle))} bursts of "
            f"{fmt.duration(states[0].busy)} of writes, each followed by the wait state's host "
            "idle (fio thinktime: no I/O)"
            if states and states[0].busy + states[0].idle > 0
            else "bursts of writes with host idle"
        )
        + (
            f", then {fmt.duration(baseline)} of continuous writes: the return to baseline."
            if baseline
            else "."
        ),
    ]
    if p0 is not None:
        text.append(
            f"Every point: {bs_label(plan, p0)} {p0.pattern} at {mix_label(p0.read_pct)}, "
            f"{load(p0.numjobs, p0.iodepth)}; IOPS logged every {fmt.duration(plan.sample)}. "
            "A write burst is a run of consecutive samples with I/O; its IOPS are its I/Os "
            "over its length. Recovery is the mean IOPS of a wait state's bursts over the "
            "steady-state IOPS of the preconditioning stage."
        )
    return HostIdle(
        text=tuple(text), steady_iops=base, steady_basis=basis, waits=waits, timeline=line
    )


# --------------------------------------------------------------------------- cross-stimulus


@dataclass(frozen=True)
class GroupRow:
    number: int
    label: str  # "1024k sequential"
    seconds: float
    samples: int
    mean_mbs: float | None  # over its samples
    mean_ms: float | None
    max_ms: float | None  # its largest single response time (fio's maximum; None: none)


@dataclass(frozen=True)
class CrossStimulus:
    heading = "Access groups and transitions"
    kind = "groups"
    text: tuple[str, ...]
    band: float  # the settling band, a fraction
    groups: tuple[GroupRow, ...]
    transitions: tuple[stages.Transition, ...]
    timeline: Timeline | None

    @property
    def summary(self) -> str:
        if not self.transitions:
            return "No transition between access groups was recorded."
        return (
            "Recovery time after each change of access group: "
            + "; ".join(f"to {x.target} {_seconds(x.recovery_s)}" for x in self.transitions)
            + "."
        )


def _seconds(value: float | None) -> str:
    return fmt.duration(value) if value is not None else "not determined"


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def cross_stimulus(a: Analysed) -> CrossStimulus:
    t, plan = a.test, a.plan
    rnd = t.rounds[-1] if t.rounds else None
    measured = _measured(a, stages.Groups)
    band = measured.band
    pts = list(rnd.points) if rnd else []
    groups = []
    for i, p in enumerate(pts):
        s = p.series
        lat = [v / 1e6 for v in s.lat_mean_ns if v > 0] if s else []
        groups.append(
            GroupRow(
                number=i + 1,
                label=stages.group_label(p),
                seconds=p.runtime,
                samples=len(s.t_s) if s else 0,
                mean_mbs=_mean([b / 1e6 for b in s.bw_bytes]) if s else None,
                mean_ms=_mean(lat),
                max_ms=p.lat_max_ns / 1e6 if p.lat_max_ns > 0 else None,
            )
        )
    line = timeline(
        pts, [f"{g.number}: {g.label}" for g in groups], [g.number % 2 == 0 for g in groups]
    )
    p0 = plan.points[0] if plan.points else None
    listed = "; ".join(
        f"group {i + 1}: {format_size(p.bs)} {p.pattern} for {fmt.duration(p.runtime)}"
        for i, p in enumerate(plan.points)
    )
    text = [
        f"The access groups ran back to back, without a pause, in one round: {listed}."
        + (
            " Each group is one fio run, stored as it ended, and followed the group "
            "before it as closely as the points of a round follow each other."
            if t.parts
            else ""
        )
        + (
            f" Every group at {mix_label(p0.read_pct)}, {load(p0.numjobs, p0.iodepth)}; "
            f"throughput, IOPS and mean response time logged every {fmt.duration(plan.sample)}."
            if p0
            else ""
        ),
        "A transition's recovery time is the time from the start of the new access group "
        f"until its throughput enters, and stays in, the band of ±{fmt.limit(band)} around "
        f"the group's settled level, the mean of its last {stages.SETTLE_SAMPLES} samples.",
    ]
    return CrossStimulus(
        text=tuple(text),
        band=band,
        groups=tuple(groups),
        transitions=measured.transitions,
        timeline=line,
    )


# --------------------------------------------------------------------------- demand intensity


@dataclass(frozen=True)
class Intensity:
    heading = "Demand intensity"
    kind = "intensity"
    text: tuple[str, ...]
    basis: str  # "rounds 4–8 (steady state)"
    ceiling_ms: float
    threads: tuple[int, ...]  # rows, in the plan's order
    iodepths: tuple[int, ...]  # columns
    iops: Matrix
    lat_mean: Matrix
    cpu: Matrix
    cells: tuple[stages.Cell, ...]  # in the order of the plan

    @property
    def summary(self) -> str:
        return ""  # a steady-state stage: its verdict is the summary


def _grid_matrix(
    key: str,
    caption: str,
    unit: str,
    threads: Sequence[int],
    depths: Sequence[int],
    by: dict[tuple[int, int], float],
) -> Matrix:
    return Matrix(
        key=key,
        caption=caption,
        unit=unit,
        row_title="Threads",
        col_title="Queue depth",
        rows=tuple(f"T{x}" for x in threads),
        cols=tuple(f"Q{q}" for q in depths),
        values=tuple(tuple(by.get((x, q)) for q in depths) for x in threads),
    )


def intensity(a: Analysed) -> Intensity:
    plan = a.plan
    measured = _measured(a, stages.Grid)
    win, cells = measured.window, measured.cells
    grid_points = [p for p in plan.points if p.role in ("", "grid")]
    threads = tuple(dict.fromkeys(p.numjobs for p in grid_points))
    depths = tuple(dict.fromkeys(p.iodepth for p in grid_points))
    iops = {(c.numjobs, c.iodepth): c.iops for c in cells}
    lat = {(c.numjobs, c.iodepth): c.lat_mean_ns / 1e6 for c in cells}
    cpu = {(c.numjobs, c.iodepth): c.cpu_pct for c in cells}
    pre = next((p for p in plan.points if p.role == "prewrite"), None)
    top = next((p for p in plan.points if p.role == ""), None)
    g0 = grid_points[0] if grid_points else None
    text = []
    if g0 is not None:
        text.append(
            "Every round: "
            + (
                f"{fmt.duration(pre.runtime)} of writes (100 %) at "
                f"{load(pre.numjobs, pre.iodepth)} (a pre-write, not measured), then "
                if pre is not None
                else ""
            )
            + f"{len(grid_points)} loads of {fmt.duration(g0.runtime)} each, "
            f"{bs_label(plan, g0)} {g0.pattern} at {mix_label(g0.read_pct)}: thread count "
            f"{', '.join(map(str, threads))} (outer) × queue depth "
            f"{', '.join(map(str, depths))} (inner)."
        )
    if top is not None:
        text.append(
            f"The tracking variable is the IOPS of the highest load, "
            f"{load(top.numjobs, top.iodepth)}; its steady state decides when the stage stops "
            "(below). The tables and plots are means over the measurement window."
        )
    return Intensity(
        text=tuple(text),
        basis=f"rounds {fmt.rounds(list(win))}" if win else "no rounds",
        ceiling_ms=plan.response_ceiling * 1e3,
        threads=threads,
        iodepths=depths,
        iops=_grid_matrix("iops", "IOPS", "IOPS", threads, depths, iops),
        lat_mean=_grid_matrix("lat_mean", "Mean response time", "ms", threads, depths, lat),
        cpu=_grid_matrix("cpu", "CPU (fio's user + system)", "%", threads, depths, cpu),
        cells=cells,
    )


# --------------------------------------------------------------------------- operating points


@dataclass(frozen=True)
class OperatingRow:
    name: str  # MaxIOPS
    threads: int
    iodepth: int
    iops: float
    mean_ms: float
    max_ms: float
    percentiles_ms: tuple[float | None, ...]  # in the order of stages.PERCENTILES
    samples: int
    cpu_pct: float
    why: str
    levels: tuple[Level, ...]  # the percentiles as confidence levels (None: too few I/Os)
    bins_ns: tuple[tuple[int, int], ...]  # reads and writes summed, ascending


@dataclass(frozen=True)
class Operating:
    heading = "Operating points"
    kind = "operating"
    text: tuple[str, ...]
    percentile_names: tuple[str, ...]
    needed: tuple[int, ...]  # I/Os each percentile needs
    rows: tuple[OperatingRow, ...]

    @property
    def summary(self) -> str:
        if not self.rows:
            return "No operating point was measured."
        return (
            "; ".join(
                f"{r.name} {fmt.sig(r.iops)} IOPS at T{r.threads}/Q{r.iodepth}, "
                f"mean {fmt.sig(r.mean_ms)} ms"
                for r in self.rows
            )
            + "."
        )


def operating(a: Analysed) -> Operating:
    t, plan = a.test, a.plan
    rnd: Round | None = t.rounds[-1] if t.rounds else None
    measured = [p for p in rnd.points if p.measured] if rnd else []
    found = _measured(a, stages.Operated)
    rows = []
    for m, p in zip(found.measured, measured, strict=False):
        pct = tuple(
            m.percentiles_ns[k] / 1e6 if k in m.percentiles_ns else None for k in stages.PERCENTILES
        )
        rows.append(
            OperatingRow(
                name=TITLES.get(m.name, m.name),
                threads=m.numjobs,
                iodepth=m.iodepth,
                iops=m.iops,
                mean_ms=m.lat_mean_ns / 1e6,
                max_ms=m.lat_max_ns / 1e6,
                percentiles_ms=pct,
                samples=m.samples,
                cpu_pct=m.cpu_pct,
                why=m.why,
                levels=tuple(
                    Level(percent=float(k), ms=v, needed=samples_needed(float(k)))
                    for k, v in zip(stages.PERCENTILES, pct, strict=True)
                ),
                bins_ns=tuple(sorted(merge_bins([p.read, p.write]).items())),
            )
        )
    pre = next((p for p in plan.points if p.role == "prewrite"), None)
    meas = next((p for p in plan.points if p.measured), None)
    source = found.source
    text = [
        "MaxIOPS, MidIOPS and MinIOPS were chosen from the measurement window of "
        f"{source.plan.title if source else 'the demand-intensity stage'} when this stage "
        f"started: MaxIOPS is the load with the highest IOPS whose mean response time stays "
        f"within {plan.response_ceiling * 1e3:g} ms, MinIOPS the lowest load, "
        "MidIOPS the load whose IOPS are closest to the mean of the two."
    ]
    if meas is not None:
        text.append(
            "For each, in one round: "
            + (f"{fmt.duration(pre.runtime)} of writes (100 %) at its load, then " if pre else "")
            + f"{fmt.duration(meas.runtime)} measured, {bs_label(plan, meas)} {meas.pattern} at "
            f"{mix_label(meas.read_pct)}, with fio's full latency histogram. Percentiles are of "
            "reads and writes together, read from their summed histograms."
        )
    return Operating(
        text=tuple(text),
        percentile_names=stages.PERCENTILES,
        needed=tuple(samples_needed(float(k)) for k in stages.PERCENTILES),
        rows=tuple(rows),
    )


StagePart = Union[HostIdle, CrossStimulus, Intensity, Operating]  # noqa: UP007


# --------------------------------------------------------------------------- preconditioning


def interval_text(plan: TestPlan) -> str:
    """What a round of a preconditioning stage is: its intervals and the tracked one."""
    pts = plan.points
    if len(pts) < 2:
        return ""
    tracked = next((i for i, p in enumerate(pts) if not p.role), len(pts) - 1)
    p = pts[tracked]
    which = "first" if tracked == 0 else "last" if tracked == len(pts) - 1 else f"#{tracked + 1}"
    return (
        f"Every round is {len(pts)} identical intervals of {fmt.duration(p.runtime)}, "
        f"{bs_label(plan, p)} {p.pattern} at {mix_label(p.read_pct)}, "
        f"{load(p.numjobs, p.iodepth)}, back to back; the tracking variable reads the "
        f"{which} interval (#{tracked + 1}), the others are stored but not tracked."
    )
