"""Figures of the parts a test chapter gained after the core ones: write
saturation's response times against drive fills, the drive's temperature per round.

Like :mod:`.figures`, they only read the report model.  :func:`all_figures` is what
the renderer calls: the core figures of a test (:func:`.figures.test_figures`)
plus these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from tkbench.analysis.confidence import HistogramPhase, Level
from tkbench.analysis.responses import ResponseTimes
from tkbench.analysis.window import TAIL_SAMPLES
from tkbench.report import figures
from tkbench.report.figures import (
    PALETTE,
    WRITE,
    Namer,
    TestFigures,
    _log,
    _new,
    _plain,
    dots,
    styled,
    tick_label,
    to_svg,
)
from tkbench.report.model import TestReport
from tkbench.report.sweepfigures import heat_maps
from tkbench.report.tables import log_histogram

MANY = 200  # more rounds than this are drawn as dots without lines


@dataclass
class PartFigures(TestFigures):
    """Every figure of a test chapter, the core ones and these."""

    wsat_responses: str | None = None
    temperature: str | None = None
    confidence: str | None = None
    sweep: list[str | None] = field(default_factory=list)  # heat maps, one per mode


def _series(
    ax: Axes, x: Sequence[float], y: Sequence[float | None], color: str, label: str
) -> None:
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if b is not None and b > 0]
    if not pairs:
        return
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    if len(pairs) > MANY:
        dots(ax, xs, ys, color, 2.2)
        ax.plot([], [], color=color, marker="o", linestyle="none", label=label)
    else:
        ax.plot(xs, ys, "o-", color=color, linewidth=0.8, markersize=2.6, label=label)


@styled
def wsat_responses(resp: ResponseTimes, capacity_marks: bool, prefix: str) -> str | None:
    """ART, five nines and MRT of every round against drive fills (log ms)."""
    rounds = resp.rounds
    if not rounds:
        return None
    fig = _new(3.2)
    ax = fig.add_subplot()
    x = [r.drive_fills for r in rounds]
    _series(ax, x, [r.mrt_ms for r in rounds], PALETTE[6], "MRT (maximum)")
    _series(ax, x, [r.five_nines_ms for r in rounds], PALETTE[1], "5 9s (99.999 %)")
    _series(ax, x, [r.art_ms for r in rounds], PALETTE[0], "ART (mean)")
    _log(ax)
    _plain(ax, "x")
    ax.set_xlim(left=0)
    if capacity_marks:
        for k in range(1, int(max(x)) + 1):
            ax.axvline(k, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_xlabel("Drive fills (total data written ÷ user capacity)")
    ax.set_ylabel("Response time (ms)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3)
    return to_svg(fig, prefix)


@styled
def temperature(test: TestReport, prefix: str) -> str | None:
    """The drive's temperature after every round, its warning temperature, the window
    shaded and the rounds with thermal events marked."""
    temp = test.temperature
    if temp is None or not temp.available:
        return None
    fig = _new(2.5)
    ax = fig.add_subplot()
    x = [float(n) for n in temp.rounds]
    if temp.window:
        ax.axvspan(
            temp.window[0] - 0.4,
            temp.window[-1] + 0.4,
            color="#e8e8e8",
            zorder=0,
            label="measurement window",
        )
    _series(ax, x, temp.celsius, PALETTE[0], "temperature after the round")
    if temp.warning_c is not None:
        ax.axhline(temp.warning_c, color=PALETTE[4], linestyle="--", linewidth=0.9,
                   label=f"warning temperature ({temp.warning_c:g} °C)")  # fmt: skip
    if temp.critical_c is not None and temp.critical_c != temp.warning_c:
        ax.axhline(temp.critical_c, color=PALETTE[1], linestyle="--", linewidth=0.9,
                   label=f"critical temperature ({temp.critical_c:g} °C)")  # fmt: skip
    hot = {e.round for e in temp.events}
    marked = [(n, c) for n, c in zip(temp.rounds, temp.celsius, strict=True)
              if n in hot and c is not None]  # fmt: skip
    if marked:
        ax.plot([n for n, _ in marked], [c for _, c in marked], "o", color=PALETTE[1],
                markersize=4.5, label="throttled or at/above the warning temperature")  # fmt: skip
    ax.set_xlabel("Round")
    ax.set_ylabel("Temperature (°C)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _plain(ax)
    ax.margins(y=0.25)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=2)
    return to_svg(fig, prefix)


def nines(percent: float) -> float:
    """The confidence-level axis: 90 % -> 1, 99 % -> 2, 99.9 % -> 3 (-log10 of the share
    of I/Os slower than it)."""
    return -math.log10(1.0 - percent / 100.0)


def _level_label(y: float, _pos: int | None = None) -> str:
    pct = 100.0 * (1.0 - 10.0 ** (-y))
    return f"{pct:.{max(0, round(y) - 2)}f} %"


def confidence(phase: HistogramPhase, prefix: str) -> str | None:
    """The histogram (left) and the confidence-level plot (right) of the phase."""
    return confidence_plot(phase.bins_ns, phase.mean_ms, phase.levels, prefix)


@styled
def confidence_plot(
    bins_ns: Sequence[tuple[int, int]], mean_ms: float, levels: Sequence[Level], prefix: str
) -> str | None:
    """A response-time histogram (left, ``bins_ns``: (ns, I/Os) ascending) and its
    confidence levels (right), ``levels`` marked as dots."""
    bins = dict(bins_ns)
    total = sum(bins.values())
    if not total:
        return None
    fig = _new(3.0)
    left, right = fig.subplots(1, 2)
    edges, counts = log_histogram(bins)
    left.stairs(counts, edges, color=WRITE, linewidth=0.9)
    left.axvline(mean_ms, color=WRITE, linewidth=0.7, linestyle="--")
    left.set_xscale("log")
    left.set_yscale("log")
    left.xaxis.set_major_locator(LogLocator(base=10.0, numticks=6))
    left.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))
    left.xaxis.set_minor_formatter(NullFormatter())
    # plain counts, no 10^x: mathtext tick labels cost more than the rest of the figure
    left.yaxis.set_major_locator(LogLocator(base=10.0, numticks=6))
    left.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))
    left.yaxis.set_minor_formatter(NullFormatter())
    left.set_xlabel("Response time (ms)")
    left.set_ylabel("I/Os")
    left.set_title(f"Histogram ({total:,} I/Os; dashed: mean)")
    # the share of I/Os completed within each bucket's time, while ten lie beyond it
    xs, ys, done = [], [], 0
    for value, count in sorted(bins.items()):
        done += count
        if total - done < TAIL_SAMPLES:
            break
        xs.append(value / 1e6)
        ys.append(nines(100.0 * done / total))
    if xs:
        right.plot(xs, ys, color=PALETTE[0], linewidth=1.0, drawstyle="steps-post")
    shown = [lv for lv in levels if lv.ms is not None]
    right.plot([lv.ms for lv in shown], [nines(lv.percent) for lv in shown], "o",
               color=PALETTE[1], markersize=3.2, label="levels in the table")  # fmt: skip
    _log(right, "x")
    top = max((nines(lv.percent) for lv in shown), default=2.0)
    right.yaxis.set_major_locator(FixedLocator([k for k in range(0, 8) if k <= top + 0.5]))
    right.yaxis.set_major_formatter(FuncFormatter(_level_label))
    right.set_ylim(0, top + 0.4)
    right.set_xlabel("Response time (ms)")
    right.set_ylabel("Confidence level")
    right.set_title("Confidence levels")
    right.legend(loc="lower right")
    return to_svg(fig, prefix)


def all_figures(test: TestReport, name: Namer) -> PartFigures:
    """The figures of one test chapter, by role."""
    core = figures.test_figures(test, name)
    out = PartFigures(**vars(core))
    if test.responses is not None:
        out.wsat_responses = wsat_responses(test.responses, True, name())
    out.temperature = temperature(test, name())
    if test.response_histogram is not None:
        out.confidence = confidence(test.response_histogram, name())
    out.sweep = heat_maps(test.sweep, name)
    return out
