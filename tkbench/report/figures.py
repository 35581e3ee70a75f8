"""Report figures: report model -> SVG text (matplotlib, Agg-free SVG backend).

Figures only read the model (:mod:`.model`); they compute nothing a table does
not show.  Every figure is vector, uses one style (DejaVu Sans, like the text),
and is returned as an ``<svg>`` element ready to inline into the HTML: ids are
prefixed per figure so several figures can share one document.

No pyplot: figures are plain :class:`matplotlib.figure.Figure` objects, so
there is no global figure list to leak and nothing to close.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import matplotlib
import numpy as np
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import (
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
    NullLocator,
)

from tkbench.report import fmt
from tkbench.report.model import Determination, Histogram, Matrix, Saturation, Series, TestReport

WIDTH = 6.6  # inches: the text width of A4 and Letter with the report's margins
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#8C564B",
    "#7F7F7F",
    "#BCBD22",
    "#17BECF",
    "#9467BD",
)
READ, WRITE = "#0072B2", "#D55E00"
STYLE: dict[Any, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 7.5,
    "axes.titlesize": 8,
    "axes.labelsize": 7.5,
    "axes.grid": True,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "axes.prop_cycle": cycler(color=PALETTE),
    "grid.color": "#d9d9d9",
    "grid.linewidth": 0.5,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "legend.fontsize": 6.5,
    "legend.frameon": False,
    "lines.linewidth": 1.1,
    "lines.markersize": 3,
    "svg.fonttype": "none",  # text stays text (searchable, light); DejaVu, like the report
    "svg.hashsalt": "tkbench",  # deterministic ids
    "path.simplify": False,  # keeps the tiny segments that draw dots
}
_ID_RE = re.compile(r'\bid="([^"]+)"')
_REF_RE = re.compile(r'(href="#|url\(#)')


@contextmanager
def _style() -> Iterator[None]:
    with matplotlib.rc_context(STYLE):
        yield


P = ParamSpec("P")
R = TypeVar("R")


def styled(func: Callable[P, R]) -> Callable[P, R]:
    """Run a figure function under the report's matplotlib style (artists read it when made)."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with _style():
            return func(*args, **kwargs)

    return wrapper


def _new(height: float, width: float = WIDTH) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig: Figure, prefix: str) -> str:
    """The figure as an inline ``<svg>`` element whose ids all start with ``prefix``."""
    buf = io.StringIO()
    with _style():
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = _ID_RE.sub(lambda m: f'id="{prefix}{m.group(1)}"', text)
    return _REF_RE.sub(lambda m: f"{m.group(1)}{prefix}", text)


class Namer:
    """Unique id prefixes for the figures of one document."""

    def __init__(self) -> None:
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return f"f{next(self._count)}-"


def tick_label(value: float) -> str:
    """Axis numbers as the tables write them: ``100,000``, ``2,500``, ``0.05``."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.6g}"


def _plain(ax: Axes, axis: str = "y") -> None:
    """Plain numbers on a linear axis."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))


def _log(ax: Axes, axis: str = "y") -> None:
    """A logarithmic axis with 1-2-5 ticks in plain numbers (no 10^x notation)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))
    target.set_minor_locator(LogLocator(base=10.0, subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    target.set_minor_formatter(NullFormatter())


def _log_if_wide(ax: Axes, values: Sequence[float], ratio: float = 20.0) -> bool:
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > ratio:
        _log(ax)
        return True
    return False


def _legend_below(ax: Axes, ncols: int, **kw: Any) -> None:
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=ncols, **kw)


def dots(ax: Axes, x: Sequence[float], y: Sequence[float], color: str, size: float = 2.2) -> None:
    """Many points as one path of tiny round-capped segments (fast to render as SVG)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.size == 0:
        return
    span = float(xs.max() - xs.min()) or 1.0
    eps = span * 1e-4
    nan = np.full_like(xs, np.nan)
    ax.plot(
        np.column_stack([xs, xs + eps, nan]).ravel(),
        np.column_stack([ys, ys, nan]).ravel(),
        color=color,
        linewidth=size,
        solid_capstyle="round",
    )


# --------------------------------------------------------------------------- steady state


