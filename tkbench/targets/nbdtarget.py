"""An NBD server on a Unix socket as a target (``nbd+unix:///?socket=PATH``), e.g.
the bundled SSD emulator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.device.purge import PurgeRecord
from tkbench.device.safety import Guarded
from tkbench.errors import DeviceError, InputError, SafetyError
from tkbench.units import human_bytes

if TYPE_CHECKING:
    pass


from tkbench.targets import nbd
from tkbench.targets.base import EMULATOR_DESCRIPTION, Target, _record, engine_for


@dataclass
class NbdTarget(Target):
    """An NBD export (``nbd+unix:///?socket=PATH``), e.g. the bundled SSD emulator."""

    kind: ClassVar[str] = "nbd"
    no_write_cache: ClassVar[str] = (
        "an NBD export has no drive write cache for tkbench to set (its server keeps its"
        " own; the bundled emulator models none)"
    )

    def fio_options(self, ioengine: str = "auto") -> dict[str, object]:
        return {"ioengine": engine_for(self.kind, ioengine), "uri": self.path}

    def check(self, *, force: bool = False) -> Guarded:
        """Its server owns its data; only a read-only export is refused."""
        if self.identity.get("read_only"):
            raise SafetyError(f"refusing to write {self.spec}: the NBD export is read-only")
        return Guarded()

    def lock_path(self) -> str:
        return _nbd_socket(self.path)

    def io_counters(self) -> tuple[int, int, int] | None:
        return None  # the server's I/O is not this kernel's

    def _purge(self, method: str, allow_fallback: bool, t0: float) -> PurgeRecord:
        nbd.trim(self.path)
        return _record(
            "trim", False, [], t0, [f"NBD trim of the whole range ({human_bytes(self.capacity)})"]
        )


def _nbd_socket(uri: str) -> str:
    return nbd.parse_uri(uri).socket


def is_nbd(spec: str) -> bool:
    return spec.startswith(("nbd://", "nbd+unix://", "nbds://", "nbds+unix://"))


def _open_nbd(spec: str, size: int | None) -> Target:
    if size is not None:
        raise InputError("--size applies to regular files only, not to NBD targets")
    try:
        info = nbd.export_info(spec)
    except DeviceError as exc:
        # an unreachable target is a wrong argument, not a device failure mid-run
        raise InputError(f"target {spec}: {exc} (is the NBD server or emulator running?)") from None
    sector = max(512, int(getattr(info, "min_block", 512) or 512))
    ident: dict[str, Any] = {
        "kind": "nbd",
        "uri": spec,
        "model": "NBD export",
        "serial": nbd.parse_uri(spec).serial,
        "firmware": "unknown",
        "capacity_bytes": info.size,
        "logical_sector": sector,
        "physical_sector": int(getattr(info, "preferred_block", sector) or sector),
        "interface": "nbd",
        "read_only": bool(getattr(info, "read_only", False)),
        "notes": [],
    }
    if info.description:
        ident["description"] = info.description
    if info.description.startswith(EMULATOR_DESCRIPTION):
        ident["model"] = EMULATOR_DESCRIPTION
        ident["emulated"] = True
        # the emulator names its export by the drive it emulates (capacity, seed,
        # model): a run on that drive is a run on it, whichever socket serves it
        ident["serial"] = info.name or ident["serial"]
        ident["notes"] = [
            "the bundled SSD emulator, not a real drive: " + info.description,
        ]
    return NbdTarget(spec, spec, info.size, sector, ident)
