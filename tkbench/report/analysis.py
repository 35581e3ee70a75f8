"""A stored run -> the report model (pure: no I/O, no clock, no plotting).

Every number of the report is derived from the run directory's records
(``load_run``) by :mod:`tkbench.analysis`, never from raw fio output:

* the **measurement window** of a steady-state test is the window of its
  steady-state determination: the last ``window`` rounds of the last segment
  (the rounds in which steady state was reached, or, when it was not, the
  last rounds run, shown and marked as such);
* a **window value** of a workload point is the arithmetic mean of the
  per-round values over the window rounds; maximum response times are the
  maximum; percentiles are read from the window's merged latency histograms
  (or, without histograms, the largest per-round value), never averaged;
* tracking variables and steady-state verdicts are recomputed from the stored
  per-round values with :func:`tkbench.analysis.segment_verdicts`, the same code
  that decided when the run stopped.

The parts of a test's chapter live beside this module: :mod:`.sections` (what
each kind of test shows), :mod:`.tables`, :mod:`.rounds`, :mod:`.saturation`,
:mod:`.headlines`, :mod:`.procedure`, :mod:`.header`.

Units: IOPS; MB/s = 10⁶ bytes/s; ms; GB = 10⁹ bytes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tkbench.conformance import judge_run
from tkbench.kinds import of_plan
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.report import header, saturation
from tkbench.report.headlines import headlines
from tkbench.report.labels import anchor, primary_metric, tracking_of
from tkbench.report.model import (
    COMPLETE,
    FAILED,
    INCOMPLETE,
    INTERRUPTED,
    CheckRow,
    Report,
    TestReport,
)
from tkbench.report.options import ReportOptions
from tkbench.report.parts import part_of, section_for
from tkbench.report.procedure import health_rows, outcome, parameters
from tkbench.report.repeats import recipe_table, repeat_part
from tkbench.report.rounds import convergence, determination, queue_check, round_rows
from tkbench.report.tables import (
    blank_note,
    histograms,
    latency_rows,
    matrices_for,
    percentile_names,
)
from tkbench.report.workload import rwsw_warnings
from tkbench.rundir.records import Checks
from tkbench.rundir.store import RunData, TestData
from tkbench.vocab import metric as metric_of


def test_status(t: TestData, run_status: str, error: str) -> tuple[str, str]:
    if t.result is not None:
        return COMPLETE, "complete"
    n = len(t.rounds)
    have = f"{n} complete round{'s' if n != 1 else ''} shown"
    if t.parts:
        have += f" ({t.parts} of {len(t.plan.points)} parts of its round stored, kept for a resume)"
    if run_status == "failed":
        why = f": {error}" if error else ""
        return FAILED, f"FAILED{why}. {have}."
    if run_status == "interrupted":
        return INTERRUPTED, f"INTERRUPTED before the test finished; {have}."
    return (
        INCOMPLETE,
        f"INCOMPLETE: no result was recorded (the run was still running or was killed); {have}.",
    )


def test_report(analysed: Analysed, run_status: str, error: str, capacity: int) -> TestReport:
    """One test's chapter, from the test's results (each computed once; a stage's
    chapter reads the stages before it through them, ``stage_of``; its ``target``: the
    drive's temperature limits, none without one)."""
    t, plan, a = analysed.test, analysed.plan, analysed.analysis
    verdicts, window, records, means = a.verdicts, a.window, a.records, a.means
    metric = primary_metric(plan)
    status, status_text = test_status(t, run_status, error)
    section = section_for(plan)
    steady, verdict, basis = section.verdict(plan, verdicts, window, len(t.rounds))
    conv_title, conv = convergence(plan, t.rounds, metric)
    conv_title = section.convergence_title(plan, conv_title)
    sat = section.saturation(plan, t.rounds, capacity)
    if sat is not None:
        verdict = saturation.verdict(sat)
    names = percentile_names(plan, means) if metric == "lat_mean" else ()
    own = of_plan(plan).own_tables  # cells of their own tables (.sweep, .vfile), not points
    per_point = section.per_point and not own
    tables = section.matrices and not own
    latency = latency_rows(plan, means, names) if metric == "lat_mean" and tables else ()
    queue_note, queue_warn = queue_check(plan, records) if tables else ("", False)
    repeat = repeat_part(analysed)
    if repeat is not None and repeat.until:
        verdict = f"{verdict} {repeat.until}"
    stage = section.stage(analysed)
    if stage is not None and stage.summary and t.rounds:
        verdict = stage.summary
    tracking = tracking_of(plan)
    notes = list(plan.notes)
    if t.purge:
        notes += [f"Purge: {n}" for n in t.purge.notes]
    return TestReport(
        name=t.name,
        title=plan.title or t.name,
        kind=plan.kind,
        anchor=anchor(t.name),
        metric=metric,
        unit=metric_of(metric).unit,
        status=status,
        status_text=status_text,
        steady=steady,
        verdict=verdict,
        window=tuple(window),
        window_basis=basis,
        procedure=(*section.procedure(plan), outcome(t, capacity)),
        parameters=parameters(t, capacity),
        tracking=tuple(x.label for x in tracking),
        tracking_units=tuple(x.unit for x in tracking),
        convergence=conv if per_point else (),
        convergence_title=conv_title,
        determinations=tuple(determination(k, v) for k, v in verdicts.items())
        if section.determinations
        else (),
        rounds=round_rows(plan, t.rounds, window) if per_point else (),
        matrices=matrices_for(metric, plan, means) if tables else (),
        percentile_names=names,
        latency=latency,
        latency_blank_note=blank_note(latency, names),
        histograms=histograms(plan, records, means) if plan.histogram and tables else (),
        saturation=sat,
        health=health_rows(t.health_before, t.health_after),
        notes=tuple(notes),
        queue_note=queue_note,
        queue_warn=queue_warn,
        responses=section.responses(plan, t.rounds, capacity),
        temperature=analysed.temperature,
        response_histogram=analysed.histogram,
        stage=stage,
        hosts=analysed.hosts,
        repeat=repeat,
        **part_of(plan).fields(analysed),
    )


def analyze(
    run: RunData, options: ReportOptions, generated: float, analysed: AnalysedRun | None = None
) -> Report:
    """The whole report model of a run (``generated``: the report's timestamp;
    ``analysed``: the run's results when the caller has them, made here if not)."""
    m = run.manifest
    run_status = m.status
    error = m.error or ""
    capacity = m.target.capacity_bytes
    ar = analysed if analysed is not None else analyse_run(run)
    judged = judge_run(run, run.write_cache)  # once: the title, page 1, the set-up, badges
    rules = header.steady_rules(judged)
    triples = [
        (replace(rep, steady_rule=rules.get(rep.name, "")), a.test, a.analysis)
        for a in ar.tests
        if (rep := test_report(a, run_status, error, capacity))
    ]
    tests = tuple(p[0] for p in triples)
    present = {t.name for t in run.tests}
    return Report(
        title=header.document_title(options.title, judged),
        operator=options.operator,
        organisation=options.organisation,
        paper=options.paper,
        generated=generated,
        synthetic=header.is_synthetic(m),
        emulated=header.is_emulated(m),
        run_status=run_status,
        status_text=header.run_status_text(m),
        device_line=header.device_line(m),
        headlines=headlines(triples),
        summary=header.summary_sentences(ar, tests),
        device=header.device_rows(m),
        platform=header.platform_rows(m),
        run=header.run_rows(m, options, generated),
        setup=header.setup_rows(run, judged),
        tests=tests,
        not_run=tuple(n for n in m.tests if n not in present),
        notes=header.run_notes(m),
        run_dir=str(run.root),
        tkbench_version=m.tkbench_version or "unknown",
        alerts=header.alerts(m),
        warnings=header.warnings(run, tests) + heat_warnings(tests) + rwsw_warnings(run),
        flag=header.flag(m),
        pts=header.pts_claim_of(judged, tuple(t.title for t in tests)),
        recipes=recipe_table(ar.tests),
        **check_rows(run.checks),
    )


def heat_warnings(tests: tuple[TestReport, ...]) -> tuple[str, ...]:
    """Page 1: a test whose drive throttled or ran hot inside its measurement window."""
    return tuple(
        w for t in tests if t.temperature is not None and (w := t.temperature.warning(t.title))
    )


def check_rows(checks: Checks | None) -> dict[str, Any]:
    """The PASS/FAIL checks stored with the run, for the report's checks chapter."""
    if not checks or not checks.checks:
        return {}
    rows = tuple(
        CheckRow(name=c.name, kind=c.kind, passed=c.passed, limit=c.limit, message=c.message)
        for c in checks.checks
    )
    return {
        "checks": rows,
        "checks_passed": all(r.passed for r in rows),
        "checks_baseline": checks.baseline or "",
    }
