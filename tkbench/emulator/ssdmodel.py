"""A flash SSD model small enough to run inside nbdkit's Python plugin.

This module runs under the Python interpreter that nbdkit's python plugin embeds
(on Debian: /usr/bin/python3), not under tkbench's virtualenv, so it imports
only the standard library and nothing from tkbench.  tkbench imports it too
(as ``tkbench.emulator.ssdmodel``) to validate options before starting nbdkit
and for unit tests.

The model has three parts:

* :class:`EmulatorConfig`: every parameter, its default, its unit and its help
  text.  The command line, the nbdkit ``key=value`` arguments and
  docs/emulator.md are all derived from or checked against it.
* :class:`SsdModel`: a page-mapped flash translation layer (4 KiB logical pages
  on erase blocks, greedy garbage collection, separate host and GC write
  streams, lazy background GC while idle) plus a timing model (one device
  queue with per-command and per-byte occupancy, a QD1 latency floor, a host
  interface ceiling and seeded log-normal noise).  It is pure: every method
  takes the current time ``now`` and returns the completion time of the request,
  so the same request sequence at the same times gives the same latencies.
* :class:`FaultInjector` and :class:`DataStore`: injected errors, latency spikes
  and the sparse store of written data.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import mmap
import random
import re
import sys
from array import array
from collections import deque
from collections.abc import Mapping
from typing import Any

PAGE = 4096  # logical page (mapping unit) in bytes
KIB = 1024
MIB = 1024 * 1024

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str | int) -> int:
    """Bytes from ``256M``, ``1G``, ``64MiB``, ``4k`` or ``123456`` (binary suffixes)."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size must not be negative: {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 256M, 1G, 123456)")
    value = float(m.group(1)) * 1024 ** _POW[m.group(2).lower()]
    if value != int(value):
        raise ValueError(f"size is not a whole number of bytes: {text!r}")
    return int(value)


