"""PASS/FAIL checks of a finished run: steady state, acceptance criteria, regressions.

The result is stored in the run directory (``checks.json``), shown by the
report, written as JUnit XML on request, and decides exit code 1.
"""

from __future__ import annotations

import math
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tkbench import analysis
from tkbench.analysis.repeat import welch_noise
from tkbench.kinds.figures import unit_of, value_of
from tkbench.kinds.results.analysed import AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.profile import DEVIATION
from tkbench.profile.model import Acceptance
from tkbench.rundir.records import CheckItem, Checks
from tkbench.rundir.store import RunData, write_record
from tkbench.units import format_size

# one PASS/FAIL check, as checks.json keeps it
Check = CheckItem


def _analysed(run: RunData | AnalysedRun) -> AnalysedRun:
    return run if isinstance(run, AnalysedRun) else analyse_run(run)


def steady_checks(run: RunData | AnalysedRun) -> list[Check]:
    """Steady state of every steady-state test, as the analysis determines it from
    the stored rounds (the same verdict the report and ``show`` give)."""
    out = []
    for t in _analysed(run).tests:
        a = t.analysis
        if a.steady is None:  # a kind without a steady-state rule
            continue
        passed = bool(a.finished and a.steady)
        window = a.steady_window
        msg = (
            f"steady state in rounds {window[0]}-{window[-1]}"
            if passed
            else (
                "test did not finish" if not a.finished else f"not steady after {a.rounds} rounds"
            )
        )
        out.append(Check(f"{t.name}: steady state", "steady_state", passed, None, "reached", msg))
    return out


def criterion_checks(run: RunData | AnalysedRun, acceptance: Acceptance) -> list[Check]:
    """Each acceptance criterion against the run's results (``run``: the run, or its
    results when the caller has them)."""
    ar = _analysed(run)
    out = []
    by_name = {t.name: t for t in ar.tests}
    figures = ar.figures
    for c in acceptance.criteria:
        t = by_name.get(c.test)
        if c.mix is None:  # a volume benchmark's figure
            measured = value_of(figures, c.test, c.metric)
        elif t is None:
            measured = math.nan
        elif c.metric == DEVIATION:  # a repeated point's spread over its runs
            rep = t.repeats.get((c.bs, c.mix.read))
            spread = rep.mean_abs_dev_pct if rep is not None and len(rep.runs) > 1 else None
            measured = spread if spread is not None else math.nan
        else:
            measured = analysis.value(t.test, c.metric, c.bs, c.mix.read)
        ok = math.isfinite(measured) and c.holds(measured)
        unit = c.unit
        if math.isfinite(measured):
            msg = f"measured {measured:.4g} {unit}"
        elif c.mix is None:
            msg = f"{c.metric} of test {c.test} was not measured"
        elif c.metric == DEVIATION:
            msg = (
                f"{format_size(c.bs)} {c.mix.label} of test {c.test} has no spread: "
                "it was not measured, or not repeated (one run)"
            )
        elif t is not None and t.test.rounds and c.metric.startswith("p"):
            need = analysis.samples_needed(float(c.metric[1:]))
            msg = f"too few I/Os in the window for a {c.metric[1:]} % value (needs {need:,})"
        else:
            msg = f"{format_size(c.bs)} {c.mix.label} of test {c.test} was not measured"
        out.append(Check(c.label, "criterion", ok, measured, f"{c.op} {c.value:g}", msg))
    return out


def regression_checks(
    current: dict[str, float], baseline: dict[str, float], threshold_pct: float, baseline_name: str
) -> list[Check]:
    """Headline numbers worse than the baseline by more than ``threshold_pct`` fail."""
    out = []
    for key, now in sorted(current.items()):
        before = baseline.get(key)
        if before is None or before == 0 or not math.isfinite(before):
            continue
        delta = (now - before) / abs(before) * 100.0
        worse = -delta if analysis.better_is_higher(key) else delta
        ok = worse <= threshold_pct
        out.append(
            Check(
                f"regression: {key}",
                "regression",
                ok,
                now,
                f"within {threshold_pct:g} % of {before:.4g}",
                f"{delta:+.1f} % against {baseline_name} ({before:.4g} -> {now:.4g})",
            )
        )
    return out


