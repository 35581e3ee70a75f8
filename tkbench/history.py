"""A local SQLite index of runs: history by drive, baselines for regressions.

Default location ``$XDG_DATA_HOME/tkbench/history.sqlite`` (``~/.local/share``
when unset); ``--history PATH`` or ``TKBENCH_HISTORY`` choose another.  The run
directories stay the source of truth: the index holds where they are, who the
drive was and the headline numbers.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .analysis import headline
from .errors import InputError
from .records import Checks
from .records.base import dump
from .store import RunData

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_dir   TEXT PRIMARY KEY,
    started   REAL,
    ended     REAL,
    status    TEXT,
    profile   TEXT,
    host      TEXT,
    target    TEXT,
    model     TEXT,
    serial    TEXT,
    firmware  TEXT,
    capacity  INTEGER,
    headline  TEXT,
    checks    TEXT
);
CREATE INDEX IF NOT EXISTS runs_drive ON runs (model, serial, started);
"""


# The history's format, in PRAGMA user_version.  History of the format:
#   0  (unstamped) the runs table below, written by tkbench before versions were kept
#   1  the same table, stamped; columns are written and read by name
HISTORY_VERSION = 1


def default_path() -> Path:
    env = os.environ.get("TKBENCH_HISTORY")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tkbench" / "history.sqlite"


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

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


COLUMNS = tuple(f.name for f in fields(Entry))  # the runs table's columns, by name


class History:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_path()

    @contextmanager
    def _db(self, write: bool = True) -> Iterator[sqlite3.Connection | None]:
        """A connection; for reading (``write=False``) the database is opened
        read-only and nothing is created: None when there is no database yet."""
        if not write and not self.path.exists():
            yield None
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                con = sqlite3.connect(self.path, timeout=30)
            else:
                con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"history database {self.path}: {exc}") from None
        try:
            _check_version(con, self.path, write)
            if write:
                con.executescript(SCHEMA)
                con.execute(f"PRAGMA user_version = {HISTORY_VERSION}")
            con.row_factory = sqlite3.Row
            with con:
                yield con
        except sqlite3.DatabaseError as exc:
            raise InputError(f"history database {self.path}: {exc}") from None
        finally:
            con.close()

    def check_usable(self) -> None:
        """Refuse, before a run, a history it could not be indexed in or read from:
        an existing file that is no tkbench history, or a place that cannot be
        written.  Creates nothing."""
        if self.path.exists():
            if self.path.is_dir():
                raise InputError(f"history database {self.path} is a directory")
            self.entries()
            if not os.access(self.path, os.W_OK):
                raise InputError(f"history database {self.path} is not writable")
            return
        parent = self.path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise InputError(f"history database {self.path}: cannot create it in {parent}")

    def add(self, run: RunData, checks: Checks | None = None) -> Entry:
        m = run.manifest
        entry = Entry(
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
        )
        with self._db() as con:
            assert con is not None
            row = {**entry.to_dict(), "headline": json.dumps(entry.headline)}
            row["checks"] = json.dumps(entry.checks) if entry.checks is not None else None
            con.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join(':' + c for c in COLUMNS)})",
                row,
            )
        return entry

    def entries(
        self, model: str | None = None, serial: str | None = None, profile: str | None = None
    ) -> list[Entry]:
        sql = f"SELECT {', '.join(COLUMNS)} FROM runs WHERE 1=1"
        args: list[Any] = []
        for col, val in (("model", model), ("serial", serial), ("profile", profile)):
            if val is not None:
                sql += f" AND {col} = ?"
                args.append(val)
        sql += " ORDER BY model, serial, started"
        with self._db(write=False) as con:
            if con is None:
                return []
            try:
                rows = con.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:  # no such table: not a tkbench history
                raise InputError(f"history database {self.path}: {exc}") from None
        try:
            return [_entry(r) for r in rows]
        except (ValueError, TypeError, IndexError) as exc:
            raise InputError(f"history database {self.path}: unreadable row: {exc}") from None

    def previous(self, run: RunData) -> Entry | None:
        """The latest earlier complete run of the same drive (model and serial) and profile."""
        m = run.manifest
        me = str(Path(run.root).resolve())
        started = m.started or 0
        for e in reversed(
            self.entries(
                model=m.target.ident("model"),
                serial=m.target.ident("serial"),
                profile=m.profile.name,
            )
        ):
            if e.run_dir != me and e.status == "complete" and (e.started or 0) < started:
                return e
        return None


def _entry(row: sqlite3.Row) -> Entry:
    values = {c: row[c] for c in COLUMNS}
    values["headline"] = json.loads(row["headline"] or "{}")
    values["checks"] = json.loads(row["checks"]) if row["checks"] else None
    return Entry(**values)


def _check_version(con: sqlite3.Connection, path: Path, write: bool) -> None:
    """Refuse a history written by a newer tkbench.  Version 0 is the unstamped
    database written before the history had a version, with the same table: the
    first write upgrades it by stamping it."""
    version = int(con.execute("PRAGMA user_version").fetchone()[0])
    if version > HISTORY_VERSION:
        raise InputError(
            f"history database {path}: written by a newer tkbench (version {version}, "
            f"this one reads up to {HISTORY_VERSION}); upgrade tkbench to use it"
        )


def format_entries(entries: list[Entry]) -> str:
    import time

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
        lines.append(f"  {'':16} {e.run_dir}")
    return "\n".join(lines)
