"""Summaries of a stored run for people (``tkbench show``) and scripts (``--json``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tkbench import kinds
from tkbench.analysis import TestAnalysis, analyze_test
from tkbench.analysis.repeat import point_repeatability, until_standing
from tkbench.analysis.stoprules import kind_named
from tkbench.analysis.window import DIRECTIONS, DirMean
from tkbench.conformance import judge_run
from tkbench.conformance.pts import Judgement
from tkbench.device.cacherecord import describe as write_cache_text
from tkbench.kinds.words import num as _num
from tkbench.kinds.words import repeat_text as _repeat_text
from tkbench.outputs.showparts import stage_parts, test_parts
from tkbench.rundir.records.base import dump
from tkbench.rundir.store import RunData, TestData
from tkbench.units import format_duration, human_bytes


def test_summary(t: TestData) -> dict[str, Any]:
    plan = t.plan
    a = analyze_test(t)
    tracking: dict[str, list[float]] = {label: [] for label in plan.tracking}
    for r in t.rounds:
        for label in tracking:
            if label in r.tracking:
                tracking[label].append(r.tracking[label])
    out: dict[str, Any] = {
        "name": t.name,
        "title": plan.title or t.name,
        "kind": a.kind,
        "status": t.status,
        "steady_state": a.steady,
        "rounds": a.rounds,
        "window": list(a.steady_window),
        "tracking": tracking,
        "round_numbers": [r.round for r in t.rounds],
        "segments": list(a.segments),
        "verdicts": {k: v.to_dict() for k, v in a.verdicts.items()},
        "purge": dump(t.purge) if t.purge is not None else None,
        "total_written_bytes": int(t.rounds[-1].total_written_bytes) if t.rounds else 0,
    }
    if t.parts and not t.rounds:  # a stage run in parts, interrupted: kept for a resume
        out["parts_stored"] = t.parts
        out["parts"] = len(plan.points)
    if t.result is not None and t.result.stop_reason is not None:
        out["stop_reason"] = t.result.stop_reason
    states = kinds.of_plan(plan).cache_states(plan)
    if states:
        out["cache"] = states
    if plan.workload.data_pattern == "compressible":
        out["compress_percentage"] = plan.workload.compress_percentage
    own = kinds.of_plan(plan).summary(t)  # the type's own part (a sweep's cells, ...)
    if own is not None:
        out.update(own)
    elif a.kind == "fixed" and t.rounds:
        out["points"] = repeat_points(t)
    until = until_standing(plan, t.rounds)
    if until is not None:  # only for tests with repeat_until: other outputs stay as they were
        out["repeat_until"] = until.to_dict() | {"text": until.sentence()}
    if plan.histogram:
        out["window_percentiles"] = window_percentiles(t, a)
    return out


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


def repeat_points(t: TestData) -> list[dict[str, Any]]:
    """A fixed test's points: every run's MiB/s and their repeatability figures."""
    labels = {(p.bs, p.read_pct): p.label for p in t.plan.points}
    return [
        {"label": labels.get(key, ""), "bs": key[0], "read_pct": key[1], "unit": "MiB/s"}
        | rep.to_dict()
        for key, rep in point_repeatability(t.rounds).items()
    ]


# The version of the ``show --json`` document (docs/automation.md, "The show --json
# document"): raised when a key changes its meaning or goes; new keys may come
# within a version.  1: the first versioned document (keys as before it had one).
SHOW_SCHEMA = 1


@dataclass(frozen=True)
class Shown:
    """A stored run as ``tkbench show`` has it: the run read back, its PTS judgement
    (made once) and the ``--json`` document made of them.  The text is rendered from
    the run's records and the judgement, and from the document only what the tests'
    types put in it (:func:`format_summary`)."""

    run: RunData
    judged: Judgement
    document: dict[str, Any]


def shown(run: RunData) -> Shown:
    # conformance to the SNIA PTS variant the stored profile declares
    judged = judge_run(run, run.write_cache)
    return Shown(run, judged, _document(run, judged))


def run_summary(run: RunData) -> dict[str, Any]:
    """The ``show --json`` document of a stored run."""
    return shown(run).document


def _document(run: RunData, judged: Judgement) -> dict[str, Any]:
    m = run.manifest
    staged = {t.name: stage_parts(t, run.tests) for t in run.tests}
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
        "tests": [
            {**test_summary(t), **test_parts(t, m.target), **staged[t.name]} for t in run.tests
        ],
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
    """``tkbench show``'s text of a run."""
    run, s = shown.run, shown.document
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
    for t in s["tests"]:
        lines.append("")
        verdict = kind_named(t["kind"]).state(
            t["steady_state"], t["window"], t["total_written_bytes"]
        )
        lines.append(
            f"{t['title']} ({t['name']}): {t['rounds']} round(s), {verdict} [{t['status']}]"
        )
        if t.get("parts_stored"):
            lines.append(
                f"  {t['parts_stored']} of {t['parts']} parts of its round stored "
                "(a resume goes on from them)"
            )
        heat = t.get("temperature") or {}
        for e in heat.get("events", []) if heat.get("throttled_in_window") else []:
            if e["in_window"]:
                lines.append(f"  HEAT in the window, round {e['round']}: {e['what']}")
        for label, values in t["tracking"].items():
            v = t["verdicts"].get(label)
            tail = ", ".join(_num(x) for x in values[-8:])
            more = "... " if len(values) > 8 else ""
            lines.append(f"  {label:<22} {more}{tail}")
            if v:
                lines.append(
                    f"  {'':<22} window mean {_num(v['mean'])}, excursion "
                    f"{v['excursion_ratio']:.1%} (<= {v['max_excursion']:.0%}), slope excursion "
                    f"{v['slope_excursion_ratio']:.1%} (<= {v['max_slope_excursion']:.0%})"
                )
        if t.get("cache"):
            lines.append(f"  page cache {', '.join(t['cache'])}")
        for p in t.get("points", []):
            lines.append(f"  {p['label']:<10} {_repeat_text(p)}")
        if t.get("repeat_until"):
            lines.append(f"  {t['repeat_until']['text']}")
        for typ in kinds.TYPES:  # each type's lines of its own keys
            lines += typ.summary_lines(t)
        for h in t.get("hosts", []):
            lines.append(
                f"  host {h['host']}, {h['label']}: IOPS {_num(h['iops'])} "
                f"({h['iops_share']:.0%} of all hosts), MB/s {_num(h['bw_mbs'])}, "
                f"mean {_num(h['lat_mean_ms'])} ms"
            )
    return "\n".join(lines)
