"""A stored run -> the report model (pure: no I/O, no clock, no plotting).

Every number of the report is derived here, from the JSON records of the run
directory (``load_run``), never from raw fio output:

* the **measurement window** of a steady-state test is the window of its
  steady-state determination: the last ``window`` rounds of the last segment
  (the rounds in which steady state was reached, or, when it was not, the
  last rounds run, shown and marked as such);
* a **window value** of a workload point is the arithmetic mean of the
  per-round values over the window rounds; maximum latencies are the maximum;
* tracking variables and steady-state verdicts are recomputed from the stored
  per-round values with :func:`tkbench.analysis.segment_verdicts`, the same code
  that decided when the run stopped.

Units: IOPS; MB/s = 10⁶ bytes/s; ms; GB = 10⁹ bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..analysis import TestAnalysis, analyze_run, analyze_test, samples_needed
from ..analysis.load import QUEUE_LOW, QueueShare, queue_shares, saturation_series
from ..analysis.segments import segment_of
from ..analysis.steady import Verdict
from ..analysis.window import DIRECTIONS, PointMean, find_point, merge_bins
from ..fiojson import percentile_from_bins
from ..profile import Tracking
from ..records import Checks, Round, TestPlan
from ..store import RunData, TestData
from ..units import format_size
from ..vocab import MS
from ..vocab import metric as metric_of
from . import fmt, header
from .labels import anchor, mix_caption, mix_label, primary_metric, tracking_of
from .model import (
    COMPLETE,
    FAILED,
    INCOMPLETE,
    INTERRUPTED,
    CheckRow,
    Determination,
    Headline,
    Histogram,
    LatencyRow,
    Matrix,
    Report,
    RoundRow,
    Row,
    Saturation,
    Series,
    TestReport,
)
from .options import ReportOptions
from .procedure import health_rows, outcome, parameters

HIST_BINS_PER_DECADE = 12
CONVERGENCE_MIX = 0  # PTS plots IOPS convergence of every block size at 0/100


# --------------------------------------------------------------------------- tables


def matrix(
    key: str,
    caption: str,
    unit: str,
    plan: TestPlan,
    means: Mapping[tuple[int, int], PointMean],
    value: Any,
) -> Matrix:
    """A block size x R/W mix table of ``value(point_mean)``."""
    sizes, mx = plan.block_sizes, plan.mixes
    rows = []
    for bs in sizes:
        row: list[float | None] = []
        for m in mx:
            pm = means.get((bs, m))
            v = value(pm) if pm is not None else None
            row.append(v if v is None or math.isfinite(v) else None)
        rows.append(tuple(row))
    return Matrix(
        key=key,
        caption=caption,
        unit=unit,
        row_title="Block size",
        col_title="R/W mix (% read / % write)",
        rows=tuple(format_size(b) for b in sizes),
        cols=tuple(mix_caption(m) for m in mx),
        values=tuple(rows),
    )


def matrices_for(
    metric: str, plan: TestPlan, means: Mapping[tuple[int, int], PointMean]
) -> tuple[Matrix, ...]:
    iops = matrix("iops", "IOPS", "IOPS", plan, means, lambda p: p.iops)
    bw = matrix("bw", "Throughput", "MB/s", plan, means, lambda p: p.bw_mbs)
    if metric == "iops":
        return (iops,)
    if metric == "bw":
        return (bw,)
    if metric == "lat_mean":
        return (
            matrix("lat_mean", "Mean response time", "ms", plan, means, lambda p: p.lat_mean_ms),
            matrix("lat_max", "Maximum response time", "ms", plan, means, lambda p: p.lat_max_ms),
            iops,
        )
    return (iops, bw)


def percentile_names(plan: TestPlan, means: Mapping[tuple[int, int], PointMean]) -> tuple[str, ...]:
    asked = [f"{p:g}" for p in plan.percentiles]
    if asked:
        return tuple(asked)
    found: set[str] = set()
    for pm in means.values():
        for d in pm.directions.values():
            found.update(d.percentiles_ms)
    return tuple(k for k in ("99", "99.9", "99.99", "99.999") if k in found)


def latency_rows(
    plan: TestPlan, means: Mapping[tuple[int, int], PointMean], names: Sequence[str]
) -> tuple[LatencyRow, ...]:
    rows = []
    for bs in plan.block_sizes:
        for m in plan.mixes:
            pm = means.get((bs, m))
            if pm is None:
                continue
            for direction in DIRECTIONS:
                d = pm.directions.get(direction)
                if d is None:
                    continue
                rows.append(
                    LatencyRow(
                        bs=format_size(bs),
                        mix=mix_label(m),
                        direction=direction,
                        iops=d.iops,
                        mean_ms=d.mean_ms,
                        max_ms=d.max_ms,
                        percentiles_ms=tuple(d.percentiles_ms.get(n) for n in names),
                        samples=d.samples,
                    )
                )
    return tuple(rows)


# --------------------------------------------------------------------------- histograms


def log_histogram(
    bins: Mapping[int, int], per_decade: int = HIST_BINS_PER_DECADE
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Re-bin fio's buckets onto logarithmically spaced edges in ms."""
    values = np.array(sorted(bins), dtype=float) / MS
    counts = np.array([bins[k] for k in sorted(bins)], dtype=float)
    values = np.maximum(values, 1e-6)
    lo = math.floor(math.log10(values.min()) * per_decade) / per_decade
    hi = (math.floor(math.log10(values.max()) * per_decade) + 1) / per_decade
    n = max(1, round((hi - lo) * per_decade))
    edges = np.logspace(lo, hi, n + 1)
    hist, _ = np.histogram(values, bins=edges, weights=counts)
    return tuple(float(e) for e in edges), tuple(int(c) for c in hist)


