"""The bulk-I/O sweep's part of a test chapter (tkbench.kinds.sweep): the best combinations,
a heat map of MB/s over buffer size x buffer count per mode, and the full tables.

:func:`sweep_report` turns :mod:`tkbench.kinds.results.sweep`'s result into what the
template ``sweep.html.j2`` shows; :mod:`.sweepfigures` draws its heat maps."""

from __future__ import annotations

from dataclasses import dataclass

from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.sweep import DEFAULT, MODES, Best, SweepResult, is_sweep, sweep_in
from tkbench.report.fmt import sig

__all__ = ["BestRow", "SweepReport", "SweepTable", "is_sweep", "sweep_report"]


def size_text(n: int) -> str:
    """A buffer size as people write it: 8K, 128K, 1M, 16M."""
    return f"{n >> 20}M" if n % (1 << 20) == 0 else f"{n >> 10}K" if n % 1024 == 0 else str(n)


def combination(size: int, count: int) -> str:
    return f"{count} × {size_text(size)}"


@dataclass(frozen=True)
class SweepTable:
    """One mode's MB/s: a row per buffer size, a column per buffer count (None: skipped)."""

    mode: str
    title: str
    direction: str
    sizes: tuple[str, ...]
    counts: tuple[int, ...]
    values: tuple[tuple[float | None, ...], ...]
    best: tuple[int, int]  # (row, column) of the best cell


@dataclass(frozen=True)
class BestRow:
    what: str  # "Read", "Write", "Overall", or a mode's title
    mode: str  # the mode's title
    combination: str  # "4 × 1M"
    mb_s: float
    default_mb_s: float | None  # 1 × 128K in the same mode
    gain: str  # "+35 %" or "—"


@dataclass(frozen=True)
class SweepReport:
    tables: tuple[SweepTable, ...]
    best: tuple[BestRow, ...]
    sentence: str  # the chapter's verdict in a customer's words
    skipped: str  # which combinations were left out, or ""
    default: str  # "1 × 128K"


def _gain(b: Best) -> str:
    g = b.gain_pct
    return "—" if g is None else f"{g:+.0f} %"


def _row(what: str, b: Best) -> BestRow:
    c = b.cell
    return BestRow(
        what=what,
        mode=_title(c.mode),
        combination=combination(c.buffer_size, c.buffer_count),
        mb_s=c.mb_s,
        default_mb_s=None if b.default is None else b.default.mb_s,
        gain=_gain(b),
    )


def _title(mode: str) -> str:
    return MODES[mode].title


def model(sw: SweepResult) -> SweepReport:
    tables = []
    for m in sw.modes:
        values = tuple(tuple(m.value(s, n) for n in sw.counts) for s in sw.sizes)
        bc = m.best.cell
        tables.append(
            SweepTable(
                mode=m.mode,
                title=m.title,
                direction=m.direction,
                sizes=tuple(size_text(s) for s in sw.sizes),
                counts=sw.counts,
                values=values,
                best=(sw.sizes.index(bc.buffer_size), sw.counts.index(bc.buffer_count)),
            )
        )
    rows = [_row(d.capitalize(), b) for d, b in sw.best.items()]
    rows.append(_row("Overall", sw.overall))
    rows += [_row(m.title, m.best) for m in sw.modes]
    parts = []
    for d, b in sw.best.items():
        c = b.cell
        text = (
            f"{d}s are fastest with {combination(c.buffer_size, c.buffer_count)} "
            f"({_title(c.mode).lower()}, {sig(c.mb_s)} MB/s)"
        )
        if b.gain_pct is not None:
            text += f", {abs(b.gain_pct):.0f} % {'faster' if b.gain_pct >= 0 else 'slower'} "
            text += f"than {combination(*DEFAULT)}"
        parts.append(text)
    sentence = "Large files on this volume: " + "; ".join(parts) + "." if parts else ""
    skipped = ""
    if sw.skipped:
        skipped = (
            f"{len(sw.skipped)} combination(s) were not run, their buffers taking more space "
            "than the profile's max_buffer_space: "
            + ", ".join(combination(s, n) for s, n in sw.skipped)
            + "."
        )
    return SweepReport(tuple(tables), tuple(rows), sentence, skipped, combination(*DEFAULT))


def sweep_report(a: Analysed) -> SweepReport | None:
    """The sweep part of a test's chapter (None: the test is no sweep or has no round)."""
    sw = sweep_in(a)
    return None if sw is None else model(sw)
