"""The history's tables, their versions and the steps from one version to the next.

Both backends hold the same ``runs`` table, built by the same steps; only the type
names differ (SQLite's REAL and INTEGER are PostgreSQL's DOUBLE PRECISION and BIGINT:
a capacity in bytes does not fit a 32-bit integer).  Where the version is kept:

* SQLite: ``PRAGMA user_version``;
* PostgreSQL: the one row of the table ``tkbench_schema`` (beside ``runs``, in the
  connection's current schema).

History of the format:

0. (SQLite only, unstamped) the ``runs`` table, written by tkbench before versions
   were kept.
1. the same table, stamped; columns are written and read by name.
2. ``rig`` (the rig name given with ``--rig`` or ``TKBENCH_RIG``), ``run_id`` (the
   manifest's run UUID, unique; null for runs made before run ids) and
   ``indexed_on`` (the host whose file system ``run_dir`` names, so that ``history
   prune`` on one rig never judges another rig's directories).
3. ``repeats``: per repeated point of a run's fixed tests, its runs' mean MiB/s, mean
   absolute deviation (% of the mean), standard deviation and number of runs (JSON
   text, like ``headline``; null for runs without fixed tests and for entries indexed
   before version 3 until they are indexed again).
4. ``volume``: the headline figures of a run's volume benchmarks (a bulk-I/O sweep's
   best combinations, a copy test's MB/s per set and pattern, a virtual-file test's
   nodes/s per operation, threads and cache state), keyed ``"TEST NAME"``, each with
   its value, unit, mean absolute deviation (%), standard deviation and number of
   runs (JSON text; null for runs without such tests and for entries indexed before
   version 4 until they are indexed again).
5. no new column: the ``serial`` of a run on a regular file or an NBD export, which
   was ``unknown`` for every such target (all files one "drive"), is rewritten by
   :func:`rewrite_serials` to what tells the target apart (tkbench.history.entry's
   ``legacy_serial``): an NBD export's name and socket (from the URI, the same as a
   new run's); a file's resolved path (from the run directory's manifest, else the
   ``target`` as given) on the run's host.  A file's filesystem UUID was never
   recorded, so its older runs stay apart from the runs made since (``PATH on
   UUID=...``); block devices that report no serial keep ``unknown``.

The first write to a history creates it or brings it up to :data:`HISTORY_VERSION`,
one step after the other, in one transaction; reading never changes it (columns an
older version lacks read as null).  A history of a newer version is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tkbench.errors import RunDirError
from tkbench.history.entry import legacy_serial
from tkbench.history.parts import ManifestTarget, TargetIdentity
from tkbench.rundir.records.base import build

HISTORY_VERSION = 5

VERSION_TABLE = "tkbench_schema"  # PostgreSQL: the version, one row


@dataclass(frozen=True)
class Dialect:
    name: str
    real: str  # a float column
    int64: str  # an integer column wide enough for bytes


SQLITE = Dialect("sqlite", real="REAL", int64="INTEGER")
POSTGRES = Dialect("postgresql", real="DOUBLE PRECISION", int64="BIGINT")

# STEPS[n - 1] takes a history from version n - 1 to version n.
STEPS: tuple[tuple[str, ...], ...] = (
    (  # 1: the runs table (a no-op on an unstamped version-0 history, which has it)
        """CREATE TABLE IF NOT EXISTS runs (
            run_dir   TEXT PRIMARY KEY,
            started   {real},
            ended     {real},
            status    TEXT,
            profile   TEXT,
            host      TEXT,
            target    TEXT,
            model     TEXT,
            serial    TEXT,
            firmware  TEXT,
            capacity  {int64},
            headline  TEXT,
            checks    TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS runs_drive ON runs (model, serial, started)",
    ),
    (  # 2: the rig, the run's UUID, the host whose path run_dir is
        "ALTER TABLE runs ADD COLUMN rig TEXT",
        "ALTER TABLE runs ADD COLUMN run_id TEXT",
        "ALTER TABLE runs ADD COLUMN indexed_on TEXT",
        "CREATE UNIQUE INDEX IF NOT EXISTS runs_run_id ON runs (run_id)",
    ),
    (  # 3: the repeatability of repeated points
        "ALTER TABLE runs ADD COLUMN repeats TEXT",
    ),
    (  # 4: the volume benchmarks' headline figures
        "ALTER TABLE runs ADD COLUMN volume TEXT",
    ),
    (),  # 5: the serials of files and NBD exports (rewrite_serials: data, no table change)
)
assert len(STEPS) == HISTORY_VERSION


def upgrade(version: int, dialect: Dialect) -> list[str]:
    """The statements that take a history of ``version`` to :data:`HISTORY_VERSION`."""
    return [
        sql.format(real=dialect.real, int64=dialect.int64)
        for step in STEPS[version:]
        for sql in step
    ]


def rewrite_serials(version: int, con: Any, mark: str) -> None:
    """Step 5's data: on a history of ``version`` below 5, every entry of serial
    ``unknown`` gets the serial :func:`~tkbench.history.entry.legacy_serial` derives
    (when it derives one).  ``con``: an open connection in the upgrade's transaction
    (sqlite3 or psycopg, whose ``execute`` takes parameters); ``mark``: its
    placeholder (``?`` or ``%s``)."""
    if version >= 5:
        return
    rows = con.execute(
        "SELECT run_dir, model, host, target FROM runs WHERE serial = 'unknown'"
    ).fetchall()
    for run_dir, model, host, target in rows:
        found = TargetIdentity(spec=target or "")
        manifest = Path(run_dir) / "manifest.json"
        try:
            with open(manifest, encoding="utf-8") as fh:
                kept = build(ManifestTarget, json.load(fh), manifest).target
            if kept is not None and kept.spec == target:
                found = kept
        except (OSError, ValueError, RunDirError):
            pass  # moved, on another rig, unreadable: the target as given
        serial = legacy_serial(found, model or "", host or "")
        if serial is not None:
            sql = f"UPDATE runs SET serial = {mark} WHERE run_dir = {mark}"
            con.execute(sql, [serial, run_dir])


def newer_message(location: str, version: int) -> str:
    return (
        f"history database {location}: written by a newer tkbench (version {version}, "
        f"this one reads up to {HISTORY_VERSION}); upgrade tkbench to use it"
    )
