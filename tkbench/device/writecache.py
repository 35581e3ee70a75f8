"""The drive's volatile write cache: set as the profile asks, verified, restored.

SNIA PTS 2.0.2 runs every test with the volatile write cache disabled for
PTS-E and enabled for PTS-C ("PTS-E WCD, PTS-C WCE").  The profile key
``workload.write_cache`` says ``disabled``, ``enabled`` or ``unchanged``; a run
sets it once, after the safety checks and the confirmation and before the
first test touches the drive, reads it back, and restores what the drive had
before at the end of the run, also after an error or an interrupt.  A resumed
run does the same again.

Per interface, with the tool that speaks to it:

* NVMe (nvme-cli): Identify Controller's VWC bit 0 says whether a volatile write
  cache is present; Get/Set Features, Feature Identifier 06h (Volatile Write
  Cache), bit 0 WCE.  The feature belongs to the controller (every namespace),
  so it is addressed with NSID FFFFFFFFh; it is set without "save", so a power
  cycle returns the drive to its saved setting whatever happens to tkbench.
* SATA (hdparm): ``hdparm -W`` reads the write-caching flag, ``-W0``/``-W1``
  sets it (SET FEATURES 82h/02h); hdparm flushes the cache before disabling it.
* SAS/SCSI (sdparm): the WCE bit of the Caching mode page, current values only
  (``--set``/``--get``, never ``--save``); ``cha: n`` means it cannot be changed.

Targets that are no drive of their own -- a regular file, a loop device, an NBD
export such as the bundled emulator -- have no write cache for tkbench to set:
the run goes on and the record says that the profile's setting was not applied.
Any other drive whose cache cannot be set (no tool, no cache to enable, the
drive refuses, the read-back disagrees) is refused before anything destructive.

What happened is kept in a :class:`WriteCacheRecord` (``RUN/write-cache.json``),
one :class:`CacheSession` per start or resume, saved at every step through a
:class:`RecordSink` -- before a set command is sent, so even a ``kill -9`` leaves
a record saying what to restore.  See docs/safety.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from tkbench import proc
from tkbench.device._common import as_int, last_line, load_json_object, tool_hint
from tkbench.device.cacherecord import (
    ABSENT,
    DISABLED,
    ENABLED,
    NOT_APPLICABLE,
    SETTINGS,
    CacheSession,
    RecordSink,
    WriteCacheRecord,
)
from tkbench.device.identify import DeviceIdentity
from tkbench.errors import CommandError, DeviceError, Interrupted, ToolMissingError

QUERY_TIMEOUT = 60.0

NVME_FEATURE_VWC = "6"
NVME_NSID_ALL = "4294967295"  # FFFFFFFFh: the feature is the controller's, not a namespace's

# interfaces without a drive of their own: nothing to set, a departure is recorded
NOT_A_DRIVE = {"loop": "a loop device (its data lives in a file) has no drive write cache"}


class WriteCacheError(DeviceError):
    """The write cache cannot be set or verified as the profile asks.  Raised before
    anything destructive; what ran is in the run's ``write-cache.json``."""


# --------------------------------------------------------------------------- drivers


@dataclass(frozen=True)
class Reading:
    state: str  # ENABLED, DISABLED or ABSENT
    changeable: bool | None = None  # SCSI: the mode page's "cha" flag
    source: str = ""  # what said so, for notes


class _Driver:
    """How one interface's tool reads and sets the cache."""

    program = ""
    package = ""
    scope = ""

    def __init__(self, path: str) -> None:
        self.path = path

    def read_argv(self) -> list[str]:
        raise NotImplementedError

    def set_argv(self, enable: bool) -> list[str]:
        raise NotImplementedError

    def read(self, run: _Runner) -> Reading:
        raise NotImplementedError