def histograms(
    plan: TestPlan,
    records: Sequence[Round],
    means: Mapping[tuple[int, int], PointMean],
) -> tuple[Histogram, ...]:
    out = []
    for bs in plan.block_sizes:
        for m in plan.mixes:
            pm = means.get((bs, m))
            if pm is None:
                continue
            for direction in DIRECTIONS:
                dirs = [
                    getattr(p, direction)
                    for r in records
                    if (p := find_point(r, bs, m)) is not None
                ]
                bins = merge_bins(dirs)
                dm = pm.directions.get(direction)
                if not bins or dm is None:
                    continue
                edges, counts = log_histogram(bins)
                out.append(
                    Histogram(
                        point=f"{format_size(bs)} {mix_label(m)}",
                        bs=format_size(bs),
                        mix=mix_label(m),
                        direction=direction,
                        edges_ms=edges,
                        counts=counts,
                        total=sum(bins.values()),
                        mean_ms=dm.mean_ms,
                        p9999_ms=percentile_from_bins(bins, 99.99) / MS,
                        max_ms=dm.max_ms,
                    )
                )
    return tuple(out)


# --------------------------------------------------------------------------- steady state


def determination(label: str, v: Verdict) -> Determination:
    try:
        unit = Tracking.parse(label).unit
    except ValueError:
        unit = ""
    return Determination(
        variable=label,
        unit=unit,
        reached=v.reached,
        reason=v.reason,
        window=v.window,
        rounds=v.rounds,
        values=v.values,
        mean=v.mean,
        excursion=v.excursion,
        allowed_excursion=v.allowed_excursion,
        max_excursion=v.max_excursion,
        excursion_ratio=v.excursion_ratio,
        slope=v.slope,
        intercept=v.intercept,
        slope_excursion=v.slope_excursion,
        allowed_slope_excursion=v.allowed_slope_excursion,
        max_slope_excursion=v.max_slope_excursion,
        slope_excursion_ratio=v.slope_excursion_ratio,
    )