@styled
def convergence(test: TestReport, prefix: str) -> str | None:
    """Tracking variables (and, for IOPS, every block size) per round."""
    if not test.convergence:
        return None
    fig = _new(3.3)
    ax = fig.add_subplot()
    for s, color in zip(test.convergence, itertools.cycle(PALETTE), strict=False):
        _convergence_line(ax, s, color)
    if test.window:
        ax.axvspan(
            test.window[0] - 0.4,
            test.window[-1] + 0.4,
            color="#fde9a9" if not test.steady else "#d7efd9",
            alpha=0.7,
            zorder=0,
            label="measurement window",
        )
    ax.set_xlabel("Round")
    ax.set_ylabel(test.unit)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not _log_if_wide(ax, [v for s in test.convergence for v in s.y]):
        _plain(ax)
        ax.set_ylim(bottom=0)
    _legend_below(ax, ncols=min(len(test.convergence) + 1, 5))
    return to_svg(fig, prefix)


def _convergence_line(ax: Axes, s: Series, color: str) -> None:
    ax.plot(
        s.x,
        s.y,
        marker="o",
        markersize=3.2 if s.emphasis else 2.4,
        linewidth=1.6 if s.emphasis else 0.9,
        color=color,
        label=f"{s.label} (tracked)" if s.emphasis else s.label,
    )


@dataclass(frozen=True)
class VerificationLines:
    """What the verification figure draws for the two PTS criteria, in the unit of
    the tracking variable (x: round numbers)."""

    mean: float
    # allowed data excursion: a band as wide as the limit (max_excursion x mean),
    # centred between the lowest and highest value: every value fits in it exactly
    # when max - min is within the limit
    band: tuple[float, float]
    fit: tuple[tuple[float, float], tuple[float, float]]  # least-squares line, first/last round
    # the steepest least-squares lines allowed (rising, falling): through the fitted
    # line's centre, changing by the allowed slope excursion across the window
    steepest: tuple[tuple[tuple[float, float], tuple[float, float]], ...]


def verification_lines(det: Determination) -> VerificationLines:
    x0, x1 = float(det.rounds[0]), float(det.rounds[-1])
    mid = (max(det.values) + min(det.values)) / 2
    half = det.allowed_excursion / 2
    steepest: tuple[tuple[tuple[float, float], tuple[float, float]], ...] = ()
    if x1 > x0:
        xc = (x0 + x1) / 2
        yc = det.fit(xc)  # the least-squares line passes through the values' centre
        rise = det.allowed_slope_excursion / 2
        steepest = (((x0, yc - rise), (x1, yc + rise)), ((x0, yc + rise), (x1, yc - rise)))
    return VerificationLines(
        mean=det.mean,
        band=(mid - half, mid + half),
        fit=((x0, det.fit(x0)), (x1, det.fit(x1))),
        steepest=steepest,
    )


def verification_caption(det: Determination) -> str:
    """What every line of the verification figure means, with this window's numbers."""
    u = det.unit
    return (
        f"Values of the measurement window (blue), their mean (black) and their "
        f"least-squares line (orange); unit: {u}.  Shaded: a band as wide as the allowed "
        f"data excursion, {fmt.limit(det.max_excursion)} of the mean "
        f"({fmt.sig(det.allowed_excursion)} {u}), centred between the lowest and the "
        f"highest value; the data-excursion criterion (max − min within "
        f"{fmt.limit(det.max_excursion)} of the mean) holds exactly when every value lies "
        f"inside it (here max − min = {fmt.sig(det.excursion)} {u}).  Dashed: the steepest "
        f"least-squares lines allowed, rising or falling by "
        f"{fmt.limit(det.max_slope_excursion)} of the mean "
        f"({fmt.sig(det.allowed_slope_excursion)} {u}) across the window; the slope "
        f"criterion holds when the orange line is no steeper (here it changes by "
        f"{fmt.sig(det.slope_excursion)} {u})."
    )


