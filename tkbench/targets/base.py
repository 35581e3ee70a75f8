"""The target interface: what tkbench runs fio against (a subclass per kind:
:mod:`tkbench.targets.file`, :mod:`tkbench.targets.block`, :mod:`tkbench.targets.nbdtarget`,
:mod:`tkbench.targets.volume`), what planning knows of a target, and how fio
addresses it."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Guarded
from tkbench.errors import SafetyError
from tkbench.fiovalue import filename_value
from tkbench.rundir.records.run import DeviceFacts
from tkbench.units import human_bytes

if TYPE_CHECKING:
    from tkbench.device.thermal import ThermalReading
    from tkbench.device.writecache import RecordSink, WriteCacheSession


# how the bundled emulator names itself in the NBD handshake (tkbench/emulator/plugin.py)
EMULATOR_DESCRIPTION = "tkbench SSD emulator"


@dataclass(frozen=True)
class TargetInfo:
    """What planning needs to know of a target (no I/O)."""

    spec: str
    kind: str  # file | block | nbd | volume
    capacity: int  # user capacity in bytes (a volume: its filesystem's size)
    logical_sector: int = 512
    free: int = 0  # a volume: bytes its test files may use (free space, its own files counted)
    direct_io: bool = True  # a volume: its filesystem takes O_DIRECT


def engine_for(kind: str, ioengine: str = "auto") -> str:
    """The fio ioengine used on a target of ``kind`` ("file", "block", "nbd") when the
    profile asks for ``ioengine``: an NBD target always goes through fio's nbd engine,
    and "auto" means libaio on files and block devices."""
    if kind == "nbd":
        return "nbd"
    if ioengine == "auto":
        return "libaio" if kind in ("file", "block") else "auto"
    return ioengine


@dataclass
class Target:
    """What tkbench runs fio against; a subclass per kind (file, block device, NBD).

    The engine and the run orchestration use only this interface: how fio addresses
    the target, the read-only safety checks, the operator's consent, the one-run lock,
    the purge, health snapshots.
    """

    kind: ClassVar[str] = ""  # file | block | nbd
    marks_own_data: ClassVar[bool] = False  # checked for signatures: Target.keep_mark
    spec: str  # as the user gave it
    path: str  # device or file path; the URI for nbd
    capacity: int
    logical_sector: int = 512
    identity: dict[str, Any] = field(default_factory=dict)

    def info(self) -> TargetInfo:
        return TargetInfo(self.spec, self.kind, self.capacity, self.logical_sector)

    @property
    def facts(self) -> DeviceFacts:
        """The identity's facts, typed (the manifest records the identity as it is, and
        its readers see the same facts: :attr:`tkbench.rundir.records.TargetRecord.device`)."""
        return DeviceFacts.of(self.identity)

    def describe(self) -> str:
        model = self.facts.model
        extra = f" {model}" if model and model != "unknown" else ""
        return f"{self.spec} ({self.kind}{extra}, {human_bytes(self.capacity)})"

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        """Global job-file options that address this target."""
        return {"ioengine": engine_for(self.kind, ioengine), "filename": filename_value(self.path)}

    # ------------------------------------------------------------ safety
    def check(self, *, force: bool = False) -> Guarded:
        """Refuse a target that must not be written (read-only checks, docs/safety.md):
        swap, loop backing file, open elsewhere, not writable, mounted, holders,
        system disk, signatures (``force`` overrides only these).  Returns what the
        passed check has to tell (:class:`tkbench.device.Guarded`)."""
        from tkbench.device import check_target

        return check_target(self.path, force=force)

    def keep_mark(
        self, run: str, when: str, *, ended: str | None, extent: list[tuple[int, int]]
    ) -> str | None:
        """Mark the data a run leaves on the target as tkbench's, so that a signature
        its random data happens to form is not taken for someone's next time
        (:mod:`tkbench.device.owndata`): files and block devices, which are checked
        for signatures; the other kinds are not.  ``ended``: the target's digest when
        the run's writes ended; ``extent``: the byte ranges they reached.  Returns why
        no mark was kept (None: kept, or not a kind that is marked)."""
        if not self.marks_own_data:
            return None
        from tkbench.device import owndata
        from tkbench.device.safety import signature_pairs

        mark = owndata.keep_mark(self.path, run, when, signature_pairs, ended=ended, extent=extent)
        if mark is None:
            return (
                "the target changed after the run's last write, could not be read, or "
                "the marks' directory could not be written"
            )
        return None

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """The operator's consent to destroy the target's data: ``--yes`` or a typed
        'yes' (block devices need more: :class:`BlockTarget`).  ``--confirm`` names a
        block device's serial; for a file or NBD target it is no consent."""
        if assume_yes:
            return
        if confirm_id is not None:
            raise SafetyError(
                f"{self.spec}: --confirm names a block device's serial; "
                "pass --yes to destroy the data of a file or NBD target"
            )
        if interactive and prompt is not None:
            answer = prompt(
                f"tkbench will overwrite all data of {self.describe()}. Type 'yes' to go on: "
            )
            if answer.strip().lower() == "yes":
                return
            raise SafetyError("not confirmed: nothing was written")
        raise SafetyError(f"{self.spec}: destroying its data needs confirmation: pass --yes")

    def lock_path(self) -> str:
        return self.path

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the one-run-per-device lock while the body runs."""
        from tkbench.device import DeviceLock

        with DeviceLock(self.lock_path()):
            yield

    @contextlib.contextmanager
    def materialized(self) -> Iterator[None]:
        """The target exists for the body (a regular file is created: :class:`FileTarget`)."""
        yield

    @contextlib.contextmanager
    def workspace(self, run_dir: Path) -> Iterator[None]:
        """What the run needs on the target while it runs (a volume's working
        directory: :class:`tkbench.targets.volume.VolumeTarget`), removed however it ends."""
        yield

    def test_done(self, name: str) -> None:
        """A test has finished (a volume removes its test files)."""

    def check_purge(self, method: str) -> None:
        """Refuse, before anything starts, a purge method that cannot apply to this target."""

    # ------------------------------------------------------------ write cache
    # why a target that is no drive of its own has no write cache to set
    no_write_cache: ClassVar[str] = "the target has no drive write cache"

    def check_write_cache(self, setting: str) -> None:
        """Refuse, before the confirmation, a ``workload.write_cache`` setting the
        target cannot take (:class:`BlockTarget`).  A target with no drive of its own
        takes any: it does not apply, and the run records that."""

    def write_cache(self, setting: str, sink: RecordSink) -> WriteCacheSession:
        """The session that sets the write cache for a run and restores it."""
        from tkbench.device.writecache import WriteCacheSession

        return WriteCacheSession(None, setting, sink, not_applicable_because=self.no_write_cache)

    def write_cache_plan(self, setting: str) -> str:
        """What ``tkbench plan`` says the run will do with the write cache."""
        from tkbench.device.writecache import plan_text

        return plan_text(None, setting, self.no_write_cache)

    def write_cache_absent(self) -> str | None:
        """Why the target has no drive write cache to set (None: it has one)."""
        return self.no_write_cache

    def health(self) -> dict[str, Any] | None:
        """A SMART/health snapshot (None where the target has none)."""
        return None

    def thermal_reader(self) -> Callable[[], tuple[ThermalReading | None, str]] | None:
        """A query of the drive's temperature and thermal counters for between rounds
        (:func:`tkbench.device.thermal.read`); None where the target has no drive."""
        return None

    def io_counters(self) -> tuple[int, int, int] | None:
        """The kernel's counters of the block device the target's I/O goes to: I/Os
        completed, bytes, and milliseconds spent on them (None where there is none).
        For live figures during a round; the device may carry other I/O too."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        try:
            with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat") as fh:
                f = [int(x) for x in fh.read().split()]
        except (OSError, ValueError):
            return None
        if len(f) < 8:
            return None
        return f[0] + f[4], (f[2] + f[6]) * 512, f[3] + f[7]

    # ------------------------------------------------------------ purge
    def purge(self, method: str, allow_fallback: bool) -> PurgeRecord:
        """Return the drive to a fresh state; the record of what was done."""
        t0 = time.monotonic()
        if method == "none":
            return _record("none", False, [], t0, ["purge disabled by the profile"])
        return self._purge(method, allow_fallback, t0)

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        raise NotImplementedError


def _record(
    method: str, compliant: bool, commands: list[dict[str, Any]], t0: float, notes: list[str]
) -> PurgeRecord:
    return PurgeRecord(
        device="",
        interface="",
        requested_method=method,
        method=method,
        pts_compliant=compliant,
        commands=commands,
        seconds=round(time.monotonic() - t0, 3),
        notes=notes,
    )
