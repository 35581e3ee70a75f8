"""Checks before anything destructive: refuse busy, system or data-holding targets.

Every check here only reads (sysfs, /proc, ``findmnt``, ``wipefs --no-act``,
``blkid -p`` and a read-only ``O_EXCL`` open), so a refused run has written
nothing.  See docs/safety.md for the rules and their reasons.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tkbench.device import owndata
from tkbench.device._common import human_bytes, last_line, load_json_object, try_run
from tkbench.device.identify import DeviceIdentity
from tkbench.device.sysfs import Sysfs
from tkbench.errors import InputError, SafetyError
from tkbench.typed import Typed

SYSTEM_MOUNTPOINTS = ("/", "/boot", "/usr")
CHECK_TIMEOUT = 60.0
# udev's workers, which open a device for a moment to probe it after its contents
# changed (systemd 252 names them "(udev-worker)", older ones "systemd-udevd")
UDEV_PROBES = frozenset({"(udev-worker)", "systemd-udevd"})
UDEV_SETTLE = 10.0  # at most this long for udev's probes to end before a device is "open"

_PARTITION_TABLES = {"dos", "gpt", "PMBR", "sun", "sgi", "bsd", "mac", "atari", "dos_part"}
_MEMBER_TYPES = {
    "linux_raid_member": "Linux RAID member",
    "LVM2_member": "LVM physical volume",
    "isw_raid_member": "Intel RAID member",
    "ddf_raid_member": "DDF RAID member",
    "zfs_member": "ZFS pool member",
    "bcache": "bcache member",
    "crypto_LUKS": "LUKS container",
    "swap": "swap area",
}


# The order a refusal names its reasons in, strongest first: what is in use now (a
# mounted filesystem, swap, a holder, the running system, an open), then what cannot
# be written, and last what --force overrides (data that merely looks like someone's).
# The first reason is the one to act on; --force is offered only when it alone would do.
STRENGTH = (
    "mounted", "swap", "holders", "system-disk", "busy", "open", "loop-backing",
    "read-only", "unreadable", "not-a-target", "no-sysfs",
    "partition", "partitions", "signature", "signature-unchecked",
)  # fmt: skip


def strongest_first(reasons: list[Refusal]) -> list[Refusal]:
    """``reasons`` by :data:`STRENGTH` (unknown codes before the --force ones), stable."""
    rank = {code: i for i, code in enumerate(STRENGTH)}
    weak = rank["partition"]
    return sorted(
        reasons, key=lambda r: rank.get(r.code, weak - 0.5 if not r.force_overrides else weak)
    )


@dataclass(frozen=True)
class Refusal(Typed):
    """One reason not to touch a target (its fields, in order, are its JSON)."""

    code: str  # mounted, swap, holders, system-disk, busy, read-only, signature, ...
    message: str
    force_overrides: bool = False
    note: bool = False  # told, never refused: a signature in tkbench's own data


@dataclass(frozen=True)
class Guarded:
    """What a passed check has to tell: signatures found in data tkbench itself left
    (``notes``), and the refusals ``--force`` overrode (``forced``).  A run that was
    forced over someone's data never marks the target's data as its own."""

    notes: tuple[str, ...] = ()
    forced: tuple[str, ...] = ()


# --------------------------------------------------------------------------- checks


def refusal_reasons(
    path: str | os.PathLike[str],
    *,
    sysfs_root: str | os.PathLike[str] = "/sys",
    proc_root: str | os.PathLike[str] = "/proc",
) -> list[Refusal]:
    """Every reason to refuse ``path``; empty when it may be written.

    A path that does not exist yet (a new regular file) holds no data and has
    no reasons; a missing ``/dev/...`` path is an :class:`InputError`.
    """
    spath = os.fspath(path)
    sysfs = Sysfs(sysfs_root)
    proc_dir = Path(proc_root)
    try:
        st = os.stat(spath)
    except FileNotFoundError:
        if os.path.abspath(spath).startswith("/dev/"):
            raise InputError(f"{spath}: no such device") from None
        return []
    except OSError as exc:
        return [Refusal("unreadable", f"cannot examine {spath}: {exc.strerror}")]
    if stat.S_ISREG(st.st_mode):
        return strongest_first(_file_reasons(spath, st, sysfs, proc_dir))
    if not stat.S_ISBLK(st.st_mode):
        return [Refusal("not-a-target", f"{spath} is neither a block device nor a regular file")]
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    name = sysfs.name_for_devno(major, minor)
    if name is None:
        return [
            Refusal("no-sysfs", f"{spath}: device {major}:{minor} not in sysfs, cannot check it")
        ]
    return strongest_first(_block_reasons(spath, name, sysfs, proc_dir))


def check_target(
    path: str | os.PathLike[str],
    force: bool = False,
    *,
    sysfs_root: str | os.PathLike[str] = "/sys",
    proc_root: str | os.PathLike[str] = "/proc",
) -> Guarded:
    """Raise :class:`SafetyError` with a one-line reason if ``path`` must not
    be written.  ``force`` overrides only the "holds data" checks (signatures,
    partitions); mounted, swap, holders, busy and system disks are always refused.
    """
    found = refusal_reasons(path, sysfs_root=sysfs_root, proc_root=proc_root)
    reasons = [r for r in found if not r.note]
    blocking = strongest_first([r for r in reasons if not (force and r.force_overrides)])
    if not blocking:
        return Guarded(
            notes=tuple(r.message for r in found if r.note),
            forced=tuple(r.message for r in reasons if r.force_overrides),
        )
    text = "; ".join(r.message for r in blocking)
    hint = " (--force overrides this)" if all(r.force_overrides for r in blocking) else ""
    raise SafetyError(f"refusing to write {os.fspath(path)}: {text}{hint}")


def _block_reasons(spath: str, name: str, sysfs: Sysfs, proc_dir: Path) -> list[Refusal]:
    out: list[Refusal] = []
    names = [name, *sysfs.partitions(name)]
    devnos = {d: n for n in names if (d := sysfs.devno(n)) is not None}

    if sysfs.read(name, "ro") == "1":
        out.append(Refusal("read-only", f"{name} is read-only"))

    table = _mounts(proc_dir)
    seen: set[tuple[str, str]] = set()
    for majmin, source, target in table:
        dev = devnos.get(majmin) or devnos.get(_rdev_of(source) or "")
        if dev and (dev, target) not in seen:
            seen.add((dev, target))
            out.append(Refusal("mounted", f"{dev} is mounted at {target}"))

    for swap in _swaps(proc_dir):
        dev = devnos.get(_rdev_of(swap) or "")
        if dev:
            out.append(Refusal("swap", f"{dev} is in use as swap"))

    for n in names:
        held = sysfs.holders(n)
        if held:
            out.append(
                Refusal("holders", f"{n} is held by {', '.join(held)} (device-mapper/LVM/RAID)")
            )

    system = _system_disks(sysfs, table)
    for disk in sorted(sysfs.whole_disks(name)):
        if disk in system:
            mps = ", ".join(system[disk])
            out.append(Refusal("system-disk", f"{disk} holds the running system ({mps})"))

    if not any(r.code in ("mounted", "swap", "holders") for r in out):
        out.extend(_exclusive_open(spath, name, names))
        if not any(r.code == "busy" for r in out):
            numbers = frozenset(
                os.makedev(*map(int, d.split(":"))) for n in names if (d := sysfs.devno(n))
            )
            out.extend(_open_elsewhere(spath, os.stat(spath), proc_dir, numbers))

    if sysfs.is_partition(name):
        parent = sysfs.parent_disk(name)
        out.append(
            Refusal(
                "partition",
                f"{name} is a partition of {parent}; tkbench tests and purges whole devices",
                force_overrides=True,
            )
        )
    parts = names[1:]
    if parts:
        out.append(
            Refusal(
                "partitions", f"{name} has partitions: {', '.join(parts)}", force_overrides=True
            )
        )
    out.extend(_signature_reasons(spath, name))
    return out


def _file_reasons(spath: str, st: os.stat_result, sysfs: Sysfs, proc_dir: Path) -> list[Refusal]:
    out: list[Refusal] = []
    for swap in _swaps(proc_dir):
        if _same_file(swap, st):
            out.append(Refusal("swap", f"{spath} is in use as a swap file"))
    for n in sysfs.all_block():
        if not n.startswith("loop"):
            continue
        raw = sysfs.read_bytes(n, "loop/backing_file")
        # the exact bytes: a name may end in a space or not be UTF-8
        backing = os.fsdecode(raw[:-1] if raw and raw.endswith(b"\n") else raw or b"")
        if backing and _same_file(backing.removesuffix(" (deleted)"), st):
            out.append(
                Refusal("loop-backing", f"{spath} backs /dev/{n} (test /dev/{n} or detach it)")
            )
    for _, source, target in _mounts(proc_dir):
        if target.startswith("/") and _same_file(target, st):
            out.append(Refusal("mounted", f"{spath} is mounted at {target} (from {source})"))
            break
    out.extend(_open_elsewhere(spath, st, proc_dir))
    out.extend(_not_writable(spath))
    out.extend(_signature_reasons(spath, os.path.basename(spath)))
    return out


def _open_elsewhere(
    spath: str, st: os.stat_result, proc_dir: Path, devnos: frozenset[int] = frozenset()
) -> list[Refusal]:
    """Processes other than this one that hold the file open (``/proc/PID/fd``): a
    database, a VM image in use, another benchmark.  For a block device, ``devnos``
    are the device numbers of it and its partitions, and any descriptor of one of
    them counts (an exclusive-open probe misses plain opens).  Processes of other
    users are seen only by root; loop devices hold their backing files without a
    descriptor (see the loop-backing check)."""
    users = _users(st, proc_dir, devnos)
    if users and all(comm in UDEV_PROBES for comm, _ in users):
        # udev probes a device whose contents changed (a purge, a killed run's writes)
        # for a moment: wait for its queue to empty, then look again; a holder that is
        # still there is a real user
        try_run(["udevadm", "settle", f"--timeout={UDEV_SETTLE:g}"], UDEV_SETTLE + 5)
        deadline = time.monotonic() + UDEV_SETTLE
        while users and time.monotonic() < deadline:
            users = _users(st, proc_dir, devnos)
            if users and all(comm in UDEV_PROBES for comm, _ in users):
                time.sleep(0.1)
            else:
                break
    if not users:
        return []
    named = [f"{comm} (pid {pid})" for comm, pid in users]
    return [Refusal("open", f"{spath} is open in {', '.join(named[:5])}")]


def _users(st: os.stat_result, proc_dir: Path, devnos: frozenset[int]) -> list[tuple[str, str]]:
    """(command name, pid) of the processes other than this one holding the file open."""
    me = str(os.getpid())
    users: list[tuple[str, str]] = []
    try:
        pids = [p for p in os.listdir(proc_dir) if p.isdigit() and p != me]
    except OSError:
        return []
    for pid in pids:
        fd_dir = proc_dir / pid / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                other = os.stat(fd_dir / fd)
            except OSError:
                continue
            same = (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)
            if same or (stat.S_ISBLK(other.st_mode) and other.st_rdev in devnos):
                users.append((_comm(proc_dir, pid), pid))
                break
    return users


def _comm(proc_dir: Path, pid: str) -> str:
    try:
        return (proc_dir / pid / "comm").read_text().strip() or "?"
    except OSError:
        return "?"


def _not_writable(spath: str) -> list[Refusal]:
    """A file tkbench could not write (permissions, an immutable flag, a read-only
    mount): found now rather than at the purge.  Opening for writing without
    O_TRUNC changes neither the data nor the times."""
    try:
        fd = os.open(spath, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        return [Refusal("read-only", f"{spath} cannot be written: {exc.strerror}")]
    os.close(fd)
    return []


# --------------------------------------------------------------------------- sources


def _unescape(text: str) -> str:
    """Mount tables escape space, tab, newline and backslash as octal."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text