@styled
def verification(det: Determination, prefix: str) -> str | None:
    """Window values, their mean and least-squares line, and the two PTS criteria as
    they are (:func:`verification_lines`, :func:`verification_caption`)."""
    if not det.rounds:
        return None
    lines = verification_lines(det)
    fig = _new(2.3)
    ax = fig.add_subplot()
    x = np.asarray(det.rounds, dtype=float)
    lo, hi = x[0] - 0.3, x[-1] + 0.3
    ax.axhspan(
        *lines.band,
        color="#d9d9d9",
        alpha=0.6,
        linewidth=0,
        zorder=0,
        label=f"allowed data excursion: {fmt.limit(det.max_excursion)} of the mean wide",
    )
    ax.plot(x, det.values, "o-", color=PALETTE[0], label=f"{det.variable} ({det.unit})")
    ax.hlines(lines.mean, lo, hi, color="#000000", linewidth=1.0, label="window mean")
    (fx0, fy0), (fx1, fy1) = lines.fit
    ax.plot([fx0, fx1], [fy0, fy1], color=PALETTE[1], linewidth=1.2, label="least-squares line")
    for i, ((sx0, sy0), (sx1, sy1)) in enumerate(lines.steepest):
        ax.plot(
            [sx0, sx1],
            [sy0, sy1],
            color="#555555",
            linestyle="--",
            linewidth=0.8,
            label=(
                f"steepest line allowed (±{fmt.limit(det.max_slope_excursion)} of the mean "
                "across the window)"
                if i == 0
                else None
            ),
        )
    ends = [y for line in lines.steepest for _, y in line]
    vals = [*det.values, *lines.band, *ends]
    pad = 0.08 * (max(vals) - min(vals) or abs(lines.mean) or 1.0)
    ax.set_ylim(min(vals) - pad, max(vals) + pad)
    ax.set_xlim(lo, hi)
    ax.set_xticks(x)
    ax.set_xlabel("Round")
    ax.set_ylabel(det.unit)
    _plain(ax)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    return to_svg(fig, prefix)


# --------------------------------------------------------------------------- measurements


def _matrix_columns(m: Matrix) -> list[tuple[str, list[float]]]:
    """(column label, values by row) with missing values as NaN."""
    cols = []
    for j, label in enumerate(m.cols):
        cols.append((label, [math.nan if (v := r[j]) is None else float(v) for r in m.values]))
    return cols


@styled
def by_block_size(m: Matrix, prefix: str, *, log: bool = True) -> str:
    """One line per R/W mix over block size (small to large)."""
    fig = _new(2.9)
    ax = fig.add_subplot()
    rows = list(m.rows)[::-1]
    x = np.arange(len(rows))
    for (label, values), color in zip(_matrix_columns(m), itertools.cycle(PALETTE), strict=False):
        ax.plot(x, values[::-1], "o-", color=color, label=label)
    ax.set_xticks(x, rows)
    ax.set_xlabel("Block size")
    ax.set_ylabel(m.unit)
    if log:
        _log(ax)
    else:
        _plain(ax)
        ax.set_ylim(bottom=0)
    ax.legend(title="R/W mix", loc="center left", bbox_to_anchor=(1.01, 0.5), title_fontsize=6.5)
    return to_svg(fig, prefix)


@styled
def bars_3d(m: Matrix, prefix: str) -> str:
    """3D bars: block size x R/W mix x value (PTS's IOPS chart); reads at the back."""
    fig = Figure(figsize=(WIDTH, 4.0))
    ax: Any = fig.add_axes((-0.06, -0.04, 1.08, 1.1), projection="3d")
    rows = list(m.rows)[::-1]
    cols = _matrix_columns(m)
    depth = len(cols)
    for j, ((_label, values), color) in enumerate(
        zip(cols, itertools.cycle(PALETTE), strict=False)
    ):
        vals = np.nan_to_num(np.asarray(values[::-1], dtype=float))
        ax.bar3d(
            np.arange(len(rows)) - 0.3,
            np.full(len(rows), depth - 1 - j) - 0.3,
            0,
            0.6,
            0.6,
            vals,
            color=color,
            shade=True,
            edgecolor="#333333",
            linewidth=0.2,
        )
    ax.set_xticks(np.arange(len(rows)), rows)
    ax.set_yticks(np.arange(depth), [c[0].split()[0] for c in cols][::-1])
    ax.set_xlabel("Block size")
    ax.set_ylabel("R/W mix")
    ax.set_zlabel(m.unit, labelpad=12)
    ax.zaxis.set_major_formatter(FuncFormatter(lambda v, _p: tick_label(v)))
    ax.tick_params(axis="z", pad=5)
    ax.view_init(elev=22, azim=-62)
    ax.set_box_aspect((1.7, 1.15, 0.85), zoom=0.95)
    return to_svg(fig, prefix)


