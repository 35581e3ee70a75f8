"""``DIR/fleet.json``: a fleet's own record (every run's facts stay in its run
directory), and the runs a ``--resume`` of the fleet continues."""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkbench.errors import RunDirError, TkbenchError
from tkbench.fleet.drives import Drive
from tkbench.fleet.outcomes import outcome
from tkbench.rundir.jsonfile import read_json, write_json
from tkbench.rundir.store import load_run
from tkbench.typed import build, dump

FLEET_FILE = "fleet.json"
FORMAT = "tkbench-fleet"
VERSION = 1


@dataclass(kw_only=True)
class RunEntry:
    """One drive's run in ``fleet.json`` (its fields are the file's, in order)."""

    name: str
    target: str
    run_dir: str  # relative to the fleet directory
    kind: str = "unknown"
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    error: str | None = None  # the run's last error line, if it gave one

    def to_dict(self) -> dict[str, Any]:
        # kept by hand: the computed "outcome" sits among the fields, after exit_code
        out = dump(self)
        at = list(out).index("exit_code") + 1  # "outcome" is written after it (not read)
        items = list(out.items())
        return dict([*items[:at], ("outcome", outcome(self.exit_code)), *items[at:]])


@dataclass(kw_only=True)
class FleetRecord:
    """``DIR/fleet.json``: the fleet's own record; every run's facts stay in its run
    directory.  Its fields are the file's, in order, after ``format`` and
    ``version``; the fleet changes it as its runs go and writes it again whole.
    Format history: 1 — first version."""

    profile: str
    command_line: list[str] = field(default_factory=list)
    host: str = ""
    started: float = 0.0
    ended: float | None = None
    exit_code: int | None = None
    resumes: list[float] = field(default_factory=list)
    runs: list[RunEntry]

    def to_dict(self) -> dict[str, Any]:
        # kept by hand: the header keys first, each run with its outcome
        fields = dump(self)
        fields["runs"] = [r.to_dict() for r in self.runs]
        return {"format": FORMAT, "version": VERSION, **fields}

    def save(self, root: Path) -> None:
        """Atomically: a reader sees the old record or the new one, never half."""
        write_json(Path(root) / FLEET_FILE, self.to_dict())

    @classmethod
    def load(cls, root: Path) -> FleetRecord:
        """The record of the fleet in ``root``, every field checked (RunDirError
        naming the file and the field)."""
        path = Path(root) / FLEET_FILE
        if not path.exists():
            raise RunDirError(f"{root}: no {FLEET_FILE}: not a fleet directory")
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RunDirError(f"{path}: not a tkbench fleet record")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
            raise RunDirError(f"{path}: written by a newer tkbench (version {version})")
        record = build(cls, data, path)
        for r in record.runs:
            if Path(r.run_dir).is_absolute() or ".." in Path(r.run_dir).parts:
                raise RunDirError(
                    f"{path}: field runs: run_dir {r.run_dir!r} is outside the fleet directory"
                )
        return record


def is_fleet(root: Path) -> bool:
    return (Path(root) / FLEET_FILE).is_file()


def new_record(profile: str, drives: Sequence[Drive], command_line: list[str]) -> FleetRecord:
    return FleetRecord(
        profile=profile,
        runs=[RunEntry(name=d.name, target=d.spec, run_dir=d.name, kind=d.kind) for d in drives],
        command_line=command_line,
        host=socket.gethostname(),
        started=time.time(),
    )


def unfinished(root: Path, record: FleetRecord) -> list[RunEntry]:
    """The runs ``--resume DIR`` continues: those whose run directory holds a run that
    is not complete.  A run refused before it had a directory has nothing to resume
    (start it again on its own once the cause is gone)."""
    out = []
    for r in record.runs:
        d = Path(root) / r.run_dir
        if not (d / "manifest.json").is_file():
            continue
        try:
            status = load_run(d).manifest.status
        except TkbenchError:
            out.append(r)  # let its resume say what is wrong with it
            continue
        if status != "complete":
            out.append(r)
    return out
