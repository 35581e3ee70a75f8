"""Summaries of a stored run for people (``tkbench show``) and scripts (``--json``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tkbench.analysis import TestAnalysis
from tkbench.analysis.repeat import Repeatability
from tkbench.analysis.stoprules import kind_named
from tkbench.analysis.window import DIRECTIONS, DirMean
from tkbench.conformance import judge_run
from tkbench.conformance.pts import Judgement
from tkbench.device.cacherecord import describe as write_cache_text
from tkbench.kinds.results.analysed import Analysed, AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.kinds.words import num as _num
from tkbench.kinds.words import repeat_text as _repeat_text
from tkbench.outputs.showparts import stage_parts, test_parts
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import RunData, TestData
from tkbench.units import format_duration, human_bytes


def test_summary(a: Analysed) -> dict[str, Any]:
    """One test of the ``show --json`` document, from its results (each computed once)."""
    t, plan, ta = a.test, a.plan, a.analysis
    out: dict[str, Any] = {
        "name": t.name,
        "title": plan.title or t.name,
        "kind": ta.kind,
        "status": t.status,
        "steady_state": ta.steady,
        "rounds": ta.rounds,
        "window": list(ta.steady_window),
        "tracking": tracked(t),
        "round_numbers": [r.round for r in t.rounds],
        "segments": list(ta.segments),
        "verdicts": {k: v.to_dict() for k, v in ta.verdicts.items()},
        "purge": dump(t.purge) if t.purge is not None else None,
        "total_written_bytes": written(t),
    }
    if t.parts and not t.rounds:  # a stage run in parts, interrupted: kept for a resume
        out["parts_stored"] = t.parts
        out["parts"] = len(plan.points)
    if t.result is not None and t.result.stop_reason is not None:
        out["stop_reason"] = t.result.stop_reason
    if a.cache_states:
        out["cache"] = a.cache_states
    if plan.workload.data_pattern == "compressible":
        out["compress_percentage"] = plan.workload.compress_percentage
    own = a.type.summary(a)  # the type's own part (a sweep's cells, ...)
    if own is not None:
        out.update(own)
    elif _lists_points(a):
        out["points"] = repeat_points(a)
    if a.until is not None:  # only for tests with repeat_until: other outputs stay as they were
        out["repeat_until"] = a.until.to_dict() | {"text": a.until.sentence()}
    if plan.histogram:
        out["window_percentiles"] = window_percentiles(t, ta)
    return out


def tracked(t: TestData) -> dict[str, list[float]]:
    """Each tracking variable's value per round (rounds without it left out)."""
    tracking: dict[str, list[float]] = {label: [] for label in t.plan.tracking}
    for r in t.rounds:
        for label in tracking:
            if label in r.tracking:
                tracking[label].append(r.tracking[label])
    return tracking


def written(t: TestData) -> int:
    return int(t.rounds[-1].total_written_bytes) if t.rounds else 0


def _lists_points(a: Analysed) -> bool:
    """Whether ``show`` lists the test's repeated points: a fixed test with runs whose
    type has no part of its own."""
    return a.analysis.kind == "fixed" and bool(a.test.rounds)


def window_percentiles(t: TestData, a: TestAnalysis) -> list[dict[str, Any]]:
    """A histogram test's percentiles over the window, per point in the plan's order:
    read, write (null where the point did none) and, for a mixed point, ``combined``
    from the summed histograms (null otherwise); each with the I/Os behind it, a
    percentile too few I/Os stand behind is null."""
    asked = [f"{p:g}" for p in t.plan.percentiles]
    out = []
    for bs in t.plan.block_sizes:
        for m in t.plan.mixes:
            pm = a.means.get((bs, m))
            if pm is None:
                continue
            item: dict[str, Any] = {"bs": bs, "read_pct": m}
            for name in DIRECTIONS:
                d = pm.directions.get(name)
                item[name] = None if d is None else _direction_percentiles(d, asked)
            item["combined"] = None if pm.combined is None else pm.combined.to_dict()
            out.append(item)
    return out


def _direction_percentiles(d: DirMean, asked: list[str]) -> dict[str, Any]:
    keys = asked or list(d.percentiles_ms)
    return {
        "samples": d.samples,
        "basis": d.percentile_basis,
        "percentiles_ms": {k: d.percentiles_ms.get(k) for k in keys},
    }


def repeat_points(a: Analysed) -> list[dict[str, Any]]:
    """A fixed test's points: every run's MiB/s and their repeatability figures."""
    return [
        {"label": label, "bs": key[0], "read_pct": key[1], "unit": "MiB/s"} | rep.to_dict()
        for label, key, rep in _points(a)
    ]


def _points(a: Analysed) -> list[tuple[str, tuple[int, int], Repeatability]]:
    labels = {(p.bs, p.read_pct): p.label for p in a.plan.points}
    return [(labels.get(key, ""), key, rep) for key, rep in a.repeats.items()]


# The version of the ``show --json`` document (docs/automation.md, "The show --json
# document"): raised when a key changes its meaning or goes; new keys may come
# within a version.  1: the first versioned document (keys as before it had one).
SHOW_SCHEMA = 1


@dataclass(frozen=True)
class Shown:
    """A stored run as ``tkbench show`` has it: the run read back with its results
    (each computed once), its PTS judgement (made once) and the ``--json`` document
    made of them.  The text is rendered from the results and the judgement, never from
    the document (:func:`format_summary`): the document is an output only."""

    run: RunData
    judged: Judgement
    document: dict[str, Any]
    analysed: AnalysedRun


