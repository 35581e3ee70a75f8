"""What ``RUN/write-cache.json`` holds (:class:`WriteCacheRecord`: one
:class:`CacheSession` per start or resume of a run) and its words in the report and
in ``tkbench show``.  Setting, reading back and restoring the cache is
:mod:`tkbench.device.writecache`'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tkbench.errors import RunDirError
from tkbench.typed import Error, Typed, build, dump

SETTINGS = ("disabled", "enabled", "unchanged")
RECORD_KIND = "tkbench-write-cache"
RECORD_SCHEMA = 1
FILE = "write-cache.json"

# states of the cache as read from the drive (or why there is none to read)
ENABLED, DISABLED, ABSENT, UNKNOWN, NOT_APPLICABLE = (
    "enabled",
    "disabled",
    "absent",
    "unknown",
    "not applicable",
)
STATES = (ENABLED, DISABLED, ABSENT, UNKNOWN, NOT_APPLICABLE)


class RecordSink(Protocol):
    """Where a session keeps its record (the run directory; tests use a dict)."""

    def previous(self) -> dict[str, Any] | None: ...

    def save(self, record: dict[str, Any]) -> None: ...

    def log(self, message: str) -> None: ...


# --------------------------------------------------------------------------- record

STATE = {"choices": STATES}


@dataclass
class CacheSession(Typed):
    """One start or resume of a run: what was read, set, verified and restored."""

    started: float
    before: str = field(default=UNKNOWN, metadata=STATE)  # read before anything was set
    # what the end restores: ``before``, or an earlier session's
    original: str = field(default=UNKNOWN, metadata=STATE)
    # the drive holds a setting of tkbench's (sent in this session, or left by an earlier
    # one that never restored): the end restores ``original``
    changed: bool = False
    # read back after setting (or ``before`` when nothing was sent)
    after: str | None = field(default=None, metadata=STATE)
    verified: bool | None = None
    restored: str | None = field(default=None, metadata=STATE)  # read back after restoring
    restore_verified: bool | None = None
    ended: float | None = None
    error: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def left_modified(self) -> bool:
        """The drive may still hold tkbench's setting: set, and never verifiably restored."""
        return self.changed and self.restore_verified is not True


@dataclass
class WriteCacheRecord:
    """``RUN/write-cache.json``: the setting asked for and every session's account.
    Its JSON is ``kind`` and ``schema``, then its fields in order."""

    requested: str = field(metadata={"choices": SETTINGS})
    applies: bool  # False: the target has no drive write cache (file, loop, NBD)
    device: str = ""
    interface: str = ""
    tool: str = ""  # the program that reads and sets it ("" when none)
    scope: str = ""  # what the setting affects
    reason: str = ""  # why it does not apply
    sessions: list[CacheSession] = field(default_factory=list)

    # the file's two header keys are not fields: kept explicit here
    def to_dict(self) -> dict[str, Any]:
        return {"kind": RECORD_KIND, "schema": RECORD_SCHEMA, **dump(self)}

    @classmethod
    def from_dict(
        cls, data: Any, path: Path | str = FILE, *, error: Error = RunDirError
    ) -> WriteCacheRecord:
        """The record of ``data`` as stored; ``error`` names ``path`` and the first
        bad field."""
        if not isinstance(data, dict) or data.get("kind") != RECORD_KIND:
            raise error(f"{path}: not a tkbench write-cache record")
        schema = data.get("schema")
        if not isinstance(schema, int) or isinstance(schema, bool) or schema > RECORD_SCHEMA:
            raise error(f"{path}: field schema is {schema!r:.40}, not a schema this tkbench reads")
        return build(cls, data, path, error=error)


# --------------------------------------------------------------------------- words


def describe(record: WriteCacheRecord | None) -> str:
    """The report's and ``tkbench show``'s sentence: what was set, verified, restored."""
    if record is None:
        return "not set by tkbench (this run has no write-cache record)"
    sessions = record.sessions
    asked = record.requested
    if not record.applies:
        if asked == "unchanged":
            return f"not set by tkbench: {record.reason}"
        return f"NOT {asked} as the profile asks: {record.reason}"
    if not sessions:
        return f"{asked} asked; not yet set"
    first, last = sessions[0], sessions[-1]
    if asked == "unchanged":
        if first.before not in (ENABLED, DISABLED, ABSENT):
            why = first.notes[0] if first.notes else "not read"
            return f"left unchanged, state unknown ({why}; not set by tkbench)"
        return f"{first.before}, left unchanged (read with {record.tool}; not set by tkbench)"
    if last.verified is not True:  # the run stopped there: no test ran in that session
        what = last.error or "not verified"
        if not last.changed:
            return f"NOT {asked}: {what}; the drive was left as it was ({last.before})"
        if last.restore_verified:
            return f"NOT {asked}: {what}; the drive reads {last.original} again, as before"
        return f"NOT {asked}: {what}" + _restore_words(last)
    # the sessions tests ran in (one that failed to set the cache ran none)
    ran = [s for s in sessions if s.verified is True]
    if all(s.after == ABSENT for s in ran):
        return f"{asked}: the drive has no volatile write cache (checked with {record.tool})"
    if any(s.changed for s in ran):
        how = "set by tkbench, verified"
    else:
        how = f"already {asked} before the run, verified by tkbench"
    if len(ran) > 1:
        how += f" in each of {len(ran)} sessions"
    return f"{asked} ({how}" + _restore_words(last, closing=")")


def _restore_words(s: CacheSession, closing: str = "") -> str:
    if not s.changed:
        return closing
    if s.restore_verified:
        return f"; restored to {s.original} after the run{closing}"
    if s.ended is None:
        return f"; not yet restored to {s.original}: the run is going on or was killed{closing}"
    return f"; NOT restored to {s.original}{closing}"
