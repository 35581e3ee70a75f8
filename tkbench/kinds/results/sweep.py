"""A bulk-I/O sweep's results (tkbench.kinds.sweep): MB/s of every buffer size x buffer
count per mode, the best combination per mode, per direction and overall, and how
much the best beats the commonest default, one 128 KiB buffer at a time (pure).

A cell's MB/s (10^6 bytes/s) is the mean over the test's runs (``repeat``).  Of
two equally fast combinations the one with less buffer space (size x count), then
the smaller buffer, is the better: it gets there with less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench.rundir.records import Round, TestPlan

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed

ROLE = "sweep"


@dataclass(frozen=True)
class Mode:
    name: str
    title: str
    read: bool
    direct: bool
    fadvise: str  # fio fadvise_hint

    @property
    def direction(self) -> str:
        return "read" if self.read else "write"


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("unbuffered-read", "Unbuffered read", True, True, "0"),
        Mode("unbuffered-write", "Unbuffered write", False, True, "0"),
        Mode("unbuffered-seq-read", "Unbuffered sequential read", True, True, "sequential"),
        Mode("unbuffered-seq-write", "Unbuffered sequential write", False, True, "sequential"),
        Mode("buffered-seq-read", "Buffered sequential read", True, False, "sequential"),
    )
}


def mode_of(label: str) -> Mode:
    """The mode of a stored sweep point, from its label (``"128k 100/0 x4 MODE"``)."""
    name = label.rsplit(" ", 1)[-1]
    try:
        return MODES[name]
    except KeyError:
        raise ValueError(f"sweep point {label!r} names no mode") from None


MB = 1e6
DEFAULT = (128 * 1024, 1)  # (buffer size, buffer count): the commonest default, 1 x 128K


@dataclass(frozen=True)
class Cell:
    """One combination of a mode: its MB/s, the mean of ``runs``."""

    mode: str
    buffer_size: int
    buffer_count: int
    mb_s: float
    runs: tuple[float, ...] = ()

    @property
    def space(self) -> int:
        return self.buffer_size * self.buffer_count

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "direction": MODES[self.mode].direction,
            "buffer_size": self.buffer_size,
            "buffer_count": self.buffer_count,
            "mb_s": self.mb_s,
        }


@dataclass(frozen=True)
class Best:
    """The best cell of a set, and the default combination in the best's mode."""

    cell: Cell
    default: Cell | None  # None: the sweep has no 1 x 128K in that mode

    @property
    def gain_pct(self) -> float | None:
        """How much faster than the default, in percent (None: no default to compare)."""
        if self.default is None or self.default.mb_s <= 0:
            return None
        return 100.0 * (self.cell.mb_s / self.default.mb_s - 1.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.cell.to_dict(),
            "default": None if self.default is None else self.default.to_dict(),
            "gain_pct": self.gain_pct,
        }


@dataclass(frozen=True)
class ModeTable:
    """Every combination of one mode: MB/s by (size, count); None: skipped (too much
    buffer space) or not measured."""

    mode: str
    sizes: tuple[int, ...]
    counts: tuple[int, ...]
    cells: Mapping[tuple[int, int], Cell]
    best: Best

    @property
    def title(self) -> str:
        return MODES[self.mode].title

    @property
    def direction(self) -> str:
        return MODES[self.mode].direction

    def value(self, size: int, count: int) -> float | None:
        c = self.cells.get((size, count))
        return None if c is None else c.mb_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "title": self.title,
            "direction": self.direction,
            "table": [
                {
                    "buffer_size": s,
                    "buffer_count": n,
                    "mb_s": c.mb_s,
                    "runs": list(c.runs),
                }
                for (s, n), c in sorted(self.cells.items())
            ],
            "best": self.best.to_dict(),
        }


