"""Everything tkbench does on a real drive before the first fio round.

* :func:`identify` / :func:`health` -- who the drive is, how it is doing;
* :func:`check_target` / :func:`confirm` -- refuse busy, system or data-holding
  targets and demand the drive's serial before destroying it;
* :class:`DeviceLock` -- one run per device;
* :func:`purge` -- secure erase (Format NVM, Sanitize, ATA Security Erase,
  sg_format) or, when allowed, a non-compliant ``blkdiscard`` fallback;
* :class:`WriteCacheSession` -- the volatile write cache set as the profile asks
  (nvme-cli, hdparm, sdparm), verified, and restored after the run;
* :func:`list_devices` / :func:`format_devices` -- ``tkbench devices``.

The caller's order for a destructive run: lock, check_target, confirm, write
cache, purge.
"""

from __future__ import annotations

from tkbench.device.health import HealthSnapshot, health
from tkbench.device.identify import INTERFACES, AtaSecurity, DeviceIdentity, NvmeCaps, identify
from tkbench.device.listing import DeviceRow, format_devices, list_devices
from tkbench.device.lock import DeviceLock, default_lock_dir
from tkbench.device.purge import (
    ATA_TEMP_PASSWORD,
    METHODS,
    PurgeError,
    PurgeFailed,
    PurgeRecord,
    PurgeUnsupported,
    purge,
)
from tkbench.device.safety import Guarded, Refusal, check_target, confirm, refusal_reasons
from tkbench.device.writecache import WriteCacheError, WriteCacheRecord, WriteCacheSession

__all__ = [
    "ATA_TEMP_PASSWORD",
    "INTERFACES",
    "METHODS",
    "AtaSecurity",
    "DeviceIdentity",
    "DeviceLock",
    "DeviceRow",
    "Guarded",
    "HealthSnapshot",
    "NvmeCaps",
    "PurgeError",
    "PurgeFailed",
    "PurgeRecord",
    "PurgeUnsupported",
    "Refusal",
    "WriteCacheError",
    "WriteCacheRecord",
    "WriteCacheSession",
    "check_target",
    "confirm",
    "default_lock_dir",
    "format_devices",
    "health",
    "identify",
    "list_devices",
    "purge",
    "refusal_reasons",
]