def convergence(
    plan: TestPlan, rounds: Sequence[Round], metric: str
) -> tuple[str, tuple[Series, ...]]:
    """Per-round values to plot: every block size for IOPS, else every point (<= 12)."""
    tracked = {(t.bs, t.mix.read) for t in tracking_of(plan) if t.metric == metric}
    sizes, mx = plan.block_sizes, plan.mixes
    keys: list[tuple[int, int]]
    if metric == "iops" and len(sizes) > 1:
        mix = CONVERGENCE_MIX if CONVERGENCE_MIX in mx else min(m for _, m in tracked or {(0, 0)})
        keys = [(bs, mix) for bs in sizes]
        keys += [k for k in sorted(tracked, reverse=True) if k not in keys]
        title = f"{metric_of(metric).unit} of every block size at {mix_label(mix)} per round"
    elif len(sizes) * len(mx) <= 12:
        keys = [(bs, m) for bs in sizes for m in mx]
        title = f"{metric_of(metric).name} ({metric_of(metric).unit}) of every point per round"
    else:
        keys = sorted(tracked, reverse=True)
        title = f"Tracking variables ({metric_of(metric).unit}) per round"
    series = []
    for bs, m in keys:
        xs, ys = [], []
        for r in rounds:
            p = find_point(r, bs, m)
            if p is not None:
                xs.append(float(r.round))
                ys.append(metric_of(metric).read(p))
        if xs:
            series.append(
                Series(
                    label=f"{format_size(bs)} {mix_label(m)}",
                    x=tuple(xs),
                    y=tuple(ys),
                    emphasis=(bs, m) in tracked,
                )
            )
    return title, tuple(series)


def round_rows(
    plan: TestPlan, rounds: Sequence[Round], window: Sequence[int]
) -> tuple[RoundRow, ...]:
    labels = plan.tracking
    seg = max((segment_of(r) for r in rounds), default=1)
    wanted = set(window)
    rows = []
    for r in rounds:
        rows.append(
            RoundRow(
                number=r.round,
                segment=segment_of(r),
                started=r.started,
                seconds=r.ended - r.started,
                values=tuple(r.tracking.get(k) for k in labels),
                written_bytes=int(r.written_bytes),
                in_window=segment_of(r) == seg and r.round in wanted,
            )
        )
    return tuple(rows)


# --------------------------------------------------------------------------- Little's law


def pct(fraction: float) -> str:
    return f"{fraction * 100:.0f} %"


def queue_check(plan: TestPlan, records: Sequence[Round]) -> tuple[str, bool]:
    """The sentence of the Little's-law check (:func:`tkbench.analysis.load.queue_shares`)
    over the window, and whether it is a warning."""
    found = queue_shares(plan, records)
    if not found:
        return "", False

    def label(q: QueueShare) -> str:
        return f"{format_size(q.bs)} {mix_label(q.read_pct)}"

    lo, hi = found[0].share, found[-1].share
    queue_text = " or ".join(str(q) for q in sorted({q.queue for q in found}))
    kept = f"{pct(lo)}" if pct(lo) == pct(hi) else f"{pct(lo)} to {pct(hi)}"
    text = (
        "Little's law check: IOPS × mean response time is the number of I/Os in flight. "
        f"Over the measurement window the points kept {kept} of the {queue_text} "
        "outstanding I/Os fio was given (jobs × queue depth)"
    )
    low = [f"{label(q)} ({pct(q.share)})" for q in found if q.low]
    if low:
        more = f" and {len(low) - 5} more" if len(low) > 5 else ""
        text += (
            f". Below {pct(QUEUE_LOW)}: {', '.join(low[:5])}{more}; there the host (CPU, "
            "interrupt handling or the I/O engine), not the drive, may have limited the rate"
        )
    if found[-1].high:
        text += (
            ". Above 100 %, IOPS and response times disagree: check fio's raw output of "
            f"{label(found[-1])}"
        )
    return text + ".", bool(low) or found[-1].high


# --------------------------------------------------------------------------- saturation


