"""Figures of the stages' own chapters (:mod:`.stages`): samples over time with the
wait states or access groups marked, the demand-variation and demand-intensity
plots, and each operating point's histogram and confidence levels (drawn by
:func:`.partfigures.confidence_plot`, the response-time histogram phase's figure).

Like :mod:`.figures`, they only read the report model.  :func:`all_figures` is what
the renderer calls: a test chapter's figures (:func:`.partfigures.all_figures`) and
its stage's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator

from tkbench.report import partfigures
from tkbench.report.figures import PALETTE, Namer, _log, _new, _plain, dots, styled, to_svg
from tkbench.report.model import TestReport
from tkbench.report.stages import (
    MANY,
    CrossStimulus,
    HostIdle,
    Intensity,
    Operating,
    StagePart,
    Timeline,
)
from tkbench.report.workloadfigures import WorkloadFigures, workload_figures

SHADE = "#e8e8e8"


@dataclass
class StageFigures:
    """The figures of a stage's chapter (None: not drawn)."""

    timeline: str | None = None  # HIR: IOPS; XSR: throughput
    response: str | None = None  # XSR: mean response time
    variation: str | None = None  # demand variation: IOPS v queue depth
    intensity: str | None = None  # demand intensity: response time v IOPS
    operating: list[str | None] = field(default_factory=list)  # per operating point


@dataclass
class ChapterFigures(partfigures.PartFigures):
    """Every figure of a test chapter: the generic ones, the parts' and the stage's."""

    stage: StageFigures = field(default_factory=StageFigures)
    workload: WorkloadFigures = field(default_factory=WorkloadFigures)  # report/workload.py


COLUMNS = 1200  # more samples than twice this are drawn as one range per column


def envelope(
    x: Sequence[float], y: Sequence[float], columns: int = COLUMNS
) -> tuple[np.ndarray, np.ndarray]:
    """Every sample's range per column of the plot: for each of ``columns`` equal slices
    of x, a vertical stroke from the lowest to the highest value in it (NaN between
    strokes).  At print resolution it is the plot of every sample, at a fraction of
    the SVG (55,800 samples of a full-size HIR: 2.7 MB as dots)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    edges = np.linspace(xs.min(), xs.max(), columns + 1)
    col = np.clip(np.searchsorted(edges, xs, side="right") - 1, 0, columns - 1)
    lo = np.full(columns, np.inf)
    hi = np.full(columns, -np.inf)
    np.minimum.at(lo, col, ys)
    np.maximum.at(hi, col, ys)
    used = np.isfinite(lo)
    mid = ((edges[:-1] + edges[1:]) / 2)[used]
    nan = np.full(mid.size, np.nan)
    return (
        np.column_stack([mid, mid, nan]).ravel(),
        np.column_stack([lo[used], hi[used], nan]).ravel(),
    )


def _samples(ax: Axes, line: Timeline, values: Sequence[float], color: str, scale: float) -> None:
    x = [t / scale for t in line.t_s]
    if len(x) > 2 * COLUMNS:
        ex, ey = envelope(x, values)
        ax.plot(ex, ey, color=color, linewidth=1.0, solid_capstyle="round")
    elif len(x) > MANY:
        dots(ax, x, values, color, 1.6)
    else:
        ax.plot(x, values, "o-", color=color, linewidth=0.7, markersize=2.2)


def _spans(ax: Axes, line: Timeline, scale: float, *, labels: bool) -> None:
    """Shade the marked spans and label every span at the top of the axes."""
    for s in line.spans:
        if s.shaded:
            ax.axvspan(s.start_s / scale, s.end_s / scale, color=SHADE, zorder=0, linewidth=0)
        ax.axvline(s.start_s / scale, color="#999999", linewidth=0.5, linestyle=":")
        if labels:
            ax.annotate(
                s.label,
                ((s.start_s + s.end_s) / 2 / scale, 1.0),
                xycoords=("data", "axes fraction"),
                fontsize=5.5,
                color="#444444",
                ha="center",
                va="bottom",
                rotation=0 if len(line.spans) <= 6 else 90,
            )


@styled
def over_time(
    line: Timeline, values: Sequence[float], ylabel: str, prefix: str, *, log: bool = False
) -> str | None:
    """One value per sample over the stage's time, its spans marked."""
    if not any(v > 0 for v in values):
        return None
    scale = 60.0 if line.minutes else 1.0
    fig = _new(2.9 if len(line.spans) <= 6 else 3.3)
    ax = fig.add_subplot()
    shown = list(values)
    if log:
        pairs = [(t, v) for t, v in zip(line.t_s, values, strict=True) if v > 0]
        line = Timeline(line.interval, tuple(p[0] for p in pairs), (), (), (), line.spans)
        shown = [p[1] for p in pairs]
    _samples(ax, line, shown, PALETTE[0], scale)
    _spans(ax, line, scale, labels=True)
    if log:
        _log(ax)
    else:
        _plain(ax)
        ax.set_ylim(bottom=0)
    ax.set_xlim(0, line.spans[-1].end_s / scale if line.spans else None)
    ax.set_xlabel("Time since the stage's first sample began (minutes)" if scale > 1 else
                  "Time since the stage's first sample began (s)")  # fmt: skip
    ax.set_ylabel(ylabel)
    return to_svg(fig, prefix)


