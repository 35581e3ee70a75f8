"""One run in the history (:class:`Entry`), built from a run directory, and the listing.

An entry built from a run directory reads the run's results
(:class:`~tkbench.kinds.results.analysed.AnalysedRun`: its headline, repeated points
and volume figures, each computed once, and the same the command's other outputs
read when it passes them); an entry read back from a database row
(:func:`from_row`) holds what was stored and needs none."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from tkbench.errors import InputError
from tkbench.history.parts import (
    EntryChecks,
    RepeatFigures,
    TargetIdentity,
    VolumeFigure,
    figures,
    figures_json,
    loads,
)
from tkbench.kinds.results.analysed import AnalysedRun
from tkbench.kinds.results.run import analyse_run
from tkbench.kinds.results.sweep import sweep_in
from tkbench.outputs.checks import FigureRuns
from tkbench.rundir.records import Checks, Manifest
from tkbench.rundir.records.base import build, dump
from tkbench.rundir.store import RunData
from tkbench.units import format_size


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
    checks: EntryChecks | None
    rig: str | None = None  # the rig it was indexed from (--rig, TKBENCH_RIG)
    run_id: str | None = None  # the manifest's run UUID; None for runs made before it existed
    # per repeated point ("TEST POINT", e.g. "4k-fsync 4k 0/100"): its runs' figures in
    # MiB/s (repeat_figures); None for a run without fixed tests (and older histories)
    repeats: dict[str, RepeatFigures] | None = None
    # per headline figure of a volume benchmark ("TEST NAME", e.g. "copy iso.random.mb_s",
    # tkbench.kinds.figures): its value, unit, spread and runs; None for a run
    # without sweep, copy or virtual-file tests (and older histories)
    volume: dict[str, VolumeFigure] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``tkbench history --json``: ``rig``, ``run_id``, ``repeats`` and
        ``volume`` only when known, so that the entries of runs without them read as they
        always did."""
        out = dict(self.__dict__)
        out["checks"] = self.checks.to_json() if self.checks is not None else None
        out["repeats"] = figures_json(self.repeats)
        out["volume"] = figures_json(self.volume)
        for key in OPTIONAL:
            if out[key] is None:
                del out[key]
        return out

    def figure_runs(self) -> dict[str, FigureRuns]:
        """Its volume figures as a regression check reads them."""
        return {k: FigureRuns(f.value, f.stdev, f.runs) for k, f in (self.volume or {}).items()}


COLUMNS = tuple(f.name for f in fields(Entry))  # the runs table's columns, by name
OPTIONAL = ("rig", "run_id", "repeats", "volume")  # columns an entry may lack (older histories)


def legacy_serial(target: TargetIdentity, model: str, host: str) -> str | None:
    """The serial to file a run under whose target reported none (``unknown``): a
    run on a regular file or an NBD export made before their identities had serials
    (tkbench.targets).  ``target`` is the manifest's ``target`` (``spec``, ``kind``,
    ``path``), or only ``spec`` when the manifest cannot be read.  An NBD export's is
    the same as today's (name and socket, from the URI); a file's is its path on the
    run's host, since its filesystem's UUID was not recorded.  None: nothing to
    derive (a block device that reports no serial)."""
    from tkbench.targets.nbd import parse_uri

    spec = target.spec or ""
    kind = target.kind or ""
    if not kind:
        kind = "file" if model == "regular file" else "nbd" if spec.startswith("nbd") else ""
    if kind == "nbd":
        try:
            return parse_uri(spec).serial
        except InputError:
            return None
    path = target.path or spec
    if kind == "file" and path:
        return f"{path} on {host}, filesystem not recorded"
    return None


def run_serial(m: Manifest) -> str:
    """The serial a run is filed under: its target's, else :func:`legacy_serial`'s."""
    serial = m.target.ident("serial")
    if serial == "unknown":
        known = TargetIdentity(m.target.spec, m.target.kind, m.target.path)
        serial = legacy_serial(known, m.target.ident("model"), m.host.hostname) or serial
    return serial


def entry_for(
    run: RunData,
    checks: Checks | None = None,
    rig: str | None = None,
    analysed: AnalysedRun | None = None,
) -> Entry:
    """The entry of a stored run (``analysed``: the run's results when the caller has
    them, made here if not)."""
    ar = analysed if analysed is not None else analyse_run(run)
    m = run.manifest
    serial = run_serial(m)
    return Entry(
        run_dir=str(Path(run.root).resolve()),
        started=m.started,
        ended=m.ended,
        status=m.status,
        profile=m.profile.name,
        host=m.host.hostname,
        target=m.target.spec,
        model=m.target.ident("model"),
        serial=serial,
        firmware=m.target.ident("firmware"),
        capacity=m.target.capacity_bytes,
        headline=ar.headline,
        checks=EntryChecks.read(dump(checks), Path(run.root)) if checks is not None else None,
        rig=rig,
        run_id=m.run_id,
        repeats=repeat_figures(ar),
        volume=volume_figures(ar),
    )


