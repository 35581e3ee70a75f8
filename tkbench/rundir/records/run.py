"""The run's own records: ``manifest.json`` and ``checks.json``."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tkbench.errors import RunDirError
from tkbench.rundir.records.base import Record, hints

NOT_NEGATIVE = {"minimum": 0}

# The manifest's "schema" is also the run directory's: raised whenever a change would
# mislead an older tkbench, which then refuses the directory instead of misreading it.
SCHEMA = 1
KIND = "tkbench-run"


@dataclass(frozen=True)
class Host:
    hostname: str = "unknown"
    kernel: str = "unknown"
    os: str = "unknown"
    machine: str = "unknown"
    cpu: str = "unknown"
    cpus: int | None = None
    memory_bytes: int = 0
    python: str = ""


def _fact(value: Any, hint: Any) -> Any:
    """One identity value as the type a :class:`DeviceFacts` field holds, as leniently
    as the outputs always read it: text where text is wanted, a count only if it is
    one, anything else as not said."""
    if hint is bool:
        return bool(value)
    if value is None:
        return None
    if hint == str | None:
        return str(value)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if hint == int | None:
        return value if number and isinstance(value, int) else None
    if hint == float | None:
        return float(value) if number else None
    if hint == tuple[str, ...]:
        return tuple(str(v) for v in value if v) if isinstance(value, list) else ()
    return value if isinstance(value, dict) else None  # a mapping of the device's


@dataclass(frozen=True)
class DeviceFacts:
    """The facts of a target's ``identity`` that the outputs read, typed once
    (:attr:`TargetRecord.device`).  The identity's keys depend on the device (a drive,
    a regular file, a volume, an NBD export), so the stored mapping stays as it was
    written; this is the one place that reads it by key.  A text fact is None where
    the identity does not say it (``""`` where it says nothing)."""

    model: str | None = None
    serial: str | None = None
    firmware: str | None = None
    interface: str | None = None
    write_cache: str | None = None  # the kernel's flush policy (sysfs)
    logical_sector: int | None = None
    physical_sector: int | None = None
    capacity_bytes: int | None = None
    emulated: bool = False  # the bundled SSD emulator behind an NBD export
    synthetic: bool = False  # the tests' synthetic run generator: no drive was read
    emulator: str | None = None  # the emulator's description, where it gave one
    # a volume: the directory, its filesystem and what that is mounted from
    path: str | None = None
    filesystem: str | None = None
    source: str | None = None
    notes: tuple[str, ...] = ()
    # the report header's facts (tkbench.device.facts); ``*_recorded`` False for runs
    # made before tkbench recorded them
    manufacturer_recorded: bool = False
    manufacturer: str | None = None
    manufacturer_source: str | None = None
    host_link_recorded: bool = False
    host_link: dict[str, Any] | None = None
    form_factor: str | None = None
    # the drive's warning (NVMe WCTEMP, a SCSI drive's trip temperature) and critical
    # composite temperatures, as identified
    warning_temp_c: float | None = None
    critical_temp_c: float | None = None

    @classmethod
    def of(cls, identity: Mapping[str, Any]) -> DeviceFacts:
        types_ = hints(cls)
        said = {
            f.name: _fact(identity[f.name], types_[f.name])
            for f in fields(cls)
            if f.name in identity and not f.name.endswith("_recorded")
        }
        return cls(
            **said,
            manufacturer_recorded="manufacturer" in identity,
            host_link_recorded="host_link" in identity,
        )


@dataclass(frozen=True)
class TargetRecord:
    """The target as the run saw it; ``identity`` is what the device reported about
    itself (model, serial, firmware, interface, ...: its keys depend on the device)."""

    spec: str = ""
    kind: str = ""  # file | block | nbd
    path: str = ""
    capacity_bytes: int = field(default=0, metadata=NOT_NEGATIVE)
    logical_sector: int = 512
    identity: Mapping[str, Any] = field(default_factory=dict)
    # what proves the target on a resume (runs made before they were recorded have
    # none, and are left out of the file then): the absolute path with every link
    # resolved, for a file or block device; for a regular file its filesystem's
    # device number, its inode number and the inode's generation (0: not kept by
    # the filesystem; a new file given a removed one's inode number has another)
    resolved: str | None = field(default=None, metadata={"omit_none": True})
    st_dev: int | None = field(default=None, metadata={"omit_none": True})
    st_ino: int | None = field(default=None, metadata={"omit_none": True})
    st_gen: int | None = field(default=None, metadata={"omit_none": True})

    @functools.cached_property
    def device(self) -> DeviceFacts:
        """The identity's facts, typed (read from ``identity`` once)."""
        return DeviceFacts.of(self.identity)

    def ident(self, key: str, default: str = "unknown") -> str:
        """One identity field as text (``default`` when the device did not say)."""
        value = self.identity.get(key)
        return str(value) if value not in (None, "") else default

    @property
    def capacity(self) -> int:
        """The user capacity in bytes (the identity's, else the target's)."""
        cap = self.device.capacity_bytes
        return cap if cap is not None and cap > 0 else self.capacity_bytes