def format_size(n: int) -> str:
    """``256 MiB``, ``1 GiB``, ``1.5 GiB``, ``4 KiB``, ``1000 B``."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", MIB), ("KiB", KIB)):
        if n >= scale:
            value = n / scale
            text = f"{value:.0f}" if value == int(value) else f"{value:.2f}".rstrip("0")
            return f"{text} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------
# Configuration

_OFF = ("", "off", "none", "no")


def _opt(
    default: Any,
    help: str,
    *,
    kind: str = "float",
    minimum: float | None = None,
    maximum: float | None = None,
    group: str = "model",
    metavar: str = "",
) -> Any:
    return dataclasses.field(
        default=default,
        metadata={
            "help": help,
            "kind": kind,
            "min": minimum,
            "max": maximum,
            "group": group,
            "metavar": metavar,
        },
    )


@dataclasses.dataclass(frozen=True)
class EmulatorConfig:
    """Every parameter of the emulated drive (defaults suit tkbench's quick profile)."""

    capacity: int = _opt(
        256 * MIB,
        "user capacity exported to clients (multiple of 4 KiB)",
        kind="size",
        minimum=1 * MIB,
        metavar="SIZE",
    )
    over_provisioning: float = _opt(
        0.12,
        "spare flash as a fraction of the user capacity (0.12 or 12%); less spare "
        "means more write amplification once garbage collection sets in",
        minimum=0.02,
        maximum=4.0,
    )
    block_pages: int = _opt(64, "4 KiB pages per erase block", kind="int", minimum=4, maximum=4096)
    read_latency_us: float = _opt(150.0, "QD1 latency of a 4 KiB read, microseconds", minimum=0.0)
    read_cmd_us: float = _opt(
        70.0,
        "device time per read command (bounds small-block read IOPS), microseconds",
        minimum=0.0,
    )
    read_mbps: float = _opt(
        400.0, "flash read bandwidth, MiB/s (device time per page read)", minimum=1.0
    )
    write_latency_us: float = _opt(
        250.0, "QD1 latency of a 4 KiB write on a fresh drive, microseconds", minimum=0.0
    )
    write_cmd_us: float = _opt(
        75.0,
        "device time per write or trim command (bounds small-block write IOPS), microseconds",
        minimum=0.0,
    )
    write_mbps: float = _opt(
        160.0,
        "flash program bandwidth, MiB/s (device time per page programmed, host or GC)",
        minimum=1.0,
    )
    erase_us: float = _opt(500.0, "device time per block erase, microseconds", minimum=0.0)
    gc_free_blocks: int = _opt(
        4,
        "foreground garbage collection runs when fewer free blocks than this remain",
        kind="int",
        minimum=2,
        maximum=1024,
    )
    idle_ms: float = _opt(
        100.0,
        "idle time before background garbage collection starts, milliseconds",
        minimum=0.0,
    )
    # Background GC at full speed once idle, until all the spare is free: on a steady
    # 256 MiB drive 1 s of idle frees 75 of 123 spare blocks, 2 s 119, so the host idle
    # recovery of the quick profile's 1-2 s wait states grows with the idle time.
    bg_gc_duty: float = _opt(
        1.0,
        "fraction of idle device time spent on background garbage collection (0 = off)",
        minimum=0.0,
        maximum=1.0,
    )
    bg_gc_target: float = _opt(
        1.0,
        "background GC stops when this fraction of the spare blocks is free",
        minimum=0.0,
        maximum=1.0,
    )
    max_mbps: float = _opt(
        300.0,
        "host interface ceiling, MiB/s, shared by reads and writes of all connections",
        minimum=1.0,
    )
    noise: float = _opt(
        0.05,
        "standard deviation of the log-normal factor applied to each request's service "
        "time (0 = none)",
        minimum=0.0,
        maximum=2.0,
    )
    seed: int = _opt(0, "seed of the noise generator", kind="int", minimum=0)
    store_data: bool = _opt(
        True,
        "keep written data so reads return it (memory grows with the data written); "
        "off: writes are discarded and reads return zeros",
        kind="bool",
        group="data",
    )
    error_after: float | None = _opt(
        None,
        "fail every read and write with EIO this many seconds after the first connection",
        kind="optfloat",
        minimum=0.0,
        group="fault",
        metavar="SECONDS",
    )
    error_range: tuple[int, int] | None = _opt(
        None,
        "fail reads and writes touching bytes OFFSET..OFFSET+LENGTH with EIO "
        "(e.g. 16M:1M; LBA n of 512-byte sectors is byte n*512)",
        kind="range",
        group="fault",
        metavar="OFFSET:LENGTH",
    )
    spike_every_ms: float | None = _opt(
        None,
        "latency spike period: every this many milliseconds after the first connection "
        "the device stalls for --spike-ms",
        kind="optfloat",
        minimum=1.0,
        group="fault",
        metavar="MS",
    )
    spike_ms: float = _opt(
        50.0,
        "length of each latency spike (stall), milliseconds",
        minimum=0.0,
        group="fault",
        metavar="MS",
    )
    disconnect_after: float | None = _opt(
        None,
        "shut the server down (dropping all connections) this many seconds after the "
        "first connection",
        kind="optfloat",
        minimum=0.0,
        group="fault",
        metavar="SECONDS",
    )

    # -- conversions ----------------------------------------------------------

    @classmethod
    def option_fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        return dataclasses.fields(cls)

    @classmethod
    def from_strings(cls, values: Mapping[str, str]) -> EmulatorConfig:
        """Parse ``key=value`` strings (nbdkit arguments); unknown keys are errors."""
        known = {f.name: f for f in cls.option_fields()}
        kwargs: dict[str, Any] = {}
        for key, text in values.items():
            f = known.get(key)
            if f is None:
                raise ValueError(f"unknown emulator parameter {key!r}")
            kwargs[key] = parse_value(f, text)
        return cls.create(**kwargs)

    @classmethod
    def create(cls, **kwargs: Any) -> EmulatorConfig:
        """Build and validate; values may be strings (parsed) or typed values."""
        known = {f.name: f for f in cls.option_fields()}
        parsed: dict[str, Any] = {}
        for key, value in kwargs.items():
            f = known.get(key)
            if f is None:
                raise ValueError(f"unknown emulator parameter {key!r}")
            parsed[key] = parse_value(f, value) if isinstance(value, str) else value
        cfg = cls(**parsed)
        cfg.validate()
        return cfg

    def to_strings(self) -> dict[str, str]:
        """``key=value`` strings for nbdkit, only for values that differ from defaults."""
        out: dict[str, str] = {}
        for f in self.option_fields():
            value = getattr(self, f.name)
            if value == f.default:
                continue
            out[f.name] = format_value(value)
        return out

    def validate(self) -> None:
        """Raise ValueError with a one-line message for an inconsistent configuration."""
        for f in self.option_fields():
            value = getattr(self, f.name)
            meta = f.metadata
            label = "--" + f.name.replace("_", "-")
            kind = meta["kind"]
            if value is None:
                if kind in ("optfloat", "range"):
                    continue
                raise ValueError(f"{label} must be set")
            if kind == "bool":
                if not isinstance(value, bool):
                    raise ValueError(f"{label} must be a boolean")
                continue
            if kind == "range":
                if (
                    not isinstance(value, tuple)
                    or len(value) != 2
                    or not all(isinstance(v, int) and v >= 0 for v in value)
                    or value[1] <= 0
                ):
                    raise ValueError(f"{label} must be OFFSET:LENGTH with LENGTH > 0")
                continue
            if kind in ("int", "size") and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{label} must be an integer, not {value!r}")
            if kind in ("float", "optfloat"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"{label} must be a number, not {value!r}")
                if not math.isfinite(value):
                    raise ValueError(f"{label} must be finite")
            lo, hi = meta["min"], meta["max"]
            show = format_size if kind == "size" else format_value
            if lo is not None and value < lo:
                raise ValueError(f"{label} must be at least {show(lo)}, not {show(value)}")
            if hi is not None and value > hi:
                raise ValueError(f"{label} must be at most {show(hi)}, not {show(value)}")
        if self.capacity % PAGE:
            raise ValueError(f"--capacity must be a multiple of 4 KiB, not {self.capacity}")
        if self.capacity < 8 * self.block_pages * PAGE:
            raise ValueError(
                f"--capacity must hold at least 8 erase blocks "
                f"({format_size(8 * self.block_pages * PAGE)} with --block-pages "
                f"{self.block_pages})"
            )
        if self.capacity >= (1 << 31) * PAGE:
            raise ValueError("--capacity must be below 8 TiB")
        if self.error_range is not None and self.error_range[0] >= self.capacity:
            raise ValueError("--error-range starts beyond the capacity")

    def export_name(self) -> str:
        """The name the emulated drive is exported under, made of what makes it this
        drive: ``tkbench-emu-256MiB-s7`` (capacity and seed), followed by a short digest
        of the other drive-model parameters when any differs from its default.  Data
        keeping and injected faults are not the drive and leave the name alone.  Two
        emulators of the same parameters are the same drive to a history, wherever
        their sockets lie."""
        name = f"tkbench-emu-{format_size(self.capacity).replace(' ', '')}-s{self.seed}"
        # each value as nbdkit's side parses it (idle_ms=0 given here is 0.0 there)
        shaped = [
            f"{f.name}={format_value(parse_value(f, format_value(getattr(self, f.name))))}"
            for f in self.option_fields()
            if f.metadata["group"] == "model"
            and f.name not in ("capacity", "seed")
            and getattr(self, f.name) != f.default
        ]
        if not shaped:
            return name
        return f"{name}-{hashlib.sha256(';'.join(shaped).encode()).hexdigest()[:8]}"

    def describe(self) -> str:
        """One line with the non-default parameters, for logs."""
        parts = [f"{k}={v}" for k, v in self.to_strings().items() if k != "capacity"]
        return ", ".join(parts) if parts else "defaults"


def parse_value(f: dataclasses.Field[Any], text: str) -> Any:
    """Parse the string form of one option; ValueError names the option."""
    kind = f.metadata["kind"]
    label = "--" + f.name.replace("_", "-")
    s = text.strip()
    try:
        if kind == "size":
            return parse_size(s)
        if kind == "int":
            return int(s, 10)
        if kind == "bool":
            low = s.lower()
            if low in ("1", "yes", "true", "on"):
                return True
            if low in ("0", "no", "false", "off"):
                return False
            raise ValueError(f"not a boolean: {text!r}")
        if kind == "optfloat" and s.lower() in _OFF:
            return None
        if kind in ("float", "optfloat"):
            value = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
            if not math.isfinite(value):
                raise ValueError(f"not a finite number: {text!r}")
            return value
        if kind == "range":
            if s.lower() in _OFF:
                return None
            off, sep, length = s.partition(":")
            if not sep:
                raise ValueError(f"expected OFFSET:LENGTH, got {text!r}")
            return (parse_size(off), parse_size(length))
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    raise ValueError(f"{label}: unsupported kind {kind}")  # pragma: no cover


def format_value(value: Any) -> str:
    """Inverse of :func:`parse_value` (string form for nbdkit arguments)."""
    if value is None:
        return "off"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return f"{value[0]}:{value[1]}"
    if isinstance(value, float):
        return repr(value)
    return str(value)


# ---------------------------------------------------------------------------
# The flash model

_OPEN = 1 << 40  # added to the valid count of open/free blocks so min() skips them


class SsdModel:
    """Page-mapped FTL with greedy GC and a queueing timing model.

    Times are in seconds on any monotonic clock.  Each request method returns
    the time at which the request completes; the caller sleeps until then.
    Not thread-safe: the caller serialises calls (the plugin holds a lock).
    """

    def __init__(self, cfg: EmulatorConfig) -> None:
        self.cfg = cfg
        ppb = cfg.block_pages
        self.ppb = ppb
        self.n_lpages = cfg.capacity // PAGE
        user_blocks = -(-self.n_lpages // ppb)
        spare = max(math.ceil(self.n_lpages * cfg.over_provisioning / ppb), cfg.gc_free_blocks + 2)
        self.spare_blocks = spare
        self.n_blocks = user_blocks + spare
        # timing constants, seconds
        self._rd_page = PAGE / (cfg.read_mbps * MIB)
        self._wr_page = PAGE / (cfg.write_mbps * MIB)
        self._gc_page = self._rd_page + self._wr_page
        self._erase = cfg.erase_us * 1e-6
        self._rd_cmd = cfg.read_cmd_us * 1e-6
        self._wr_cmd = cfg.write_cmd_us * 1e-6
        self._rd_lat = cfg.read_latency_us * 1e-6
        self._wr_lat = cfg.write_latency_us * 1e-6
        self._host_byte = 1.0 / (cfg.max_mbps * MIB)
        self._idle = cfg.idle_ms * 1e-3
        self._bg_target = cfg.gc_free_blocks + int(cfg.bg_gc_target * (spare - cfg.gc_free_blocks))
        self._rng = random.Random(cfg.seed)
        self._noise = cfg.noise
        self.busy_until = 0.0
        # statistics (cumulative; never reset by a purge)
        self.host_pages = 0
        self.gc_pages = 0
        self.bg_gc_pages = 0
        self.erases = 0
        self.read_cmds = 0
        self.write_cmds = 0
        self.trim_cmds = 0
        self.purges = 0
        self.reset()

    # -- state ----------------------------------------------------------------

    def reset(self) -> None:
        """Factory-fresh flash: nothing mapped, every block erased."""
        self.l2p = array("i", [-1]) * self.n_lpages
        self.p2l = array("i", [-1]) * (self.n_blocks * self.ppb)
        self.vkey = [_OPEN] * self.n_blocks
        self.free: deque[int] = deque(range(self.n_blocks))
        self.host_blk = self.free.popleft()
        self.host_ptr = 0
        self.gc_blk = self.free.popleft()
        self.gc_ptr = 0
        self._gc_cursor = 0
        self._gc_debt = 0.0  # device time of foreground GC not yet charged
        self._gc_share = 0.0  # charged per host page written
        self.valid_pages = 0
        self._fresh = True  # every block erased, nothing written since

    def free_blocks(self) -> int:
        return len(self.free)

    def write_amplification(self) -> float:
        """Cumulative flash pages programmed per host page written."""
        if not self.host_pages:
            return 1.0
        return (self.host_pages + self.gc_pages + self.bg_gc_pages) / self.host_pages

    def stats(self) -> dict[str, Any]:
        return {
            "capacity": self.cfg.capacity,
            "host_pages_written": self.host_pages,
            "gc_pages_relocated": self.gc_pages,
            "bg_gc_pages_relocated": self.bg_gc_pages,
            "erases": self.erases,
            "write_amplification": round(self.write_amplification(), 4),
            "valid_pages": self.valid_pages,
            "free_blocks": len(self.free),
            "blocks": self.n_blocks,
            "spare_blocks": self.spare_blocks,
            "read_cmds": self.read_cmds,
            "write_cmds": self.write_cmds,
            "trim_cmds": self.trim_cmds,
            "purges": self.purges,
        }

    # -- FTL ------------------------------------------------------------------

    def _gc_one(self) -> int:
        """Relocate the valid pages of the closed block with fewest, erase it.

        Returns the number of pages moved, or -1 if no closed block has an
        invalid page (nothing to gain).
        """
        vkey = self.vkey
        m = min(vkey)
        ppb = self.ppb
        if m >= ppb:
            return -1
        # ties go round-robin from the last victim, so the choice among equally
        # good blocks does not depend on (and correlate with) block numbers
        try:
            victim = vkey.index(m, self._gc_cursor)
        except ValueError:
            victim = vkey.index(m)
        self._gc_cursor = victim + 1
        base = victim * ppb
        p2l = self.p2l
        l2p = self.l2p
        if m:
            gblk = self.gc_blk
            gptr = self.gc_ptr
            for pp in range(base, base + ppb):
                lp = p2l[pp]
                if lp < 0:
                    continue
                if gptr == ppb:
                    vkey[gblk] -= _OPEN
                    gblk = self.free.popleft()
                    gptr = 0
                np_ = gblk * ppb + gptr
                gptr += 1
                p2l[np_] = lp
                l2p[lp] = np_
                vkey[gblk] += 1
                p2l[pp] = -1
            self.gc_blk = gblk
            self.gc_ptr = gptr
        vkey[victim] = _OPEN
        self.free.append(victim)
        self.erases += 1
        return m

    def _foreground_gc(self) -> float:
        """Collect until enough blocks are free; returns device time spent."""
        spent = 0.0
        target = self.cfg.gc_free_blocks
        while len(self.free) < target:
            moved = self._gc_one()
            if moved < 0:
                break
            self.gc_pages += moved
            spent += moved * self._gc_page + self._erase
        return spent

    def _background_gc(self, now: float) -> None:
        """Lazily account for GC done while the device sat idle since busy_until."""
        if len(self.free) >= self._bg_target or self.cfg.bg_gc_duty <= 0.0:
            return
        idle = now - self.busy_until - self._idle
        if idle <= 0.0:
            return
        budget = idle * self.cfg.bg_gc_duty
        while budget > 0.0 and len(self.free) < self._bg_target:
            moved = self._gc_one()
            if moved < 0:
                break
            self.bg_gc_pages += moved
            budget -= moved * self._gc_page + self._erase

    def _program(self, first: int, last: int) -> float:
        """Map logical pages first..last-1 to new flash pages; GC device time to charge."""
        l2p = self.l2p
        p2l = self.p2l
        vkey = self.vkey
        ppb = self.ppb
        blk = self.host_blk
        ptr = self.host_ptr
        added = 0
        for lp in range(first, last):
            old = l2p[lp]
            if old >= 0:
                p2l[old] = -1
                vkey[old // ppb] -= 1
            else:
                added += 1
            if ptr == ppb:
                vkey[blk] -= _OPEN
                if len(self.free) <= self.cfg.gc_free_blocks:
                    self._gc_debt += self._foreground_gc()
                    self._gc_share = self._gc_debt / ppb
                blk = self.free.popleft()
                ptr = 0
            pp = blk * ppb + ptr
            ptr += 1
            l2p[lp] = pp
            p2l[pp] = lp
            vkey[blk] += 1
        self.host_blk = blk
        self.host_ptr = ptr
        self.valid_pages += added
        self.host_pages += last - first
        # The GC done to open a block is paid by the host pages written into
        # that block (as firmware interleaves GC with host writes), so its cost
        # shows as slower writes rather than one write stalled for all of it.
        spent = self._gc_share * (last - first)
        if spent > self._gc_debt:
            spent = self._gc_debt
        self._gc_debt -= spent
        return spent

    def _unmap(self, first: int, last: int) -> None:
        l2p = self.l2p
        p2l = self.p2l
        vkey = self.vkey
        ppb = self.ppb
        removed = 0
        for lp in range(first, last):
            old = l2p[lp]
            if old >= 0:
                l2p[lp] = -1
                p2l[old] = -1
                vkey[old // ppb] -= 1
                removed += 1
        self.valid_pages -= removed

    # -- timing ---------------------------------------------------------------

    def _schedule(self, now: float, latency: float, occupancy: float) -> float:
        if self._noise:
            f = math.exp(self._noise * self._rng.gauss(0.0, 1.0))
            latency *= f
            occupancy *= f
        start = now if now > self.busy_until else self.busy_until
        self.busy_until = start + occupancy
        return start + (latency if latency > occupancy else occupancy)

    def stall_until(self, t: float) -> None:
        """The device can start nothing before ``t`` (firmware hiccup, fault injection)."""
        if t > self.busy_until:
            self.busy_until = t

    # -- requests -------------------------------------------------------------

    def read(self, offset: int, length: int, now: float) -> float:
        self._background_gc(now)
        self.read_cmds += 1
        npages = (offset + length - 1) // PAGE - offset // PAGE + 1 if length else 0
        occ = self._rd_cmd + npages * self._rd_page
        xfer = length * self._host_byte
        if xfer > occ:
            occ = xfer
        lat = self._rd_lat + xfer
        return self._schedule(now, lat, occ)

    def write(self, offset: int, length: int, now: float) -> float:
        self._background_gc(now)
        self.write_cmds += 1
        occ = self._wr_cmd
        if length:
            self._fresh = False
            first = offset // PAGE
            last = (offset + length - 1) // PAGE + 1
            # partial pages at either end: read-modify-write
            if offset % PAGE and self.l2p[first] >= 0:
                occ += self._rd_page
            end = offset + length
            if end % PAGE and last - 1 != first and self.l2p[last - 1] >= 0:
                occ += self._rd_page
            occ += (last - first) * self._wr_page
            occ += self._program(first, last)
        xfer = length * self._host_byte
        if xfer > occ:
            occ = xfer
        lat = self._wr_lat + xfer
        return self._schedule(now, lat, occ)

    def trim(self, offset: int, length: int, now: float) -> float:
        """Unmap the whole pages covered; a trim of everything is a purge (fresh drive)."""
        self._background_gc(now)
        self.trim_cmds += 1
        first = -(-offset // PAGE)
        last = min((offset + length) // PAGE, self.n_lpages)
        if last > first:
            if first > 0 or last < self.n_lpages:
                self._unmap(first, last)
            everything = (first == 0 and last == self.n_lpages) or self.valid_pages == 0
            if everything and not self._fresh:
                self.purges += 1
                self.reset()
        npages = max(last - first, 0)
        occ = self._wr_cmd + npages * 2e-8
        return self._schedule(now, occ, occ)

    def flush(self, now: float) -> float:
        self._background_gc(now)
        return self._schedule(now, 20e-6, 0.0)


# ---------------------------------------------------------------------------
# Fault injection


class FaultInjector:
    """Injected faults, armed (clock started) at the first client connection."""

    def __init__(self, cfg: EmulatorConfig) -> None:
        self.cfg = cfg
        self.t0: float | None = None
        self._spike_index = -1
        self._period = cfg.spike_every_ms * 1e-3 if cfg.spike_every_ms else 0.0
        self._spike = cfg.spike_ms * 1e-3
        self.errors = 0
        self.spikes = 0

    def arm(self, now: float) -> bool:
        """Start the fault clock; True the first time only."""
        if self.t0 is None:
            self.t0 = now
            return True
        return False

    def error(self, offset: int, length: int, now: float) -> str | None:
        """Reason to fail this read or write, or None."""
        cfg = self.cfg
        if cfg.error_after is not None and self.t0 is not None and now - self.t0 >= cfg.error_after:
            self.errors += 1
            return f"injected I/O error (--error-after {cfg.error_after:g} s)"
        if cfg.error_range is not None:
            lo, n = cfg.error_range
            if offset < lo + n and offset + max(length, 1) > lo:
                self.errors += 1
                return f"injected I/O error in {lo}:{n} (--error-range)"
        return None

    def stall(self, now: float) -> float | None:
        """If a spike period has begun since the last call, the time the stall ends."""
        if not self._period or self.t0 is None:
            return None
        k = int((now - self.t0) / self._period)
        if k <= 0 or k == self._spike_index:
            return None
        self._spike_index = k
        start = self.t0 + k * self._period
        end = start + self._spike
        if end <= now:
            return None
        self.spikes += 1
        return end


# ---------------------------------------------------------------------------
# Data

_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)


class DataStore:
    """Written data in a lazily allocated anonymous mapping; holes read as zeros.

    The kernel allocates memory only for pages that were written; a trim hands
    whole pages back (MADV_DONTNEED) and zeroes partial ones.
    """

    def __init__(self, capacity: int, enabled: bool = True) -> None:
        self.capacity = capacity
        self.enabled = enabled
        self._mm: mmap.mmap | None = None
        self._view: memoryview | None = None
        if enabled:
            flags = mmap.MAP_PRIVATE | _MAP_NORESERVE
            self._mm = mmap.mmap(-1, capacity, flags=flags)
            self._view = memoryview(self._mm)

    def read(self, buf: Any, offset: int) -> None:
        n = len(buf)
        if self._view is None:
            buf[:] = bytes(n)
        else:
            buf[:] = self._view[offset : offset + n]

    def write(self, buf: Any, offset: int) -> None:
        if self._view is not None:
            self._view[offset : offset + len(buf)] = buf

    def zero(self, offset: int, length: int) -> None:
        if self._view is None or self._mm is None or length <= 0:
            return
        end = offset + length
        first = -(-offset // PAGE) * PAGE
        last = end // PAGE * PAGE
        if last <= first:
            self._view[offset:end] = bytes(length)
            return
        if first > offset:
            self._view[offset:first] = bytes(first - offset)
        if end > last:
            self._view[last:end] = bytes(end - last)
        if hasattr(self._mm, "madvise"):
            self._mm.madvise(mmap.MADV_DONTNEED, first, last - first)
        else:  # pragma: no cover - platforms without madvise
            self._view[first:last] = bytes(last - first)

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None
