"""PASS/FAIL checks of a finished run: steady state, acceptance criteria, regressions.

The result is stored in the run directory (``checks.json``), shown by the
report, written as JUnit XML on request, and decides exit code 1.
"""

from __future__ import annotations

import math
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from . import analysis
from .analysis import analyze_test
from .analysis.repeat import point_repeatability
from .analysis.volfigures import run_figures, value_of
from .profile import DEVIATION, Acceptance
from .records import CheckItem, Checks
from .store import RunData, write_atomic, write_record
from .units import format_size

# one PASS/FAIL check, as checks.json keeps it
Check = CheckItem


def steady_checks(run: RunData) -> list[Check]:
    """Steady state of every steady-state test, as the analysis determines it from
    the stored rounds (the same verdict the report and ``show`` give)."""
    out = []
    for t in run.tests:
        a = analyze_test(t)
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


def criterion_checks(run: RunData, acceptance: Acceptance) -> list[Check]:
    out = []
    by_name = {t.name: t for t in run.tests}
    figures = run_figures(run)
    for c in acceptance.criteria:
        t = by_name.get(c.test)
        if c.mix is None:  # a volume benchmark's figure
            measured = value_of(figures, c.test, c.metric)
        elif t is None:
            measured = math.nan
        elif c.metric == DEVIATION:  # a repeated point's spread over its runs
            rep = point_repeatability(t.rounds).get((c.bs, c.mix.read))
            spread = rep.mean_abs_dev_pct if rep is not None and len(rep.runs) > 1 else None
            measured = spread if spread is not None else math.nan
        else:
            measured = analysis.value(t, c.metric, c.bs, c.mix.read)
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
        elif t is not None and t.rounds and c.metric.startswith("p"):
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
    write_atomic(Path(path), junit_xml(run, checks))
