"""A block device as a target (/dev/nvme0n1, /dev/sdb, /dev/loop3)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.errors import DeviceError

if TYPE_CHECKING:
    from tkbench.device.thermal import ThermalReading
    from tkbench.device.writecache import RecordSink, WriteCacheSession


from tkbench.device import identify
from tkbench.targets.base import Target


@dataclass
class BlockTarget(Target):
    """A block device: identified, confirmed by serial, purged by a secure erase."""

    kind: ClassVar[str] = "block"
    marks_own_data: ClassVar[bool] = True
    device: Any = None  # tkbench.device.DeviceIdentity

    def confirm(
        self,
        *,
        confirm_id: str | None,
        assume_yes: bool,
        interactive: bool,
        prompt: Callable[[str], str] | None = None,
    ) -> None:
        """The drive's serial (or kernel name), never just ``--yes``."""
        from tkbench.device import confirm

        confirm(self.device, confirm_id, assume_yes, True, interactive=interactive, prompt=prompt)

    def check_purge(self, method: str) -> None:
        if method != "none":
            from tkbench.device.purge import check_method

            check_method(self.device, method)

    def check_write_cache(self, setting: str) -> None:
        from tkbench.device.writecache import check

        check(self.device, setting)

    def write_cache(self, setting: str, sink: RecordSink) -> WriteCacheSession:
        from tkbench.device.writecache import WriteCacheSession

        return WriteCacheSession(self.device, setting, sink)

    def write_cache_plan(self, setting: str) -> str:
        from tkbench.device.writecache import plan_text

        return plan_text(self.device, setting)

    def write_cache_absent(self) -> str | None:
        from tkbench.device.writecache import not_applicable

        return not_applicable(self.device)

    def health(self) -> dict[str, Any] | None:
        from tkbench.device import health

        interface = getattr(self.device, "interface", None)
        snap: dict[str, Any] = health(self.path, interface=interface).to_dict()
        return snap

    def thermal_reader(self) -> Callable[[], tuple[ThermalReading | None, str]] | None:
        """nvme-cli or smartctl for a drive; none for a loop device or a virtio disk,
        which have no temperature sensor of their own."""
        interface = str(getattr(self.device, "interface", "other"))
        if interface in ("loop", "virtio"):
            return None
        from tkbench.device import thermal

        return lambda: thermal.read(self.path, interface)

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        from tkbench.device import purge as device_purge

        record: PurgeRecord = device_purge(
            self.device, method=method, allow_fallback=allow_fallback
        )
        return record


def _open_block(spec: str) -> Target:
    ident = identify(spec)
    cap = ident.capacity_bytes or 0
    if cap <= 0:
        raise DeviceError(f"{spec}: cannot determine the device's capacity")
    sector = ident.logical_sector or 512
    return BlockTarget(spec, os.path.realpath(spec), cap, sector, ident.to_dict(), device=ident)
