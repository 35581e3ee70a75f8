"""The geometry of a trend chart (pure): axes, ticks and where each run's point is.

The SVG itself is written by the template ``templates/dashboard/chart.svg.j2`` from
these numbers, so that every string in it passes Jinja's escaping like the rest of
the page.  Time runs left to right (UTC), the headline number upwards; a line per
serial.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from tkbench.dashboard.model import RunView, Trend, number

WIDTH, HEIGHT = 760, 250
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 14, 44  # margins around the plot area
# Okabe and Ito's colours that read on white, told apart also by colour-blind readers
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000")


def colour(index: int) -> str:
    return COLOURS[index % len(COLOURS)]


@dataclass(frozen=True)
class Tick:
    at: float  # pixels along the axis
    label: str


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    run: RunView
    value: str  # the number as the table shows it
    regression: bool  # worse than its baseline beyond the threshold
    failed: bool  # its run failed acceptance checks
    incomplete: bool  # its run did not complete (failed, interrupted, running)
    href: str  # the run's report, else its row in the page's table
    tooltip: str


@dataclass(frozen=True)
class Line:
    serial: str
    colour: str
    index: int  # the serial's place in the page's legend (data-series)
    path: str  # polyline points "x,y x,y ..."
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Budget:
    """How much of a chart is drawn: at most ``marks`` points (each a link with its
    tooltip) and ``path`` corners of its lines, so that a page of many charts of many
    runs stays small.  Beyond them a line averages consecutive runs, and the points
    drawn are the latest run of each serial, then runs with a regression, a failed
    check or no completion, then the newest others."""

    marks: int
    path: int


UNBOUNDED = Budget(marks=10**9, path=10**9)


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    xticks: tuple[Tick, ...]
    yticks: tuple[Tick, ...]
    lines: tuple[Line, ...]
    description: str  # for screen readers (the SVG's <desc>)
    note: str = ""  # what the chart leaves out (lines averaged, runs not marked), or ""


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values covering [lo, hi] (steps of 1, 2 or 5 times a power
    of ten), from at or below ``lo`` to at or above ``hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    v = first
    while v < hi + step * 0.5:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def tick_label(v: float, step: float) -> str:
    """A tick's value with as many decimals as its step needs, thousands separated."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    return f"{v:,.{decimals}f}"


def _time_label(t: float, span: float) -> str:
    fmt = "%Y-%m-%d" if span >= 2 * 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(t))


def _averaged(t: np.ndarray, v: np.ndarray, most: int) -> list[tuple[float, float]]:
    """Start times and values (in time order) as ``most`` points: the means of groups
    of consecutive runs of (nearly) equal size."""
    n = len(t)
    starts = (np.arange(most) * n) // most
    sizes = np.diff(np.append(starts, n))
    means_t = np.add.reduceat(t, starts) / sizes
    means_v = np.add.reduceat(v, starts) / sizes
    return list(zip(means_t.tolist(), means_v.tolist(), strict=True))


def _marked(trend: Trend, most: int) -> set[int]:
    """The runs (by ``id``) whose points are drawn: all when they fit, else see
    :class:`Budget`."""
    runs = [r for s in trend.series for r in s.runs]
    if len(runs) <= most:
        return {id(r) for r in runs}
    times = np.concatenate([s.times for s in trend.series])
    chosen = set((np.cumsum([len(s.runs) for s in trend.series]) - 1).tolist())  # the latest
    key = trend.key
    notable = [
        i
        for i, r in enumerate(runs)
        if (r.flagged or (r.regressions and key in r.regressed)) and i not in chosen
    ]
    # the newest first, in the runs' order among equal start times (as sorted() keeps it)
    notable.sort(key=times.__getitem__, reverse=True)
    chosen.update(notable[: max(most - len(chosen), 0)])
    left = max(most - len(chosen), 0)
    if left:
        rest = np.ones(len(runs), bool)
        rest[list(chosen)] = False
        where = np.flatnonzero(rest)
        newest = where[np.argsort(-times[where], kind="stable")[:left]]
        chosen.update(newest.tolist())
    return {id(runs[i]) for i in chosen}


