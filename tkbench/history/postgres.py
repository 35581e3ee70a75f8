"""The lab-wide backend: a PostgreSQL database, through psycopg 3.

The tables live in the connection's current schema (``public`` unless the URL sets
``options=-csearch_path=...``), the version in the one row of ``tkbench_schema``.
Every writer holds one transaction-scoped advisory lock, so that two rigs creating
or upgrading the same new history, or indexing at the same moment, take turns.
A database with tables of its own but no ``tkbench_schema`` is not a history and
is refused, never written into.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tkbench.errors import InputError, ToolMissingError
from tkbench.history import schema
from tkbench.history.base import Connection, History, one_line

SCHEMES = ("postgresql", "postgres")
CONNECT_TIMEOUT = 10  # seconds, unless the URL says otherwise (connect_timeout=)
LOCK_KEY = 0x746B62656E6368  # "tkbench": the advisory lock all writers take


def is_url(location: str) -> bool:
    return location.split("://", 1)[0].lower() in SCHEMES and "://" in location


def redact(url: str) -> str:
    """The URL without its password (shown in messages, never the secret), whether
    in the user part or as a ``password=`` parameter."""
    try:
        parts = urlsplit(url)
        if parts.password is not None:
            host = parts.netloc.rsplit("@", 1)[1]
            parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
        query = [
            "password=***" if p.split("=", 1)[0].lower() == "password" else p
            for p in parts.query.split("&")
        ]
        return urlunsplit(parts._replace(query="&".join(query)))
    except ValueError:
        return url.split("://", 1)[0] + "://..."


def scrub(message: str, url: str) -> str:
    """A driver's message, one line, with the URL (which libpq may quote) and its
    password replaced by the redacted URL and ``***``."""
    text = one_line(message).replace(url, redact(url))
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text


def driver() -> Any:
    """psycopg, imported only for a PostgreSQL history."""
    try:
        import psycopg
    except ImportError as exc:
        raise ToolMissingError(
            f"a PostgreSQL history needs psycopg ({exc}); fix: pip install 'psycopg[binary]'"
        ) from None
    return psycopg


def check_url(url: str) -> None:
    """Refuse a URL libpq cannot parse (one line; the password never shown)."""
    driver()
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Error as exc:
        raise InputError(
            f"history database {redact(url)}: bad URL: {scrub(str(exc), url)}"
        ) from None
    for port in str(params.get("port") or "").split(","):
        if port and not port.isdigit():
            raise InputError(f"history database {redact(url)}: bad URL: port {port!r}")


class PostgresHistory(History):
    P = "%s"

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redact(url)

    def _error(self, exc: BaseException) -> InputError:
        return InputError(f"history database {self.location}: {scrub(str(exc), self.url)}")

    @contextlib.contextmanager
    def _connect(self, *, read_only: bool) -> Iterator[Any]:
        psycopg = driver()
        check_url(self.url)
        extra: dict[str, Any] = {"application_name": "tkbench"}
        if "connect_timeout" not in self.url:
            extra["connect_timeout"] = CONNECT_TIMEOUT
        try:
            con = psycopg.connect(self.url, **extra)
        except psycopg.Error as exc:
            raise self._error(exc) from None
        try:
            con.read_only = read_only
            with con:  # commits on success, rolls back on an error; closes
                yield con
        except psycopg.Error as exc:
            raise self._error(exc) from None
        finally:
            con.close()

    def _version(self, con: Any) -> int | None:
        """The version; None when there is no history in this database (no tables
        at all); a database with other tables only is refused."""
        found = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        tables = {r[0] for r in found}
        if schema.VERSION_TABLE not in tables:
            if tables:
                raise InputError(
                    f"history database {self.location}: not a tkbench history (it has "
                    f"tables, but no {schema.VERSION_TABLE}); give an empty database"
                )
            return None
        rows = con.execute(f"SELECT version FROM {schema.VERSION_TABLE}").fetchall()
        if len(rows) != 1:
            raise InputError(
                f"history database {self.location}: {schema.VERSION_TABLE} has "
                f"{len(rows)} rows, not one"
            )
        version = int(rows[0][0])
        if version > schema.HISTORY_VERSION:
            raise InputError(schema.newer_message(self.location, version))
        return version

    def exists(self) -> bool:
        """A database that can be reached is there (a typo in its name is the
        server's "does not exist"); an empty one lists no runs."""
        with self._connect(read_only=True) as con:
            self._version(con)
        return True

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Connection | None]:
        with self._connect(read_only=True) as con:
            yield con if self._version(con) is not None else None

    @contextlib.contextmanager
    def _writer(self) -> Iterator[Connection]:
        with self._connect(read_only=False) as con:
            con.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            version = self._version(con)
            if version is None:
                con.execute(f"CREATE TABLE {schema.VERSION_TABLE} (version INTEGER NOT NULL)")
                con.execute(f"INSERT INTO {schema.VERSION_TABLE} VALUES (0)")
                version = 0
            if version < schema.HISTORY_VERSION:
                for sql in schema.upgrade(version, schema.POSTGRES):
                    con.execute(sql)
                schema.rewrite_serials(version, con, "%s")
                con.execute(
                    f"UPDATE {schema.VERSION_TABLE} SET version = %s", [schema.HISTORY_VERSION]
                )
            yield con

    def _stream(self, con: Any, sql: str, args: list[Any]) -> Iterator[Sequence[Any]]:
        """A server-side cursor: the rows come in batches as they are read, where a
        plain cursor fetches the whole result into memory first."""
        with con.cursor(name="tkbench_rows") as cur:
            cur.itersize = 500
            cur.execute(sql, args)
            yield from cur

    def _order(self, column: str) -> str:
        return f"COALESCE({column}, '') COLLATE \"C\""

    def _columns(self, con: Connection) -> set[str]:
        rows = con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'runs'"
        ).fetchall()
        return {r[0] for r in rows}

    def check_usable(self) -> None:
        """Reachable, logged in, a tkbench history or an empty database, and this
        user may write: a new history needs CREATE on the schema, an existing one
        INSERT and DELETE on its runs table."""
        with self._connect(read_only=True) as con:
            version = self._version(con)
            if version is None:
                sql = "SELECT has_schema_privilege(current_schema(), 'CREATE')"
                ok = con.execute(sql).fetchall()[0][0]
                what = "create tables in its schema"
            else:
                sql = (
                    "SELECT has_table_privilege('runs', 'INSERT') "
                    "AND has_table_privilege('runs', 'DELETE')"
                )
                ok = con.execute(sql).fetchall()[0][0]
                what = "write to its runs table"
            if not ok:
                raise InputError(f"history database {self.location}: this user may not {what}")
