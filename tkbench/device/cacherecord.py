"""What ``RUN/write-cache.json`` holds (:class:`WriteCacheRecord`: one
:class:`CacheSession` per start or resume of a run) and its words in the report and
in ``tkbench show``.  Setting, reading back and restoring the cache is
:mod:`tkbench.device.writecache`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

SETTINGS = ("disabled", "enabled", "unchanged")
RECORD_KIND = "tkbench-write-cache"
RECORD_SCHEMA = 1

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


@dataclass
class CacheSession:
    """One start or resume of a run: what was read, set, verified and restored."""

    started: float
    before: str = UNKNOWN  # read before anything was set (one of STATES)
    original: str = UNKNOWN  # what the end restores: ``before``, or an earlier session's
    # the drive holds a setting of tkbench's (sent in this session, or left by an earlier
    # one that never restored): the end restores ``original``
    changed: bool = False
    after: str | None = None  # read back after setting (or ``before`` when nothing was sent)
    verified: bool | None = None
    restored: str | None = None  # read back after restoring
    restore_verified: bool | None = None
    ended: float | None = None
    error: str | None = None
    commands: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = (
                [dict(v) if isinstance(v, dict) else v for v in value]
                if isinstance(value, list)
                else value
            )
        return out

    @property
    def left_modified(self) -> bool:
        """The drive may still hold tkbench's setting: set, and never verifiably restored."""
        return self.changed and self.restore_verified is not True


@dataclass
class WriteCacheRecord:
    """``RUN/write-cache.json``: the setting asked for and every session's account."""

    requested: str  # one of SETTINGS
    applies: bool  # False: the target has no drive write cache (file, loop, NBD)
    device: str = ""
    interface: str = ""
    tool: str = ""  # the program that reads and sets it ("" when none)
    scope: str = ""  # what the setting affects
    reason: str = ""  # why it does not apply
    sessions: list[CacheSession] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": RECORD_KIND,
            "schema": RECORD_SCHEMA,
            "requested": self.requested,
            "applies": self.applies,
            "device": self.device,
            "interface": self.interface,
            "tool": self.tool,
            "scope": self.scope,
            "reason": self.reason,
            "sessions": [s.to_dict() for s in self.sessions],
        }

    @classmethod
    def from_dict(cls, data: Any) -> WriteCacheRecord:
        """The record of ``data`` as stored; ValueError names the first bad field."""
        if not isinstance(data, dict) or data.get("kind") != RECORD_KIND:
            raise ValueError("not a tkbench write-cache record")
        schema = data.get("schema")
        if not isinstance(schema, int) or schema > RECORD_SCHEMA:
            raise ValueError(f"field 'schema': {schema!r} is not a schema this tkbench reads")
        _want(data, "requested", "str", choices=SETTINGS)
        _want(data, "applies", "bool")
        for key in ("device", "interface", "tool", "scope", "reason"):
            _want(data, key, "str", optional=True)
        raw = data.get("sessions", [])
        if not isinstance(raw, list):
            raise ValueError("field 'sessions': expected a list")
        return cls(
            requested=data["requested"],
            applies=data["applies"],
            device=data.get("device", ""),
            interface=data.get("interface", ""),
            tool=data.get("tool", ""),
            scope=data.get("scope", ""),
            reason=data.get("reason", ""),
            sessions=[_session(s, f"sessions[{i}].") for i, s in enumerate(raw)],
        )


_KINDS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
}


def _want(
    data: dict[str, Any],
    key: str,
    *kinds: str,
    where: str = "",
    optional: bool = False,
    choices: tuple[str, ...] | None = None,
) -> None:
    """ValueError naming ``where + key`` unless its value has one of ``kinds``."""
    if key not in data:
        if optional:
            return
        raise ValueError(f"field '{where}{key}' is missing")
    value = data[key]
    if not any(_KINDS[k](value) for k in kinds):
        raise ValueError(f"field '{where}{key}': {value!r:.40} is not a {' or '.join(kinds)}")
    if choices is not None and value is not None and value not in choices:
        raise ValueError(f"field '{where}{key}': {value!r:.40} is not one of {', '.join(choices)}")


def _session(raw: Any, where: str) -> CacheSession:
    if not isinstance(raw, dict):
        raise ValueError(f"field '{where.rstrip('.')}': expected an object")
    _want(raw, "started", "number", where=where)
    _want(raw, "before", "str", where=where, choices=STATES)
    _want(raw, "original", "str", where=where, choices=STATES)
    _want(raw, "changed", "bool", where=where)
    for key in ("after", "restored"):
        _want(raw, key, "str", "null", where=where, optional=True, choices=STATES)
    _want(raw, "error", "str", "null", where=where, optional=True)
    for key in ("verified", "restore_verified"):
        _want(raw, key, "bool", "null", where=where, optional=True)
    _want(raw, "ended", "number", "null", where=where, optional=True)
    for key in ("commands", "notes"):
        _want(raw, key, "list", where=where, optional=True)
    ended = raw.get("ended")
    return CacheSession(
        started=float(raw["started"]),
        before=raw["before"],
        original=raw["original"],
        changed=raw["changed"],
        after=raw.get("after"),
        verified=raw.get("verified"),
        restored=raw.get("restored"),
        restore_verified=raw.get("restore_verified"),
        ended=float(ended) if ended is not None else None,
        error=raw.get("error"),
        commands=[dict(c) for c in raw.get("commands", []) if isinstance(c, dict)],
        notes=[str(n) for n in raw.get("notes", [])],
    )


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
