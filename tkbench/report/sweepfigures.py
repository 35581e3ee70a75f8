"""The bulk-I/O sweep's heat maps (MB/s over buffer size x buffer count, one per
mode), drawn from the report model (:mod:`.sweep`) only."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.patches import Rectangle

from tkbench.report.figures import Namer, _new, to_svg
from tkbench.report.fmt import sig
from tkbench.report.sweep import SweepReport, SweepTable


def heat_maps(sr: SweepReport | None, name: Namer) -> list[str | None]:
    """One heat map per mode: MB/s by buffer size (rows) and count (columns), the
    best cell framed, skipped cells blank."""
    if sr is None:
        return []
    return [_heat_map(t, name()) for t in sr.tables]


def _heat_map(t: SweepTable, prefix: str) -> str | None:
    data = np.array([[math.nan if v is None else v for v in row] for row in t.values])
    if not np.isfinite(data).any():
        return None
    fig = _new(0.28 * len(t.sizes) + 0.9, 4.2)
    ax = fig.subplots()
    ax.grid(False)
    # vector cells (pcolormesh), not a raster image: sharp in the PDF at any zoom
    img = ax.pcolormesh(np.ma.masked_invalid(data), cmap="viridis", edgecolors="white", lw=0.5)
    ax.set_xlim(0, len(t.counts))
    ax.set_ylim(len(t.sizes), 0)
    bar = fig.colorbar(img, ax=ax, label="MB/s", shrink=0.9)
    if bar.solids is not None:  # matplotlib rasterises a many-coloured bar: WeasyPrint drops it
        bar.solids.set_rasterized(False)
    ax.set_xticks([i + 0.5 for i in range(len(t.counts))], [str(c) for c in t.counts])
    ax.set_yticks([i + 0.5 for i in range(len(t.sizes))], list(t.sizes))
    ax.set_xlabel("Buffer count (I/Os in flight)")
    ax.set_ylabel("Buffer size")
    ax.set_title(t.title)
    hi = np.nanmax(data)
    for (r, c), v in np.ndenumerate(data):
        if math.isfinite(v):
            ax.text(c + 0.5, r + 0.5, sig(v, 3), ha="center", va="center", fontsize=5.5,
                    color="black" if v > 0.6 * hi else "white")  # fmt: skip
        else:
            ax.text(
                c + 0.5, r + 0.5, "skipped", ha="center", va="center", fontsize=5, color="#666666"
            )
    r, c = t.best
    ax.add_patch(Rectangle((c, r), 1, 1, fill=False, edgecolor="#D55E00", linewidth=1.6))
    return to_svg(fig, prefix)
