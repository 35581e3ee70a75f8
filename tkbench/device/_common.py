"""Small helpers shared by the device modules (no I/O beyond tkbench.proc)."""

from __future__ import annotations

import json
import re
from typing import Any

from tkbench import proc
from tkbench.errors import CommandError, ToolMissingError

UNKNOWN = "unknown"

# Debian packages that provide the tools we call, for "install X" hints.
TOOL_PACKAGES = {
    "nvme": "nvme-cli",
    "smartctl": "smartmontools",
    "hdparm": "hdparm",
    "sg_format": "sg3-utils",
    "sg_sanitize": "sg3-utils",
    "sdparm": "sdparm",
    "blkdiscard": "util-linux",
    "fallocate": "util-linux",
    "wipefs": "util-linux",
    "blkid": "util-linux",
    "findmnt": "util-linux",
}


def tool_hint(tool: str) -> str:
    """``"'nvme' (Debian package nvme-cli)"`` for messages."""
    pkg = TOOL_PACKAGES.get(tool)
    return f"'{tool}' (Debian package {pkg})" if pkg else f"'{tool}'"


def clean_str(value: object) -> str | None:
    """A stripped identification string, or None when empty/absent."""
    if value is None:
        return None
    text = str(value).replace("\x00", " ").strip()
    return text or None


def as_int(value: object) -> int | None:
    """An integer from JSON: int, integral float or numeric string (nvme-cli
    prints 128-bit counters as strings).  Anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        try:
            return int(text, 0) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return None
    return None


def load_json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as a JSON object, or None."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def try_run(argv: list[str], timeout: float) -> tuple[proc.Completed | None, str | None]:
    """Run a read-only query; never raises for a missing or failing tool.

    Returns ``(completed, None)`` when the program ran (whatever its exit code)
    or ``(None, why)`` when it is missing or timed out.
    """
    try:
        return proc.run(argv, timeout=timeout, check=False), None
    except ToolMissingError:
        return None, f"{tool_hint(argv[0])} is not installed"
    except CommandError as exc:
        return None, str(exc)


def last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()[:200]
    return ""


def human_bytes(n: int | None) -> str:
    """Decimal size as drive vendors print it, e.g. ``"960.2 GB"``."""
    if n is None:
        return UNKNOWN
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if value < 1000 or unit == "PB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"  # pragma: no cover


_NATURAL = re.compile(r"(\d+)")


def natural_key(name: str) -> list[tuple[int, int, str]]:
    """Sort key so that ``sda, sdb, ..., nvme2n1, nvme10n1`` order like humans expect."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in _NATURAL.split(name) if p]
