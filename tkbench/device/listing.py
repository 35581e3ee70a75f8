"""``tkbench devices``: every candidate drive, the ID to confirm it with, and
why tkbench would refuse it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tkbench.device._common import UNKNOWN, human_bytes, natural_key
from tkbench.device.identify import DeviceIdentity, identify
from tkbench.device.safety import Refusal, refusal_reasons
from tkbench.device.sysfs import Sysfs
from tkbench.errors import TkbenchError

# Never candidates: RAM disks, compressed swap, optical and floppy drives.
_SKIP_PREFIXES = ("ram", "zram", "sr", "fd")


@dataclass(frozen=True)
class DeviceRow:
    identity: DeviceIdentity
    refusals: list[Refusal] = field(default_factory=list)

    @property
    def confirm_id(self) -> str:
        return self.identity.confirm_id

    @property
    def status(self) -> str:
        """``ok``, ``needs --force`` (only overridable reasons) or ``refused``."""
        if not self.refusals:
            return "ok"
        if all(r.force_overrides for r in self.refusals):
            return "needs --force"
        return "refused"

    def to_dict(self) -> dict[str, Any]:
        """``tkbench devices --json`` (a view, kept by hand: the identity's main facts
        flattened in front, the status computed, then the whole identity)."""
        ident = self.identity
        return {
            "path": ident.path,
            "kernel_name": ident.kernel_name,
            "interface": ident.interface,
            "model": ident.model,
            "serial": ident.serial,
            "firmware": ident.firmware,
            "capacity_bytes": ident.capacity_bytes,
            "confirm_id": self.confirm_id,
            "confirm_kind": ident.confirm_kind,
            "status": self.status,
            "refusals": [r.to_dict() for r in self.refusals],
            "identity": ident.to_dict(),
        }


def candidate_names(sysfs: Sysfs) -> list[str]:
    """Whole block devices worth listing: no partitions, RAM disks, optical
    drives or detached loop devices."""
    out = []
    for name in sysfs.all_block():
        if name.startswith(_SKIP_PREFIXES) or sysfs.is_partition(name):
            continue
        if sysfs.read(name, "hidden") == "1":
            continue  # e.g. nvme0c0n1: one path of a multipath namespace
        if name.startswith("loop") and not sysfs.read(name, "loop/backing_file"):
            continue  # not attached
        if sysfs.read(name, "size") in (None, "0") and not name.startswith("loop"):
            continue  # empty (e.g. card reader without a card)
        out.append(name)
    return sorted(out, key=natural_key)


def list_devices(
    *,
    sysfs_root: str | os.PathLike[str] = "/sys",
    proc_root: str | os.PathLike[str] = "/proc",
    dev_dir: str | os.PathLike[str] = "/dev",
    use_tools: bool = True,
) -> list[DeviceRow]:
    """Identify every candidate block device and collect all refusal reasons."""
    sysfs = Sysfs(sysfs_root)
    rows: list[DeviceRow] = []
    for name in candidate_names(sysfs):
        path = os.path.join(os.fspath(dev_dir), name)
        try:
            ident = identify(path, sysfs_root=sysfs_root, use_tools=use_tools)
        except TkbenchError as exc:
            ident = DeviceIdentity(
                path=path, kernel_name=name, is_block_device=True, interface="other",
                notes=[f"not identified: {exc}"],
            )  # fmt: skip
        try:
            if os.path.exists(path):
                reasons = refusal_reasons(path, sysfs_root=sysfs_root, proc_root=proc_root)
            else:
                reasons = [Refusal("no-node", f"no device node {path}")]
        except TkbenchError as exc:
            reasons = [Refusal("unchecked", f"cannot check {name}: {exc}")]
        rows.append(DeviceRow(ident, reasons))
    return rows


def format_devices(rows: list[DeviceRow]) -> str:
    """A plain-text table; reasons for refusal are listed under each row."""
    if not rows:
        return "no block devices found"
    header = ("DEVICE", "TYPE", "SIZE", "MODEL", "SERIAL", "CONFIRM WITH", "STATUS")
    table = [header]
    for row in rows:
        ident = row.identity
        table.append(
            (
                ident.path,
                ident.interface,
                human_bytes(ident.capacity_bytes),
                _clip(ident.model, 32),
                _clip(ident.serial if ident.serial != UNKNOWN else "-", 24),
                row.confirm_id,
                row.status,
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for i, cells in enumerate(table):
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        if i == 0:
            continue
        for reason in rows[i - 1].refusals:
            mark = " (--force overrides)" if reason.force_overrides else ""
            lines.append(f"    - {reason.message}{mark}")
    return "\n".join(lines)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
