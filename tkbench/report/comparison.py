"""The comparison PDF of several runs (``tkbench compare RUN... --out FILE.pdf``).

:mod:`tkbench.outputs.compare` computes the table rows (the same points of every run,
their measurement-window values through :mod:`tkbench.analysis`, deltas in %
against run 1) and the conditions in which runs differ.  This module adds what
the figures need -- each run's tests analysed exactly as its own report
analyses them (:func:`.analysis.test_report`) -- and the headline numbers side
by side.  Pure: :mod:`.render` draws the figures and lays the document out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tkbench.kinds.results.analysed import AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.outputs import compare as cmp
from tkbench.report import analysis, fmt, header
from tkbench.report.model import Row, TestReport
from tkbench.rundir.store import RunData
from tkbench.units import human_bytes


@dataclass(frozen=True)
class RunColumn:
    """One compared run, as its column heading and its line in the runs table."""

    number: int
    label: str
    rows: tuple[Row, ...]
    directory: str = ""


@dataclass(frozen=True)
class Line:
    """One row of a comparison table: a value per run and a delta per run 2..n."""

    label: str  # the point ("4k 0/100") or the summary quantity ("4k random")
    quantity: str  # what the values are, with their unit: "IOPS", "write, MB/s"
    values: tuple[float | None, ...]
    deltas: tuple[float | None, ...]  # % against run 1, for runs 2..n
    higher_is_better: bool
    beyond: tuple[bool | None, ...] = ()  # per delta: larger than the noise (None: no delta)
    caveat: bool = False  # a value comes from a test that did not reach steady state
    outliers: tuple[bool, ...] = ()  # per run: far from all runs' median (compare.outliers)
    # per delta of a repeated point: the runs' noise, half the 95 % interval of the
    # difference of the means in % (None: unknown); empty for other points
    noise: tuple[float | None, ...] = ()

    @property
    def any_outlier(self) -> bool:
        return any(self.outliers)


@dataclass(frozen=True)
class Verdict:
    """How one run fared against run 1 in one test, point by point."""

    test: str
    run: int
    better: int
    worse: int
    within_noise: int
    caveat: str  # "" or why the numbers may not compare (steady state, conditions)


@dataclass(frozen=True)
class Section:
    """One test, compared: its rows, its differing conditions, each run's analysis."""

    test: str
    title: str
    lines: tuple[Line, ...]
    differences: tuple[str, ...]
    reports: tuple[TestReport | None, ...]  # per run; None: the run lacks the test
    higher_is_better: bool
    caveats: tuple[str, ...] = ()  # runs not at steady state, unfinished tests
    verdicts: tuple[Verdict, ...] = ()  # one per run 2..n that has the test


@dataclass(frozen=True)
class Comparison:
    title: str
    generated: float
    runs: tuple[RunColumn, ...]
    headlines: tuple[Line, ...]
    sections: tuple[Section, ...]
    verdicts: tuple[Verdict, ...]
    alerts: tuple[str, ...]
    flag: str
    run_differences: tuple[str, ...] = ()  # target kind, capacity, fio version


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _deltas(values: Sequence[float | None]) -> tuple[float | None, ...]:
    base = values[0]
    return tuple(
        (v - base) / abs(base) * 100.0 if v is not None and base else None for v in values[1:]
    )


def run_column(number: int, run: RunData) -> RunColumn:
    m = run.manifest
    device = m.target.device
    label = f"{header.text_or(device.model)} ({run.root.name})"
    return RunColumn(
        number=number,
        label=label,
        rows=(
            Row("Device", header.text_or(device.model)),
            Row("Serial", header.text_or(device.serial)),
            Row("Firmware", header.text_or(device.firmware)),
            Row(
                "Capacity",
                human_bytes(float(m.target.capacity_bytes), decimal=True),
            ),
            Row("Profile", header.text_or(m.profile.name)),
            Row("Started", fmt.when(m.started or None)),
            Row("Status", header.text_or(m.status)),
        ),
        directory=str(run.root),
    )


def comparison_flag(runs: Sequence[RunData]) -> str:
    """The page-header warning when any compared run is synthetic, emulated or unfinished."""
    parts = []
    if any(header.is_synthetic(r.manifest) for r in runs):
        parts.append("INCLUDES SYNTHETIC DATA")
    if any(header.is_emulated(r.manifest) for r in runs):
        parts.append("INCLUDES AN EMULATED DRIVE")
    if any(r.manifest.status != "complete" for r in runs):
        parts.append("INCLUDES UNFINISHED RUNS")
    return " · ".join(parts)


def analysed_tests(run: RunData | AnalysedRun) -> dict[str, TestReport]:
    """Every test of ``run`` that has rounds, analysed as the run's own report does
    (each on its own: :func:`analyse_run` ``alone``)."""
    ar = run if isinstance(run, AnalysedRun) else analyse_run(run, alone=True)
    m = ar.run.manifest
    return {
        a.name: analysis.test_report(a, m.status, m.error or "", m.target.capacity_bytes)
        for a in ar.tests
        if a.test.rounds
    }


