"""The embedded backend: one SQLite file, the version in ``PRAGMA user_version``."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
from . import schema
from .base import Connection, History


class SQLiteHistory(History):
    P = "?"

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        """``shared``: the system-wide history: when this creates it, its directory is
        made mode 0755 and the file 0644, whatever the umask, so that every user of
        the machine can read it."""
        self.path = Path(path)
        self.location = str(self.path)
        self.shared = shared

    def exists(self) -> bool:
        return self.path.exists()

    def _error(self, exc: BaseException) -> InputError:
        return InputError(f"history database {self.path}: {exc}")

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection | None]:
        if not self.path.exists():
            yield None
            return
        if self.path.is_dir():
            raise InputError(f"history database {self.path} is a directory")
        try:
            con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        except (OSError, sqlite3.Error) as exc:
            raise self._error(exc) from None
        try:
            version = _version(con)
            if version > schema.HISTORY_VERSION:
                raise InputError(schema.newer_message(self.location, version))
            tables = _tables(con)
            if "runs" not in tables:
                if tables:
                    raise self._not_history()
                yield None  # an empty database (a file made by touch): no runs yet
                return
            yield con
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        finally:
            con.close()

    @contextlib.contextmanager
    def _writer(self) -> Iterator[Connection]:
        creating = not self.path.exists()
        try:
            self._make_parent()
            con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self._error(exc) from None
        try:
            if creating and self.shared:
                os.chmod(self.path, 0o644)
            con.execute("BEGIN IMMEDIATE")  # the write lock: one writer at a time
            self._migrate(con)
            yield con
            con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        except OSError as exc:
            raise self._error(exc) from None
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")
            con.close()

    def _make_parent(self) -> None:
        parent = self.path.parent
        if parent.exists():
            return
        parent.mkdir(parents=True, exist_ok=True)
        if self.shared:
            os.chmod(parent, 0o755)

    def _migrate(self, con: sqlite3.Connection) -> None:
        version = _version(con)
        if version > schema.HISTORY_VERSION:
            raise InputError(schema.newer_message(self.location, version))
        if version == schema.HISTORY_VERSION:
            return
        if version == 0:
            tables = _tables(con)
            if tables and "runs" not in tables:
                raise self._not_history()
        for sql in schema.upgrade(version, schema.SQLITE):
            con.execute(sql)
        schema.rewrite_serials(version, con, "?")
        con.execute(f"PRAGMA user_version = {schema.HISTORY_VERSION}")

    def _not_history(self) -> InputError:
        return InputError(
            f"history database {self.path}: not a tkbench history (an SQLite database "
            "with other tables)"
        )

    def _columns(self, con: Connection) -> set[str]:
        return {row[1] for row in con.execute("PRAGMA table_info(runs)").fetchall()}

    def check_usable(self) -> None:
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


def _version(con: sqlite3.Connection) -> int:
    return int(con.execute("PRAGMA user_version").fetchone()[0])


def _tables(con: sqlite3.Connection) -> set[str]:
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows if not r[0].startswith("sqlite_")}
