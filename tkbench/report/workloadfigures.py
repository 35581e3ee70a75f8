"""Figures of the chapter "Your workload on this drive" (:mod:`.workload`): the
captured workload's IOPS over time and its LBA heat map; the applied workload's
demand-intensity plot is DIRTH's figure, drawn by :func:`.stagefigures.all_figures`
(:func:`.stagefigures.intensity`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tkbench.report.figures import PALETTE, Namer, _new, _plain, styled, to_svg
from tkbench.report.workload import WorkloadChapter


@dataclass
class WorkloadFigures:
    """The chapter's figures (None: not drawn)."""

    timeline: str | None = None
    heat: str | None = None
    intensity: str | None = None


@styled
def timeline(ch: WorkloadChapter, prefix: str) -> str | None:
    """Read and write IOPS of the capture per interval, stacked."""
    if not any(ch.read_iops) and not any(ch.write_iops):
        return None
    fig = _new(2.6)
    ax = fig.add_subplot()
    # each interval drawn over its whole length: the last value repeated at its end
    t = np.arange(len(ch.read_iops) + 1) * ch.timeline_s
    reads = np.asarray([*ch.read_iops, ch.read_iops[-1]], dtype=float)
    writes = np.asarray([*ch.write_iops, ch.write_iops[-1]], dtype=float)
    ax.step(t, reads, where="post", color=PALETTE[0], label="reads")
    ax.step(t, reads + writes, where="post", color=PALETTE[1], label="reads + writes")
    ax.set_xlabel("Time since the capture began (s)")
    ax.set_ylabel("IOPS")
    _plain(ax)
    ax.set_xlim(0, t[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=6.5)
    return to_svg(fig, prefix)


@styled
def heat(ch: WorkloadChapter, prefix: str) -> str | None:
    """Reads and writes that started in each 1 % of the capacity, as a heat strip and bars."""
    if not any(ch.heat):
        return None
    fig = _new(2.2)
    ax = fig.add_subplot()
    values = np.asarray(ch.heat, dtype=float)
    ax.bar(np.arange(len(values)) + 0.5, values, width=1.0, color=PALETTE[2])
    ax.imshow(values[None, :], aspect="auto", cmap="Oranges",
              extent=(0, len(values), -0.08 * values.max(), 0))  # fmt: skip
    ax.set_xlim(0, len(values))
    ax.set_ylim(-0.08 * values.max(), values.max() * 1.05)
    ax.set_xlabel("Position on the device (% of its capacity)")
    ax.set_ylabel("I/Os started")
    _plain(ax)
    return to_svg(fig, prefix)


def workload_figures(ch: WorkloadChapter | None, name: Namer) -> WorkloadFigures:
    out = WorkloadFigures()
    if ch is None:
        return out
    out.timeline = timeline(ch, name())
    out.heat = heat(ch, name())
    return out
