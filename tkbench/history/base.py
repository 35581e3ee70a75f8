"""What a history does, the same on every backend: index a run, list, find the
baseline of a run, find and drop entries whose run directories are gone.

A backend (:mod:`.sqlite`, :mod:`.postgres`) supplies connections: for reading (no
write ever, None when there is no history yet) and for writing (one transaction, the
schema at the current version, writers one at a time).  The SQL here is plain enough
for both; ``P`` is the backend's parameter placeholder.
"""

from __future__ import annotations

import contextlib
import os
import socket
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tkbench.errors import InputError, RunDirError
from tkbench.history.entry import (
    COLUMNS,
    OPTIONAL,
    Entry,
    baseline_of,
    entry_for,
    from_row,
    sort_key,
    to_row,
)
from tkbench.kinds.results.analysed import AnalysedRun
from tkbench.rundir.records import Checks
from tkbench.rundir.store import RunData

STORED = (*COLUMNS, "indexed_on")  # every column of the runs table
# the columns of the runs table of the first version (schema.STEPS[0]): every tkbench
# history has them, another application's table of the same name not all of them
FIRST_COLUMNS = COLUMNS[: COLUMNS.index("checks") + 1]


class Connection(Protocol):
    """What sqlite3's and psycopg's connections have in common, as used here."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


def this_host() -> str:
    """The name run directories indexed here are recorded under (as the manifest's host)."""
    return socket.gethostname()


@dataclass(frozen=True)
class Indexed:
    """What indexing one run did."""

    entry: Entry
    new: bool  # False: the run (by UUID, or by directory) was indexed already; replaced


@dataclass(frozen=True)
class Stale:
    """Entries whose run directories are gone, and how many were not looked at."""

    gone: list[Entry]
    elsewhere: int  # entries indexed on other hosts: their paths mean nothing here


class History(ABC):
    location: str  # as shown in messages: a path, or a URL without its password
    P = "?"  # parameter placeholder

    # ---------------------------------------------------------------- backend

    @abstractmethod
    def _reader(self) -> AbstractContextManager[Connection | None]:
        """A connection that reads only; None when there is no history yet."""

    @abstractmethod
    def _writer(self) -> AbstractContextManager[Connection]:
        """A connection in a transaction that commits on success, with the schema at
        the current version and no other writer at the same time."""

    @abstractmethod
    def _columns(self, con: Connection) -> set[str]:
        """The columns of the runs table (older versions lack some)."""

    @abstractmethod
    def check_usable(self) -> None:
        """Refuse, before a run, a history the run could not be indexed in: one that
        cannot be reached, read or written, or that is no tkbench history.  Creates
        nothing."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether there is a history to list (a listing never creates one): a file
        that exists, a database that can be reached; else a one-line error."""

    # ---------------------------------------------------------------- writing

    def add(
        self,
        run: RunData,
        checks: Checks | None = None,
        rig: str | None = None,
        analysed: AnalysedRun | None = None,
    ) -> Entry:
        """Index a run (again): see :meth:`index` (``analysed``: the run's results when
        the caller has them, so that its entry reads the same, computed once)."""
        return self.put([entry_for(run, checks, rig, analysed)])[0].entry

    def index(
        self, runs: Sequence[tuple[RunData, Checks | None]], rig: str | None = None
    ) -> list[Indexed]:
        """Index runs, all or none.  A run is one entry: the run's UUID (or, for a run
        made before run ids, its resolved directory) finds the entry it replaces, so
        indexing again changes nothing but the directory (a run moved or copied) and
        what the new entry knows; what it does not know (the checks of a run
        imported from its directory, a rig not named) is kept from the old entry."""
        return self.put([entry_for(run, checks, rig) for run, checks in runs])

    def put(self, entries: Iterable[Entry]) -> list[Indexed]:
        """Index entries already built (:func:`.entry.entry_for`), all or none, in one
        transaction, as :meth:`index` does."""
        with self._writer() as con:
            return [self._put(con, entry) for entry in entries]

    def _put(self, con: Connection, entry: Entry) -> Indexed:
        P = self.P
        where, args = f"run_dir = {P}", [entry.run_dir]
        if entry.run_id is not None:
            where, args = f"run_dir = {P} OR run_id = {P}", [entry.run_dir, entry.run_id]
        old = con.execute(f"SELECT run_id, checks, rig FROM runs WHERE {where}", args).fetchall()
        row = to_row(entry)
        row["indexed_on"] = this_host()
        # a row of another run (it was in this directory before) has nothing to keep
        same = [(c, r) for run_id, c, r in old if run_id in (None, entry.run_id)]
        for checks, rig in same:
            row["checks"] = row["checks"] if row["checks"] is not None else checks
            row["rig"] = row["rig"] if row["rig"] is not None else rig
        con.execute(f"DELETE FROM runs WHERE {where}", args)
        con.execute(
            f"INSERT INTO runs ({', '.join(STORED)}) VALUES ({', '.join([P] * len(STORED))})",
            [row[c] for c in STORED],
        )
        return Indexed(from_row(row), new=not same)

    def remove(self, run_dirs: Iterable[str]) -> int:
        """Drop the entries of these run directories; how many there were."""
        dirs = list(run_dirs)
        with self._writer() as con:
            before = con.execute("SELECT COUNT(*) FROM runs").fetchall()[0][0]
            for d in dirs:
                con.execute(f"DELETE FROM runs WHERE run_dir = {self.P}", [d])
            after = con.execute("SELECT COUNT(*) FROM runs").fetchall()[0][0]
        return int(before - after)

    # ---------------------------------------------------------------- reading

    def _stream(self, con: Connection, sql: str, args: list[Any]) -> Iterator[Sequence[Any]]:
        """The rows of a query, read as they are iterated over (not fetched whole)."""
        yield from con.execute(sql, args)

    def _order(self, column: str) -> str:
        """A text column as it sorts: by code point, whatever the database's collation."""
        return f"COALESCE({column}, '')"

    def _rows(
        self,
        filters: dict[str, Any],
        since: float | None = None,
        *,
        ordered: bool = False,
        limit: int | None = None,
        skip: Collection[str] = (),
    ) -> Generator[dict[str, Any], None, None]:
        """The rows matching ``filters``, one at a time, each with every column of
        :data:`STORED` (null where an older version lacks it, or in ``skip``);
        ``ordered``: in the order of :func:`.entry.sort_key` (drive, entries without a
        start time first, time, directory), sorted by the database; ``limit``: at most
        that many."""
        with self._reader() as con:
            if con is None:
                return
            columns = self._columns(con)
            read = [c if c in columns and c not in skip else f"NULL AS {c}" for c in STORED]
            sql = f"SELECT {', '.join(read)} FROM runs WHERE 1=1"
            args: list[Any] = []
            for col, val in filters.items():
                if val is not None:
                    sql += f" AND {col} = {self.P}"
                    args.append(val)
            if since is not None:
                sql += f" AND started >= {self.P}"
                args.append(since)
            if ordered:
                sql += (
                    f" ORDER BY {self._order('model')}, {self._order('serial')}, "
                    f"started IS NOT NULL, COALESCE(started, 0), {self._order('run_dir')}"
                )
            if limit is not None:
                sql += f" LIMIT {int(limit)}"
            for r in self._stream(con, sql, args):
                yield dict(zip(STORED, r, strict=True))

    def entries(
        self,
        model: str | None = None,
        serial: str | None = None,
        profile: str | None = None,
        since: float | None = None,
    ) -> list[Entry]:
        """Entries by drive (model, serial), then start time; ``since``: started then or later."""
        return list(self.each(model=model, serial=serial, profile=profile, since=since))

    def each(
        self,
        model: str | None = None,
        serial: str | None = None,
        profile: str | None = None,
        since: float | None = None,
        *,
        skip: Collection[str] = (),
    ) -> Iterator[Entry]:
        """The entries of :meth:`entries`, in its order, read one at a time: a listing
        of any length holds one entry at a time, not the whole history.  ``skip``:
        optional columns (:data:`.entry.OPTIONAL`) not read, None in the entries."""
        if not set(skip) <= set(OPTIONAL):
            raise ValueError(f"only optional columns can be skipped, not {sorted(skip)}")
        drive = {"model": model, "serial": serial, "profile": profile}
        for row in self._rows(drive, since, ordered=True, skip=skip):
            try:
                yield from_row(row)
            except (ValueError, TypeError, KeyError, RunDirError) as exc:
                raise InputError(
                    f"history database {self.location}: unreadable row: {exc}"
                ) from None

    def groups(self) -> list[tuple[str, str, str, int]]:
        """How many runs each (model, firmware, profile) has, from those three columns
        only (counted here: SQLite's GROUP BY sorts the whole table first): what the
        dashboard's pages are, before it reads the runs."""
        counts: Counter[tuple[str, str, str]] = Counter()
        with self._reader() as con:
            if con is None:
                return []
            for model, firmware, profile in self._stream(
                con, "SELECT model, firmware, profile FROM runs", []
            ):
                counts[(model, firmware, profile)] += 1
        return [(*key, n) for key, n in counts.items()]

    def check_readable(self) -> None:
        """Read one entry, as a listing would read every one: a history whose rows
        cannot be read is refused before a run, in a time and memory that do not grow
        with the history (not by reading it whole)."""
        with contextlib.closing(self._rows({}, limit=1)) as rows:
            for row in rows:
                try:
                    from_row(row)
                except (ValueError, TypeError, KeyError, RunDirError) as exc:
                    raise InputError(
                        f"history database {self.location}: unreadable row: {exc}"
                    ) from None

    def previous(self, run: RunData) -> Entry | None:
        """The latest earlier complete run of the same drive (model and serial) and
        profile (:func:`.entry.baseline_of`)."""
        from tkbench.history.entry import (
            run_serial,  # the serial the run's own entry is filed under
        )

        m = run.manifest
        model, serial = m.target.ident("model"), run_serial(m)
        return baseline_of(
            self.entries(model=model, serial=serial, profile=m.profile.name),
            model=model,
            serial=serial,
            profile=m.profile.name,
            started=m.started,
            run_dir=str(Path(run.root).resolve()),
            run_id=m.run_id,
        )

    def stale(self) -> Stale:
        """The entries indexed on this host whose run directories are gone.  Entries
        of a version-1 history, which was a file of one machine, count as this host's."""
        here = this_host()
        gone, elsewhere = [], 0
        for r in self._rows({}):
            if r["indexed_on"] not in (None, here):
                elsewhere += 1
            elif _gone(r["run_dir"]):
                gone.append(from_row(r))
        return Stale(sorted(gone, key=sort_key), elsewhere=elsewhere)


def _gone(run_dir: str) -> bool:
    """No such directory (a directory that cannot be looked at is not gone)."""
    try:
        os.stat(run_dir)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def one_line(text: str) -> str:
    """A driver's message (which may span lines: DETAIL, HINT) as one line."""
    return "; ".join(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())