class _Nvme(_Driver):
    program, package = "nvme", "nvme-cli"
    scope = "the NVMe controller: every namespace on it"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._present: bool | None = None

    def read_argv(self) -> list[str]:
        return [
            "nvme", "get-feature", self.path,
            f"--feature-id={NVME_FEATURE_VWC}", f"--namespace-id={NVME_NSID_ALL}",
        ]  # fmt: skip

    def set_argv(self, enable: bool) -> list[str]:
        return [
            "nvme", "set-feature", self.path,
            f"--feature-id={NVME_FEATURE_VWC}", f"--namespace-id={NVME_NSID_ALL}",
            f"--value={1 if enable else 0}",
        ]  # fmt: skip

    def read(self, run: _Runner) -> Reading:
        if self._present is None:
            done = run.run(["nvme", "id-ctrl", self.path, "-o", "json"], "identify")
            ctrl = load_json_object(done.stdout) if done.returncode == 0 else None
            vwc = as_int(ctrl.get("vwc")) if ctrl is not None else None
            if vwc is None:
                raise WriteCacheError(
                    f"cannot tell whether {self.path} has a volatile write cache"
                    f" (nvme id-ctrl: {_tail(done)})"
                )
            self._present = bool(vwc & 0x1)
        if not self._present:
            return Reading(ABSENT, False, "Identify Controller VWC bit 0 is 0")
        done = run.run(self.read_argv(), "read")
        m = re.search(r"value:\s*(?:0x)?([0-9a-fA-F]+)", done.stdout)
        if done.returncode != 0 or m is None:
            raise WriteCacheError(
                f"cannot read the volatile write cache of {self.path}"
                f" (nvme get-feature: {_tail(done)})"
            )
        return Reading(ENABLED if int(m.group(1), 16) & 0x1 else DISABLED, True, "Get Features 06h")


class _Ata(_Driver):
    program, package = "hdparm", "hdparm"
    scope = "the drive"

    def read_argv(self) -> list[str]:
        return ["hdparm", "-W", self.path]

    def set_argv(self, enable: bool) -> list[str]:
        return ["hdparm", f"-W{1 if enable else 0}", self.path]

    def read(self, run: _Runner) -> Reading:
        done = run.run(self.read_argv(), "read")
        text = done.stdout
        if re.search(r"write-caching\s*=\s*not supported", text):
            return Reading(ABSENT, False, "hdparm -W: not supported")
        m = re.search(r"write-caching\s*=\s*(\d+)", text)
        if done.returncode != 0 or m is None:
            raise WriteCacheError(
                f"cannot read the write cache of {self.path} (hdparm -W: {_tail(done)})"
            )
        return Reading(ENABLED if m.group(1) != "0" else DISABLED, True, "hdparm -W")


class _Scsi(_Driver):
    program, package = "sdparm", "sdparm"
    scope = "the logical unit (Caching mode page, current values)"

    def read_argv(self) -> list[str]:
        return ["sdparm", "--quiet", "--get=WCE", self.path]

    def set_argv(self, enable: bool) -> list[str]:
        return ["sdparm", "--quiet", f"--set=WCE={1 if enable else 0}", self.path]

    def read(self, run: _Runner) -> Reading:
        done = run.run(self.read_argv(), "read")
        m = re.search(r"^\s*WCE\s+(\d+)(?:\s*\[cha:\s*([yn]))?", done.stdout, re.MULTILINE)
        # sdparm 1.12 prints the current value, then exits 5 (illegal request) when the
        # disk refuses the saved-values page it also asks for (QEMU's scsi-hd on
        # MegaRAID and virtio-scsi): the printed current value is the reading
        if m is None:
            raise WriteCacheError(
                f"cannot read the write cache of {self.path} (sdparm --get=WCE: {_tail(done)})"
            )
        changeable = None if m.group(2) is None else m.group(2) == "y"
        return Reading(ENABLED if m.group(1) != "0" else DISABLED, changeable, "sdparm WCE")


_DRIVERS: dict[str, type[_Driver]] = {"nvme": _Nvme, "sata": _Ata, "sas": _Scsi}