def volume_figures(ar: AnalysedRun) -> dict[str, VolumeFigure] | None:
    """The run's volume figures (:func:`tkbench.kinds.figures.run_figures`), as kept."""
    where = Path(ar.run.root)
    found = [(f.key, f.summary()) for f in ar.figures]
    return {k: build(VolumeFigure, fig, where, f"volume.{k}.") for k, fig in found} or None


def repeat_figures(ar: AnalysedRun) -> dict[str, RepeatFigures] | None:
    """Every repeated point of the run's plain fixed tests (not a sweep's cells, not a
    stage's rounds) with the figures nights are compared by: the mean MiB/s, the mean
    absolute deviation in % of it, the standard deviation, the number of runs and,
    for a test with repeat_until, whether its limit was met."""
    out: dict[str, RepeatFigures] = {}
    for a in ar.tests:
        t = a.test
        if t.plan.kind != "fixed" or t.plan.procedure or not t.rounds:
            continue
        if sweep_in(a) is not None:
            continue
        labels = {p.key: p.label for p in t.plan.points}
        until = a.until
        for key, rep in a.repeats.items():
            item = RepeatFigures(rep.mean, rep.mean_abs_dev_pct, rep.stdev, len(rep.runs))
            if until is not None:
                item = replace(item, limit_pct=until.limit_pct, limit_met=until.met)
            out[f"{t.name} {labels.get(key, '')}".strip()] = item
    return out or None


def to_row(entry: Entry) -> dict[str, Any]:
    """The column values of an entry: headline and checks as JSON text (the same on
    both backends, and the headline keeps its order, which a JSONB column would not)."""
    row = {c: getattr(entry, c) for c in COLUMNS}
    row["headline"] = json.dumps(entry.headline)
    row["checks"] = _text(entry.checks.to_json() if entry.checks is not None else None)
    row["repeats"] = _text(figures_json(entry.repeats))
    row["volume"] = _text(figures_json(entry.volume))
    return row


def _text(data: Any) -> str | None:
    return json.dumps(data) if data is not None else None


def from_row(row: Mapping[str, Any]) -> Entry:
    """An entry from a row of every column (null where an older format lacks one)."""
    values: dict[str, Any] = {c: row[c] for c in COLUMNS}
    where = Path(row["run_dir"] or "")
    values["headline"] = json.loads(row["headline"] or "{}")
    checks = loads(row["checks"])
    values["checks"] = EntryChecks.read(checks, where) if checks is not None else None
    values["repeats"] = figures(RepeatFigures, loads(row["repeats"]), where, "repeats")
    values["volume"] = figures(VolumeFigure, loads(row["volume"]), where, "volume")
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
    return "\n".join(listing_lines(entries))


def listing_lines(entries: Iterable[Entry]) -> Iterator[str]:
    """The lines of the listing of ``entries`` (in the history's order), made as the
    entries come: a drive's heading, then two lines per run and one per repeated
    point or volume figure."""
    drive = None
    for e in entries:
        if (e.model, e.serial) != drive:
            drive = (e.model, e.serial)
            yield f"{e.model}  serial {e.serial}  firmware {e.firmware}"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.started)) if e.started else "-"
        verdict = ""
        if e.checks is not None:
            verdict = " PASS" if e.checks.passed else " FAIL"
        heads = ", ".join(f"{k} {v:,.4g}" for k, v in list(e.headline.items())[:4])
        yield f"  {when}  {e.profile:<8} {e.status:<11}{verdict}  {heads}"
        where = f"  (rig {e.rig})" if e.rig else ""
        yield f"  {'':16} {e.run_dir}{where}"
        for point, rep in (e.repeats or {}).items():
            spread = rep.mean_abs_dev_pct
            yield (
                f"  {'':16} {point}: {rep.mean:,.4g} MiB/s"
                + (f" ±{spread:.1f} %" if spread is not None else "")
                + f" over {rep.runs} run(s)"
            )
        for name, fig in (e.volume or {}).items():
            spread = fig.mean_abs_dev_pct
            combo = ""
            if fig.mode is not None:
                size = format_size(fig.buffer_size or 0)
                combo = f" ({fig.mode}, {fig.buffer_count} x {size})"
            yield (
                f"  {'':16} {name}: {_figure(fig.value)} {fig.unit}{combo}"
                + (f" ±{spread:.1f} %" if spread is not None and fig.runs > 1 else "")
                + f" over {fig.runs} run(s)"
            )


def json_chunks(entries: Iterable[Entry]) -> Iterator[str]:
    """``json.dumps([e.to_dict() for e in entries], indent=1)``, the text of
    ``tkbench history --json``, in pieces made as the entries come (one per entry),
    so that a history of any length is never one list or one string in memory."""
    first = True
    for e in entries:
        # an entry's lines one level deeper, as inside the list (JSON text holds no
        # newline but those of its indentation: json escapes it inside strings)
        text = json.dumps(e.to_dict(), indent=1).replace("\n", "\n ")
        yield ("[\n " if first else ",\n ") + text
        first = False
    yield "[]" if first else "\n]"


def _figure(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
