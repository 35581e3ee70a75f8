"""The headline figures of the volume benchmarks, by name, for the history, ``compare``,
``export`` and acceptance criteria (pure).

Each figure belongs to a test and has a name within it:

* a bulk-I/O sweep: ``best_read_mb_s``, ``best_write_mb_s`` (the best combination of
  each direction, with its mode, buffer size and buffer count);
* a copy test: ``SET.PATTERN.mb_s`` per file set and data pattern (``iso.random.mb_s``);
* a virtual-file test: ``OPERATION.THREADS.CACHE.nodes_s`` (``random-read.1.warm.nodes_s``).

A figure is the mean over the test's runs (``repeat``), kept with every run's value,
so that its spread is known.  Its mean absolute deviation in % of the mean is the
figure of the same name with ``mean_abs_dev_pct`` in place of the unit's ending
(``iso.random.mean_abs_dev_pct``, ``best_write_mean_abs_dev_pct``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..vfile import OPERATIONS
from .copy import copy_rows
from .repeat import Repeatability, repeatability
from .sweep import sweep_of
from .vfile import vfile_of

if TYPE_CHECKING:
    from ..profile import TestSpec
    from ..store import RunData, TestData

UNITS = {"mb_s": "MB/s", "nodes_s": "nodes/s"}  # a figure's name ends in one of these
DEVIATION = "mean_abs_dev_pct"  # ... or in this: the spread of the figure's runs, in %


@dataclass(frozen=True)
class Figure:
    test: str
    name: str  # within the test: "best_write_mb_s", "iso.random.mb_s", ...
    unit: str  # "MB/s" or "nodes/s"
    runs: Repeatability  # every run's value; the figure is their mean
    detail: Mapping[str, Any] = field(default_factory=dict)  # a sweep's best: its combination
    direction: str = "all"  # "read" or "write": a sweep's best, a virtual file's operation

    @property
    def value(self) -> float:
        return self.runs.mean

    @property
    def key(self) -> str:
        """``"TEST NAME"``, as the history keys it (like its repeated points)."""
        return f"{self.test} {self.name}"

    def summary(self) -> dict[str, Any]:
        """What the history keeps of it."""
        return {
            "value": self.value,
            "unit": self.unit,
            "mean_abs_dev_pct": self.runs.mean_abs_dev_pct,
            "stdev": self.runs.stdev,
            "runs": len(self.runs.runs),
            **self.detail,
        }


def test_figures(test: TestData) -> list[Figure]:
    """The figures of one stored test (none for a test of another kind, or without runs)."""
    plan, rounds = test.plan, test.rounds
    out: list[Figure] = []
    sweep = sweep_of(plan, rounds)
    if sweep is not None:
        for direction in ("read", "write"):
            best = sweep.best.get(direction)
            if best is None:
                continue
            c = best.cell
            detail = {"mode": c.mode, "buffer_size": c.buffer_size, "buffer_count": c.buffer_count}
            runs = repeatability(c.runs or (c.mb_s,))
            name = f"best_{direction}_mb_s"
            out.append(Figure(test.name, name, "MB/s", runs, detail, direction))
        return out
    for row in copy_rows(plan, rounds) or ():
        out.append(Figure(test.name, f"{row.copy_set}.{row.data}.mb_s", "MB/s", row.mb_s))
    vfile = vfile_of(plan, rounds)
    for cell in vfile.cells if vfile is not None else ():
        runs = repeatability([b / cell.node_size for b in cell.runs])
        name = f"{cell.operation}.{cell.threads}.{cell.cache}.nodes_s"
        direction = OPERATIONS[cell.operation].direction
        out.append(Figure(test.name, name, "nodes/s", runs, direction=direction))
    return out


def run_figures(run: RunData) -> list[Figure]:
    return [f for t in run.tests if t.rounds for f in test_figures(t)]


def value_of(figures: Sequence[Figure], test: str, name: str) -> float:
    """The value of figure ``name`` of ``test``, or of its spread (a name ending in
    ``mean_abs_dev_pct``); nan when the run lacks it (or it has no spread: mean 0)."""
    for f in figures:
        if f.test != test:
            continue
        if f.name == name:
            return f.value
        if name.endswith(DEVIATION) and f.name == _base(name, f.name):
            pct = f.runs.mean_abs_dev_pct
            return pct if pct is not None else math.nan
    return math.nan


def _base(name: str, candidate: str) -> str:
    """The figure a deviation name refers to, if ``candidate`` is it."""
    stem = name[: -len(DEVIATION)]
    for ending in UNITS:
        if candidate == stem + ending:
            return candidate
    return ""


def unit_of(name: str) -> str:
    """The unit of a figure name: MB/s, nodes/s or %."""
    if name.endswith(DEVIATION):
        return "%"
    return next((u for ending, u in UNITS.items() if name.endswith(ending)), "")


def figure_names(spec: TestSpec) -> set[str] | None:
    """Every figure name (with its deviation) a test of this spec will have; None for a
    test without figures (not a sweep, copy or virtual-file test)."""
    from ..sweep import MODES

    if spec.modes:
        bases = {f"best_{MODES[m].direction}_" for m in spec.modes if m in MODES}
        endings = ("mb_s", DEVIATION)
    elif spec.kind == "copy":
        bases = {f"{s.kind}.{d}." for s in spec.sets for d in spec.data_patterns}
        endings = ("mb_s", DEVIATION)
    elif spec.operations:
        caches = spec.caches or (spec.cache,)
        bases = {
            f"{op}.{n}.{c}." for op in spec.operations for n in spec.thread_counts for c in caches
        }
        endings = ("nodes_s", DEVIATION)
    else:
        return None
    return {b + e for b in bases for e in endings}
