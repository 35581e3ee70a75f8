"""The comparison PDF of several runs (``tkbench compare RUN... --out FILE.pdf``).

:mod:`tkbench.compare` computes the rows (the same points of every run, their
measurement-window values through :mod:`tkbench.measure`, deltas in % against
the first run); this module only lays them out, with the report's stylesheet,
escaping and URL fetcher, and writes the HTML beside the PDF.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..store import RunData
from . import fmt, header
from .model import Row


@dataclass(frozen=True)
class RunColumn:
    """One compared run, as its column heading and its line in the runs table."""

    number: int
    label: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Line:
    point: str
    metric: str
    unit: str
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]  # % against run 1, for runs 2..n


@dataclass(frozen=True)
class Section:
    test: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Comparison:
    title: str
    generated: float
    runs: tuple[RunColumn, ...]
    sections: tuple[Section, ...]
    alerts: tuple[str, ...]
    flag: str


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def run_column(number: int, run: RunData) -> RunColumn:
    m = run.manifest
    ident = header.identity(m)
    profile = m.get("profile") or {}
    label = f"{header.text_or(ident.get('model'))} ({run.root.name})"
    return RunColumn(
        number=number,
        label=label,
        rows=(
            Row("Run directory", str(run.root), mono=True),
            Row("Device", header.device_line(m)),
            Row("Profile", header.text_or(profile.get("name"))),
            Row("Started", fmt.when(float(m.get("started") or 0) or None)),
            Row("Status", header.text_or(m.get("status"))),
        ),
    )


def comparison_flag(runs: Sequence[RunData]) -> str:
    """The page-header warning when any compared run is synthetic, emulated or unfinished."""
    parts = []
    if any(header.is_synthetic(r.manifest) for r in runs):
        parts.append("INCLUDES SYNTHETIC DATA")
    if any(header.is_emulated(r.manifest) for r in runs):
        parts.append("INCLUDES AN EMULATED DRIVE")
    if any(r.manifest.get("status") != "complete" for r in runs):
        parts.append("INCLUDES UNFINISHED RUNS")
    return " · ".join(parts)


def comparison_model(runs: Sequence[RunData], rows: Sequence[Any], generated: float) -> Comparison:
    """The comparison laid out by test (``rows``: :class:`tkbench.compare.Row`)."""
    sections: dict[str, list[Line]] = {}
    for r in rows:
        sections.setdefault(str(r.test), []).append(
            Line(
                point=str(r.point),
                metric=str(r.metric),
                unit=str(r.unit),
                values=tuple(_finite(float(v)) for v in r.values),
                deltas=tuple(_finite(float(d)) for d in r.deltas()[1:]),
            )
        )
    alerts = [f"Run {i}: {a}" for i, r in enumerate(runs, 1) for a in header.alerts(r.manifest)]
    return Comparison(
        title=f"Comparison of {len(runs)} runs",
        generated=generated,
        runs=tuple(run_column(i, r) for i, r in enumerate(runs, 1)),
        sections=tuple(Section(k, tuple(v)) for k, v in sections.items()),
        alerts=tuple(alerts),
        flag=comparison_flag(runs),
    )