@dataclass(frozen=True)
class ProfileRef:
    """The profile the run used, as it was resolved then (the report rebuilds the
    profile from ``resolved``, never from the installation)."""

    name: str = ""
    source: str = ""
    resolved: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Resume:
    at: float
    rounds_kept: int = 0
    test: str = ""
    action: str = ""  # continue | continue-parts | re-precondition | new-segment | restart
    # continue-parts: the stage's parts kept from before (the one after them ran again,
    # then the rest); left out otherwise
    parts_kept: int | None = field(default=None, metadata={"omit_none": True})


@dataclass(frozen=True)
class Manifest(Record):
    """``manifest.json``: what ran where, with what, and how it ended.

    Format history: 1 — the first; ``run_id`` missing in runs made before it was
    added (those have no identity beyond their directory); later within 1,
    ``target.resolved``, ``target.st_dev``, ``st_ino`` and ``st_gen`` (the proof of the
    target on a resume), left out of older files, which therefore load exactly as
    before and resume without that proof."""

    VERSION = SCHEMA

    run_id: str | None = None  # a random UUID: the run wherever its directory is copied
    tkbench_version: str = ""
    fio_version: str = ""
    host: Host = field(default_factory=Host)
    fio_servers: tuple[str, ...] = ()
    command_line: tuple[str, ...] = ()
    profile: ProfileRef = field(default_factory=ProfileRef)
    target: TargetRecord = field(default_factory=TargetRecord)
    active_bytes: int = 0
    tests: tuple[str, ...] = ()
    plan_notes: tuple[str, ...] = ()
    status: str = "running"  # running | complete | interrupted | failed
    started: float | None = None
    ended: float | None = None
    resumes: tuple[Resume, ...] = ()
    error: str | None = None
    synthetic: bool = False  # made by the tests' synthetic run generator: no measurement

    @classmethod
    def load_checked(cls, data: Any, path: Path) -> Manifest:
        """A manifest of a tkbench run (its ``kind`` says so), or RunDirError."""
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise RunDirError(f"{path}: not a tkbench run manifest")
        if not isinstance(data.get("schema"), int):
            raise RunDirError(f"{path}: manifest has no schema version")
        rest = {k: v for k, v in data.items() if k != "kind"}
        manifest: Manifest = cls.load(rest, path)
        return manifest

    def to_json(self) -> dict[str, Any]:
        return {"kind": KIND, **super().to_json()}


@dataclass(frozen=True)
class TargetState(Record):
    """``target.json``: the data a run's writes left on a regular-file target, for the
    proof on a resume (docs/resume.md).  ``writing`` is true from before a session's
    first write until its writes have ended; then ``digest`` (SHA-256 of the size and
    the first and last 8 MiB, :func:`tkbench.device.owndata.digest`) is what the
    target held when they ended.  A run killed while writing leaves ``writing`` true:
    its digest says nothing about the data fio wrote after it.

    Format history: 1 — the first (runs made before it have no ``target.json``)."""

    VERSION = 1

    size: int = field(default=0, metadata=NOT_NEGATIVE)
    digest: str = ""
    writing: bool = True
    at: float = 0.0


@dataclass(frozen=True)
class CheckItem:
    """One PASS/FAIL check of a run: steady state, an acceptance criterion, a
    regression against a baseline."""

    name: str = ""
    kind: str = ""  # steady_state | criterion | regression
    passed: bool = False
    measured: float | None = None  # None where nothing could be measured
    limit: str = ""
    message: str = ""

    def __post_init__(self) -> None:
        if self.measured is not None and not math.isfinite(self.measured):
            object.__setattr__(self, "measured", None)


@dataclass(frozen=True)
class Checks(Record):
    """``checks.json``: the checks evaluated after the run (acceptance criteria,
    steady state, regressions against a baseline).

    Format history: 1 (no ``schema``); 2 — ``schema`` written."""

    VERSION = 2

    passed: bool = True
    count: int = 0
    failed: int = 0
    checks: tuple[CheckItem, ...] = ()
    evaluated: float = 0.0
    baseline: str | None = None

    @classmethod
    def of(
        cls,
        checks: tuple[CheckItem, ...] | list[CheckItem],
        evaluated: float,
        baseline: str | None = None,
    ) -> Checks:
        return cls(
            passed=all(c.passed for c in checks),
            count=len(checks),
            failed=sum(not c.passed for c in checks),
            checks=tuple(checks),
            evaluated=evaluated,
            baseline=baseline,
        )


Checks.UPGRADES = {1: lambda data, context: data}