def shown(run: RunData, analysed: AnalysedRun | None = None) -> Shown:
    """``analysed``: the run's results, when the caller has them (made here if not)."""
    ar = analysed if analysed is not None else analyse_run(run)
    # conformance to the SNIA PTS variant the stored profile declares
    judged = judge_run(run, run.write_cache)
    return Shown(run, judged, _document(ar, judged), ar)


def run_summary(run: RunData) -> dict[str, Any]:
    """The ``show --json`` document of a stored run."""
    return shown(run).document


def _document(ar: AnalysedRun, judged: Judgement) -> dict[str, Any]:
    run = ar.run
    m = run.manifest
    staged = {a.name: stage_parts(a) for a in ar.tests}
    return {
        "schema": SHOW_SCHEMA,
        "run_dir": str(run.root),
        "status": m.status,
        "profile": m.profile.name,
        "target": m.target.spec,
        "target_identity": dict(m.target.identity),
        "tkbench_version": m.tkbench_version,
        "fio_version": m.fio_version,
        "host": m.host.hostname,
        "started": m.started,
        "ended": m.ended,
        "error": m.error,
        "resumes": [dump(r) for r in m.resumes],
        # RUN/write-cache.json as stored (null for runs made before tkbench set it)
        "write_cache": None if (wc := run.write_cache) is None else wc.to_dict(),
        "pts": judged.to_dict(),
        "tests": [{**test_summary(a), **test_parts(a), **staged[a.name]} for a in ar.tests],
    } | _procedures(run, staged)


def _procedures(run: RunData, staged: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``procedures`` only where the run has tests beyond the basic four (the output of
    other runs stays as it was)."""
    found = procedures(run, staged)
    return {"procedures": found} if found else {}


def procedures(run: RunData, staged: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{TEST: {"wait_states": [...]}, TEST: {"transitions": [...]}, TEST:
    {"operating_points": {...}}, ...}``: the stage keys of each such test, by its
    profile's test name, from its stages' parts (``staged``: by test name)."""
    out: dict[str, dict[str, Any]] = {}
    for t in run.tests:
        keep = {k: v for k, v in staged[t.name].items() if k not in ("procedure", "stage", "grid")}
        if keep:
            out.setdefault(t.plan.spec, {}).update(keep)
    return out


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def format_summary(shown: Shown) -> str:
    """``tkbench show``'s text of a run, from its results (not from its document)."""
    run = shown.run
    m = run.manifest
    device = m.target.device
    lines = [
        f"Run       {run.root}  [{m.status}]",
        f"Profile   {m.profile.name}    tkbench {m.tkbench_version}, {m.fio_version}",
        f"Target    {m.target.spec}  {device.model or ''} "
        f"{human_bytes(device.capacity_bytes or 0)}",
        f"Started   {_when(m.started)}   ended {_when(m.ended)}"
        + (f"   ({format_duration(m.ended - m.started)})" if m.ended and m.started else ""),
    ]
    lines.append(f"Cache     volatile write cache {write_cache_text(run.write_cache)}")
    pts = shown.judged.lines()
    lines.append(f"PTS       {pts[0]}")
    lines += [f"        {line}" for line in pts[1:]]
    if m.error:
        lines.append(f"Error     {m.error}")
    for r in m.resumes:
        lines.append(f"Resumed   {_when(r.at)}: test {r.test}, {r.action}")
    for a in shown.analysed.tests:
        lines.append("")
        lines += _test_lines(a)
    return "\n".join(lines)


def _test_lines(a: Analysed) -> list[str]:
    """One test's lines of ``tkbench show``."""
    t, plan, ta = a.test, a.plan, a.analysis
    window = list(ta.steady_window)
    verdict = kind_named(ta.kind).state(ta.steady, window, written(t))
    lines = [f"{plan.title or t.name} ({t.name}): {ta.rounds} round(s), {verdict} [{t.status}]"]
    if t.parts and not t.rounds:
        lines.append(
            f"  {t.parts} of {len(plan.points)} parts of its round stored "
            "(a resume goes on from them)"
        )
    heat = a.temperature
    for e in heat.window_events if heat is not None else ():
        lines.append(f"  HEAT in the window, round {e.round}: {e.what}")
    for label, values in tracked(t).items():
        v = ta.verdicts.get(label)
        tail = ", ".join(_num(x) for x in values[-8:])
        more = "... " if len(values) > 8 else ""
        lines.append(f"  {label:<22} {more}{tail}")
        if v is not None:
            lines.append(
                f"  {'':<22} window mean {_num(v.mean)}, excursion "
                f"{v.excursion_ratio:.1%} (<= {v.max_excursion:.0%}), slope excursion "
                f"{v.slope_excursion_ratio:.1%} (<= {v.max_slope_excursion:.0%})"
            )
    if a.cache_states:
        lines.append(f"  page cache {', '.join(a.cache_states)}")
    if a.type.summary(a) is None and _lists_points(a):
        for label, _key, rep in _points(a):
            lines.append(f"  {label:<10} {_repeat_text('MiB/s', rep)}")
    if a.until is not None:
        lines.append(f"  {a.until.sentence()}")
    lines += a.type.summary_lines(a)  # the type's lines of its own results
    for h in a.hosts:
        pm = h.mean
        lines.append(
            f"  host {h.host}, {h.label}: IOPS {_num(pm.iops)} "
            f"({h.share:.0%} of all hosts), MB/s {_num(pm.bw_mbs)}, "
            f"mean {_num(pm.lat_mean_ms)} ms"
        )
    return lines
