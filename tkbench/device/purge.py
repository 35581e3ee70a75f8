"""Purge: return the flash to its as-if-never-written state (SNIA PTS).

By interface (``method="auto"``) or as requested:

* NVMe: Format NVM with Secure Erase Settings 1 (user data erase) or 2
  (cryptographic erase), keeping the LBA format in use; or Sanitize (block
  erase, crypto erase, overwrite), polled through the sanitize log.
* SATA: ATA SECURITY ERASE UNIT through hdparm (enhanced when supported) with
  a temporary password that is always cleared again, also on failure.
* SAS/SCSI: ``sg_format --format`` or ``sg_sanitize``.
* Fallback: ``blkdiscard`` of the whole device, only when allowed; the record
  then says ``pts_compliant=False``.  Loop, virtio and other devices have only
  this fallback.

Every command run is recorded (argv, exit code, output, duration) in the
:class:`PurgeRecord`, which failures carry too (:class:`PurgeError.record`).
The caller must have passed ``check_target``, ``confirm`` and hold a
``DeviceLock``: this module does not check again.  See docs/purge.md.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tkbench import proc
from tkbench.device._common import as_int, last_line, load_json_object, tool_hint
from tkbench.device.identify import DeviceIdentity, NvmeCaps, parse_hdparm_identify
from tkbench.errors import CommandError, DeviceError, InputError, ToolMissingError
from tkbench.typed import Typed

# method -> interface it applies to (None: any)
METHODS: dict[str, str | None] = {
    "auto": None,
    "nvme-format": "nvme",
    "nvme-format-crypto": "nvme",
    "nvme-sanitize-block": "nvme",
    "nvme-sanitize-crypto": "nvme",
    "nvme-sanitize-overwrite": "nvme",
    "ata-secure-erase": "sata",
    "scsi-format": "sas",
    "scsi-sanitize-block": "sas",
    "scsi-sanitize-crypto": "sas",
    "scsi-sanitize-overwrite": "sas",
    "blkdiscard": None,
}

ATA_TEMP_PASSWORD = "tkbench"  # fixed and documented, so a crash is recoverable by hand
DEFAULT_TIMEOUT = 6 * 3600.0
QUERY_TIMEOUT = 60.0
NOT_PTS = "not a PTS-compliant secure erase"

# sanitize log SSTAT bits 2:0
SANITIZE_NEVER, SANITIZE_DONE, SANITIZE_RUNNING, SANITIZE_FAILED, SANITIZE_DONE_ND = range(5)
_SANACT = {"block": 2, "overwrite": 3, "crypto": 4}
# sg3_utils exit codes meaning "the device rejected the command": nothing happened
_SG_REJECTED = {5: "illegal request", 9: "invalid opcode"}


@dataclass(frozen=True)
class PurgeRecord(Typed):
    """What a purge did, for the run directory and the report (its fields, in order)."""

    device: str
    interface: str
    requested_method: str
    method: str  # method actually used; "" if none ran to completion
    pts_compliant: bool
    commands: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    started_at: str = ""
    notes: list[str] = field(default_factory=list)


class PurgeError(DeviceError):
    """A purge could not be done; ``record`` lists the commands that ran."""

    def __init__(self, message: str, record: PurgeRecord | None = None) -> None:
        super().__init__(message)
        self.record = record


class PurgeUnsupported(PurgeError):
    """The requested (or only) PTS-compliant method is unavailable on this
    device or machine; nothing destructive was attempted."""


class PurgeFailed(PurgeError):
    """A purge command ran and failed, or the device is in a state that
    forbids purging (sanitize in progress, password already set)."""


class _Unavailable(Exception):
    """Internal: method unavailable before anything destructive ran."""


class _Failed(Exception):
    """Internal: a purge step failed."""


class _Session:
    """Runs and records the commands of one purge."""

    def __init__(
        self,
        identity: DeviceIdentity,
        requested: str,
        timeout: float,
        poll_interval: float,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ) -> None:
        self.identity = identity
        self.path = identity.path
        self.requested = requested
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.sleep = sleep
        self.clock = clock
        self.commands: list[dict[str, Any]] = []
        self.notes: list[str] = []
        # Set just before the first command that changes the device: from then
        # on nothing is "unavailable" any more, only failed (no fallback).
        self.destructive = False
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.t0 = time.monotonic()

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def run(
        self,
        argv: list[str],
        *,
        timeout: float = QUERY_TIMEOUT,
        record: bool = True,
        destructive: bool = False,
    ) -> proc.Completed:
        """Run ``argv``; record it; return it whatever its exit code.

        A missing program raises _Unavailable; a timeout records the partial
        output and re-raises the CommandError.  ``destructive`` marks the
        session as having started changing the device once the program runs.
        """
        try:
            done = proc.run(argv, timeout=timeout, check=False)
        except ToolMissingError:
            raise _Unavailable(f"{tool_hint(argv[0])} is not installed") from None
        except CommandError as exc:  # timed out
            self.destructive = self.destructive or destructive
            self.commands.append(
                {
                    "argv": list(exc.argv),
                    "returncode": None,
                    "stdout": exc.stdout,
                    "stderr": exc.stderr,
                    "seconds": round(timeout, 3),
                    "error": exc.reason,
                }
            )
            raise
        self.destructive = self.destructive or destructive
        if record:
            self.commands.append(done.to_dict())
        return done

    def must(
        self, argv: list[str], *, timeout: float = QUERY_TIMEOUT, destructive: bool = False
    ) -> proc.Completed:
        """Run and raise CommandError on a non-zero exit."""
        done = self.run(argv, timeout=timeout, destructive=destructive)
        if done.returncode != 0:
            raise CommandError(done.argv, done.returncode, done.stdout, done.stderr)
        return done

    def json(self, argv: list[str], what: str) -> dict[str, Any]:
        done = self.run(argv)
        data = load_json_object(done.stdout) if done.returncode == 0 else None
        if data is None:
            tail = last_line(done.stderr) or last_line(done.stdout) or f"exit {done.returncode}"
            raise _Unavailable(f"cannot read {what} ({' '.join(argv[:2])}: {tail})")
        return data

    def record(self, method: str, compliant: bool) -> PurgeRecord:
        return PurgeRecord(
            device=self.path,
            interface=self.identity.interface,
            requested_method=self.requested,
            method=method,
            pts_compliant=compliant,
            commands=list(self.commands),
            seconds=round(time.monotonic() - self.t0, 3),
            started_at=self.started_at,
            notes=list(self.notes),
        )


def check_method(identity: DeviceIdentity, method: str) -> None:
    """InputError unless ``method`` can apply to this device (checked before a run starts)."""
    if method not in METHODS:
        raise InputError(f"unknown purge method {method!r}; choose from {', '.join(METHODS)}")
    wanted = METHODS[method]
    iface = identity.interface
    if wanted is not None and wanted != iface:
        raise InputError(
            f"purge method {method!r} is for {wanted} devices; {identity.path} is {iface}"
        )


def purge(
    identity: DeviceIdentity,
    method: str = "auto",
    allow_fallback: bool = False,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    poll_interval: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> PurgeRecord:
    """Purge the device of ``identity`` and return what was done.

    ``method``: ``"auto"`` (by interface) or one of :data:`METHODS`.
    ``allow_fallback``: when the PTS-compliant method is unavailable (not
    supported, frozen, tool missing), use ``blkdiscard`` instead and record
    ``pts_compliant=False``; without it such a device raises
    :class:`PurgeUnsupported`.  A method that started and failed raises
    :class:`PurgeFailed` and never falls back.  ``timeout`` bounds each erase
    (and a sanitize's polling); ``sleep``/``clock`` are injectable for tests.
    """
    check_method(identity, method)
    iface = identity.interface
    s = _Session(identity, method, timeout, poll_interval, sleep, clock)
    try:
        try:
            if method == "blkdiscard":
                s.note("blkdiscard requested explicitly")
                return _discard(s)
            if identity.partition_of:
                raise _Unavailable(
                    f"{identity.path} is a partition of {identity.partition_of}; a secure erase"
                    " would wipe the whole drive"
                )
            if iface == "nvme":
                return _nvme(s, method)
            if iface == "sata":
                return _ata(s)
            if iface == "sas":
                return _scsi(s, method)
            raise _Unavailable(
                f"{identity.path} is a {iface} device, which has no PTS-compliant secure erase"
            )
        except _Unavailable as exc:
            if s.destructive:
                raise _Failed(str(exc)) from None
            if not allow_fallback:
                hint = " (allow the blkdiscard fallback to purge it anyway, not PTS-compliant)"
                raise PurgeUnsupported(
                    f"cannot purge {identity.path}: {exc}{hint}", s.record("", False)
                ) from None
            s.note(f"PTS-compliant purge unavailable: {exc}")
            return _discard(s)
    except _Unavailable as exc:  # the fallback itself is unavailable
        raise PurgeUnsupported(
            f"cannot purge {identity.path}: {exc}", s.record("", False)
        ) from None
    except _Failed as exc:
        raise PurgeFailed(
            f"purge of {identity.path} failed: {exc}", s.record("", False)
        ) from exc.__cause__
    except CommandError as exc:
        raise PurgeFailed(f"purge of {identity.path} failed: {exc}", s.record("", False)) from exc


# --------------------------------------------------------------------------- fallback


def _discard(s: _Session) -> PurgeRecord:
    s.note(f"blkdiscard: {NOT_PTS} (discard only unmaps; the drive may keep data and state)")
    if s.identity.is_block_device:
        s.must(["blkdiscard", s.path], timeout=s.timeout, destructive=True)
        return s.record("blkdiscard", False)
    # A regular file: punching a hole is the file-system equivalent.
    try:
        size = os.path.getsize(s.path)
    except OSError as exc:
        raise _Unavailable(f"cannot size {s.path}: {exc.strerror}") from None
    s.must(
        [
            "fallocate",
            "--punch-hole",
            "--keep-size",
            "--offset",
            "0",
            "--length",
            str(size),
            s.path,
        ],
        timeout=s.timeout,
    )
    return s.record("punch-hole", False)


# --------------------------------------------------------------------------- NVMe


def parse_sanitize_log(data: dict[str, Any]) -> tuple[int | None, int | None]:
    """(status, progress 0..65535) from ``nvme sanitize-log -o json``.

    nvme-cli 2.x nests the log under the device name and prints ``sstat`` as
    an object whose ``status`` is a string such as ``"(2) Sanitize in
    Progress."``; a flat log or a numeric ``sstat`` is accepted too.
    """
    log: dict[str, Any] | None = data if "sstat" in data else None
    if log is None:
        log = next((v for v in data.values() if isinstance(v, dict) and "sstat" in v), None)
    if log is None:
        return None, None
    sprog = as_int(log.get("sprog"))
    sstat = log.get("sstat")
    status: int | None = None
    if isinstance(sstat, dict):
        raw = sstat.get("status")
        status = as_int(raw)
        if status is None and isinstance(raw, str):
            m = re.match(r"\s*\((\d+)\)", raw)
            status = int(m.group(1)) if m else None
    else:
        value = as_int(sstat)
        status = value & 0x7 if value is not None else None
    return status, sprog


def _nvme(s: _Session, method: str) -> PurgeRecord:
    path = s.path
    ctrl = s.json(["nvme", "id-ctrl", path, "-o", "json"], "Identify Controller")
    ns = s.json(["nvme", "id-ns", path, "-o", "json"], "Identify Namespace")
    caps = NvmeCaps.from_json(ctrl, ns)
    if method == "auto":
        if caps.format_supported:
            method = "nvme-format"
        elif caps.sanitize_block:
            method = "nvme-sanitize-block"
        elif caps.sanitize_crypto:
            method = "nvme-sanitize-crypto"
        else:
            raise _Unavailable(
                "the controller supports neither Format NVM (id-ctrl oacs bit 1)"
                " nor Sanitize (sanicap)"
            )
        s.note(f"auto: chose {method}")
    if method.startswith("nvme-format"):
        crypto = method == "nvme-format-crypto"
        if not caps.format_supported:
            raise _Unavailable(
                "the controller does not support Format NVM (id-ctrl oacs bit 1 is 0)"
            )
        if crypto and not caps.crypto_format_supported:
            raise _Unavailable(
                "the controller does not support cryptographic erase in Format NVM"
                " (id-ctrl fna bit 2 is 0); use nvme-format (SES=1)"
            )
        if caps.lbaf_index is None:
            raise _Unavailable("the LBA format in use is unknown (id-ns has no flbas)")
    else:
        action = method.removeprefix("nvme-sanitize-")
        supported = {
            "block": caps.sanitize_block,
            "crypto": caps.sanitize_crypto,
            "overwrite": caps.sanitize_overwrite,
        }[action]
        if not supported:
            raise _Unavailable(
                f"the controller does not support sanitize {action}"
                f" (id-ctrl sanicap is {caps.sanicap:#x})"
            )
    if caps.sanitize_any:
        _nvme_check_no_sanitize(s, method)
    if method.startswith("nvme-format"):
        return _nvme_format(s, caps, crypto=method == "nvme-format-crypto")
    return _nvme_sanitize(s, method.removeprefix("nvme-sanitize-"))


def _nvme_check_no_sanitize(s: _Session, method: str) -> None:
    data = s.json(["nvme", "sanitize-log", s.path, "-o", "json"], "the sanitize log")
    status, sprog = parse_sanitize_log(data)
    if status == SANITIZE_RUNNING:
        pct = f", {100 * sprog / 65536:.0f}% done" if sprog is not None else ""
        raise _Failed(
            f"a sanitize operation is already in progress on {s.path}{pct}; wait for it to"
            f" finish (watch `nvme sanitize-log {s.path}`) and run again"
        )
    if status == SANITIZE_FAILED and not method.startswith("nvme-sanitize"):
        raise _Failed(
            "the last sanitize failed and the controller is in sanitize failure mode, which"
            " rejects Format NVM; purge with a sanitize method (e.g. nvme-sanitize-block)"
        )


def _nvme_format(s: _Session, caps: NvmeCaps, *, crypto: bool) -> PurgeRecord:
    ses = 2 if crypto else 1
    lbaf = caps.lbaf_index
    if caps.fna & 0x2:
        s.note("the controller erases all namespaces with a secure-erase format (fna bit 1)")
    argv = [
        "nvme", "format", s.path,
        f"--lbaf={lbaf}", f"--ses={ses}",
        f"--ms={caps.extended_metadata}", f"--pi={caps.pi_type}", f"--pil={caps.pi_first}",
        "--force", f"--timeout={int(s.timeout * 1000)}",
    ]  # fmt: skip
    done = s.run(argv, timeout=s.timeout + 60, destructive=True)
    if done.returncode != 0:
        raise _Failed(
            f"nvme format --ses={ses} failed (exit {done.returncode}):"
            f" {last_line(done.stderr) or last_line(done.stdout)}"
        )
    after = s.json(["nvme", "id-ns", s.path, "-o", "json"], "Identify Namespace after format")
    now = NvmeCaps.from_json({}, after).lbaf_index
    if now != lbaf:
        raise _Failed(f"LBA format changed from {lbaf} to {now} by the format")
    s.note(
        f"Format NVM, SES={ses} ({'cryptographic' if crypto else 'user data'} erase), LBAF {lbaf}"
    )
    return s.record("nvme-format-crypto" if crypto else "nvme-format", True)


def _nvme_sanitize(s: _Session, action: str) -> PurgeRecord:
    argv = ["nvme", "sanitize", s.path, f"--sanact={_SANACT[action]}"]
    if action == "overwrite":
        argv += ["--owpass=1", "--ovrpat=0"]
    s.note("sanitize acts on the whole NVM subsystem: every namespace is erased")
    done = s.run(argv, destructive=True)
    if done.returncode != 0:
        raise _Failed(
            f"nvme sanitize failed (exit {done.returncode}):"
            f" {last_line(done.stderr) or last_line(done.stdout)}"
        )
    deadline = s.clock() + s.timeout
    polls = 0
    log_argv = ["nvme", "sanitize-log", s.path, "-o", "json"]
    while True:
        polls += 1
        done = s.run(log_argv, record=polls == 1)
        data = load_json_object(done.stdout) if done.returncode == 0 else None
        status, sprog = parse_sanitize_log(data) if data is not None else (None, None)
        finished = status in (SANITIZE_DONE, SANITIZE_DONE_ND) or status == SANITIZE_FAILED
        if finished or s.clock() >= deadline:
            if polls > 1:
                s.commands.append(done.to_dict())
            break
        s.sleep(s.poll_interval)
    s.note(f"polled the sanitize log {polls} time(s)")
    if status == SANITIZE_FAILED:
        raise _Failed(
            "the sanitize failed (sanitize log status 3); the controller is in sanitize failure"
            " mode until a sanitize succeeds"
        )
    if status not in (SANITIZE_DONE, SANITIZE_DONE_ND):
        pct = f" at {100 * sprog / 65536:.0f}%" if sprog is not None else ""
        raise _Failed(
            f"sanitize not complete after {s.timeout:g} s{pct} (status {status});"
            f" it may still be running: watch `nvme sanitize-log {s.path}`"
        )
    return s.record(f"nvme-sanitize-{action}", True)


# --------------------------------------------------------------------------- SATA


def _frozen_help(path: str) -> str:
    return (
        f"ATA security is frozen on {path} (the firmware or BIOS froze it at boot); unfreeze"
        " it by suspending and resuming the machine (e.g. `rtcwake -m mem -s 5`) or by"
        " unplugging and re-plugging the drive (hot-plug), then run again"
    )


def _ata(s: _Session) -> PurgeRecord:
    path = s.path
    done = s.run(["hdparm", "-I", path])
    if done.returncode != 0:
        raise _Unavailable(f"hdparm -I failed: {last_line(done.stderr) or done.returncode}")
    _, sec = parse_hdparm_identify(done.stdout)
    if sec is None or not sec.supported:
        raise _Unavailable("the drive does not support the ATA Security feature set")
    if sec.enabled or sec.locked:
        raise _Failed(
            "ATA security is already enabled (a password is set); tkbench does not erase a"
            " drive whose password it does not know. If a crashed tkbench run left it, clear it"
            f" with `hdparm --user-master u --security-disable {ATA_TEMP_PASSWORD} {path}`"
        )
    if sec.expired:
        raise _Unavailable("ATA security attempts expired; power-cycle the drive and run again")
    if sec.frozen:
        raise _Unavailable(_frozen_help(path))
    enhanced = sec.enhanced_erase
    minutes = sec.enhanced_erase_minutes if enhanced else sec.erase_minutes
    erase_timeout = max(s.timeout, 2 * 60 * minutes + 600) if minutes else s.timeout
    if minutes:
        s.note(f"drive estimates {minutes} min for the erase")
    pw = ATA_TEMP_PASSWORD
    erase_flag = "--security-erase-enhanced" if enhanced else "--security-erase"
    try:
        s.must(["hdparm", "--user-master", "u", "--security-set-pass", pw, path], destructive=True)
        s.must(
            ["hdparm", "--user-master", "u", erase_flag, pw, path],
            timeout=erase_timeout,
            destructive=True,
        )
    except BaseException as exc:
        cleared = _ata_clear_password(s)
        if isinstance(exc, CommandError | _Unavailable):
            tail = (
                "; the temporary password was cleared"
                if cleared
                else f"; WARNING: the drive may still have the ATA password '{pw}':"
                f" clear it with `hdparm --user-master u --security-disable {pw} {path}`"
            )
            raise _Failed(f"{exc}{tail}") from exc
        raise
    # A successful erase disables security by itself; make sure of it.
    check = s.run(["hdparm", "-I", path])
    _, after = parse_hdparm_identify(check.stdout)
    if (after is None or after.enabled) and not _ata_clear_password(s):
        raise _Failed(
            f"erase done but the temporary ATA password '{pw}' is still set: clear it with"
            f" `hdparm --user-master u --security-disable {pw} {path}`"
        )
    s.note(
        f"ATA SECURITY ERASE UNIT ({'enhanced' if enhanced else 'normal'}) with a temporary"
        f" password '{pw}', cleared afterwards"
    )
    return s.record("ata-secure-erase-enhanced" if enhanced else "ata-secure-erase", True)


def _ata_clear_password(s: _Session) -> bool:
    """Best effort: unlock if locked, disable the password, verify.  Never raises."""
    pw, path = ATA_TEMP_PASSWORD, s.path

    def state() -> tuple[bool | None, bool | None]:
        try:
            done = s.run(["hdparm", "-I", path])
        except (_Unavailable, CommandError):
            return None, None
        _, sec = parse_hdparm_identify(done.stdout) if done.returncode == 0 else ({}, None)
        return (sec.enabled, sec.locked) if sec else (None, None)

    try:
        enabled, locked = state()
        if enabled is False:
            return True
        if locked:
            s.run(["hdparm", "--user-master", "u", "--security-unlock", pw, path])
        s.run(["hdparm", "--user-master", "u", "--security-disable", pw, path])
    except (_Unavailable, CommandError):
        return False
    enabled, _ = state()
    return enabled is False


# --------------------------------------------------------------------------- SAS/SCSI


def _scsi(s: _Session, method: str) -> PurgeRecord:
    if method in ("auto", "scsi-format"):
        argv = ["sg_format", "--format", "--quick", s.path]
        method = "scsi-format"
    else:
        action = method.removeprefix("scsi-sanitize-")
        flags = {
            "block": ["--block"],
            "crypto": ["--crypto"],
            "overwrite": ["--overwrite", "--zero"],
        }
        argv = ["sg_sanitize", *flags[action], "--quick", s.path]
    done = s.run(argv, timeout=s.timeout, destructive=True)
    if done.returncode in _SG_REJECTED:
        s.destructive = False  # the device refused the command: nothing happened
        raise _Unavailable(
            f"the device rejected {argv[0]} ({_SG_REJECTED[done.returncode]}):"
            f" {last_line(done.stderr) or last_line(done.stdout)}"
        )
    if done.returncode != 0:
        raise _Failed(
            f"{argv[0]} failed (exit {done.returncode}):"
            f" {last_line(done.stderr) or last_line(done.stdout)}"
        )
    return s.record(method, True)
