"""Figures of the comparison PDF: several runs overlaid, each run in its own style.

Run *i* has one colour, marker and line style in every figure (:func:`run_style`);
twelve colours, then the line style changes, so any number of runs stays
distinguishable.  Like :mod:`.figures`, these only read the model: each run's
tests as its own report analyses them (:class:`.model.TestReport`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tkbench.report.figures import WIDTH, _log, _plain, dots, styled, tick_label, to_svg
from tkbench.report.model import Matrix, TestReport
from tkbench.units import parse_size

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
LINESTYLES = ("-", "--", ":", "-.")
DELTA_LIMIT = 25.0  # % at which the delta colours saturate (firmware changes are 5-15 %)
# the report's palette, reordered so that the first runs are the most distinct
# (light blue and grey, easily taken for run 1 and for gridlines, come last)
RUN_PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#000000",
    "#CC79A7",
    "#E69F00",
    "#9467BD",
    "#8C564B",
    "#BCBD22",
    "#56B4E9",
    "#17BECF",
    "#7F7F7F",
)


@dataclass(frozen=True)
class RunStyle:
    number: int  # 1-based, as the tables say "Run 2"
    color: str
    marker: str
    linestyle: str

    @property
    def label(self) -> str:
        return f"Run {self.number}"


def run_style(index: int) -> RunStyle:
    """The style of the run at 0-based ``index``."""
    return RunStyle(
        number=index + 1,
        color=RUN_PALETTE[index % len(RUN_PALETTE)],
        marker=MARKERS[index % len(MARKERS)],
        linestyle=LINESTYLES[(index // len(RUN_PALETTE)) % len(LINESTYLES)],
    )


def _grid(n: int, ncols: int, row_height: float, width: float = WIDTH) -> tuple[Figure, list[Axes]]:
    """A figure of ``n`` panels in ``ncols`` columns with room for a legend on top."""
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(width, 0.45 + row_height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_axis_off()
    return fig, axes[:n]


def _run_legend(fig: Figure, styles: Sequence[RunStyle], *, lines: bool = True) -> None:
    handles = [
        fig.axes[0].plot(
            [],
            [],
            color=s.color,
            marker=s.marker,
            linestyle=s.linestyle if lines else "none",
            markersize=4,
        )[0]
        for s in styles
    ]
    fig.legend(
        handles,
        [s.label for s in styles],
        loc="outside upper center",
        ncols=len(styles) if len(styles) <= 10 else math.ceil(len(styles) / 2),
        handlelength=2.4 if lines else 1.0,
    )


def _value_axis(ax: Axes, values: Sequence[float]) -> None:
    """Logarithmic when the values span more than 20×, else linear from zero."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if positive and max(positive) / min(positive) > 20:
        _log(ax)
    else:
        _plain(ax)
        ax.set_ylim(bottom=0, top=max(positive, default=1.0) * 1.1)


# --------------------------------------------------------------------------- convergence


@dataclass(frozen=True)
class _Trace:
    style: RunStyle
    x: tuple[float, ...]
    y: tuple[float, ...]
    in_window: tuple[bool, ...]


def _convergence_panels(
    reports: Sequence[TestReport | None], styles: Sequence[RunStyle]
) -> dict[tuple[str, str], list[_Trace]]:
    """(variable, unit) -> one trace per run: the tracking variables, round by round."""
    panels: dict[tuple[str, str], list[_Trace]] = {}
    for rep, style in zip(reports, styles, strict=True):
        if rep is None or rep.saturation is not None:
            continue
        if rep.tracking:
            for k, (label, unit) in enumerate(zip(rep.tracking, rep.tracking_units, strict=True)):
                rows = [r for r in rep.rounds if r.values[k] is not None]
                trace = _Trace(
                    style,
                    tuple(float(r.number) for r in rows),
                    tuple(float(r.values[k] or 0.0) for r in rows),
                    tuple(r.in_window for r in rows),
                )
                panels.setdefault((label, unit), []).append(trace)
        else:  # a fixed test: its plotted points, the window being every round
            for s in rep.convergence[:4]:
                window = set(rep.window)
                trace = _Trace(style, s.x, s.y, tuple(int(x) in window for x in s.x))
                panels.setdefault((f"{rep.metric} {s.label}", rep.unit), []).append(trace)
    return panels