@dataclass(frozen=True)
class FigureRuns:
    """A volume figure as a regression check needs it: its mean, the sample standard
    deviation of its runs (None: one run) and how many runs."""

    mean: float
    stdev: float | None
    runs: int


def run_figure_runs(run: RunData | AnalysedRun) -> dict[str, FigureRuns]:
    """The volume figures of a run directory, by history key (``"TEST NAME"``)."""
    figures = _analysed(run).figures
    return {f.key: FigureRuns(f.value, f.runs.stdev, len(f.runs.runs)) for f in figures}


def volume_regression_checks(
    current: Mapping[str, FigureRuns],
    baseline: Mapping[str, FigureRuns],
    threshold_pct: float,
    baseline_name: str,
) -> list[Check]:
    """Volume figures (MB/s, nodes/s: higher is better) lower than the baseline's by
    more than ``threshold_pct`` *and* by more than the runs' own noise fail.  The
    noise is the half width of the 95 % interval of the difference (Welch, as
    ``compare`` reads it), known when both nights repeated the test; a drop within
    it is no proven regression on a volume whose runs scatter that much."""
    out = []
    for key, now in sorted(current.items()):
        before = baseline.get(key)
        if before is None or not before.mean or not math.isfinite(before.mean):
            continue
        delta = (now.mean - before.mean) / abs(before.mean) * 100.0
        half = welch_noise(before.stdev, before.runs, now.stdev, now.runs)
        noise_pct = 100.0 * half / abs(before.mean) if half is not None else None
        beyond_noise = noise_pct is None or -delta > noise_pct
        ok = -delta <= threshold_pct or not beyond_noise
        unit = unit_of(key.split(" ", 1)[-1])
        noise = f"; noise ±{noise_pct:.1f} %" if noise_pct is not None else ""
        verdict = " (within the runs' noise)" if -delta > threshold_pct and ok else ""
        out.append(
            Check(
                f"regression: {key}",
                "regression",
                ok,
                now.mean,
                f"within {threshold_pct:g} % of {before.mean:.4g} {unit} (or within the noise)",
                f"{delta:+.1f} % against {baseline_name} "
                f"({before.mean:.4g} -> {now.mean:.4g} {unit}{noise}){verdict}",
            )
        )
    return out


def save(run_dir: Path, checks: list[Check], baseline: str | None = None) -> Checks:
    record = Checks.of(checks, evaluated=time.time(), baseline=baseline)
    write_record(Path(run_dir) / "checks.json", record)
    return record


def junit_xml(run: RunData, checks: list[Check]) -> str:
    """JUnit XML: one testcase per check, in one suite named after the run."""
    name = f"tkbench {run.manifest.profile.name} {run.manifest.target.spec}".strip()
    suite = ET.Element(
        "testsuite",
        {
            "name": name,
            "tests": str(len(checks)),
            "failures": str(sum(not c.passed for c in checks)),
            "errors": "0",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
        },
    )
    for c in checks:
        case = ET.SubElement(suite, "testcase", {"classname": f"tkbench.{c.kind}", "name": c.name})
        if not c.passed:
            fail = ET.SubElement(case, "failure", {"message": c.message, "type": c.kind})
            fail.text = f"{c.name}: {c.message} (limit {c.limit})"
        else:
            out = ET.SubElement(case, "system-out")
            out.text = c.message
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, run: RunData, checks: list[Check]) -> None:
    """The JUnit file, by the rule of every output path (:mod:`.outputs`): a FIFO or
    ``/dev/stderr`` is written in place, a run's record refused."""
    from tkbench.outputs.files import write_output

    write_output(Path(path), junit_xml(run, checks), "--junit")
