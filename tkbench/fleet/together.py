"""The targets of a fleet checked together, before any run starts: what no single run
can see.  One file or device reached twice (a link, a second path, a hard link, a bind
mount, a loop device and its backing file, a partition and its disk) would be two runs
on one drive; files on one filesystem must fit its free space together."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tkbench.errors import InputError
from tkbench.units import human_bytes

# what a target reaches: a key (a file, a new file's name in its directory, a block
# device) -> whether it reaches all of it, and how (empty: directly)
_Reach = dict[tuple[Any, ...], tuple[bool, str]]


def _sys_block(rdev: int, sys_root: Path) -> Path | None:
    """The sysfs directory of the block device ``rdev`` (None: none)."""
    p = sys_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
    try:
        return Path(os.path.realpath(p)) if p.exists() else None
    except OSError:
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _devno(text: str) -> int | None:
    major, _, minor = text.partition(":")
    return os.makedev(int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def _then(how: str, step: str) -> str:
    return f"{how}, and {step}" if how else step


def _block_reach(rdev: int, whole: bool, how: str, sys_root: Path, depth: int = 0) -> _Reach:
    """A block device, and beneath it: the whole disk of a partition (partly), the
    backing file of a loop device (and what that file is on)."""
    sysdir = _sys_block(rdev, sys_root)
    name = sysdir.name if sysdir is not None else f"{os.major(rdev)}:{os.minor(rdev)}"
    reach: _Reach = {("blk", rdev): (whole, how)}
    if sysdir is None or depth > 8:
        return reach
    if (sysdir / "partition").exists():
        parent = _devno(_read(sysdir.parent / "dev"))
        if parent is not None:
            why = _then(how, f"/dev/{name} is a partition of /dev/{sysdir.parent.name}")
            reach.update(_block_reach(parent, False, why, sys_root, depth + 1))
    backing = _read(sysdir / "loop" / "backing_file")
    if backing:
        try:
            st = os.stat(backing)
        except OSError:
            return reach
        ranged = _read(sysdir / "loop" / "offset") not in ("", "0") or _read(
            sysdir / "loop" / "sizelimit"
        ) not in ("", "0")
        why = _then(how, f"/dev/{name} is backed by {backing}")
        reach.update(_file_reach(st, backing, whole and not ranged, why, sys_root, depth + 1))
    return reach


def _on_device(dev: int, path: str, how: str, sys_root: Path, depth: int) -> _Reach:
    """The block device (if any) whose filesystem holds ``path``, reached partly."""
    sysdir = _sys_block(dev, sys_root)
    if sysdir is None:
        return {}
    why = _then(how, f"{path} is on a filesystem of /dev/{sysdir.name}")
    return _block_reach(dev, False, why, sys_root, depth + 1)


def _file_reach(
    st: os.stat_result, path: str, whole: bool, how: str, sys_root: Path, depth: int
) -> _Reach:
    """A file (its device and inode: every link and bind mount of it) and, partly, the
    block device its filesystem is on."""
    reach: _Reach = {("ino", st.st_dev, st.st_ino): (whole, how)}
    reach.update(_on_device(st.st_dev, path, how, sys_root, depth))
    return reach


def reach(spec: str, sys_root: Path = Path("/sys")) -> _Reach:
    """What the target ``spec`` reads and writes, however it is named (a link, a hard
    link, a bind mount, a loop device, a partition)."""
    from tkbench.targets.nbdtarget import is_nbd

    if is_nbd(spec):
        return {("nbd", spec): (True, "")}
    try:
        st = os.stat(spec)
    except FileNotFoundError:
        # a new file: its name in its directory, whatever path (or link) leads there
        real = os.path.realpath(spec)
        try:
            pst = os.stat(os.path.dirname(real))
        except OSError:
            return {("path", real): (True, "")}
        out: _Reach = {("new", pst.st_dev, pst.st_ino, os.path.basename(real)): (True, "")}
        out.update(_on_device(pst.st_dev, spec, "", sys_root, 0))
        return out
    except OSError:
        return {("path", os.path.abspath(spec)): (True, "")}
    if stat.S_ISBLK(st.st_mode):
        return _block_reach(st.st_rdev, True, "", sys_root)
    return _file_reach(st, spec, True, "", sys_root, 0)


def _same_place(specs: Sequence[str], sys_root: Path = Path("/sys")) -> None:
    """Two targets reaching one file or device (a link, a second path, a bind mount, a
    loop device and its backing file, a partition and its disk) would be two runs on
    one drive: bad input, before anything starts.  Two partitions of one disk are
    two targets."""
    seen: list[tuple[str, _Reach]] = []
    for spec in specs:
        mine = reach(spec, sys_root)
        for other, theirs in seen:
            both = [
                (k, [h for h in (theirs[k][1], mine[k][1]) if h])
                for k in mine.keys() & theirs.keys()
                if mine[k][0] or theirs[k][0]  # two parts of one disk are two targets
            ]
            if not both:
                continue
            # the most direct way they meet (a partition's disk before that disk's file)
            key, hows = min(both, key=lambda kh: sum(len(h) for h in kh[1]))
            raise InputError(
                f"--target {spec} and --target {other} are the same target "
                f"({'; '.join(hows) or _twice(key, spec)})"
            )
        seen.append((spec, mine))


def _twice(key: tuple[Any, ...], spec: str) -> str:
    """How two targets reach one thing directly."""
    if key[0] == "new":
        return f"both name the new file {os.path.realpath(spec)}"
    if key[0] == "ino":
        return "one file: the same device and inode, through a link, a hard link or a bind mount"
    return f"both name the device {os.path.realpath(spec)}"


def _check_space(specs: Sequence[str], size: int | None) -> None:
    """The fleet's file targets on one filesystem must fit its free space together (each
    run checks only its own): a new file's ``--size``, an existing file's blocks not
    yet allocated."""
    from tkbench.targets.mounts import mount_of as _mount

    need: dict[int, list[tuple[str, int]]] = {}
    where: dict[int, str] = {}
    for spec in specs:
        if not sized(spec):
            continue
        try:
            st = os.stat(spec)
        except FileNotFoundError:
            if size is None:
                continue
            parent = os.path.dirname(os.path.realpath(spec))
            try:
                dev = os.stat(parent).st_dev
            except OSError:
                continue
            need.setdefault(dev, []).append((spec, size))
            where.setdefault(dev, parent)
            continue
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            missing = max(0, st.st_size - st.st_blocks * 512)
            need.setdefault(st.st_dev, []).append((spec, missing))
            where.setdefault(st.st_dev, spec)
    for dev, files in need.items():
        total = sum(n for _, n in files)
        if len(files) < 2:
            continue  # one file: its run checks it (and says so in its own words)
        try:
            fs = os.statvfs(where[dev])
        except OSError:
            continue
        free = fs.f_bavail * fs.f_frsize
        if total > free:
            mount = _mount(dev)["mount_point"]
            parts = ", ".join(f"{s} {human_bytes(n)}" for s, n in files)
            raise InputError(
                f"the fleet's files on the filesystem at {mount} "
                f"({os.major(dev)}:{os.minor(dev)}) need {human_bytes(total)} together "
                f"({parts}), but it has {human_bytes(free)} free"
            )


def check_together(specs: Sequence[str], size: int | None, *, space: bool = True) -> None:
    """What no single run can see, checked before any run of a fleet starts: one file
    or device reached twice, and files that fit their filesystem one by one but not
    together (``space``)."""
    _same_place(specs)
    if space:
        _check_space(specs, size)


def sized(spec: str) -> bool:
    """--size applies to the regular-file targets of a fleet (block devices and NBD
    exports have their own size)."""
    from tkbench.targets.nbdtarget import is_nbd

    if is_nbd(spec):
        return False
    try:
        return not stat.S_ISBLK(os.stat(spec).st_mode)
    except OSError:
        return True
