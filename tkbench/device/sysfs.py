"""Read-only access to /sys/class/block with an injectable root.

Tests build a small tree under a temporary directory (a fake NVMe namespace, a
disk with holders) and pass its path as ``root``; everything else reads the
real ``/sys``.  Nothing here writes.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

DEFAULT_ROOT = "/sys"


class Sysfs:
    """Queries about block devices by kernel name (``loop3``, ``nvme0n1``)."""

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
        self.root = Path(root)

    @property
    def is_default(self) -> bool:
        return str(self.root) == DEFAULT_ROOT

    def block_dir(self, name: str) -> Path:
        return self.root / "class" / "block" / name

    def exists(self, name: str) -> bool:
        return bool(name) and self.block_dir(name).is_dir()

    def real(self, name: str) -> Path:
        """The resolved directory of ``name`` (class/block entries are symlinks)."""
        return self.block_dir(name).resolve()

    def read(self, name: str, rel: str) -> str | None:
        """Stripped contents of ``class/block/NAME/REL`` or None when unreadable."""
        try:
            return (self.block_dir(name) / rel).read_text(errors="replace").strip()
        except OSError:
            return None

    def read_bytes(self, name: str, rel: str) -> bytes | None:
        try:
            return (self.block_dir(name) / rel).read_bytes()
        except OSError:
            return None

    def devno(self, name: str) -> str | None:
        """``"MAJ:MIN"`` of ``name``."""
        value = self.read(name, "dev")
        return value if value and re.fullmatch(r"\d+:\d+", value) else None

    def name_for_devno(self, major: int, minor: int) -> str | None:
        link = self.root / "dev" / "block" / f"{major}:{minor}"
        try:
            if not link.exists():
                return None
            return link.resolve().name
        except OSError:
            return None

    def name_for_path(self, path: str | os.PathLike[str]) -> str | None:
        """Kernel name of the block device at ``path`` (follows symlinks such as
        /dev/disk/by-id/...), or None when ``path`` is not a block device."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISBLK(st.st_mode):
            return None
        return self.name_for_devno(os.major(st.st_rdev), os.minor(st.st_rdev))

    def is_partition(self, name: str) -> bool:
        return (self.block_dir(name) / "partition").exists()

    def parent_disk(self, name: str) -> str:
        """The whole disk a partition belongs to (``name`` itself for a disk)."""
        if self.is_partition(name):
            return self.real(name).parent.name
        return name

    def partitions(self, name: str) -> list[str]:
        """Kernel names of the partitions of disk ``name``."""
        base = self.real(name)
        try:
            entries = sorted(base.iterdir())
        except OSError:
            return []
        return [e.name for e in entries if e.is_dir() and (e / "partition").exists()]

    def _list(self, name: str, sub: str) -> list[str]:
        try:
            return sorted(p.name for p in (self.block_dir(name) / sub).iterdir())
        except OSError:
            return []

    def holders(self, name: str) -> list[str]:
        """Devices stacked on ``name`` (device-mapper, md RAID, bcache, ...)."""
        return self._list(name, "holders")

    def slaves(self, name: str) -> list[str]:
        """Devices ``name`` is stacked on (for dm-N, mdN)."""
        return self._list(name, "slaves")

    def whole_disks(self, name: str, _seen: set[str] | None = None) -> set[str]:
        """The physical whole disks under ``name``: a partition's disk, the
        members of a dm/md device (recursively), or ``name`` itself."""
        seen = _seen if _seen is not None else set()
        if name in seen:
            return set()
        seen.add(name)
        disk = self.parent_disk(name)
        below = self.slaves(disk)
        if not below:
            return {disk}
        out: set[str] = set()
        for member in below:
            out |= self.whole_disks(member, seen)
        return out

    def all_block(self) -> list[str]:
        try:
            return sorted(p.name for p in (self.root / "class" / "block").iterdir())
        except OSError:
            return []

    def queue_dir_owner(self, name: str) -> str:
        """Queue limits live on the whole disk; partitions borrow them."""
        return self.parent_disk(name)
