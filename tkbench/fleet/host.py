"""What ``tkbench plan`` of several drives says of the host: drives behind one
controller or one PCIe link, and more fio jobs at once than CPU cores."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_PCI = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def pci_path(spec: str, sys_root: Path = Path("/sys")) -> list[str]:
    """The PCI functions from the root port down to the block device's controller,
    read from ``/sys/block/X/device`` (empty for files, loop devices, NBD)."""
    name = Path(os.path.realpath(spec)).name
    dev = sys_root / "block" / name / "device"
    try:
        real = os.path.realpath(dev) if dev.exists() else ""
    except OSError:
        return []
    return [p for p in Path(real).parts if _PCI.match(p)]


def sharing_warnings(specs: Sequence[str], sys_root: Path = Path("/sys")) -> list[str]:
    """Drives behind one controller, or one PCIe link, where sysfs shows it: their
    results depend on each other's load."""
    paths = {s: pci_path(s, sys_root) for s in specs}
    out = []
    items = [(s, p) for s, p in paths.items() if p]
    for i, (a, pa) in enumerate(items):
        for b, pb in items[i + 1 :]:
            if pa[-1] == pb[-1]:
                out.append(f"{a} and {b} share the controller {pa[-1]}")
                continue
            common: list[str] = []
            for x, y in zip(pa, pb, strict=False):
                if x != y:
                    break
                common.append(x)
            if common:
                out.append(f"{a} and {b} share the PCIe link of {common[-1]}")
    return out


def oversubscription(jobs_per_drive: Sequence[int], cores: int) -> str | None:
    total = sum(jobs_per_drive)
    if total > cores:
        return (
            f"the host is oversubscribed: {total} fio jobs at once "
            f"({' + '.join(str(j) for j in jobs_per_drive)}) on {cores} CPU core(s); "
            "the drives' results would measure the CPUs"
        )
    return None


def fio_jobs(plan: Any) -> int:
    """The most fio jobs one run of ``plan`` has at once (a point or preconditioning)."""
    most = 1
    for t in plan.tests:
        for p in t.points:
            most = max(most, p.numjobs)
        if t.precondition is not None:
            most = max(most, t.precondition.numjobs)
    return most


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
