"""The comparison PDF of several runs (``tkbench compare RUN... --out FILE.pdf``).

:mod:`tkbench.compare` computes the table rows (the same points of every run,
their measurement-window values through :mod:`tkbench.measure`, deltas in %
against run 1) and the conditions in which runs differ.  This module adds what
the figures need -- each run's tests analysed exactly as its own report
analyses them (:func:`.analysis.test_report`) -- and the headline numbers side
by side.  Pure: :mod:`.render` draws the figures and lays the document out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .. import compare as cmp
from ..store import RunData
from . import analysis, fmt, header
from .model import Row, TestReport
from .records import as_dict, num


@dataclass(frozen=True)
class RunColumn:
    """One compared run, as its column heading and its line in the runs table."""

    number: int
    label: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Line:
    """One row of a comparison table: a value per run and a delta per run 2..n."""

    label: str  # the point ("4k 0/100") or the summary quantity ("4k random")
    quantity: str  # what the values are, with their unit: "IOPS", "write, MB/s"
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]  # % against run 1, for runs 2..n
    higher_is_better: bool


@dataclass(frozen=True)
class Section:
    """One test, compared: its rows, its differing conditions, each run's analysis."""

    test: str
    title: str
    lines: tuple[Line, ...]
    differences: tuple[str, ...]
    reports: tuple[TestReport | None, ...]  # per run; None: the run lacks the test
    higher_is_better: bool


@dataclass(frozen=True)
class Comparison:
    title: str
    generated: float
    runs: tuple[RunColumn, ...]
    headlines: tuple[Line, ...]
    sections: tuple[Section, ...]
    alerts: tuple[str, ...]
    flag: str


QUANTITIES = {
    "iops": "IOPS",
    "bw": "MB/s",
    "lat_mean": "mean response time, ms",
    "p99.99": "99.99 % response time, ms",
}


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _deltas(values: Sequence[float | None]) -> tuple[float | None, ...]:
    base = values[0]
    return tuple(
        (v - base) / abs(base) * 100.0 if v is not None and base else None for v in values[1:]
    )


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


def analysed_tests(run: RunData) -> dict[str, TestReport]:
    """Every test of ``run`` that has rounds, analysed as the run's own report does."""
    m = run.manifest
    target = as_dict(m.get("target"))
    status, error = str(m.get("status", "unknown")), str(m.get("error") or "")
    capacity = int(num(target.get("capacity_bytes")))
    return {
        t.name: analysis.test_report(t, status, error, capacity, str(target.get("kind", "")))
        for t in run.tests
        if t.rounds
    }


def headline_lines(
    runs: Sequence[RunData], analysed: Sequence[dict[str, TestReport]]
) -> tuple[Line, ...]:
    """The summary numbers of every run (4k random IOPS, sequential MB/s, ...) side by side."""
    keyed: dict[tuple[str, str, str], list[float | None]] = {}
    for i, (run, reps) in enumerate(zip(runs, analysed, strict=True)):
        pairs = [(reps[t.name], t) for t in run.tests if t.name in reps]
        for h in analysis.headlines(pairs):
            for direction, value in (("read", h.read), ("write", h.write)):
                if _finite(value) is not None:
                    keyed.setdefault((h.label, direction, h.unit), [None] * len(runs))[i] = value
    return tuple(
        Line(label, f"{direction}, {unit}", tuple(v), _deltas(v), unit != "ms")
        for (label, direction, unit), v in keyed.items()
    )


def _difference_text(d: cmp.Difference) -> str:
    if d.condition == "ran":
        missing = [str(i) for i, v in enumerate(d.values, 1) if v == "no"]
        return f"Run{'s' if len(missing) > 1 else ''} {', '.join(missing)} did not run this test."
    shown = "; ".join(f"run {i} {v}" for i, v in enumerate(d.values, 1) if v is not None)
    return f"{d.condition}: {shown}"


def comparison_model(runs: Sequence[RunData], generated: float) -> Comparison:
    """The comparison of ``runs`` against run 1, laid out by test."""
    rows = cmp.compare(runs)
    diffs = cmp.differences(runs)
    analysed = [analysed_tests(r) for r in runs]
    by_test: dict[str, list[Line]] = {}
    for r in rows:
        values = tuple(_finite(v) for v in r.values)
        by_test.setdefault(r.test, []).append(
            Line(
                r.point,
                QUANTITIES.get(r.metric, r.metric),
                values,
                _deltas(values),
                r.metric in ("iops", "bw"),
            )
        )
    sections = []
    for name, lines in by_test.items():
        reports = tuple(a.get(name) for a in analysed)
        first = next(rep for rep in reports if rep is not None)
        sections.append(
            Section(
                test=name,
                title=first.title,
                lines=tuple(lines),
                differences=tuple(_difference_text(d) for d in diffs if d.test == name),
                reports=reports,
                higher_is_better=first.metric in ("iops", "bw"),
            )
        )
    alerts: dict[str, list[int]] = {}  # the same alert of several runs is shown once
    for i, run in enumerate(runs, 1):
        for a in header.alerts(run.manifest):
            alerts.setdefault(a, []).append(i)
    return Comparison(
        title=f"Comparison of {len(runs)} runs",
        generated=generated,
        runs=tuple(run_column(i, r) for i, r in enumerate(runs, 1)),
        headlines=headline_lines(runs, analysed),
        sections=tuple(sections),
        alerts=tuple(
            f"{'Run' if len(nums) == 1 else 'Runs'} {', '.join(map(str, nums))}: {a}"
            for a, nums in alerts.items()
        ),
        flag=comparison_flag(runs),
    )