def build_chart(
    trend: Trend, serial_index: dict[str, int], here: str = "", budget: Budget = UNBOUNDED
) -> Chart:
    """The chart of one trend; ``serial_index``: each serial's colour and legend place
    on its page (the same serial has the same colour in every chart of the page);
    ``here``: the page's file name (a point without a report links to its run's row,
    which may be on a page of older runs); ``budget``: how much is drawn."""
    runs = [r for s in trend.series for r in s.runs]
    times = [float(s.times.min()) for s in trend.series] + [
        float(s.times.max()) for s in trend.series
    ]
    values = [float(s.values.min()) for s in trend.series] + [
        float(s.values.max()) for s in trend.series
    ]
    t0, t1 = (min(times), max(times)) if times else (0.0, 1.0)
    if t1 - t0 < 600:  # one run, or runs moments apart: an hour around them
        t0, t1 = t0 - 1800, t1 + 1800
    else:
        pad = (t1 - t0) * 0.03
        t0, t1 = t0 - pad, t1 + pad
    lo = min(values) if values else 0.0
    hi = max(values) if values else 1.0
    yt = nice_ticks(lo, hi)
    v0, v1 = yt[0], yt[-1]
    x0, x1 = LEFT, WIDTH - RIGHT
    y0, y1 = HEIGHT - BOTTOM, TOP

    def x(t: float) -> float:
        return round(x0 + (t - t0) / (t1 - t0) * (x1 - x0), 1)

    def y(v: float) -> float:
        return round(y0 - (v - v0) / (v1 - v0) * (y0 - y1), 1)

    span = t1 - t0
    xticks: list[Tick] = []
    for i in range(5):
        t = t0 + span * (i + 0.5) / 5
        label = _time_label(t, span)
        if not xticks or xticks[-1].label != label:
            xticks.append(Tick(x(t), label))
    lines = []
    marked = _marked(trend, budget.marks)
    corners = max(2, budget.path // max(len(trend.series), 1))
    for s in trend.series:
        points = []
        for r in s.runs:
            if id(r) not in marked:
                continue
            v = r.numbers[trend.key]
            regression = trend.key in r.regressed
            failed = r.acceptance == "FAIL"
            incomplete = r.entry.status != "complete"
            marks = [f"{trend.title}: {number(v)} {trend.unit}".rstrip()]
            marks.append(f"serial {r.entry.serial}, {r.started}, {r.entry.status}")
            marks += [f"regression {g.message}" for g in r.regressions if g.key == trend.key]
            marks += [f"acceptance FAIL {c}" for c in r.failed_checks]
            href = r.report.href or r.row_link(here)
            points.append(
                Point(
                    x(r.entry.started or 0.0),
                    y(v),
                    r,
                    number(v),
                    regression,
                    failed,
                    incomplete,
                    href,
                    "\n".join(marks),
                )
            )
        if len(s.runs) <= corners:
            path = " ".join(
                f"{x(t)},{y(v)}" for t, v in zip(s.times.tolist(), s.values.tolist(), strict=True)
            )
        else:
            path = " ".join(f"{x(t)},{y(v)}" for t, v in _averaged(s.times, s.values, corners))
        i = serial_index.get(s.serial, 0)
        lines.append(Line(s.serial, colour(i), i, path, tuple(points)))
    direction = "higher is better" if trend.higher_is_better else "lower is better"
    description = (
        f"{trend.title} ({trend.unit}, {direction}) over time for "
        f"{len(trend.series)} serial(s), {len(runs)} run(s)"
    )
    note = ""
    if len(marked) < len(runs):
        note = (
            f"{len(runs):,} runs, {len(marked):,} drawn as points (the latest of each "
            "serial, then regressions, failures and the newest)"
        )
        if any(len(s.runs) > corners for s in trend.series):
            note += f"; a line passes through the means of consecutive runs ({corners:,} at most)"
        note += "; every run is in the tables"
    return Chart(
        WIDTH,
        HEIGHT,
        x0,
        x1,
        y1,
        y0,
        tuple(xticks),
        tuple(Tick(y(v), tick_label(v, yt[1] - yt[0])) for v in yt),
        tuple(lines),
        description,
        note,
    )
