"""What the stages of the tests beyond the basic four measured (tkbench.kinds.staged):
host idle recovery's wait states, cross-stimulus recovery's transitions, and the
demand-intensity grid with its operating points.  Pure functions of stored rounds.

The rules (docs/methodology.md, "Host Idle Recovery", "Cross-Stimulus Recovery",
"Demand intensity"):

* a **write burst** of a wait state is a run of consecutive samples with I/O
  (fio logs nothing for a window of host idle); its IOPS are its I/Os (the
  samples' IOPS times their length) over the burst's length, which is the
  configured burst unless fio wrote longer (fio 3.33 extends the first burst by
  one idle period);
* a wait state's **recovery** is the mean IOPS of its bursts over the steady-state
  IOPS of the preconditioning stage's measurement window;
* a transition's **recovery time** is the time from the start of the new access
  group until its throughput enters, and stays in, the band of +-half the
  steady-state excursion limit (+-10 %) around the mean of the group's last
  five samples;
* **MaxIOPS** is the grid load with the highest IOPS whose mean response time
  stays within the ceiling, **MinIOPS** the lowest load (T1/Q1), **MidIOPS** the
  load whose IOPS are closest to their mean.

What a stored stage measured is one record, made once per test by its type
(``TestType.stage_result``) and kept on the test's
:class:`~tkbench.kinds.results.analysed.Analysed` (``staged``): :class:`Recovery`,
:class:`Groups`, :class:`Grid`, :class:`Operated`.  ``show`` and the report read it
there; the functions below are what it is made of.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tkbench.analysis.window import pooled_percentiles
from tkbench.rundir.records import OperatingPoint, PointResult, Round, Series, TestPlan
from tkbench.rundir.store import TestData
from tkbench.units import size_label

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed

R = TypeVar("R")

SETTLE_SAMPLES = 5  # samples at a group's end whose mean is its settled level


@dataclass(frozen=True)
class Burst:
    start_s: float  # from the wait state's start
    seconds: float
    iops: float


@dataclass(frozen=True)
class WaitState:
    idle_s: float
    bursts: tuple[Burst, ...]
    mean_iops: float
    recovery: float | None  # mean IOPS / steady-state IOPS (None: no steady state known)
    baseline_iops: float | None  # the return to baseline after it (fio's mean)


def bursts(series: Series, busy: float) -> tuple[Burst, ...]:
    """The write bursts of a wait state's samples (see the module's rules)."""
    out = []
    dt = series.interval
    run: list[int] = []
    for i, v in enumerate((*series.iops, 0.0)):
        if v > 0:
            run.append(i)
            continue
        if run:
            ios = math.fsum(series.iops[j] * dt for j in run)
            seconds = max(busy, (len(run) - 1) * dt)
            out.append(Burst(start_s=round(run[0] * dt, 3), seconds=seconds, iops=ios / seconds))
            run = []
    return tuple(out)


def wait_states(recovery: Round | None, baseline_iops: float | None) -> tuple[WaitState, ...]:
    """The wait states of a host-idle-recovery stage's round, in order."""
    if recovery is None:
        return ()
    out: list[WaitState] = []
    points = list(recovery.points)
    for i, p in enumerate(points):
        if p.idle <= 0 or p.series is None:
            continue
        found = bursts(p.series, p.busy)
        mean = math.fsum(b.iops for b in found) / len(found) if found else 0.0
        after = points[i + 1] if i + 1 < len(points) and points[i + 1].idle <= 0 else None
        out.append(
            WaitState(
                idle_s=p.idle,
                bursts=found,
                mean_iops=mean,
                recovery=mean / baseline_iops if baseline_iops else None,
                baseline_iops=after.iops if after is not None else None,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Transition:
    source: str  # the access group before, "1024k sequential"
    target: str
    group: int  # 1-based number of the group after the transition
    recovery_s: float | None  # None: the group never settled within its samples
    settled_mbs: float  # the settled level (MB/s)


def settle_time(values: Sequence[float], dt: float, band: float) -> float | None:
    """Seconds until ``values`` enter and stay within +-``band`` (a fraction) of the
    mean of their last SETTLE_SAMPLES; None without enough samples."""
    if len(values) < SETTLE_SAMPLES:
        return None
    level = math.fsum(values[-SETTLE_SAMPLES:]) / SETTLE_SAMPLES
    lo, hi = level * (1 - band), level * (1 + band)
    first = len(values)
    for i in range(len(values) - 1, -1, -1):
        if not lo <= values[i] <= hi:
            break
        first = i
    return round(first * dt, 3)


def group_label(p: PointResult) -> str:
    """An access group as people name it: "1024k sequential"."""
    return f"{size_label(p.bs)} {p.pattern}"


def transitions(groups: Round | None, band: float) -> tuple[Transition, ...]:
    """The recovery after every change of access group of a cross-stimulus round."""
    if groups is None:
        return ()
    out = []
    pts = list(groups.points)
    for k in range(1, len(pts)):
        p = pts[k]
        values = [v / 1e6 for v in p.series.bw_bytes] if p.series else []
        dt = p.series.interval if p.series else 0.0
        tail = values[-SETTLE_SAMPLES:]
        out.append(
            Transition(
                source=group_label(pts[k - 1]),
                target=group_label(p),
                group=k + 1,
                recovery_s=settle_time(values, dt, band),
                settled_mbs=math.fsum(tail) / len(tail) if tail else 0.0,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Cell:
    """One load of the demand-intensity grid, as window means."""

    numjobs: int
    iodepth: int
    iops: float
    lat_mean_ns: float
    lat_max_ns: float
    cpu_pct: float

    @property
    def outstanding(self) -> int:
        return self.numjobs * self.iodepth


def grid(rounds: Sequence[Round]) -> list[Cell]:
    """The window means of every measured grid load (pre-writes left out), in the
    order of the plan."""
    by: dict[tuple[int, int], list[PointResult]] = {}
    for r in rounds:
        for p in r.points:
            if p.role in ("", "grid"):
                by.setdefault((p.numjobs, p.iodepth), []).append(p)
    out = []
    for (t, q), pts in by.items():
        n = len(pts)
        out.append(
            Cell(
                numjobs=t,
                iodepth=q,
                iops=math.fsum(p.iops for p in pts) / n,
                lat_mean_ns=math.fsum(p.lat_mean_ns for p in pts) / n,
                lat_max_ns=max(p.lat_max_ns for p in pts),
                cpu_pct=math.fsum(p.cpu_pct for p in pts) / n,
            )
        )
    return out


def choose(cells: Sequence[Cell], ceiling_ns: float) -> tuple[OperatingPoint, ...]:
    """MaxIOPS, MidIOPS and MinIOPS of a demand-intensity grid (the module's rules)."""
    if not cells:
        raise ValueError("no demand-intensity measurements to choose operating points from")
    within = [c for c in cells if c.lat_mean_ns <= ceiling_ns]
    ms = ceiling_ns / 1e6
    if within:
        top = max(within, key=lambda c: (c.iops, -c.outstanding))
        why_max = f"highest IOPS with a mean response time within {ms:g} ms"
    else:
        top = min(cells, key=lambda c: c.lat_mean_ns)
        why_max = f"no load stays within {ms:g} ms: the load with the lowest mean response time"
    low = min(cells, key=lambda c: (c.outstanding, c.numjobs))
    target = (top.iops + low.iops) / 2
    mid = min(cells, key=lambda c: (abs(c.iops - target), c.outstanding))

    def op(name: str, c: Cell, why: str) -> OperatingPoint:
        return OperatingPoint(
            name=name,
            numjobs=c.numjobs,
            iodepth=c.iodepth,
            iops=round(c.iops, 3),
            lat_mean_ns=round(c.lat_mean_ns, 1),
            why=why,
        )

    return (
        op("max", top, why_max),
        op("mid", mid, f"IOPS closest to the mean of MaxIOPS and MinIOPS ({target:,.0f})"),
        op("min", low, "the lowest load of the grid"),
    )


PERCENTILES = ("99", "99.9", "99.99", "99.999", "99.9999")


@dataclass(frozen=True)
class Measured:
    """An operating point as its stage measured it: reads and writes together, the
    percentiles from their summed histograms (left out below the samples a
    percentile needs: tkbench.analysis.window.samples_needed)."""

    name: str  # max | mid | min
    numjobs: int
    iodepth: int
    iops: float
    lat_mean_ns: float
    lat_max_ns: float
    percentiles_ns: dict[str, float]
    samples: int
    cpu_pct: float
    why: str

    def to_dict(self) -> dict[str, object]:
        return {
            "threads": self.numjobs,
            "iodepth": self.iodepth,
            "iops": round(self.iops, 3),
            "mean_latency_ms": round(self.lat_mean_ns / 1e6, 6),
            "max_latency_ms": round(self.lat_max_ns / 1e6, 6),
            "percentiles_ms": {k: round(v / 1e6, 6) for k, v in self.percentiles_ns.items()},
            "samples": self.samples,
            "cpu_pct": self.cpu_pct,
            "why": self.why,
        }


def operating_results(chosen: Sequence[OperatingPoint], rnd: Round | None) -> list[Measured]:
    """The chosen operating points with what the stage's round measured at each."""
    if rnd is None:
        return []
    measured = [p for p in rnd.points if p.measured]
    out = []
    for op, p in zip(chosen, measured, strict=False):
        pct, samples, _ = pooled_percentiles([p.read, p.write], PERCENTILES)
        out.append(
            Measured(
                name=op.name,
                numjobs=p.numjobs,
                iodepth=p.iodepth,
                iops=p.iops,
                lat_mean_ns=p.lat_mean_ns,
                lat_max_ns=p.lat_max_ns,
                percentiles_ns=pct,
                samples=samples,
                cpu_pct=p.cpu_pct,
                why=op.why,
            )
        )
    return out


def window_mean(plan: TestPlan, records: Sequence[Round]) -> float | None:
    """The mean of a stage's (first) tracking variable over its window's ``records``."""
    if not plan.tracking:
        return None
    label = plan.tracking[0]
    values = [r.tracking[label] for r in records]
    return math.fsum(values) / len(values) if values else None


# --------------------------------------------------------------------------- per stage, once


def _last(t: TestData) -> Round | None:
    return t.rounds[-1] if t.rounds else None


@dataclass(frozen=True)
class Recovery:
    """What a host-idle-recovery stage measured: its wait states against the steady
    state of its test's preconditioning stage."""

    steady_iops: float | None  # None: no preconditioning stage with rounds in the run
    precondition: TestData | None  # the preconditioning stage (None: not in the run)
    precondition_window: tuple[int, ...]  # its measurement window's rounds
    waits: tuple[WaitState, ...]


def recovery(a: Analysed) -> Recovery:
    """A host-idle-recovery stage's :class:`Recovery`, its preconditioning stage's
    window read from that stage's analysis (made once for the run)."""
    pre = a.stage_of(a.plan.spec, "precondition")
    base = None
    win: tuple[int, ...] = ()
    if pre is not None and pre.test.rounds:
        win = pre.analysis.window
        base = window_mean(pre.plan, pre.analysis.records)
    return Recovery(base, pre.test if pre else None, win, wait_states(_last(a.test), base))


@dataclass(frozen=True)
class Groups:
    """What a cross-stimulus-recovery stage measured: the transitions between its
    access groups, settled within ``band`` (a fraction)."""

    band: float
    transitions: tuple[Transition, ...]


def groups(a: Analysed) -> Groups:
    band = a.plan.rounds.max_excursion / 2
    return Groups(band, transitions(_last(a.test), band))


@dataclass(frozen=True)
class Grid:
    """What a demand-intensity stage measured: its grid's window means."""

    window: tuple[int, ...]
    cells: tuple[Cell, ...]


def intensity_grid(a: Analysed) -> Grid:
    """A demand-intensity stage's :class:`Grid`, over its analysis's window."""
    return Grid(a.analysis.window, tuple(grid(a.analysis.records)))


@dataclass(frozen=True)
class Operated:
    """What an operating-point stage measured, and the stage that chose its points."""

    measured: tuple[Measured, ...]
    source: TestData | None  # the demand-intensity stage (None: not in the run)


def operated(a: Analysed) -> Operated:
    source = a.stage_of(a.plan.spec, "intensity")
    measured = operating_results(a.plan.operating, _last(a.test))
    return Operated(tuple(measured), source.test if source else None)


def staged_as(a: Analysed | None, kind: type[R]) -> R | None:
    """``a``'s stage result if it is a ``kind`` (None: another stage, or no test)."""
    found = a.staged if a is not None else None
    return found if isinstance(found, kind) else None
