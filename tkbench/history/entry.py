"""One run in the history (:class:`Entry`), built from a run directory, and the listing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..analysis import headline
from ..records import Checks
from ..records.base import dump
from ..store import RunData


@dataclass(frozen=True)
class Entry:
    run_dir: str
    started: float | None
    ended: float | None
    status: str
    profile: str
    host: str
    target: str
    model: str
    serial: str
    firmware: str
    capacity: int
    headline: dict[str, float]
    checks: dict[str, Any] | None
    rig: str | None = None  # the rig it was indexed from (--rig, TKBENCH_RIG)
    run_id: str | None = None  # the manifest's run UUID; None for runs made before it existed

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``tkbench history --json``: ``rig`` and ``run_id`` only when known,
        so that the entries of runs without them read as they always did."""
        out = dict(self.__dict__)
        for key in OPTIONAL:
            if out[key] is None:
                del out[key]
        return out


COLUMNS = tuple(f.name for f in fields(Entry))  # the runs table's columns, by name
OPTIONAL = ("rig", "run_id")  # columns an entry may lack (older histories have neither)


def entry_for(run: RunData, checks: Checks | None = None, rig: str | None = None) -> Entry:
    m = run.manifest
    return Entry(
        run_dir=str(Path(run.root).resolve()),
        started=m.started,
        ended=m.ended,
        status=m.status,
        profile=m.profile.name,
        host=m.host.hostname,
        target=m.target.spec,
        model=m.target.ident("model"),
        serial=m.target.ident("serial"),
        firmware=m.target.ident("firmware"),
        capacity=m.target.capacity_bytes,
        headline=headline(run),
        checks=dump(checks) if checks is not None else None,
        rig=rig,
        run_id=m.run_id,
    )


def to_row(entry: Entry) -> dict[str, Any]:
    """The column values of an entry: headline and checks as JSON text (the same on
    both backends, and the headline keeps its order, which a JSONB column would not)."""
    row = {c: getattr(entry, c) for c in COLUMNS}
    row["headline"] = json.dumps(entry.headline)
    row["checks"] = json.dumps(entry.checks) if entry.checks is not None else None
    return row


def from_row(row: dict[str, Any]) -> Entry:
    """An entry from the columns read (``rig``, ``run_id`` may be absent: older formats)."""
    values: dict[str, Any] = {c: row.get(c) for c in COLUMNS}
    values["headline"] = json.loads(row["headline"] or "{}")
    values["checks"] = json.loads(row["checks"]) if row["checks"] else None
    return Entry(**values)


def sort_key(e: Entry) -> tuple[Any, ...]:
    """Drive, then time (an entry without a start time first), then directory: the
    same order from either backend, whatever the database's collation."""
    return (e.model or "", e.serial or "", e.started is not None, e.started or 0.0, e.run_dir)


def baseline_of(
    entries: Iterable[Entry],
    *,
    model: str,
    serial: str,
    profile: str,
    started: float | None,
    run_dir: str,
    run_id: str | None,
) -> Entry | None:
    """The baseline of a run's regression check: the latest complete entry of the same
    drive (model and serial) and profile that started before it; the run's own entry
    (by directory or run UUID) never counts.  ``tkbench run`` and the dashboard both
    take their baselines from here, so they cannot disagree."""
    before = started or 0
    found = None
    for e in sorted(entries, key=sort_key):
        if (e.model, e.serial, e.profile) != (model, serial, profile):
            continue
        if e.run_dir == run_dir or (run_id is not None and e.run_id == run_id):
            continue
        if e.status == "complete" and (e.started or 0) < before:
            found = e  # sorted by start time: the last one found is the latest
    return found


def format_entries(entries: list[Entry]) -> str:
    if not entries:
        return "no runs in the history"
    lines = []
    drive = None
    for e in entries:
        if (e.model, e.serial) != drive:
            drive = (e.model, e.serial)
            lines.append(f"{e.model}  serial {e.serial}  firmware {e.firmware}")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.started)) if e.started else "-"
        verdict = ""
        if e.checks is not None:
            verdict = " PASS" if e.checks.get("passed") else " FAIL"
        heads = ", ".join(f"{k} {v:,.4g}" for k, v in list(e.headline.items())[:4])
        lines.append(f"  {when}  {e.profile:<8} {e.status:<11}{verdict}  {heads}")
        where = f"  (rig {e.rig})" if e.rig else ""
        lines.append(f"  {'':16} {e.run_dir}{where}")
    return "\n".join(lines)