def headline_lines(
    runs: Sequence[AnalysedRun], analysed: Sequence[dict[str, TestReport]]
) -> tuple[Line, ...]:
    """The summary numbers of every run (4k random IOPS, sequential MB/s, ...) side by
    side, each run's outliers among them marked."""
    keyed: dict[tuple[str, str, str], list[float | None]] = {}
    unsteady: set[tuple[str, str, str]] = set()
    for i, (run, reps) in enumerate(zip(runs, analysed, strict=True)):
        triples = [(reps[a.name], a.test, a.analysis) for a in run.tests if a.name in reps]
        for h in analysis.headlines(triples):
            for direction, value in (("read", h.read), ("write", h.write)):
                if _finite(value) is not None:
                    key = (h.label, direction, h.unit)
                    keyed.setdefault(key, [None] * len(runs))[i] = value
                    if h.steady is False:
                        unsteady.add(key)
    out = []
    for key, v in keyed.items():
        label, direction, unit = key
        deltas = _deltas(v)
        beyond = tuple(None if d is None else abs(d) >= cmp.MIN_DELTA for d in deltas)
        out.append(
            Line(
                label,
                f"{direction}, {unit}",
                tuple(v),
                deltas,
                unit != "ms",
                beyond,
                key in unsteady,
                cmp.outliers(v),
            )
        )
    return tuple(out)


def _caveats(reports: Sequence[TestReport | None]) -> tuple[str, ...]:
    """Why some runs' values of a test are weaker evidence than a steady-state window."""
    out = []
    for i, rep in enumerate(reports, 1):
        if rep is None:
            continue
        if rep.steady is False:
            out.append(
                f"Run {i} did not reach steady state: its values are the means of "
                f"{rep.window_basis.replace('mean of ', '')}, not of a steady-state window."
            )
        if rep.status != "complete":
            out.append(f"Run {i}: the test is {rep.status} ({rep.status_text}).")
    return tuple(out)


def _verdicts(
    test: str,
    lines: Sequence[Line],
    reports: Sequence[TestReport | None],
    caveats: Sequence[str],
    differences: Sequence[str],
) -> tuple[Verdict, ...]:
    out = []
    for k in range(1, len(reports)):
        if reports[k] is None or reports[0] is None:
            continue
        better = worse = noise = 0
        for line in lines:
            d, beyond = line.deltas[k - 1], line.beyond[k - 1]
            if d is None or beyond is None:
                continue
            if not beyond:
                noise += 1
            elif (d > 0) == line.higher_is_better:
                better += 1
            else:
                worse += 1
        why = []
        steady = [i for i in (1, k + 1) if (rep := reports[i - 1]) and rep.steady is False]
        if steady:
            why.append(f"run {' and '.join(map(str, steady))} not at steady state")
        if differences:
            why.append("conditions differ")
        out.append(Verdict(test, k + 1, better, worse, noise, "; ".join(why)))
    return tuple(out)


def _difference_text(d: cmp.Difference) -> str:
    if d.condition == "ran":
        missing = [str(i) for i, v in enumerate(d.values, 1) if v == "no"]
        return f"Run{'s' if len(missing) > 1 else ''} {', '.join(missing)} did not run this test."
    shown = "; ".join(f"run {i} {v}" for i, v in enumerate(d.values, 1) if v is not None)
    return f"{d.condition}: {shown}"


def comparison_model(runs: Sequence[RunData], generated: float) -> Comparison:
    """The comparison of ``runs`` against run 1, laid out by test."""
    ars = [analyse_run(r, alone=True) for r in runs]  # each result computed once
    rows = cmp.compare(ars)
    diffs = cmp.differences(runs)
    analysed = [analysed_tests(ar) for ar in ars]
    by_test: dict[str, list[Line]] = {}
    for r in rows:
        values = tuple(_finite(v) for v in r.values)
        by_test.setdefault(r.test, []).append(
            Line(
                r.point,
                r.quantity,
                values,
                _deltas(values),
                r.higher_is_better,
                r.beyond_noise(),
                noise=r.noise_pct()[1:] if r.repeats else (),
            )
        )
    sections = []
    for name, lines in by_test.items():
        reports = tuple(a.get(name) for a in analysed)
        first = next(rep for rep in reports if rep is not None)
        differences = tuple(_difference_text(d) for d in diffs if d.test == name)
        caveats = _caveats(reports)
        sections.append(
            Section(
                test=name,
                title=first.title,
                lines=tuple(lines),
                differences=differences,
                reports=reports,
                higher_is_better=first.metric in ("iops", "bw"),
                caveats=caveats,
                verdicts=_verdicts(name, lines, reports, caveats, differences),
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
        headlines=headline_lines(ars, analysed),
        sections=tuple(sections),
        verdicts=tuple(v for sec in sections for v in sec.verdicts),
        run_differences=tuple(_difference_text(d) for d in diffs if d.test == cmp.RUN_LEVEL),
        alerts=tuple(
            f"{'Run' if len(nums) == 1 else 'Runs'} {', '.join(map(str, nums))}: {a}"
            for a, nums in alerts.items()
        ),
        flag=comparison_flag(runs),
    )
