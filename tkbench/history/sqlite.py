"""The embedded backend: one SQLite file, the version in ``PRAGMA user_version``."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

from tkbench.errors import InputError
from tkbench.history import schema
from tkbench.history.base import FIRST_COLUMNS, Connection, History


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
        return self._file()

    def _file(self) -> bool:
        """Whether the history file exists; a path that is no regular file (a FIFO, a
        device: SQLite would wait on it or read it as an empty database) is refused at
        once, before SQLite opens anything."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise InputError(f"history database {self.path}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"history database {self.path} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"history database {self.path} is not a regular file (a FIFO, a device or a "
                "socket): give an SQLite file"
            )
        return True

    def _error(self, exc: BaseException) -> InputError:
        return InputError(f"history database {self.path}: {exc}")

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection | None]:
        if not self._file():
            yield None
            return
        try:
            con = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?{_read_only(self.path)}", uri=True
            )
        except (OSError, sqlite3.Error) as exc:
            raise self._error(exc) from None
        try:
            version = _version(con)
            if version > schema.HISTORY_VERSION:
                raise InputError(schema.newer_message(self.location, version))
            tables = _tables(con)
            if not tables:
                yield None  # an empty database (a file made by touch): no runs yet
                return
            self._check_ours(con, tables)
            yield con
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        finally:
            con.close()

    @contextlib.contextmanager
    def _writer(self) -> Iterator[Connection]:
        creating = not self._file()
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
        tables = _tables(con)
        if tables:
            self._check_ours(con, tables)  # before any statement could change it
        if version == schema.HISTORY_VERSION:
            return
        for sql in schema.upgrade(version, schema.SQLITE):
            con.execute(sql)
        schema.rewrite_serials(version, con, "?")
        con.execute(f"PRAGMA user_version = {schema.HISTORY_VERSION}")

    def _check_ours(self, con: sqlite3.Connection, tables: set[str]) -> None:
        """Refuse another application's database: a tkbench history has a ``runs``
        table with at least the columns of its first version (another ``runs`` table,
        even with a version number of its own, is no history to list, prune or upgrade)."""
        if "runs" not in tables or not set(FIRST_COLUMNS) <= self._columns(con):
            raise InputError(
                f"history database {self.path}: not a tkbench history (an SQLite database "
                "with other tables)"
            )

    def _columns(self, con: Connection) -> set[str]:
        return {row[1] for row in con.execute("PRAGMA table_info(runs)").fetchall()}

    def check_usable(self) -> None:
        if self._file():
            self.check_readable()
            if not os.access(self.path, os.W_OK):
                raise InputError(f"history database {self.path} is not writable")
            return
        parent = self.path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise InputError(f"history database {self.path}: cannot create it in {parent}")


def _read_only(path: Path) -> str:
    """The URI parameters that open ``path`` for reading without creating a file beside
    it.  A database in WAL mode gets its ``-wal`` and ``-shm`` files even when opened
    read-only; when it has none (no writer at work, nothing to read from them) it is
    opened as immutable, which creates neither."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return "mode=ro"
    wal = len(header) == 20 and header[18] == 2 and header[19] == 2
    sides = [Path(f"{path}-wal"), Path(f"{path}-shm")]
    if wal and not any(p.exists() for p in sides):
        return "mode=ro&immutable=1"
    return "mode=ro"


def _version(con: sqlite3.Connection) -> int:
    return int(con.execute("PRAGMA user_version").fetchone()[0])


def _tables(con: sqlite3.Connection) -> set[str]:
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows if not r[0].startswith("sqlite_")}