def _mounts(proc_dir: Path) -> list[tuple[str, str, str]]:
    """(maj:min, source, mount point) from mountinfo, /proc/mounts and findmnt."""
    out: list[tuple[str, str, str]] = []
    try:
        for line in (proc_dir / "self" / "mountinfo").read_text().splitlines():
            parts = line.split()
            if len(parts) < 10 or "-" not in parts:
                continue
            sep = parts.index("-")
            out.append((parts[2], _unescape(parts[sep + 2]), _unescape(parts[4])))
    except OSError:
        pass
    try:
        for line in (proc_dir / "mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2:
                out.append(("", _unescape(parts[0]), _unescape(parts[1])))
    except OSError:
        pass
    if str(proc_dir) == "/proc":  # findmnt always reads the real /proc
        done, _ = try_run(
            ["findmnt", "--json", "--list", "--output", "SOURCE,TARGET,MAJ:MIN"], CHECK_TIMEOUT
        )
        data = load_json_object(done.stdout) if done and done.returncode == 0 else None
        for fs in (data or {}).get("filesystems") or []:
            if isinstance(fs, dict):
                source = str(fs.get("source") or "").split("[", 1)[0]
                out.append((str(fs.get("maj:min") or ""), source, str(fs.get("target") or "")))
    return out


def _swaps(proc_dir: Path) -> list[str]:
    try:
        lines = (proc_dir / "swaps").read_text().splitlines()[1:]
    except OSError:
        return []
    return [_unescape(line.split()[0]) for line in lines if line.split()]


def _rdev_of(path: str) -> str | None:
    """``"MAJ:MIN"`` of a block device node, or None."""
    if not path.startswith("/"):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _same_file(path: str, st: os.stat_result) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _system_disks(sysfs: Sysfs, table: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    """Whole disks under /, /boot and /usr -> the mount points they hold."""
    out: dict[str, list[str]] = {}
    for mp in SYSTEM_MOUNTPOINTS:
        try:
            st = os.stat(mp)
        except OSError:
            continue
        name = sysfs.name_for_devno(os.major(st.st_dev), os.minor(st.st_dev))
        if name is None:  # btrfs, overlay...: use the mount source instead
            source = _source_of(mp, table)
            name = sysfs.name_for_path(source) if source else None
        if name is None:
            continue
        for disk in sysfs.whole_disks(name):
            mps = out.setdefault(disk, [])
            if mp not in mps:
                mps.append(mp)
    return out


def _source_of(mountpoint: str, table: list[tuple[str, str, str]]) -> str | None:
    """Source of the mount that contains ``mountpoint`` (longest prefix)."""
    best: tuple[int, str] | None = None
    for _, source, target in table:
        inside = mountpoint == target or mountpoint.startswith(target.rstrip("/") + "/")
        if inside and source.startswith("/dev/") and (best is None or len(target) >= best[0]):
            best = (len(target), source)
    return best[1] if best else None


def _exclusive_open(spath: str, name: str, names: list[str]) -> list[Refusal]:
    """Try a read-only O_EXCL open of the device and its partitions: the kernel
    refuses it (EBUSY) while anything holds the device exclusively."""
    out: list[Refusal] = []
    for n in names:
        node = spath if n == name else f"/dev/{n}"
        if n != name and not os.path.exists(node):
            continue
        try:
            fd = os.open(node, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                out.append(
                    Refusal(
                        "busy",
                        f"{n} is in use: exclusive open failed (a filesystem, swap, RAID/LVM"
                        " or another program holds it)",
                    )
                )
            else:
                out.append(Refusal("unreadable", f"cannot open {node}: {exc.strerror}"))
            continue
        os.close(fd)
    return out


def _describe_signature(kind: str) -> str:
    if kind in _PARTITION_TABLES:
        return f"a partition table ({kind})"
    if kind in _MEMBER_TYPES:
        return f"a {_MEMBER_TYPES[kind]} signature ({kind})"
    if kind.endswith("_raid_member"):  # libblkid's name for every firmware RAID's
        return f"a RAID member signature ({kind})"
    return f"a filesystem signature ({kind})"


@dataclass(frozen=True)
class Signature:
    """A signature on a target: its type (``ext4``, ``gpt``, ``jmicron_raid_member``)
    and where its magic is, when the tool said."""

    type: str
    offset: int | None = None


def signatures(path: str) -> tuple[list[Signature], str | None]:
    """Signatures found on ``path`` (``wipefs --no-act``, else ``blkid -p``).

    Returns ``(signatures, None)`` or ``([], why)`` when neither tool could tell.
    """
    problems: list[str] = []
    done, why = try_run(["wipefs", "--no-act", "--json", path], CHECK_TIMEOUT)
    if done is not None and done.returncode == 0:
        if not done.stdout.strip():
            return [], None  # older wipefs print nothing when there is nothing
        data = load_json_object(done.stdout)
        sigs = data.get("signatures") if data else None
        if isinstance(sigs, list):
            return [
                Signature(str(s["type"]), _offset(s.get("offset")))
                for s in sigs
                if isinstance(s, dict) and s.get("type")
            ], None
        problems.append("wipefs printed no JSON")
    else:
        problems.append(why or f"wipefs: {last_line(done.stderr) if done else ''}")
    done, why = try_run(["blkid", "-p", "-o", "export", path], CHECK_TIMEOUT)
    if done is not None and done.returncode in (0, 2):  # 2: nothing found
        props = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        return [
            Signature(props[k], _offset(props.get(magic)))
            for k, magic in (("TYPE", "SBMAGIC_OFFSET"), ("PTTYPE", "PTMAGIC_OFFSET"))
            if props.get(k)
        ], None
    problems.append(why or f"blkid: {last_line(done.stderr) if done else ''}")
    return [], "; ".join(problems)


def _offset(value: object) -> int | None:
    """wipefs's ``"0xfffe00"``, blkid's ``"1080"``; None when absent or unreadable."""
    try:
        return int(str(value), 0) if value is not None else None
    except ValueError:
        return None


def signature_pairs(path: str) -> list[tuple[str, int | None]]:
    """The signatures on ``path`` as (type, offset) pairs (none when the tools could
    not tell): what a mark of tkbench's own data records (:mod:`.owndata`)."""
    found, _ = signatures(path)
    return [(s.type, s.offset) for s in found]


def _signature_reasons(spath: str, label: str) -> list[Refusal]:
    found, problem = signatures(spath)
    if problem:
        return [
            Refusal(
                "signature-unchecked",
                f"cannot check {label} for filesystem signatures ({problem})",
                force_overrides=True,
            )
        ]
    if not found:
        return []
    mark = owndata.left_by_tkbench(spath)
    out: list[Refusal] = []
    for kind in dict.fromkeys(s.type for s in found):
        offsets = [s.offset for s in found if s.type == kind]
        if mark is not None and all(mark.vouches(kind, o) for o in offsets):
            where = ", ".join(f"{o:#x}" for o in offsets if o is not None)
            out.append(
                Refusal(
                    "own-data",
                    f"{label}: the {kind} signature at {where} is in the data tkbench's run "
                    f"{mark.run} left ({mark.written}), unchanged since: not refused",
                    force_overrides=True,
                    note=True,
                )
            )
        else:
            out.append(
                Refusal(
                    "signature", f"{label} holds {_describe_signature(kind)}", force_overrides=True
                )
            )
    return out


# --------------------------------------------------------------------------- confirm


def confirm(
    identity: DeviceIdentity,
    confirm_id: str | None,
    assume_yes: bool,
    is_block_device: bool,
    *,
    interactive: bool = False,
    prompt: Callable[[str], str] | None = None,
) -> None:
    """Raise :class:`SafetyError` unless destroying ``identity`` was confirmed.

    Block devices need ``confirm_id`` equal to the drive's serial (the kernel
    name such as ``loop3`` for devices without one), or, when ``interactive``
    and a ``prompt`` function is given, that ID typed at the prompt.  ``--yes``
    (``assume_yes``) is enough only for regular files and emulator targets
    (callers pass ``is_block_device=False`` for those).
    """
    path = identity.path
    if not is_block_device:
        if assume_yes:
            return
        if confirm_id is not None and confirm_id.strip() in (identity.confirm_id, path):
            return
        if interactive and prompt is not None:
            answer = prompt(
                f"This overwrites {path} ({human_bytes(identity.capacity_bytes)}).\n"
                "Type 'yes' to continue: "
            )
            if answer.strip().lower() == "yes":
                return
            raise SafetyError(f"not confirmed: {path} was left untouched")
        raise SafetyError(f"refusing to overwrite {path} without --yes (no terminal to ask on)")

    expected = identity.confirm_id
    kind = identity.confirm_kind
    where = (
        "the serial number shown by `tkbench devices`"
        if kind == "serial"
        else "its kernel name shown by `tkbench devices` (it has no serial number)"
    )
    if confirm_id is not None:
        if confirm_id.strip() == expected:
            return
        given = confirm_id.strip()
        raise SafetyError(f"--confirm {given!r} does not match {path}: expected {where}")
    if interactive and prompt is not None:
        answer = prompt(
            f"ALL DATA on {path} will be destroyed:\n"
            f"  model:  {identity.model}\n"
            f"  serial: {identity.serial}\n"
            f"  size:   {human_bytes(identity.capacity_bytes)}\n"
            f"Type the {kind} ({expected}) to continue: "
        )
        if answer.strip() == expected:
            return
        raise SafetyError(f"confirmation did not match the {kind} of {path}; nothing was written")
    yes = "--yes is not enough for a block device; " if assume_yes else ""
    raise SafetyError(
        f"{yes}destroying data on {path} needs --confirm <{kind}> with {where}"
        + ("" if interactive else " (no terminal to ask on)")
    )