@styled
def convergence_overlay(
    reports: Sequence[TestReport | None], styles: Sequence[RunStyle], prefix: str
) -> str | None:
    """One panel per tracking variable, every run's rounds overlaid; filled markers are
    the run's measurement window."""
    panels = _convergence_panels(reports, styles)
    if not panels:
        return None
    fig, axes = _grid(len(panels), 1 if len(panels) == 1 else 2, 2.1 if len(panels) > 1 else 2.6)
    for ax, ((label, unit), traces) in zip(axes, panels.items(), strict=True):
        for tr in traces:
            s = tr.style
            ax.plot(tr.x, tr.y, color=s.color, linestyle=s.linestyle, linewidth=0.9)
            ax.plot(
                tr.x,
                tr.y,
                linestyle="none",
                marker=s.marker,
                markersize=3.4,
                markeredgewidth=0.8,
                markeredgecolor=s.color,
                markerfacecolor="white",
            )
            wx = [x for x, w in zip(tr.x, tr.in_window, strict=True) if w]
            wy = [y for y, w in zip(tr.y, tr.in_window, strict=True) if w]
            ax.plot(wx, wy, linestyle="none", marker=s.marker, markersize=3.4, color=s.color)
        ax.set_title(label)
        ax.set_xlabel("Round")
        ax.set_ylabel(unit)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _value_axis(ax, [y for tr in traces for y in tr.y])
    shown = {tr.style.number: tr.style for traces in panels.values() for tr in traces}
    _run_legend(fig, [shown[k] for k in sorted(shown)])
    return to_svg(fig, prefix)


# --------------------------------------------------------------------------- measurements


def _primary_matrices(reports: Sequence[TestReport | None]) -> list[Matrix | None]:
    return [rep.matrix(rep.metric) if rep is not None else None for rep in reports]


def _axes_of(mats: Sequence[Matrix | None]) -> tuple[list[str], list[str]]:
    """Block sizes (small to large) and columns (in plan order) of all the matrices."""
    rows: dict[str, None] = {}
    cols: dict[str, None] = {}
    for m in mats:
        if m is not None:
            rows.update(dict.fromkeys(m.rows))
            cols.update(dict.fromkeys(m.cols))
    return sorted(rows, key=parse_size), list(cols)


def _cell(m: Matrix | None, row: str, col: str) -> float:
    if m is None or row not in m.rows or col not in m.cols:
        return math.nan
    v = m.values[m.rows.index(row)][m.cols.index(col)]
    return math.nan if v is None else float(v)


@styled
def measurement_overlay(
    reports: Sequence[TestReport | None], styles: Sequence[RunStyle], prefix: str
) -> str | None:
    """The test's measurement-window values: one panel per R/W mix, every run in it."""
    mats = _primary_matrices(reports)
    present = [(m, s) for m, s in zip(mats, styles, strict=True) if m is not None]
    if not present:
        return None
    rows, cols = _axes_of(mats)
    unit = present[0][0].unit
    ncols = min(len(cols), 2 if len(rows) > 3 else 3)
    fig, axes = _grid(len(cols), ncols, 1.9)
    everything = [_cell(m, r, c) for m, _s in present for r in rows for c in cols]
    for ax, col in zip(axes, cols, strict=True):
        if len(rows) == 1:  # one block size: a bar per run
            for k, (m, s) in enumerate(present):
                v = _cell(m, rows[0], col)
                bar = ax.bar(k, 0.0 if math.isnan(v) else v, 0.7, color=s.color)
                ax.bar_label(
                    bar,
                    ["–" if math.isnan(v) else tick_label(float(f"{v:.3g}"))],
                    fontsize=5.5,
                    padding=1.5,
                )
            names = [s.label if len(present) <= 4 else str(s.number) for _m, s in present]
            ax.set_xticks(range(len(present)), names)
            ax.set_xlabel(f"Block size {rows[0]}" + (", by run" if len(present) > 4 else ""))
        else:
            x = np.arange(len(rows))
            for m, s in present:
                ax.plot(
                    x,
                    [_cell(m, r, col) for r in rows],
                    color=s.color,
                    marker=s.marker,
                    linestyle=s.linestyle,
                    markersize=3.2,
                )
            ax.set_xticks(x, rows)
            ax.set_xlabel("Block size")
        ax.set_title(col)
        ax.set_ylabel(unit)
        _value_axis(ax, everything)
        if len(rows) == 1:
            ax.margins(y=0.15)
    _run_legend(fig, [s for _m, s in present], lines=len(rows) > 1)
    return to_svg(fig, prefix)