def saturation(plan: TestPlan, rounds: Sequence[Round], capacity: int) -> Saturation | None:
    """IOPS and latency of the write-saturation point, per round
    (:func:`tkbench.analysis.load.saturation_series`), with its summary table."""
    series = saturation_series(plan, rounds)
    if series is None:
        return None
    sat = Saturation(
        point=f"{format_size(series.bs)} {mix_label(series.read_pct)}",
        minutes=series.minutes,
        written_gb=tuple(b / fmt.GB for b in series.written_bytes),
        iops=series.iops,
        lat_mean_ms=series.lat_mean_ms,
        lat_max_ms=series.lat_max_ms,
        capacity_bytes=capacity,
        final_rounds=series.final_rounds,
        final_iops=series.final_iops,
        final_lat_ms=series.final_lat_ms,
        rows=(),
    )
    runtime = plan.points[0].runtime
    return replace(sat, rows=saturation_rows(sat, series.rounds, runtime))


def saturation_rows(sat: Saturation, nums: Sequence[int], runtime: float) -> tuple[Row, ...]:
    written = sat.written_gb[-1] * fmt.GB
    peak = int(np.argmax(sat.iops))
    times = (
        f" = {written / sat.capacity_bytes:.2f}× the user capacity" if sat.capacity_bytes else ""
    )
    final = fmt.rounds_phrase(sat.final_rounds)
    return (
        Row("Rounds", f"{len(sat.iops):,} of {fmt.duration(runtime)} each"),
        Row("Test duration", fmt.duration(sat.minutes[-1] * 60.0)),
        Row("Data written", f"{fmt.gb(written)}{times}"),
        Row("IOPS, first round", fmt.sig(sat.iops[0])),
        Row("IOPS, highest round", f"{fmt.sig(sat.iops[peak])} (round {nums[peak]})"),
        Row(f"IOPS, mean of {final}", fmt.sig(sat.final_iops)),
        Row("Mean response time, first round", f"{fmt.sig(sat.lat_mean_ms[0])} ms"),
        Row(f"Mean response time, mean of {final}", f"{fmt.sig(sat.final_lat_ms)} ms"),
        Row("Maximum response time, whole test", f"{fmt.sig(max(sat.lat_max_ms))} ms"),
    )


# --------------------------------------------------------------------------- status


def test_status(t: TestData, run_status: str, error: str) -> tuple[str, str]:
    if t.result is not None:
        return COMPLETE, "complete"
    n = len(t.rounds)
    have = f"{n} complete round{'s' if n != 1 else ''} shown"
    if run_status == "failed":
        why = f": {error}" if error else ""
        return FAILED, f"FAILED{why}. {have}."
    if run_status == "interrupted":
        return INTERRUPTED, f"INTERRUPTED before the test finished; {have}."
    return (
        INCOMPLETE,
        f"INCOMPLETE: no result was recorded (the run was still running or was killed); {have}.",
    )


def steady_verdict(
    plan: TestPlan, verdicts: Mapping[str, Verdict], window: Sequence[int], n: int
) -> tuple[bool | None, str, str]:
    """(steady?, one sentence for a customer, the basis of the window values)."""
    kind = plan.kind
    if kind != "steady":
        if kind == "fixed":
            return (
                None,
                f"{n} repetition(s); values are means over all of them.",
                (f"mean of rounds {fmt.rounds(list(window))}"),
            )
        return None, "", f"mean of the last rounds {fmt.rounds(list(window))}"
    if not verdicts:
        return False, "No round was completed: steady state was not determined.", "no rounds"
    reached = all(v.reached for v in verdicts.values())
    limit = plan.rounds.max
    span = fmt.rounds(list(window))
    if reached:
        return (
            True,
            f"Steady state reached in rounds {span} (after {n} round{'s' if n != 1 else ''}).",
            f"mean of rounds {span} (steady state)",
        )
    why = "; ".join(f"{k}: {v.reason}" for k, v in verdicts.items() if v.reason)
    return (
        False,
        f"Steady state NOT reached after {n} of at most {limit} rounds ({why}). The values "
        f"shown are means over the last rounds {span} and do not describe steady-state "
        "performance.",
        f"mean of rounds {span} (NOT steady state)",
    )