@styled
def variation(st: Intensity, prefix: str) -> str | None:
    """Demand variation: IOPS over queue depth, one line per thread count."""
    if not st.cells:
        return None
    fig = _new(2.9)
    ax = fig.add_subplot()
    depths = sorted(set(st.iodepths))
    for t, color in zip(st.threads, itertools.cycle(PALETTE), strict=False):
        cells = sorted((c for c in st.cells if c.numjobs == t), key=lambda c: c.iodepth)
        ax.plot([c.iodepth for c in cells], [c.iops for c in cells], "o-", color=color,
                label=f"T{t}")  # fmt: skip
    _log(ax, "x")
    ax.xaxis.set_major_locator(FixedLocator(depths))
    ax.set_xlabel("Queue depth (per thread)")
    ax.set_ylabel("IOPS")
    _plain(ax)
    ax.set_ylim(bottom=0)
    ax.legend(title="Threads", loc="center left", bbox_to_anchor=(1.01, 0.5), title_fontsize=6.5)
    return to_svg(fig, prefix)


@styled
def intensity(st: Intensity, prefix: str) -> str | None:
    """Demand intensity: mean response time over IOPS, the loads joined in the order of
    their outstanding I/Os (threads x queue depth), the response-time ceiling dashed."""
    if not st.cells:
        return None
    fig = _new(3.0)
    ax = fig.add_subplot()
    cells = sorted(st.cells, key=lambda c: (c.outstanding, c.numjobs))
    ax.plot([c.iops for c in cells], [c.lat_mean_ns / 1e6 for c in cells], "-",
            color="#888888", linewidth=0.8, zorder=1)  # fmt: skip
    for t, color in zip(st.threads, itertools.cycle(PALETTE), strict=False):
        mine = [c for c in cells if c.numjobs == t]
        ax.plot([c.iops for c in mine], [c.lat_mean_ns / 1e6 for c in mine], "o", color=color,
                markersize=3.5, label=f"T{t}", zorder=2)  # fmt: skip
    if len(cells) <= 16:
        for c in cells:
            ax.annotate(f"{c.outstanding}", (c.iops, c.lat_mean_ns / 1e6), fontsize=5,
                        xytext=(3, 2), textcoords="offset points", color="#444444")  # fmt: skip
    if st.ceiling_ms > 0:
        ax.axhline(st.ceiling_ms, color=PALETTE[1], linestyle="--", linewidth=0.8,
                   label=f"ceiling {st.ceiling_ms:g} ms")  # fmt: skip
    ax.set_xlabel("IOPS")
    ax.set_ylabel("Mean response time (ms)")
    _plain(ax, "x")
    _plain(ax)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(title="Threads", loc="center left", bbox_to_anchor=(1.01, 0.5), title_fontsize=6.5)
    return to_svg(fig, prefix)


def stage_figures(stage: StagePart, name: Namer) -> StageFigures:
    out = StageFigures()
    if isinstance(stage, HostIdle) and stage.timeline is not None:
        out.timeline = over_time(stage.timeline, stage.timeline.iops, "IOPS", name())
    elif isinstance(stage, CrossStimulus) and stage.timeline is not None:
        line = stage.timeline
        out.timeline = over_time(line, line.mbs, "Throughput (MB/s)", name())
        out.response = over_time(line, line.lat_ms, "Mean response time (ms)", name(), log=True)
    elif isinstance(stage, Intensity):
        out.variation = variation(stage, name())
        out.intensity = intensity(stage, name())
    elif isinstance(stage, Operating):
        out.operating = [
            partfigures.confidence_plot(r.bins_ns, r.mean_ms, r.levels, name()) for r in stage.rows
        ]
    return out


def all_figures(test: TestReport, name: Namer) -> ChapterFigures:
    """The figures of one test chapter, by role."""
    out = ChapterFigures(**vars(partfigures.all_figures(test, name)))
    if test.stage is not None:
        out.stage = stage_figures(test.stage, name)
    if test.workload is not None:  # a replay test's chapter: DIRTH's plot of its grid
        out.workload = workload_figures(test.workload, name)
        if test.workload.intensity is not None:
            out.workload.intensity = intensity(test.workload.intensity, name())
    return out
