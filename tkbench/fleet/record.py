"""``DIR/fleet.json``: a fleet's own record (every run's facts stay in its run
directory), and the runs a ``--resume`` of the fleet continues."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkbench.errors import RunDirError, TkbenchError
from tkbench.fleet.drives import Drive
from tkbench.fleet.outcomes import outcome
from tkbench.rundir.store import load_run

FLEET_FILE = "fleet.json"
FORMAT = "tkbench-fleet"
VERSION = 1


@dataclass
class RunEntry:
    name: str
    target: str
    run_dir: str  # relative to the fleet directory
    kind: str = "unknown"
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    error: str | None = None  # the run's last error line, if it gave one

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "run_dir": self.run_dir,
            "kind": self.kind,
            "started": self.started,
            "ended": self.ended,
            "exit_code": self.exit_code,
            "outcome": outcome(self.exit_code),
            "error": self.error,
        }


@dataclass
class FleetRecord:
    """``DIR/fleet.json``: the fleet's own record; every run's facts stay in its run
    directory.  Format history: 1 — first version."""

    profile: str
    runs: list[RunEntry]
    command_line: list[str] = field(default_factory=list)
    host: str = ""
    started: float = 0.0
    ended: float | None = None
    exit_code: int | None = None
    resumes: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "profile": self.profile,
            "command_line": self.command_line,
            "host": self.host,
            "started": self.started,
            "ended": self.ended,
            "exit_code": self.exit_code,
            "resumes": self.resumes,
            "runs": [r.to_dict() for r in self.runs],
        }

    def save(self, root: Path) -> None:
        """Atomically: a reader sees the old record or the new one, never half."""
        path = Path(root) / FLEET_FILE
        tmp = path.with_name(f".{FLEET_FILE}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=1)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, root: Path) -> FleetRecord:
        path = Path(root) / FLEET_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{root}: no {FLEET_FILE}: not a fleet directory") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunDirError(f"{path}: unreadable: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RunDirError(f"{path}: not a tkbench fleet record")
        if not isinstance(data.get("version"), int) or data["version"] > VERSION:
            raise RunDirError(f"{path}: written by a newer tkbench (version {data.get('version')})")
        try:
            runs = [
                RunEntry(
                    name=str(r["name"]),
                    target=str(r["target"]),
                    run_dir=str(r["run_dir"]),
                    kind=str(r.get("kind", "unknown")),
                    started=r.get("started"),
                    ended=r.get("ended"),
                    exit_code=r.get("exit_code"),
                    error=r.get("error"),
                )
                for r in data["runs"]
            ]
            for r in runs:
                if Path(r.run_dir).is_absolute() or ".." in Path(r.run_dir).parts:
                    raise ValueError(f"run_dir {r.run_dir!r} is outside the fleet directory")
            return cls(
                profile=str(data["profile"]),
                runs=runs,
                command_line=[str(a) for a in data.get("command_line", [])],
                host=str(data.get("host", "")),
                started=float(data.get("started") or 0.0),
                ended=data.get("ended"),
                exit_code=data.get("exit_code"),
                resumes=[float(t) for t in data.get("resumes", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunDirError(f"{path}: bad field: {exc}") from None


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
