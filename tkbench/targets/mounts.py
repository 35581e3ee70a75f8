"""Mounted filesystems as /proc/self/mountinfo tells them: mount points, the mount
of a device number, and the serial that tells a filesystem from another."""

from __future__ import annotations

import os
import re

from tkbench.device._common import try_run


def mount_points() -> set[str]:
    """Every mount point this process sees (/proc/self/mountinfo, octal escapes decoded):
    a bind mount of a directory of the same filesystem has the same st_dev, so only
    this list tells it."""
    out = set()
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                f = line.split()
                if len(f) > 4:
                    out.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), f[4]))
    except OSError:
        pass
    return out


def mount_of(st_dev: int) -> dict[str, str]:
    """The mount point, filesystem type and source of a device number."""
    want = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                f = left.split()
                if len(f) > 4 and f[2] == want:
                    r = right.split()
                    return {
                        "mount_point": f[4].replace("\\040", " "),
                        "filesystem": r[0] if r else "unknown",
                        "source": r[1] if len(r) > 1 else "unknown",
                    }
    except OSError:
        pass
    return {"mount_point": "unknown", "filesystem": "unknown", "source": "unknown"}


def volume_serial(mount: dict[str, str]) -> str:
    """What tells this filesystem from another of its kind, as a drive's serial does
    (the history's runs of "the same drive", the dashboard's lines): its UUID when
    its device has one, else its source and mount point."""
    source = mount.get("source", "unknown")
    if source.startswith("/dev/"):
        # udev's record first (any user may read it), then the superblock itself
        for argv in (
            ["findmnt", "-n", "-o", "UUID", "--source", source],
            ["blkid", "-p", "-o", "value", "-s", "UUID", source],
        ):
            done, _ = try_run(argv, 10.0)
            text = done.stdout.strip() if done is not None and done.returncode == 0 else ""
            uuid = text.splitlines()[0].strip() if text else ""
            if uuid and len(uuid) <= 64 and uuid.isprintable():
                return f"UUID={uuid}"
    return f"{source} at {mount.get('mount_point', 'unknown')}"


def filesystem_serial(st_dev: int) -> str:
    """:func:`volume_serial` of the filesystem of a device number (``st_dev``): what
    tells a file target's filesystem from another (:mod:`tkbench.targets.file`)."""
    return volume_serial(mount_of(st_dev))
