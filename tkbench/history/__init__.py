"""The run history: an index of runs by drive, for listings, baselines of regression
checks and a lab-wide view of many rigs.

Where it is (:func:`default_location`, :func:`open_history`):

* ``--history`` or ``TKBENCH_HISTORY``: a file path (SQLite, embedded) or a
  ``postgresql://`` (also ``postgres://``) URL: one database for the whole lab;
* otherwise, for root, the system-wide ``/var/lib/tkbench/history.sqlite``
  (created with its directory mode 0755 and the file 0644: every user reads it);
* otherwise ``$XDG_DATA_HOME/tkbench/history.sqlite`` (``~/.local/share`` when unset).

The run directories stay the source of truth: the index holds where they are, who
the drive was, the host and rig, the checks and the headline numbers.  The same
schema on both backends, versioned and upgraded on first write (:mod:`.schema`);
:class:`.base.History` is what both do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tkbench.errors import InputError
from tkbench.history.base import History, Indexed, Stale
from tkbench.history.entry import (
    COLUMNS,
    Entry,
    baseline_of,
    entry_for,
    format_entries,
    json_chunks,
    listing_lines,
)
from tkbench.history.parts import CheckRow, EntryChecks, RepeatFigures, VolumeFigure
from tkbench.history.schema import HISTORY_VERSION

__all__ = [
    "COLUMNS",
    "HISTORY_VERSION",
    "SYSTEM_PATH",
    "CheckRow",
    "Entry",
    "EntryChecks",
    "History",
    "Indexed",
    "RepeatFigures",
    "Stale",
    "VolumeFigure",
    "baseline_of",
    "check_location",
    "default_location",
    "entry_for",
    "format_entries",
    "json_chunks",
    "listing_lines",
    "open_history",
    "user_path",
]

SYSTEM_PATH = Path("/var/lib/tkbench/history.sqlite")  # root's default, readable by all
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def user_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tkbench" / "history.sqlite"


def default_location() -> str:
    """``TKBENCH_HISTORY``; else root's system-wide file; else the user's own."""
    env = os.environ.get("TKBENCH_HISTORY")
    if env:
        return env
    return str(SYSTEM_PATH if os.geteuid() == 0 else user_path())


def check_location(text: str) -> str:
    """A history location as given (``--history``, ``TKBENCH_HISTORY``): a path, or a
    PostgreSQL URL libpq can parse.  Any other URL is refused, not taken for a file."""
    from tkbench.history import postgres

    if not text.strip():
        raise InputError("history database: empty path")
    scheme = _SCHEME.match(text)
    if scheme and not postgres.is_url(text):
        raise InputError(
            f"history database {postgres.redact(text)}: unsupported URL scheme "
            f"{scheme.group(1)!r} (give a file path or a postgresql:// URL)"
        )
    if postgres.is_url(text):
        postgres.check_url(text)
    return text


def open_history(location: str | Path | None = None) -> History:
    """The history at ``location`` (a path or a URL); None for the default."""
    text = check_location(str(location)) if location is not None else default_location()
    if location is None and os.environ.get("TKBENCH_HISTORY"):
        check_location(text)
    from tkbench.history import postgres

    if postgres.is_url(text):
        return postgres.PostgresHistory(text)
    from tkbench.history.sqlite import SQLiteHistory

    path = Path(text)
    return SQLiteHistory(path, shared=path == SYSTEM_PATH)
