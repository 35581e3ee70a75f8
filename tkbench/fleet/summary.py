"""A fleet summarised: one entry per drive, what its run did, its headline numbers,
steady state per test and its checks (``tkbench show DIR``, ``--json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tkbench.errors import TkbenchError
from tkbench.fleet.outcomes import outcome
from tkbench.fleet.record import FORMAT, VERSION, FleetRecord
from tkbench.kinds.results.analysed import Analysed
from tkbench.kinds.results.run import analyse_run
from tkbench.rundir.store import load_run


def fleet_summary(root: Path) -> dict[str, Any]:
    """One entry per drive: what its run did, its headline numbers, steady state per
    test and its checks (``tkbench show DIR --json``), read from each run's records."""
    root = Path(root)
    rec = FleetRecord.load(root)
    drives = []
    for r in rec.runs:
        d = root / r.run_dir
        entry: dict[str, Any] = r.to_dict()
        entry["run_dir"] = str(d)
        entry.update(status="not started", model=None, serial=None, headline={}, tests=[])
        entry["checks"] = None
        if (d / "manifest.json").is_file():
            try:
                run = load_run(d)
            except TkbenchError as exc:
                entry["status"] = "unreadable"
                entry["error"] = str(exc)
            else:
                device = run.manifest.target.device
                ar = analyse_run(run)  # each test analysed once, for both
                entry.update(
                    status=run.manifest.status,
                    model=device.model,
                    serial=device.serial,
                    headline=ar.headline,
                    tests=[_test_entry(t) for t in ar.tests],
                )
                if run.checks is not None:
                    c = run.checks
                    entry["checks"] = {
                        "passed": c.passed,
                        "count": c.count,
                        "failed": [i.name for i in c.checks if not i.passed],
                    }
        drives.append(entry)
    comparison = root / "comparison.pdf"
    return {
        "fleet_dir": str(root),
        "format": FORMAT,
        "version": VERSION,
        "profile": rec.profile,
        "host": rec.host,
        "started": rec.started,
        "ended": rec.ended,
        "exit_code": rec.exit_code,
        "outcome": outcome(rec.exit_code),
        "resumes": rec.resumes,
        "comparison": str(comparison) if comparison.is_file() else None,
        "drives": drives,
    }


def _test_entry(t: Analysed) -> dict[str, Any]:
    a = t.analysis
    return {
        "name": t.name,
        "status": t.test.status,
        "steady_state": a.steady,
        "rounds": a.rounds,
        "window": list(a.steady_window),
    }


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def format_fleet(s: dict[str, Any]) -> str:
    lines = [
        f"Fleet     {s['fleet_dir']}  [{s['outcome']}, exit code {s['exit_code']}]",
        f"Profile   {s['profile']}   host {s['host']}   {len(s['drives'])} drive(s)",
    ]
    for d in s["drives"]:
        lines.append("")
        ident = (d["model"], d["serial"])
        who = " ".join(x for x in ident if x and x != "unknown") or d["kind"]
        lines.append(
            f"{d['name']}: {d['outcome']} (exit {d['exit_code']}), run {d['status']}  "
            f"[{d['target']}; {who}]"
        )
        if d["error"]:
            lines.append(f"  error     {d['error']}")
        for t in d["tests"]:
            steady = {True: "steady", False: "not steady", None: "-"}.get(t["steady_state"], "-")
            lines.append(f"  {t['name']:<10} {t['rounds']} round(s), {steady} [{t['status']}]")
        for k, v in d["headline"].items():
            lines.append(f"  {k:<32} {_num(v)}")
        c = d["checks"]
        if c is not None and c["count"]:
            verdict = "PASS" if c["passed"] else "FAIL: " + ", ".join(c["failed"])
            lines.append(f"  checks    {verdict} ({c['count'] - len(c['failed'])} of {c['count']})")
    if s["comparison"]:
        lines += ["", f"Comparison {s['comparison']}"]
    return "\n".join(lines)