@styled
def delta_maps(
    reports: Sequence[TestReport | None],
    styles: Sequence[RunStyle],
    higher_is_better: bool,
    prefix: str,
) -> str | None:
    """Δ % of every point of runs 2..n against run 1, as coloured tables (blue: better)."""
    mats = _primary_matrices(reports)
    base = mats[0]
    others = [(m, s) for m, s in zip(mats[1:], styles[1:], strict=True) if m is not None]
    if base is None or not others:
        return None
    rows, cols = _axes_of(mats)
    rows = rows[::-1]  # large block sizes on top, as the tables list them
    ncols = 1 if len(others) == 1 else 2
    width = WIDTH if ncols == 2 or len(cols) > 3 else WIDTH * 0.6
    row_h = 0.75 + 0.2 * len(rows)
    fig, axes = _grid(len(others), ncols, row_h, width)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-DELTA_LIMIT, vmax=DELTA_LIMIT)
    mesh = None
    for ax, (m, s) in zip(axes, others, strict=True):
        delta = np.full((len(rows), len(cols)), np.nan)
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                b, v = _cell(base, r, c), _cell(m, r, c)
                if math.isfinite(b) and math.isfinite(v) and b:
                    delta[i, j] = (v - b) / abs(b) * 100.0
        better = delta if higher_is_better else -delta
        mesh = ax.pcolormesh(
            np.ma.masked_invalid(np.clip(better, -DELTA_LIMIT, DELTA_LIMIT)),
            cmap="RdBu",
            norm=norm,
            edgecolors="white",
            linewidth=0.6,
        )
        for i in range(len(rows)):
            for j in range(len(cols)):
                d = delta[i, j]
                text = "–" if math.isnan(d) else f"{d:+.1f}"
                dark = math.isfinite(d) and abs(better[i, j]) > 0.6 * DELTA_LIMIT
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    text,
                    ha="center",
                    va="center",
                    fontsize=5.8,
                    color="white" if dark else "#222222",
                )
        ax.set_xticks(np.arange(len(cols)) + 0.5, [c.split()[0] for c in cols])
        ax.set_yticks(np.arange(len(rows)) + 0.5, rows)
        ax.invert_yaxis()
        ax.tick_params(length=0)
        ax.grid(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title(f"{s.label} against run 1 (Δ %)", color=s.color)
        ax.set_xlabel("R/W mix (% read / % write)")
        ax.set_ylabel("Block size")
    assert mesh is not None
    bar = fig.colorbar(mesh, ax=axes, shrink=0.8, aspect=30, pad=0.02)
    bar.set_ticks(
        [-DELTA_LIMIT, 0.0, DELTA_LIMIT],
        labels=[f"{DELTA_LIMIT:.0f} % worse", "equal", f"{DELTA_LIMIT:.0f} % better"],
    )
    bar.ax.tick_params(labelsize=6, length=0)
    bar.outline.set_visible(False)
    if bar.solids is not None:  # vector, not an embedded bitmap the report would not load
        bar.solids.set_rasterized(False)
    return to_svg(fig, prefix)


# --------------------------------------------------------------------------- saturation


@styled
def saturation_overlay(
    reports: Sequence[TestReport | None], styles: Sequence[RunStyle], prefix: str
) -> str | None:
    """Write saturation of every run: IOPS and mean response time per round, over time
    and over data written."""
    sats = [
        (rep.saturation, s)
        for rep, s in zip(reports, styles, strict=True)
        if rep is not None and rep.saturation is not None
    ]
    if not sats:
        return None
    fig, axes = _grid(4, 2, 2.0)
    biggest = max(len(sat.iops) for sat, _s in sats)
    size = 3.5 if biggest <= 100 else 2.6 if biggest <= 500 else 1.8
    written = "Data written (× the drive's user capacity)"
    panels = (
        (axes[0], "minutes", "iops", "Time (minutes)", "IOPS"),
        (axes[1], "capacities", "iops", written, "IOPS"),
        (axes[2], "minutes", "lat_mean_ms", "Time (minutes)", "Mean response time (ms)"),
        (axes[3], "capacities", "lat_mean_ms", written, "Mean response time (ms)"),
    )
    for ax, xkey, ykey, xlabel, ylabel in panels:
        values: list[float] = []
        for sat, s in sats:
            ys = getattr(sat, ykey)
            if xkey == "capacities":  # drives of different sizes on one scale
                cap_gb = sat.capacity_bytes / 1e9 if sat.capacity_bytes else math.nan
                xs: Sequence[float] = [gb / cap_gb for gb in sat.written_gb]
            else:
                xs = sat.minutes
            dots(ax, xs, ys, s.color, size)
            values.extend(ys)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _plain(ax, "x")
        ax.set_xlim(left=0)
        _value_axis(ax, values)
    _run_legend(fig, [s for _sat, s in sats], lines=False)
    return to_svg(fig, prefix)