# --------------------------------------------------------------------------- tests


def test_report(
    t: TestData,
    run_status: str,
    error: str,
    capacity: int,
    analysis: TestAnalysis | None = None,
) -> TestReport:
    plan = t.plan
    a = analysis if analysis is not None else analyze_test(t)
    verdicts, window, records, means = a.verdicts, a.window, a.records, a.means
    metric = primary_metric(plan)
    status, status_text = test_status(t, run_status, error)
    steady, verdict, basis = steady_verdict(plan, verdicts, window, len(t.rounds))
    conv_title, conv = convergence(plan, t.rounds, metric)
    kind = plan.kind
    sat = saturation(plan, t.rounds, capacity) if kind == "saturation" else None
    if sat is not None:
        verdict = _saturation_verdict(sat)
    names = percentile_names(plan, means) if metric == "lat_mean" else ()
    queue_note, queue_warn = queue_check(plan, records) if kind != "saturation" else ("", False)
    tracking = tracking_of(plan)
    notes = list(plan.notes)
    if t.purge:
        notes += [f"Purge: {n}" for n in t.purge.notes]
    return TestReport(
        name=t.name,
        title=plan.title or t.name,
        kind=kind,
        anchor=anchor(t.name),
        metric=metric,
        unit=metric_of(metric).unit,
        status=status,
        status_text=status_text,
        steady=steady,
        verdict=verdict,
        window=tuple(window),
        window_basis=basis,
        procedure=(outcome(t, capacity),),
        parameters=parameters(t, capacity),
        tracking=tuple(x.label for x in tracking),
        tracking_units=tuple(x.unit for x in tracking),
        convergence=conv if kind != "saturation" else (),
        convergence_title=conv_title,
        determinations=tuple(determination(k, v) for k, v in verdicts.items())
        if kind == "steady"
        else (),
        rounds=round_rows(plan, t.rounds, window) if kind != "saturation" else (),
        matrices=matrices_for(metric, plan, means) if kind != "saturation" else (),
        percentile_names=names,
        latency=latency_rows(plan, means, names) if metric == "lat_mean" else (),
        histograms=histograms(plan, records, means) if plan.histogram else (),
        saturation=sat,
        health=health_rows(t.health_before, t.health_after),
        notes=tuple(notes),
        queue_note=queue_note,
        queue_warn=queue_warn,
    )


def _saturation_verdict(sat: Saturation) -> str:
    n = len(sat.iops)
    written = sat.written_gb[-1] * fmt.GB
    times = f" ({written / sat.capacity_bytes:.2f}× the capacity)" if sat.capacity_bytes else ""
    bs = sat.point.split()[0]
    return (
        f"{n:,} round{'s' if n != 1 else ''} wrote {fmt.gb(written)}{times}. {bs} random-write "
        f"IOPS went from {fmt.sig(sat.iops[0])} in the first round to "
        f"{fmt.sig(sat.final_iops)} (mean of {fmt.rounds_phrase(sat.final_rounds)})."
    )


# --------------------------------------------------------------------------- headlines


def headlines(
    tests: Sequence[tuple[TestReport, TestData, TestAnalysis]],
) -> tuple[Headline, ...]:
    """The summary's numbers: 4k random IOPS, sequential MB/s, 4k QD1 latency, WSAT."""
    out: list[Headline] = []
    for rep, t, a in tests:
        if not t.rounds:
            continue
        if rep.saturation is not None:
            out.extend(_saturation_headlines(rep, _load_detail(t.plan)))
            continue
        out.extend(_test_headlines(rep, t.plan, a.means))
    return tuple(out)


def _load_detail(plan: TestPlan) -> str:
    jobs, qd = plan.workload.numjobs, plan.workload.iodepth
    if jobs == 1 and qd == 1:
        return "QD 1, 1 job"
    return f"{jobs} jobs × QD {qd}"