@styled
def grouped_bars(m: Matrix, prefix: str, *, log: bool = False, labels: bool = True) -> str:
    """Bars by block size, one bar per column (R/W mix or direction), values on top."""
    cols = _matrix_columns(m)
    n = max(len(cols), 1)
    width = 0.8 / n
    bars_total = n * len(m.rows)
    fig = _new(2.5, WIDTH if bars_total > 4 else WIDTH * 0.6)
    ax = fig.add_subplot()
    x = np.arange(len(m.rows))
    for j, ((label, values), color) in enumerate(zip(cols, itertools.cycle(PALETTE), strict=False)):
        pos = x - 0.4 + width * (j + 0.5)
        bars = ax.bar(pos, np.nan_to_num(values), width * 0.92, color=color, label=label)
        if labels and len(m.rows) * n <= 12:
            ax.bar_label(bars, [fmt.sig(v) for v in values], fontsize=6, padding=1.5)
    ax.set_xticks(x, m.rows)
    ax.set_xlabel("Block size")
    ax.set_ylabel(m.unit)
    if log:
        _log(ax)
    else:
        _plain(ax)
        ax.margins(y=0.12)
    ax.legend(title="R/W mix", loc="center left", bbox_to_anchor=(1.01, 0.5), title_fontsize=6.5)
    return to_svg(fig, prefix)


@styled
def latency_profile(test: TestReport, prefix: str) -> str | None:
    """Mean, percentiles and maximum response time of every point and direction."""
    if not test.latency:
        return None
    names = ["mean", *(f"{p} %" for p in test.percentile_names), "max"]
    x = np.arange(len(names))
    fig = _new(3.0)
    ax = fig.add_subplot()
    for row, color in zip(test.latency, itertools.cycle(PALETTE), strict=False):
        values = [row.mean_ms, *row.percentiles_ms, row.max_ms]
        y = [math.nan if v is None else v for v in values]
        ax.plot(x, y, "o-", color=color, label=f"{row.bs} {row.mix} {row.direction}")
    ax.set_xticks(x, names)
    _log(ax)
    ax.set_xlabel("Statistic over the measurement window")
    ax.set_ylabel("Response time (ms)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    return to_svg(fig, prefix)


@styled
def histogram_grid(hists: Sequence[Histogram], prefix: str) -> str | None:
    """Response-time histograms: one panel per point, reads and writes overlaid."""
    if not hists:
        return None
    bss = list(dict.fromkeys(h.bs for h in hists))
    mixes = list(dict.fromkeys(h.mix for h in hists))
    lo = min(h.edges_ms[0] for h in hists)
    hi = max(h.edges_ms[-1] for h in hists)
    height = 1.75 * len(bss) + 0.4
    # a fixed grid: constrained layout would cost more than the rest of the figure
    fig = Figure(figsize=(WIDTH, height))
    fig.subplots_adjust(
        left=0.09, right=0.99, top=1 - 0.25 / height, bottom=0.45 / height, wspace=0.28, hspace=0.42
    )
    axes = fig.subplots(len(bss), len(mixes), squeeze=False, sharex=True)
    for h in hists:
        ax = axes[bss.index(h.bs)][mixes.index(h.mix)]
        color = READ if h.direction == "read" else WRITE
        ax.stairs(
            h.counts,
            h.edges_ms,
            color=color,
            linewidth=0.9,
            fill=False,
            label=f"{h.direction} ({h.total:,} I/Os)",
        )
        ax.axvline(h.mean_ms, color=color, linewidth=0.7, linestyle="--")
        ax.set_title(h.point)
    for row in axes:
        for ax in row:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo, hi)
            ax.xaxis.set_major_locator(LogLocator(base=10.0, numticks=5))
            ax.yaxis.set_major_locator(LogLocator(base=100.0, numticks=4))
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))
            if ax.has_data():
                ax.legend(
                    loc="upper right",
                    fontsize=5.5,
                    handlelength=1.2,
                    frameon=True,
                    framealpha=0.9,
                    edgecolor="none",
                )
            else:
                ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel("Response time (ms)")
    for row in axes:
        row[0].set_ylabel("I/Os")
    return to_svg(fig, prefix)


