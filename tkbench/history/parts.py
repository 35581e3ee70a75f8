"""The typed parts of a history entry: its checks, its repeated points' figures, its
volume figures, and the identity of a target as the history files it.

Each part is read once where an entry is made (from a run directory, or from a row of
either backend: its JSON text columns) through :func:`tkbench.rundir.records.base.build`,
so that a wrong field is one line naming the run and the field, and every reader
(``history``, the dashboard, the regression baseline) reads attributes.  What a part
writes back (:func:`tkbench.rundir.records.base.dump`, in field order) is the JSON the
history has always kept, byte for byte: the repeats column of version 3 and the volume
column of version 4 (tkbench.history.schema).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tkbench.errors import RunDirError
from tkbench.rundir.records.base import build, dump

R = TypeVar("R")

OMIT = {"omit_none": True}  # a field written only when it is known


@dataclass(frozen=True)
class CheckRow:
    """One check of a run as the history reads it (of checks.json's
    :class:`tkbench.rundir.records.CheckItem`, what a listing or the dashboard shows)."""

    name: str = "?"
    kind: str = ""  # steady_state | criterion | regression
    passed: bool = False
    message: str = ""

    @property
    def acceptance(self) -> bool:
        """An acceptance check (steady state, a criterion): not a regression."""
        return self.kind != "regression"


@dataclass(frozen=True)
class EntryChecks:
    """The checks a run was indexed with: the verdict and each check."""

    passed: bool = False  # a row without a verdict counts as failed
    checks: tuple[CheckRow, ...] = ()
    # the JSON read (checks.json's record, or an older tkbench's dict): written back
    # and shown by ``history --json`` unchanged, never read for anything else; None
    # for checks made here (not a field of the JSON: build leaves it alone)
    stored: Mapping[str, Any] | None = field(default=None, init=False, repr=False)

    @classmethod
    def read(cls, data: Any, where: Path) -> EntryChecks:
        """The checks of the JSON object ``data`` (``where``: the run, for messages)."""
        checks = build(cls, data, where, "checks.")
        object.__setattr__(checks, "stored", data)  # frozen: set once, as it is made
        return checks

    def to_json(self) -> Mapping[str, Any]:
        """The JSON the history keeps: as read, else the verdict and the checks."""
        if self.stored is not None:
            return self.stored
        return {"passed": self.passed, "checks": [dump(c) for c in self.checks]}

    def failed_acceptance(self) -> tuple[CheckRow, ...]:
        """The failed acceptance checks (steady state, criteria; not regressions)."""
        return tuple(c for c in self.checks if not c.passed and c.acceptance)


@dataclass(frozen=True)
class RepeatFigures:
    """A repeated point of a run's fixed test, as nights are compared by: its runs'
    mean MiB/s, mean absolute deviation in % of it (None: a mean of 0), standard
    deviation (None: one run), number of runs and, for a test with ``repeat_until``,
    its limit and whether it was met."""

    mean: float
    mean_abs_dev_pct: float | None
    stdev: float | None
    runs: int
    limit_pct: float | None = field(default=None, metadata=OMIT)
    limit_met: bool | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class VolumeFigure:
    """A volume benchmark's headline figure (:class:`tkbench.analysis.figure.Figure`'s
    ``summary``): its value (the mean of its runs), unit, spread and number of runs;
    a bulk-I/O sweep's best also its combination (mode, buffer size and count)."""

    value: float
    unit: str
    mean_abs_dev_pct: float | None
    stdev: float | None
    runs: int
    mode: str | None = field(default=None, metadata=OMIT)
    buffer_size: int | None = field(default=None, metadata=OMIT)
    buffer_count: int | None = field(default=None, metadata=OMIT)


@dataclass(frozen=True)
class TargetIdentity:
    """What a run's manifest says of its target, as far as the history files a run
    under it (:func:`tkbench.history.entry.legacy_serial`): each may be missing in a
    manifest of an older tkbench."""

    spec: str | None = None
    kind: str | None = None  # file | block | nbd
    path: str | None = None


@dataclass(frozen=True)
class ManifestTarget:
    """The ``target`` of a manifest.json read as it is (not through its record: an
    upgrade of the history reads the manifests of runs of every age)."""

    target: TargetIdentity | None = None


def figures(cls: type[R], data: Any, where: Path, column: str) -> dict[str, R] | None:
    """A JSON object of figures by key (the repeats or volume column) as records;
    None for a null column."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise RunDirError(f"{where}: field {column} is not a JSON object")
    return {key: build(cls, fig, where, f"{column}.{key}.") for key, fig in data.items()}


def figures_json(parts: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Figures by key as the JSON the history keeps of them."""
    return None if parts is None else {key: dump(fig) for key, fig in parts.items()}


def loads(text: str | None) -> Any:
    """A JSON text column: None when it is null or empty."""
    return json.loads(text) if text else None
