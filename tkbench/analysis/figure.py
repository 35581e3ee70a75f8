"""A volume benchmark's headline figure: a named value of a test, the mean of every
run's value (pure).  :mod:`.volfigures` says which figures each test type has."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tkbench.analysis.repeat import Repeatability

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