def _tail(done: proc.Completed) -> str:
    return last_line(done.stderr) or last_line(done.stdout) or f"exit {done.returncode}"


class _Runner:
    """Runs the commands of one session and keeps each in its record."""

    def __init__(self, session: CacheSession, timeout: float) -> None:
        self.session = session
        self.timeout = timeout

    def run(self, argv: list[str], step: str) -> proc.Completed:
        try:
            done = proc.run(argv, timeout=self.timeout, check=False)
        except ToolMissingError:
            raise WriteCacheError(f"{tool_hint(argv[0])} is not installed") from None
        except CommandError as exc:  # timed out
            self.session.commands.append(
                {"step": step, "argv": list(exc.argv), "returncode": None, "error": exc.reason}
            )
            raise WriteCacheError(f"{' '.join(argv[:2])} {exc.reason}") from None
        self.session.commands.append({"step": step, **done.to_dict()})
        return done


# --------------------------------------------------------------------------- checks


def device_path(identity: DeviceIdentity) -> str:
    """The whole drive: the cache is the drive's, also when a partition is tested."""
    if identity.partition_of:
        return f"/dev/{identity.partition_of}"
    return identity.path


def _driver(identity: DeviceIdentity) -> _Driver | None:
    cls = _DRIVERS.get(identity.interface)
    return cls(device_path(identity)) if cls else None


def not_applicable(identity: DeviceIdentity) -> str | None:
    """Why this block device has no drive write cache to set (None: it has one)."""
    return NOT_A_DRIVE.get(identity.interface)