def _headline_bs(sizes: Sequence[int]) -> int | None:
    """4k when the test has it (PTS's headline size), else its smallest block size."""
    if not sizes:
        return None
    return 4096 if 4096 in sizes else min(sizes)


def _test_headlines(
    rep: TestReport, plan: TestPlan, means: Mapping[tuple[int, int], PointMean]
) -> list[Headline]:
    sizes = plan.block_sizes
    detail = _load_detail(plan)

    def line(label: str, bs: int, unit: str, value: Any) -> Headline:
        r, w = means.get((bs, 100)), means.get((bs, 0))
        return Headline(
            label=label,
            read=value(r, "read") if r else None,
            write=value(w, "write") if w else None,
            unit=unit,
            detail=detail,
            basis=rep.window_basis,
            steady=rep.steady,
            anchor=rep.anchor,
        )

    if rep.metric == "bw":
        return [
            line(f"{format_size(bs)} sequential", bs, "MB/s", lambda p, _d: p.bw_mbs)
            for bs in sorted(sizes, reverse=True)
        ]
    bs = _headline_bs(sizes)
    if bs is None:
        return []
    name = f"{format_size(bs)} random"
    if rep.metric == "iops":
        return [line(name, bs, "IOPS", lambda p, _d: p.iops)]
    if rep.metric == "lat_mean":

        def p9999(p: PointMean, direction: str) -> float | None:
            d = p.directions.get(direction)
            return d.percentiles_ms.get("99.99") if d else None

        tail = line(f"{name}, 99.99 % response time", bs, "ms", p9999)
        if tail.read is None or tail.write is None:
            need = samples_needed(99.99)
            tail = replace(
                tail,
                basis=f"{tail.basis}; a dash: fewer than {need:,} I/Os in the window, "
                "too few for a 99.99 % value",
            )
        return [line(f"{name}, mean response time", bs, "ms", lambda p, _d: p.lat_mean_ms), tail]
    return []


def _saturation_headlines(rep: TestReport, detail: str) -> list[Headline]:
    sat = rep.saturation
    assert sat is not None
    written = sat.written_gb[-1] * fmt.GB
    times = f" = {written / sat.capacity_bytes:.2f}× capacity" if sat.capacity_bytes else ""
    name = sat.point.split()[0]

    def line(label: str, value: float, basis: str) -> Headline:
        return Headline(label, None, value, "IOPS", detail, basis, None, rep.anchor)

    return [
        line(f"{name} random write saturation, fresh", sat.iops[0], "first round"),
        line(
            f"{name} random write saturation, end",
            sat.final_iops,
            f"mean of {fmt.rounds_phrase(sat.final_rounds)}, "
            f"after {fmt.gb(written)} written{times}",
        ),
    ]


def analyze(run: RunData, options: ReportOptions, generated: float) -> Report:
    """The whole report model of a run (``generated``: the report's timestamp)."""
    m = run.manifest
    run_status = m.status
    error = m.error or ""
    capacity = m.target.capacity_bytes
    analysed = analyze_run(run)
    triples = [
        (test_report(t, run_status, error, capacity, a), t, a)
        for t, a in zip(run.tests, analysed.tests, strict=True)
    ]
    tests = tuple(p[0] for p in triples)
    present = {t.name for t in run.tests}
    return Report(
        title=options.title,
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
        summary=header.summary_sentences(run, tests),
        device=header.device_rows(m),
        platform=header.platform_rows(m),
        run=header.run_rows(m, options, generated),
        setup=header.setup_rows(run),
        tests=tests,
        not_run=tuple(n for n in m.tests if n not in present),
        notes=header.run_notes(m),
        run_dir=str(run.root),
        tkbench_version=m.tkbench_version or "unknown",
        alerts=header.alerts(m),
        warnings=header.warnings(run, tests),
        flag=header.flag(m),
        pts=header.pts_claim(run),
        **check_rows(run.checks),
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