SECONDS_BELOW = 5.0  # minutes: a shorter test's time axis is in seconds


def time_axis(minutes: Sequence[float]) -> tuple[Sequence[float], str]:
    """The time of each round and its axis label: in minutes, or in seconds for a test
    shorter than :data:`SECONDS_BELOW` minutes (a 12-s test reads 0-12 s, not 0-0.2)."""
    if max(minutes, default=0.0) >= SECONDS_BELOW:
        return minutes, "Time since the start of the test (minutes)"
    return [m * 60.0 for m in minutes], "Time since the start of the test (s)"


@styled
def saturation_pair(
    sat: Saturation, values: Sequence[float], label: str, prefix: str, *, log: bool = False
) -> str:
    """One quantity per round, over time (top) and over total data written (bottom)."""
    fig = _new(4.6)
    top, bottom = fig.subplots(2, 1)
    for ax, x, xlabel in (
        (top, *time_axis(sat.minutes)),
        (bottom, sat.written_gb, "Total data written (GB = 10⁹ bytes)"),
    ):
        size = 4.0 if len(values) <= 100 else 3.0 if len(values) <= 500 else 2.2
        dots(ax, x, values, PALETTE[0] if not log else PALETTE[1], size)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        if log:
            _log(ax)
        else:
            _plain(ax)
            ax.set_ylim(bottom=0, top=max(values) * 1.08)
        _plain(ax, "x")
        ax.set_xlim(left=0)
        if sat.capacity_bytes and x is sat.written_gb:
            cap = sat.capacity_bytes / fmt.GB
            for k in range(1, int(max(x) // cap) + 1):
                ax.axvline(k * cap, color="#999999", linewidth=0.6, linestyle=":")
                ax.annotate(
                    f"{k}× capacity",
                    (k * cap, 1.0),
                    xycoords=("data", "axes fraction"),
                    fontsize=6,
                    color="#666666",
                    ha="left",
                    va="top",
                    xytext=(2, -2),
                    textcoords="offset points",
                )
    return to_svg(fig, prefix)


# --------------------------------------------------------------------------- per test


@dataclass
class TestFigures:
    """Every figure of one test section (None: not drawn for this test)."""

    convergence: str | None = None
    verification: list[str | None] = field(default_factory=list)
    measure_2d: str | None = None
    measure_3d: str | None = None
    latency_profile: str | None = None
    histograms: str | None = None
    saturation_iops: str | None = None
    saturation_latency: str | None = None


def test_figures(test: TestReport, name: Namer) -> TestFigures:
    """The figures of one test section, by role."""
    out = TestFigures(
        convergence=convergence(test, name()),
        verification=[verification(d, name()) for d in test.determinations],
        histograms=histogram_grid(test.histograms, name()),
    )
    iops, bw, mean = test.matrix("iops"), test.matrix("bw"), test.matrix("lat_mean")
    if test.metric == "iops" and iops is not None and _has_values(iops):
        out.measure_2d = by_block_size(iops, name())
        if len(iops.rows) > 1 and len(iops.cols) > 1:
            out.measure_3d = bars_3d(iops, name())
    elif test.metric == "bw" and bw is not None and _has_values(bw):
        out.measure_2d = grouped_bars(bw, name())
    elif test.metric == "lat_mean":
        if mean is not None and _has_values(mean):
            out.measure_2d = grouped_bars(mean, name())
        out.latency_profile = latency_profile(test, name())
    if test.saturation is not None:
        sat = test.saturation
        out.saturation_iops = saturation_pair(sat, sat.iops, "IOPS", name())
        out.saturation_latency = saturation_pair(
            sat, sat.lat_mean_ms, "Mean response time (ms)", name()
        )
    return out


def _has_values(m: Matrix) -> bool:
    return any(v is not None for row in m.values for v in row)