def check(identity: DeviceIdentity, setting: str) -> None:
    """Refuse, before the confirmation and anything destructive, a setting this drive
    cannot be given: an interface tkbench cannot set the cache of, a missing tool."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown write-cache setting {setting!r}")
    if setting == "unchanged" or not_applicable(identity):
        return
    driver = _driver(identity)
    if driver is None:
        raise WriteCacheError(
            f"workload.write_cache is {setting!r}, but tkbench cannot set the write cache of"
            f" {identity.path} ({identity.interface} device; it can for NVMe, SATA and SAS"
            " drives): set workload.write_cache=unchanged to run with the drive as it is"
        )
    if proc.which(driver.program) is None:
        raise ToolMissingError(
            f"workload.write_cache is {setting!r}: setting it on {identity.path} needs"
            f" {tool_hint(driver.program)}, which is not installed"
        )


def plan_text(identity: DeviceIdentity | None, setting: str, reason: str = "") -> str:
    """One line for ``tkbench plan``: what the run will set, with which command.
    ``identity`` None (with ``reason``): a target that is no drive of its own."""
    if identity is not None:
        reason = reason or not_applicable(identity) or ""
    driver = _driver(identity) if identity is not None else None
    if setting == "unchanged":
        if reason or driver is None:
            return "unchanged (not read or set by tkbench)"
        return f"unchanged (read with `{' '.join(driver.read_argv())}` and recorded; not set)"
    if reason or identity is None:
        why = reason or "the target has no drive write cache"
        return f"{setting} asked, not applicable: {why}; the run records the departure"
    try:
        check(identity, setting)
    except (WriteCacheError, ToolMissingError) as exc:
        return f"{setting}: `tkbench run` refuses: {exc}"
    assert driver is not None
    return (
        f"{setting}, after the confirmation and before the first test: "
        f"`{' '.join(driver.set_argv(setting == 'enabled'))}`, read back with "
        f"`{' '.join(driver.read_argv())}`; what the drive had is restored when the run "
        "ends, fails or is interrupted"
    )


# --------------------------------------------------------------------------- session


class WriteCacheSession:
    """Sets the write cache for one start or resume of a run (:meth:`begin`) and
    restores it (:meth:`end`).  The caller calls ``end()`` whatever happened after
    ``begin()`` was entered, also when ``begin()`` itself raised."""

    def __init__(
        self,
        identity: DeviceIdentity | None,
        setting: str,
        sink: RecordSink,
        *,
        not_applicable_because: str = "",
        timeout: float = QUERY_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if setting not in SETTINGS:
            raise ValueError(f"unknown write-cache setting {setting!r}")
        self.identity = identity
        self.setting = setting
        self.sink = sink
        self.clock = clock
        self.timeout = timeout
        reason = not_applicable_because
        if not reason and identity is not None:
            reason = not_applicable(identity) or ""
        self.driver = _driver(identity) if identity is not None and not reason else None
        if identity is None and not reason:
            reason = "the target has no drive write cache"
        self.reason = reason
        self.record: WriteCacheRecord | None = None
        self.session: CacheSession | None = None
        self._ended = False

    # ------------------------------------------------------------------ begin
    def begin(self) -> None:
        """Read, set and verify as the profile asks; the record is saved at each step.

        Raises :class:`WriteCacheError` when the setting cannot be made or verified
        (the drive is then as it was, or :meth:`end` puts it back)."""
        record = self._record()
        s = CacheSession(started=self.clock())
        record.sessions.append(s)
        self.record, self.session = record, s
        last = record.sessions[-2] if len(record.sessions) > 1 else None
        earlier = last if last is not None and last.left_modified else None
        try:
            self._begin(s, earlier)
        except WriteCacheError as exc:
            s.error = str(exc)
            self._save()
            self.sink.log(f"write cache: {exc}")
            raise
        self._save()

    def _begin(self, s: CacheSession, earlier: CacheSession | None) -> None:
        run = _Runner(s, self.timeout)
        if self.driver is None:
            s.before = s.original = NOT_APPLICABLE
            if self.setting != "unchanged":
                s.notes.append(
                    f"the profile asks for the write cache {self.setting}, which does not"
                    f" apply: {self.reason}"
                )
            self.sink.log(f"write cache: {self.setting} not applied ({self.reason})")
            return
        if self.setting == "unchanged":
            try:
                s.before = s.original = self.driver.read(run).state
            except WriteCacheError as exc:
                s.notes.append(f"not read: {exc}")
            s.after, s.verified = s.before, None
            self.sink.log(f"write cache: left unchanged ({s.before}); not set by tkbench")
            return
        if earlier is not None:
            # the last session never restored (a crash, a kill -9, a failed restore): the
            # drive may still hold tkbench's setting, and what it had before that session
            # is what this one restores
            s.original, s.changed = earlier.original, True
            s.notes.append(
                "the previous session of this run did not restore the cache: this one"
                f" restores {s.original}, what the drive had before tkbench set it"
            )
            self._save()
        reading = self.driver.read(run)
        s.before = reading.state
        if earlier is None:
            s.original = reading.state
        self._save()
        want = ENABLED if self.setting == "enabled" else DISABLED
        path = self.driver.path
        if reading.state == ABSENT:
            if want == ENABLED:
                raise WriteCacheError(
                    f"cannot enable the write cache of {path}: the drive has no volatile write"
                    f" cache ({reading.source})"
                )
            s.after, s.verified = ABSENT, True
            s.notes.append(f"no volatile write cache ({reading.source}): nothing to disable")
            self.sink.log(f"write cache: {path} has no volatile write cache; nothing to disable")
            return
        if reading.state == want:
            s.after, s.verified = want, True
            self.sink.log(f"write cache: already {want} on {path} ({reading.source}); not set")
            return
        if reading.changeable is False:
            raise WriteCacheError(
                f"cannot set the write cache of {path} to {want}: the drive says it cannot"
                f" be changed ({reading.source})"
            )
        s.changed = True
        self._save()  # before the command: a crash from here on leaves "restore this"
        argv = self.driver.set_argv(want == ENABLED)
        done = run.run(argv, "set")
        if done.returncode != 0:
            raise WriteCacheError(
                f"the drive refused to set its write cache {want}"
                f" ({' '.join(argv[:2])}: {_tail(done)})"
            )
        after = self.driver.read(run)
        s.after, s.verified = after.state, after.state == want
        if not s.verified:
            # hdparm tells a failed SET FEATURES on stderr only and exits 0: say what it said
            said = last_line(done.stderr)
            raise WriteCacheError(
                f"the write cache of {path} reads {after.state} after it was set {want}"
                f" ({after.source}): the drive did not take the setting"
                + (f" ({argv[0]}: {said})" if said else "")
            )
        self.sink.log(f"write cache: {path} set {want}, read back {after.state} (was {s.before})")

    # ------------------------------------------------------------------ end
    def end(self) -> None:
        """Restore what the drive had, verify, record.  Never raises for the drive:
        a failed restore is recorded, logged and told by :func:`restore_warning`.  The
        first signal of a stop may land during the restore commands: the restore is
        finished (further signals are ignored by the command line) and the interrupt
        is raised again afterwards."""
        if self._ended or self.session is None:
            return
        self._ended = True
        s = self.session
        pending: BaseException | None = None
        for _ in range(2):
            try:
                self._restore(s)
                break
            except (KeyboardInterrupt, Interrupted) as exc:
                pending = pending or exc
        s.ended = self.clock()
        self._save()
        if pending is not None:
            raise pending

    def _restore(self, s: CacheSession) -> None:
        if not s.changed or self.driver is None:
            return
        run = _Runner(s, self.timeout)
        path = self.driver.path
        target = s.original
        if target not in (ENABLED, DISABLED):
            s.restore_verified = False
            s.error = s.error or f"the original setting ({target}) is unknown: not restored"
            self.sink.log(f"write cache: {path} not restored: its original setting is unknown")
            return
        try:
            now = self.driver.read(run)
            if now.state != target:
                argv = self.driver.set_argv(target == ENABLED)
                done = run.run(argv, "restore")
                if done.returncode != 0:
                    raise WriteCacheError(f"{' '.join(argv[:2])}: {_tail(done)}")
                now = self.driver.read(run)
        except WriteCacheError as exc:
            s.restored, s.restore_verified = None, False
            s.notes.append(f"restore failed: {exc}")
            self.sink.log(f"write cache: {path} NOT restored to {target}: {exc}")
            return
        s.restored, s.restore_verified = now.state, now.state == target
        if s.restore_verified:
            self.sink.log(f"write cache: {path} restored to {target}")
        else:
            s.notes.append(f"restore read back {now.state}, not {target}")
            self.sink.log(f"write cache: {path} NOT restored: reads {now.state}, not {target}")

    # ------------------------------------------------------------------ record
    def _record(self) -> WriteCacheRecord:
        old = self.sink.previous()
        if old is not None:
            record = WriteCacheRecord.from_dict(old)
            if record.requested == self.setting:
                return record
        return WriteCacheRecord(
            requested=self.setting,
            applies=self.driver is not None,
            device=self.driver.path if self.driver else "",
            interface=self.identity.interface if self.identity is not None else "",
            tool=self.driver.package if self.driver else "",
            scope=self.driver.scope if self.driver else "",
            reason="" if self.driver else self.reason,
        )

    def _save(self) -> None:
        if self.record is not None:
            self.sink.save(self.record.to_dict())


def restore_warning(record: WriteCacheRecord | None) -> str | None:
    """A warning for the user when a run left the drive's cache as tkbench set it."""
    if record is None or not record.sessions:
        return None
    s = record.sessions[-1]
    if not s.left_modified or s.ended is None:
        return None
    want = s.original
    how = ""
    if record.interface in _DRIVERS and want in (ENABLED, DISABLED):
        driver = _DRIVERS[record.interface](record.device)
        how = f": set it by hand with `{' '.join(driver.set_argv(want == ENABLED))}`"
    return f"the write cache of {record.device} was not restored to {want}{how}"