@dataclass(frozen=True)
class SweepResult:
    sizes: tuple[int, ...]
    counts: tuple[int, ...]
    skipped: tuple[tuple[int, int], ...]  # (size, count) pairs not run: too much buffer space
    modes: tuple[ModeTable, ...]
    best: Mapping[str, Best]  # direction ("read", "write") -> its best
    overall: Best

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "MB/s",
            "buffer_sizes": list(self.sizes),
            "buffer_counts": list(self.counts),
            "skipped": [{"buffer_size": s, "buffer_count": n} for s, n in self.skipped],
            "default": {"buffer_size": DEFAULT[0], "buffer_count": DEFAULT[1]},
            "modes": [m.to_dict() for m in self.modes],
            "best": {d: b.to_dict() for d, b in self.best.items()},
            "best_overall": self.overall.to_dict(),
        }


def best_cell(cells: Sequence[Cell]) -> Cell:
    """The fastest cell; of equals, the one with less buffer space, then the smaller buffer."""
    if not cells:
        raise ValueError("no cells")
    return min(cells, key=lambda c: (-c.mb_s, c.space, c.buffer_size))


def result(
    cells: Sequence[Cell],
    sizes: Sequence[int],
    counts: Sequence[int],
    skipped: Sequence[tuple[int, int]] = (),
    default: tuple[int, int] = DEFAULT,
) -> SweepResult:
    """The sweep's tables and best combinations from its cells (any order);
    ``skipped``: the (size, count) pairs the sweep left out."""
    by_mode: dict[str, dict[tuple[int, int], Cell]] = {}
    for c in cells:
        by_mode.setdefault(c.mode, {})[(c.buffer_size, c.buffer_count)] = c
    if not by_mode:
        raise ValueError("a sweep without measured cells")

    def best_of(group: Sequence[Cell]) -> Best:
        b = best_cell(group)
        return Best(b, by_mode[b.mode].get(default))

    order = [m for m in MODES if m in by_mode]
    tables = tuple(
        ModeTable(m, tuple(sizes), tuple(counts), by_mode[m], best_of(list(by_mode[m].values())))
        for m in order
    )
    best = {}
    for direction in ("read", "write"):
        group = [c for t in tables if t.direction == direction for c in t.cells.values()]
        if group:
            best[direction] = best_of(group)
    return SweepResult(
        sizes=tuple(sizes),
        counts=tuple(counts),
        skipped=tuple(skipped),
        modes=tables,
        best=best,
        overall=best_of(list(cells)),
    )


def is_sweep(plan: TestPlan) -> bool:
    return bool(plan.points) and all(p.role == ROLE for p in plan.points)


def sweep_of(plan: TestPlan, rounds: Sequence[Round]) -> SweepResult | None:
    """A stored sweep test's result (None: not a sweep, or no round yet).  The buffer
    sizes and counts are those the plan has points of; a pair of them without a point
    was skipped (its buffers took more than the test's ``max_buffer_space``)."""
    if not is_sweep(plan) or not rounds:
        return None
    runs: dict[tuple[str, int, int], list[float]] = {}
    for r in rounds:
        for p in r.points:
            if p.role != ROLE:
                continue
            key = (mode_of(p.label).name, p.bs, p.iodepth)
            runs.setdefault(key, []).append(p.bw_bytes / MB)
    cells = [
        Cell(mode, size, count, math.fsum(v) / len(v), tuple(v))
        for (mode, size, count), v in runs.items()
    ]
    sizes = tuple(sorted({p.bs for p in plan.points}))
    counts = tuple(sorted({p.iodepth for p in plan.points}))
    planned = {(p.bs, p.iodepth) for p in plan.points}
    skipped = [(s, n) for s in sizes for n in counts if (s, n) not in planned]
    return result(cells, sizes, counts, skipped)


def sweep_in(a: Analysed) -> SweepResult | None:
    """A test's sweep result as its analysis keeps it (None: not a sweep, or no round
    yet): :func:`sweep_of`, computed once per test."""
    return a.own if isinstance(a.own, SweepResult) else None
