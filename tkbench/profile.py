"""Test profiles: TOML files loaded into frozen dataclasses.

A profile may ``extends`` another; ``--set KEY=VALUE`` overrides any value after
merging.  Every unknown key, wrong type or impossible value is a
:class:`ProfileError` whose one-line message names the file and the key.
The keys are documented in docs/profiles.md.
"""

from __future__ import annotations

import copy
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import paths, vocab
from .device.purge import METHODS as _DEVICE_METHODS
from .device.writecache import SETTINGS as WRITE_CACHE_SETTINGS
from .errors import ProfileError
from .units import format_duration, format_size, parse_duration, parse_size
from .vocab import metric

KINDS = ("steady", "saturation", "fixed", "copy")
PATTERNS = ("random", "sequential")
# tests of several stages (tkbench.kinds.staged): the PTS 2.0.2 tests beyond the basic four
PROCEDURES = ("", "hir", "xsr", "cbw", "dirth")
# the modes of a bulk-I/O sweep (tkbench.kinds.sweep says what each does)
SWEEP_MODES = (
    "unbuffered-read",
    "unbuffered-write",
    "unbuffered-seq-read",
    "unbuffered-seq-write",
    "buffered-seq-read",
)


def purge_methods() -> tuple[str, ...]:
    return tuple(_DEVICE_METHODS)


# "auto" picks the secure erase by interface; "none" skips the purge
PURGE_METHODS = (*purge_methods(), "none")
DATA_PATTERNS = ("random", "zero", "compressible")
# the page cache at a point's start (tkbench.cache says what each asks of fio)
CACHE_STATES = ("as-is", "cold", "warm")
# the operations of a virtual-file test (tkbench.kinds.vfile)
VFILE_OPERATIONS = ("random-write", "random-read", "sequential-write", "sequential-read")
# a copy test's file sets (tkbench.kinds.copy says what each looks like)
COPY_SETS = ("iso", "program", "game")
# the SNIA PTS 2.0.2 variant a profile claims to run: Enterprise, Client, or none
PTS_VARIANTS = ("E", "C", "none")


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, order=True)
class Mix:
    """A read/write mix: percentage of reads (``65`` is 65/35)."""

    read: int

    @property
    def label(self) -> str:
        return f"{self.read}/{100 - self.read}"

    @classmethod
    def parse(cls, text: object) -> Mix:
        if isinstance(text, int) and not isinstance(text, bool):
            read = text
        else:
            m = re.fullmatch(r"\s*(\d{1,3})\s*/\s*(\d{1,3})\s*", str(text))
            if not m or int(m.group(1)) + int(m.group(2)) != 100:
                raise ValueError(f'not a R/W mix: {text!r} (use e.g. "65/35")')
            read = int(m.group(1))
        if not 0 <= read <= 100:
            raise ValueError(f"read share out of 0..100: {text!r}")
        return cls(read)


@dataclass(frozen=True)
class Tracking:
    """A steady-state tracking variable, e.g. ``iops 4k 0/100``."""

    metric: str  # iops | bw | lat_mean
    bs: int
    mix: Mix

    @property
    def label(self) -> str:
        return f"{self.metric} {size_label(self.bs)} {self.mix.label}"

    @property
    def unit(self) -> str:
        return metric(self.metric).unit

    @classmethod
    def parse(cls, text: object) -> Tracking:
        parts = str(text).split()
        if len(parts) != 3 or parts[0] not in vocab.names(trackable=True):
            raise ValueError(
                f'not a tracking variable: {text!r} (use e.g. "iops 4k 0/100"; '
                f"metrics: {', '.join(vocab.names(trackable=True))})"
            )
        bs = COMPOSITE if parts[1] == "composite" else parse_size(parts[1])
        return cls(parts[0], bs, Mix.parse(parts[2]))


# the block size of a point of several block sizes (``bssplit``): 0, shown as "composite"
COMPOSITE = 0


def size_label(bs: int) -> str:
    """A point's block size as people read it ("4k"; "composite" for a block-size mix)."""
    return "composite" if bs == COMPOSITE else format_size(bs)


@dataclass(frozen=True)
class Share:
    """One part of a distribution: ``pct`` percent of the accesses go to ``value``
    (a block size in bytes for ``bssplit``; a percentage of the ActiveRange for
    ``zones``)."""

    value: float
    pct: float

    @classmethod
    def parse_bs(cls, text: object) -> Share:
        m = re.fullmatch(r"\s*([^/\s]+)\s*/\s*([0-9.]+)\s*", str(text))
        if not m:
            raise ValueError(f'not a block-size share: {text!r} (use e.g. "4k/67")')
        return cls(float(_block_size(m.group(1))), _pct(m.group(2), text))

    @classmethod
    def parse_zone(cls, text: object) -> Share:
        m = re.fullmatch(r"\s*([0-9.]+)\s*/\s*([0-9.]+)\s*", str(text))
        if not m:
            raise ValueError(
                f'not an LBA zone: {text!r} (use "ACCESS%/RANGE%", e.g. "50/5": half the '
                "accesses to 5 % of the ActiveRange)"
            )
        return cls(_pct(m.group(2), text), _pct(m.group(1), text))


def _pct(v: str, text: object) -> float:
    x = float(v)
    if not 0 < x <= 100:
        raise ValueError(f"percentage out of (0, 100] in {text!r}")
    return x


@dataclass(frozen=True)
class Group:
    """One access group of a cross-stimulus test: ``bs`` ``pattern`` writes for
    ``duration`` seconds ("1024k sequential 8h")."""

    bs: int
    pattern: str
    duration: float

    @property
    def label(self) -> str:
        return f"{format_size(self.bs)} {self.pattern}"

    @classmethod
    def parse(cls, text: object) -> Group:
        parts = str(text).split()
        if len(parts) != 3 or parts[1] not in PATTERNS:
            raise ValueError(
                f'not an access group: {text!r} (use "BS PATTERN DURATION", e.g. '
                '"1024k sequential 8h")'
            )
        return cls(_block_size(parts[0]), parts[1], _duration(0.0, hi=30 * DAY)(parts[2]))


@dataclass(frozen=True)
class CopySet:
    """One file set of a copy test: ``kind`` (iso, program, game), ``files`` files
    holding ``size`` bytes in all ("iso 2 1g")."""

    kind: str
    files: int
    size: int

    @property
    def label(self) -> str:
        return f"{self.kind} {self.files} {format_size(self.size)}"

    @classmethod
    def parse(cls, text: object) -> CopySet:
        parts = str(text).split()
        if len(parts) != 3 or parts[0] not in COPY_SETS or not parts[1].isdigit():
            raise ValueError(
                f'not a file set: {text!r} (use "KIND FILES SIZE", e.g. "iso 2 1g"; '
                f"kinds: {', '.join(COPY_SETS)})"
            )
        files, size = int(parts[1]), _size()(parts[2])
        if not 1 <= files <= 100000:
            raise ValueError(f"{text!r}: the number of files is out of range 1..100000")
        if size < files:
            raise ValueError(f"{text!r}: fewer bytes than files")
        return cls(parts[0], files, size)


def copy_data(v: Any) -> str:
    """A copy test's data pattern: ``zero``, ``random`` or ``compressible-NN`` (data that
    compresses by about NN %, as the fio tests' ``compress_percentage``)."""
    m = re.fullmatch(r"compressible-(\d{1,2})", str(v))
    if v in ("zero", "random") or (m and 1 <= int(m.group(1)) <= 99):
        return str(v)
    raise ValueError(
        f"{v!r} is not a data pattern (zero, random, compressible-NN with NN in 1..99)"
    )


OPERATORS = (">=", "<=", ">", "<")


@dataclass(frozen=True)
class Criterion:
    """An acceptance criterion: ``TEST METRIC BS R/W OP VALUE``, e.g.
    ``iops iops 4k 0/100 >= 50000`` or ``latency p99.99 4k 100/0 <= 5``; the metric
    ``mean_abs_dev_pct`` is a repeated point's spread (``4k mean_abs_dev_pct 4k 0/100
    <= 3``).  Or ``TEST FIGURE OP VALUE``: a volume benchmark's headline figure
    (tkbench.analysis.volfigures), e.g. ``sweep best_write_mb_s >= 500``, ``copy
    iso.random.mb_s >= 200``, ``copy iso.random.mean_abs_dev_pct <= 3``.

    The value compared is the point's mean over the test's measurement window;
    IOPS, MB/s and milliseconds as :mod:`tkbench.vocab` defines them.
    """

    test: str
    metric: str  # a vocabulary metric, DEVIATION, or a figure's name (mix None)
    bs: int
    mix: Mix | None  # None: a volume figure, no point
    op: str
    value: float

    @property
    def is_figure(self) -> bool:
        return self.mix is None

    @property
    def unit(self) -> str:
        if self.metric.endswith(DEVIATION):
            return "%"
        if self.mix is None:
            return next(u for end, u in FIGURE_UNITS.items() if self.metric.endswith(end))
        return metric(self.metric).unit

    @property
    def label(self) -> str:
        where = "" if self.mix is None else f" {format_size(self.bs)} {self.mix.label}"
        return f"{self.test}: {self.metric}{where} {self.op} {self.value:g} {self.unit}"

    def holds(self, measured: float) -> bool:
        return {
            ">=": measured >= self.value,
            "<=": measured <= self.value,
            ">": measured > self.value,
            "<": measured < self.value,
        }[self.op]

    @classmethod
    def parse(cls, text: object) -> Criterion:
        parts = str(text).split()
        figure = len(parts) == 4 and bool(FIGURE_RE.fullmatch(parts[1]))
        point = len(parts) == 6 and parts[1] in (*vocab.names(), DEVIATION)
        if not (figure or point) or parts[-2] not in OPERATORS:
            raise ValueError(
                f'not a criterion: {text!r} (use e.g. "iops iops 4k 0/100 >= 50000", '
                f'"4k mean_abs_dev_pct 4k 0/100 <= 3" or "copy iso.random.mb_s >= 200"; '
                f"metrics: {', '.join((*vocab.names(), DEVIATION))}; volume figures end in "
                f"{', '.join((*FIGURE_UNITS, DEVIATION))}; operators: {' '.join(OPERATORS)})"
            )
        try:
            value = float(parts[-1])
        except ValueError:
            raise ValueError(f"not a number in criterion {text!r}: {parts[-1]!r}") from None
        if figure:
            return cls(parts[0], parts[1], 0, None, parts[2], value)
        return cls(parts[0], parts[1], parse_size(parts[2]), Mix.parse(parts[3]), parts[4], value)


# a volume benchmark's figure in a criterion (tkbench.analysis.volfigures: the same names)
DEVIATION = "mean_abs_dev_pct"
FIGURE_UNITS = {"mb_s": "MB/s", "nodes_s": "nodes/s"}
FIGURE_RE = re.compile(r"[a-z0-9][a-z0-9._-]*(mb_s|nodes_s|mean_abs_dev_pct)")


@dataclass(frozen=True)
class Acceptance:
    steady_state: bool  # every steady-state test must reach steady state
    criteria: tuple[Criterion, ...]
    regression_threshold: float  # percent; 0 = no regression check


@dataclass(frozen=True)
class Workload:
    numjobs: int
    iodepth: int
    active_range: float  # percent of user capacity
    data_pattern: str
    ioengine: str
    direct: bool
    write_cache: str = "unchanged"  # the drive's volatile write cache, for the whole run
    # data_pattern "compressible": the percentage by which the data compresses (fio
    # buffer_compress_percentage); 0 with every other pattern
    compress_percentage: int = 0


@dataclass(frozen=True)
class Rounds:
    max: int
    window: int
    max_excursion: float
    max_slope_excursion: float


@dataclass(frozen=True)
class PurgeSpec:
    method: str
    allow_fallback: bool


@dataclass(frozen=True)
class PreconditionSpec:
    capacity_multiple: float
    bs: int
    max_duration: float  # seconds; 0 = no limit


@dataclass(frozen=True)
class ReportSpec:
    title: str
    operator: str
    organisation: str
    logo: str
    paper: str


@dataclass(frozen=True)
class TestSpec:
    """One test of a profile, with every default resolved."""

    name: str
    title: str
    kind: str
    pattern: str
    mixes: tuple[Mix, ...]
    block_sizes: tuple[int, ...]
    point_runtime: float
    purge: bool
    precondition: bool
    precondition_bs: int | None  # None: the profile's; 0: the test's own block size
    split_block_sizes: bool
    tracking: tuple[Tracking, ...]
    workload: Workload
    rounds: Rounds
    percentiles: tuple[float, ...]
    histogram: bool
    repeat: int
    stop_written_multiple: float
    max_duration: float
    description: str
    file_size: int = 0  # volume profiles: bytes of each job's test file (0: device tests)
    fsync: int = 0  # fio fsync: a synchronous write after every N writes (0: none)
    end_fsync: bool = False  # fio end_fsync: the written data made durable before the end

    # seconds of the response-time histogram phase after the rounds (0: none)
    response_histogram: float = 0.0

    # tests of several stages (tkbench.kinds.staged; "" for the basic kinds)
    procedure: str = ""
    intervals: int = 1  # a round repeats each point this many times (PTS: 30 one-minute intervals)
    tracking_interval: str = "last"  # which repeated interval a round's tracking value is
    threads: tuple[int, ...] = ()  # demand intensity: thread counts (outer loop)
    iodepths: tuple[int, ...] = ()  # ... and queue depths (inner loop)
    bssplit: tuple[Share, ...] = ()  # a block-size mix (fio bssplit)
    zones: tuple[Share, ...] = ()  # LBA zones of the random accesses (fio zoned distribution)
    prewrite: float = 0.0  # seconds of 100 % writes at the round's start, not measured
    wait_states: tuple[float, ...] = ()  # host idle recovery: seconds of idle
    bursts: int = 360  # ... write-idle repetitions per wait state
    burst: float = 5.0  # ... seconds of writes of each repetition
    baseline: float = 1800.0  # ... seconds of continuous writes after each wait state
    groups: tuple[Group, ...] = ()  # cross-stimulus recovery: the access groups in order
    sample: float = 0.0  # seconds per sample of the per-interval logs (0: none)
    response_ceiling: float = 0.005  # seconds: the highest mean response time of MaxIOPS
    operating_prewrite: float = 3600.0  # seconds of writes before each operating point
    operating_runtime: float = 600.0  # seconds each operating point is measured

    # a bulk-I/O sweep (tkbench.kinds.sweep; volume profiles): every buffer size (the test's
    # block_sizes) x buffer count (I/Os in flight) x mode, on one shared test file
    modes: tuple[str, ...] = ()  # empty: no sweep
    buffer_counts: tuple[int, ...] = ()
    max_buffer_space: int = 64 << 20  # bytes: size x count above this is skipped

    # a copy test (kind "copy", tkbench.kinds.copy; volume profiles): every file set x
    # data pattern copied within the volume with read/write through one buffer
    sets: tuple[CopySet, ...] = ()
    data_patterns: tuple[str, ...] = ()
    copy_buffer: int = 1 << 20  # bytes of each read and write
    # also drop the kernel's caches (root): a copy test's before each copy, a cold
    # test's before each point
    drop_caches: bool = False
    verify: bool = True  # compare every copy with its source after the timing
    # a fixed test repeated until its runs agree (docs/volume.md, "Repeatability"): stop
    # once every point's mean absolute deviation is within this percentage of its mean,
    # after at least max(repeat, 2) and at most repeat_max runs (0.0: exactly repeat runs)
    repeat_until: float = 0.0
    repeat_max: int = 10

    # the page cache (tkbench.cache): "as-is" (not controlled), "cold", "warm"
    cache: str = "as-is"
    sync: bool = False  # fio sync=1: every write opens O_SYNC (write-through)

    # a virtual-file test (tkbench.kinds.vfile; volume profiles): a database file of ``nodes``
    # nodes of ``node_size`` bytes, read and written in pages (the test's block size)
    nodes: int = 0  # 0: no virtual-file test
    node_size: int = 512
    operations: tuple[str, ...] = ()
    thread_counts: tuple[int, ...] = ()
    caches: tuple[str, ...] = ()


@dataclass(frozen=True)
class VolumeSpec:
    """``[volume]``: how a volume benchmark uses the space of a mounted filesystem."""

    reserve: int = 1 << 30  # bytes always left free (10 % of the free space if larger)
    shrink: bool = True  # test files shrink to fit the free space (with a note)
    min_file_size: int = 16 << 20  # never shrink a test file below this: refuse
    allow_buffered: bool = False  # without O_DIRECT, run buffered instead of refusing


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    source: str
    workload: Workload
    rounds: Rounds
    purge: PurgeSpec
    precondition: PreconditionSpec
    report: ReportSpec
    tests: tuple[TestSpec, ...]
    acceptance: Acceptance
    resolved: dict[str, Any] = field(compare=False, repr=False)  # merged TOML, for manifests
    scope: str = "device"  # device: a whole drive (destructive); volume: a directory's files
    volume: VolumeSpec = field(default_factory=VolumeSpec)
    pts_variant: str | None = None  # "E" (PTS-E), "C" (PTS-C); None: no PTS claim

    def test(self, name: str) -> TestSpec:
        for t in self.tests:
            if t.name == name:
                return t
        raise KeyError(name)


# --------------------------------------------------------------------------- schema
# Each leaf: (converter, default).  A converter takes the TOML value and returns
# the validated Python value or raises ValueError with a short reason.

Conv = Callable[[Any], Any]


def _int(lo: int, hi: int) -> Conv:
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {_tname(v)}")
        if not lo <= v <= hi:
            raise ValueError(f"{v} is out of range {lo}..{hi}")
        return v

    return conv


def _float(lo: float, hi: float, lo_open: bool = False) -> Conv:
    def conv(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number, got {_tname(v)}")
        f = float(v)
        if not math.isfinite(f) or f > hi or f < lo or (lo_open and f == lo):
            raise ValueError(f"{v} is out of range {'(' if lo_open else '['}{lo:g}, {hi:g}]")
        return f

    return conv


def _percent_limit(v: Any) -> float:
    """A deviation limit such as ``"3%"``: a percentage above 0 and at most 100."""
    text = v.strip() if isinstance(v, str) else ""
    if not text.endswith("%"):
        raise ValueError(f'expected a percentage such as "3%", got {v!r}')
    try:
        f = float(text[:-1])
    except ValueError:
        raise ValueError(f'expected a percentage such as "3%", got {v!r}') from None
    if not math.isfinite(f) or f <= 0 or f > 100:
        raise ValueError(f"{text} is out of range: above 0 % and at most 100 %")
    return f


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {_tname(v)}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {_tname(v)}")
    return v


def _choice(options: Iterable[str]) -> Conv:
    opts = tuple(options)

    def conv(v: Any) -> str:
        if v not in opts:
            raise ValueError(f"{v!r} is not one of {', '.join(opts)}")
        return str(v)

    return conv


def _size(lo: int = 1) -> Conv:
    def conv(v: Any) -> int:
        if isinstance(v, float):
            raise ValueError('expected a size such as "4k"')
        n = parse_size(v)
        if n < lo:
            raise ValueError(f"size {v!r} is below {lo}")
        return n

    return conv


def _block_size(v: Any) -> int:
    n = _size(512)(v)
    if n % 512:
        raise ValueError(f"block size {v!r} is not a multiple of 512")
    return n


DAY = 86400.0


def _duration(lo: float = 0.0, lo_open: bool = True, hi: float = 30 * DAY) -> Conv:
    """A duration above ``lo`` and at most ``hi``: a point or test lasting thousands
    of days is a typo, not a plan."""

    def conv(v: Any) -> float:
        s = parse_duration(v)
        if s < lo or (lo_open and s == lo):
            raise ValueError(f"duration {v!r} must be more than {lo:g} s")
        if s > hi:
            raise ValueError(f"duration {v!r} is longer than {format_duration(hi)}")
        return s

    return conv


def _list(item: Conv, min_len: int = 1, unique: bool = True) -> Conv:
    def conv(v: Any) -> tuple[Any, ...]:
        if not isinstance(v, list):
            raise ValueError(f"expected a list, got {_tname(v)}")
        if len(v) < min_len:
            raise ValueError(f"needs at least {min_len} entr{'y' if min_len == 1 else 'ies'}")
        out = tuple(item(x) for x in v)
        if unique and len(set(out)) != len(out):
            raise ValueError("contains duplicates")
        return out

    return conv


def _tname(v: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(v), type(v).__name__)


WORKLOAD_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "numjobs": (_int(1, 1024), 4),
    "iodepth": (_int(1, 65536), 32),
    "active_range": (_float(0.0, 100.0, lo_open=True), 100.0),
    "data_pattern": (_choice(DATA_PATTERNS), "random"),
    "ioengine": (_choice(("auto", "libaio", "io_uring", "psync", "posixaio", "sync")), "auto"),
    "direct": (_bool, True),
    "write_cache": (_choice(WRITE_CACHE_SETTINGS), "unchanged"),
    "compress_percentage": (_int(1, 99), 0),
}
ROUNDS_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "max": (_int(1, 100000), 25),
    "window": (_int(2, 1000), 5),
    "max_excursion": (_float(0.0, 10.0, lo_open=True), 0.20),
    "max_slope_excursion": (_float(0.0, 10.0, lo_open=True), 0.10),
}
PURGE_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "method": (_choice(PURGE_METHODS), "auto"),
    "allow_fallback": (_bool, False),
}
PRECONDITION_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "capacity_multiple": (_float(0.0, 100.0), 2.0),
    "bs": (_block_size, 128 * 1024),
    "max_duration": (_duration(0.0, lo_open=False), 0.0),
}
REPORT_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "title": (_str, "SSD Performance Report"),
    "operator": (_str, ""),
    "organisation": (_str, ""),
    "logo": (_str, ""),
    "paper": (_choice(("A4", "Letter")), "A4"),
}


def _precondition_bs(v: Any) -> int:
    if v == "match":
        return 0
    return _block_size(v)


# Write Saturation's optional workloads: what ``wsat_workload`` sets (docs/profiles.md)
COMPOSITE_SIZES: tuple[str, ...] = ("512/4", "1k/1", "1536/1", "2k/1", "2560/1", "3k/1")
COMPOSITE_SIZES += ("3584/1", "4k/67", "8k/10", "16k/7", "32k/3", "64k/3")


def _preset(pattern: str, bs: int, read: int, track: str) -> dict[str, Any]:
    return {"pattern": pattern, "block_sizes": (bs,), "mixes": (Mix(read),), "track": track}


WSAT_WORKLOADS: dict[str, dict[str, Any]] = {
    "oltp": _preset("random", 8192, 65, "8k"),
    "vod": _preset("sequential", 131072, 90, "128k"),
    "metadata": _preset("sequential", 512, 50, "512"),
    "composite": {
        "pattern": "random",
        "mixes": (Mix(0),),
        "bssplit": tuple(Share.parse_bs(x) for x in COMPOSITE_SIZES),
        "zones": tuple(Share.parse_zone(x) for x in ("50/5", "30/15", "20/80")),
        "track": "composite",
    },
}

TEST_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "title": (_str, None),
    "description": (_str, ""),
    "kind": (_choice(KINDS), "steady"),
    "enabled": (_bool, True),
    "pattern": (_choice(PATTERNS), "random"),
    "mixes": (_list(Mix.parse), None),
    "block_sizes": (_list(_block_size), None),
    "point_runtime": (_duration(0.0, hi=DAY), 60.0),
    "purge": (_bool, True),
    "precondition": (_bool, True),
    "precondition_bs": (_precondition_bs, None),
    "split_block_sizes": (_bool, False),
    "tracking": (_list(Tracking.parse, min_len=0), ()),
    "percentiles": (_list(_float(0.0, 100.0, lo_open=True)), (99.0, 99.9, 99.99, 99.999)),
    "histogram": (_bool, False),
    "repeat": (_int(1, 100000), 1),
    "repeat_until": (_percent_limit, 0.0),
    "repeat_max": (_int(1, 100000), 10),
    "stop_written_multiple": (_float(0.0, 1000.0), 4.0),
    "max_duration": (_duration(0.0), 86400.0),
    "file_size": (_size(), 0),
    "fsync": (_int(0, 1 << 20), 0),
    "end_fsync": (_bool, False),
    "response_histogram": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "procedure": (_choice(PROCEDURES[1:]), ""),
    "wsat_workload": (_choice(("required", *WSAT_WORKLOADS)), "required"),
    "intervals": (_int(1, 10000), 1),
    "tracking_interval": (_choice(("first", "last")), "last"),
    "threads": (_list(_int(1, 1024)), ()),
    "iodepths": (_list(_int(1, 65536)), ()),
    "bssplit": (_list(Share.parse_bs), ()),
    "zones": (_list(Share.parse_zone), ()),
    "prewrite": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "wait_states": (_list(_duration(0.0, hi=DAY)), ()),
    "bursts": (_int(1, 100000), 360),
    "burst": (_duration(0.0, hi=DAY), 5.0),
    "baseline": (_duration(0.0, lo_open=False, hi=DAY), 1800.0),
    "groups": (_list(Group.parse, unique=False), ()),
    "sample": (_duration(0.0, lo_open=False, hi=DAY), 0.0),
    "response_ceiling": (_duration(0.0, hi=60.0), 0.005),
    "operating_prewrite": (_duration(0.0, lo_open=False, hi=DAY), 3600.0),
    "operating_runtime": (_duration(0.0, hi=DAY), 600.0),
    "modes": (_list(_choice(SWEEP_MODES)), ()),
    "buffer_sizes": (_list(_block_size), ()),
    "buffer_counts": (_list(_int(1, 65536)), ()),
    "max_buffer_space": (_size(512), 64 << 20),
    "sets": (_list(CopySet.parse), ()),
    "data_patterns": (_list(copy_data), ()),
    "copy_buffer": (_size(512), 1 << 20),
    "drop_caches": (_bool, False),
    "verify": (_bool, True),
    "cache": (_choice(CACHE_STATES), "as-is"),
    "sync": (_bool, False),
    "nodes": (_int(1, 1 << 40), 0),
    "node_size": (_size(1), 512),
    "page_size": (_block_size, 8192),
    "operations": (_list(_choice(VFILE_OPERATIONS)), VFILE_OPERATIONS),
    "thread_counts": (_list(_int(1, 1024)), (1, 128)),
    "caches": (_list(_choice(CACHE_STATES[1:])), ("cold", "warm")),
}
VOLUME_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "reserve": (_size(0), VolumeSpec.reserve),
    "shrink": (_bool, VolumeSpec.shrink),
    "min_file_size": (_size(), VolumeSpec.min_file_size),
    "allow_buffered": (_bool, VolumeSpec.allow_buffered),
}
SCOPES = ("device", "volume")
ACCEPTANCE_SCHEMA: dict[str, tuple[Conv, Any]] = {
    "steady_state": (_bool, False),
    "criteria": (_list(Criterion.parse, min_len=0), ()),
    "regression_threshold": (_float(0.0, 100.0), 0.0),
}
SECTIONS: dict[str, dict[str, tuple[Conv, Any]]] = {
    "workload": WORKLOAD_SCHEMA,
    "rounds": ROUNDS_SCHEMA,
    "purge": PURGE_SCHEMA,
    "precondition": PRECONDITION_SCHEMA,
    "report": REPORT_SCHEMA,
    "acceptance": ACCEPTANCE_SCHEMA,
    "volume": VOLUME_SCHEMA,
}
TOP_KEYS = {
    "name": _str,
    "description": _str,
    "extends": _str,
    "scope": _choice(SCOPES),
    "pts_variant": _choice(PTS_VARIANTS),
}


# --------------------------------------------------------------------------- loading


def bundled_dir() -> Path:
    """The profiles shipped inside the package."""
    return paths.bundled("profiles")


@dataclass(frozen=True)
class ProfileEntry:
    """A profile found by name on the search path (:func:`paths.profile_dirs`)."""

    name: str
    path: Path
    origin: str  # "user" | "system" | "bundled"
    shadows: tuple[str, ...] = ()  # origins of same-named profiles it hides


def catalogue() -> list[ProfileEntry]:
    """Every profile name on the search path, with the file that name loads."""
    found: dict[str, ProfileEntry] = {}
    for d in paths.profile_dirs():
        try:
            files = sorted(d.path.glob("*.toml"))
        except OSError:
            continue
        for f in files:
            old = found.get(f.stem)
            if old is None:
                found[f.stem] = ProfileEntry(f.stem, f, d.origin)
            else:
                found[f.stem] = ProfileEntry(
                    old.name, old.path, old.origin, (*old.shadows, d.origin)
                )
    return [found[k] for k in sorted(found)]


def available() -> list[str]:
    """Names of the profiles on the search path."""
    return [e.name for e in catalogue()]


def find(name_or_path: str, relative_to: Path | None = None, skip: Iterable[Path] = ()) -> Path:
    """Resolve a profile name (``pts-e``) or a path to a TOML file.

    A name is looked up beside the profile that extends it (``relative_to``),
    then in the user, system and bundled profile directories; files in ``skip``
    (the profiles extending it) are passed over, so that a user's ``quick.toml``
    may extend the bundled ``quick``.
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path:
        if relative_to is not None and not p.is_absolute():
            cand = relative_to / p
            if cand.is_file():
                return cand
        if p.is_file():
            return p
        raise ProfileError(f"profile file not found: {name_or_path}")
    dirs = ([relative_to] if relative_to else []) + [d.path for d in paths.profile_dirs()]
    skipped = set(skip)
    for d in dirs:
        cand = d / f"{name_or_path}.toml"
        if cand.is_file() and cand.resolve() not in skipped:
            return cand
    raise ProfileError(
        f"unknown profile {name_or_path!r} (available: {', '.join(available()) or 'none'})"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: TOML syntax error: {exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a TOML file (not UTF-8 text)") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror}") from None


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_raw(name_or_path: str, _seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The merged TOML data of a profile and everything it extends."""
    path = find(name_or_path, _seen[-1].parent if _seen else None, _seen).resolve()
    if path in _seen:
        chain = " -> ".join(p.stem for p in (*_seen, path))
        raise ProfileError(f"{path}: 'extends' forms a cycle: {chain}")
    data = _read_toml(path)
    parent = data.get("extends")
    if parent is not None:
        if not isinstance(parent, str):
            raise ProfileError(f"{path}: key 'extends': expected a string")
        base, _ = load_raw(parent, (*_seen, path))
        base.pop("name", None)
        base.pop("description", None)
        data = _merge(base, {k: v for k, v in data.items() if k != "extends"})
    data.pop("extends", None)
    return data, path


def select(name_or_path: str, names: Iterable[str], overrides: Iterable[str] = ()) -> list[str]:
    """``--set`` overrides that switch off every test of a profile not in ``names``
    (``tkbench run --tests``); an unknown name is a ProfileError naming the tests."""
    data, _ = load_raw(name_or_path)
    data = apply_overrides(data, overrides)
    tests = data.get("tests", {})
    have = [t for t in tests if isinstance(tests, dict)]
    wanted = [n.strip() for n in names if n.strip()]
    unknown = [n for n in wanted if n not in have]
    if unknown or not wanted:
        raise ProfileError(
            f"--tests: no test {', '.join(repr(n) for n in unknown) or 'named'} in profile "
            f"{name_or_path} (its tests: {', '.join(have)})"
        )
    return [f"tests.{t}.enabled=false" for t in have if t not in wanted]


def parse_override(text: str) -> tuple[str, Any]:
    """``rounds.max=30`` -> ("rounds.max", 30).  Values are TOML; bare words are strings."""
    if "=" not in text:
        raise ProfileError(f"--set {text!r}: expected KEY=VALUE")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*", key):
        raise ProfileError(f"--set {text!r}: bad key {key!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare string such as 4k, 60s or Lab 3; validation checks its type
    return key, value


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for text in overrides:
        key, value = parse_override(text)
        parts = key.split(".")
        _check_override_key(out, parts, key)
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ProfileError(f"--set {key}: {part!r} is not a table")
        node[parts[-1]] = value
    return out


def _check_override_key(data: dict[str, Any], parts: list[str], key: str) -> None:
    def unknown() -> ProfileError:
        return ProfileError(f"--set {key}: unknown key")

    head = parts[0]
    if len(parts) == 1:
        if head not in TOP_KEYS or head == "extends":
            raise unknown()
        return
    if head in SECTIONS:
        if len(parts) != 2 or parts[1] not in SECTIONS[head]:
            raise unknown()
        return
    if head == "tests":
        tests = data.get("tests", {})
        if len(parts) < 3 or parts[1] not in tests:
            raise ProfileError(
                f"--set {key}: unknown test {parts[1] if len(parts) > 1 else ''!r} "
                f"(tests: {', '.join(tests)})"
            )
        rest = parts[2:]
        if rest[0] in ("workload", "rounds"):
            if len(rest) != 2 or rest[1] not in SECTIONS[rest[0]]:
                raise unknown()
        elif len(rest) != 1 or rest[0] not in TEST_SCHEMA:
            raise unknown()
        return
    raise unknown()


def load(name_or_path: str, overrides: Iterable[str] = ()) -> Profile:
    """Load, merge, override and validate a profile."""
    overrides = list(overrides)
    try:
        keys = [parse_override(o)[0] for o in overrides]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # never "the last one wins"
            raise ProfileError(f"--set {twice[0]} given more than once")
        data, path = load_raw(name_or_path)
        data = apply_overrides(data, overrides)
        return build(data, str(path), set(keys))
    except RecursionError:
        raise ProfileError(
            f"profile {name_or_path}: nested or extended too deeply to be a profile"
        ) from None


def build(data: dict[str, Any], source: str, overridden: set[str] | None = None) -> Profile:
    """Validate merged profile data into a :class:`Profile`.

    Errors about keys in ``overridden`` name the ``--set`` option, others the file.
    """
    overridden = overridden or set()

    def err(key: str, why: str) -> ProfileError:
        if key in overridden:
            return ProfileError(f"--set {key}: {why}")
        return ProfileError(f"{source}: key '{key}': {why}")

    for key in data:
        if key not in TOP_KEYS and key not in SECTIONS and key != "tests":
            raise err(key, "unknown key")
    for key, conv in TOP_KEYS.items():
        if key in data:
            try:
                conv(data[key])
            except ValueError as exc:
                raise err(key, str(exc)) from None

    def section(
        name: str,
        table: Any,
        schema: dict[str, tuple[Conv, Any]],
        defaults: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise err(name, "expected a table")
        out = dict(defaults) if defaults else {k: d for k, (_, d) in schema.items()}
        for key, value in table.items():
            if key not in schema:
                raise err(f"{name}.{key}", "unknown key")
            try:
                out[key] = schema[key][0](value)
            except ValueError as exc:
                raise err(f"{name}.{key}", str(exc)) from None
        return out

    wl = section("workload", data.get("workload"), WORKLOAD_SCHEMA)
    _pattern_defaults("workload", wl, data.get("workload") or {}, err)
    rd = section("rounds", data.get("rounds"), ROUNDS_SCHEMA)
    pg = section("purge", data.get("purge"), PURGE_SCHEMA)
    pc = section("precondition", data.get("precondition"), PRECONDITION_SCHEMA)
    rp = section("report", data.get("report"), REPORT_SCHEMA)
    ac = section("acceptance", data.get("acceptance"), ACCEPTANCE_SCHEMA)
    vol = section("volume", data.get("volume"), VOLUME_SCHEMA)
    scope = data.get("scope", "device")
    if rd["window"] > rd["max"]:
        raise err("rounds.window", f"window {rd['window']} exceeds rounds.max {rd['max']}")

    tests_raw = data.get("tests", {})
    if not isinstance(tests_raw, dict):
        raise err("tests", "expected tables [tests.NAME]")
    tests: list[TestSpec] = []
    for tname, traw in tests_raw.items():
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", tname):
            raise err(f"tests.{tname}", "test names use lower-case letters, digits, - and _")
        if not isinstance(traw, dict):
            raise err(f"tests.{tname}", "expected a table")
        plain = {k: v for k, v in traw.items() if k not in ("workload", "rounds")}
        t = section(f"tests.{tname}", plain, TEST_SCHEMA)
        if not t["enabled"]:
            continue
        twl = section(f"tests.{tname}.workload", traw.get("workload"), WORKLOAD_SCHEMA, wl)
        if twl["write_cache"] != wl["write_cache"]:
            raise err(
                f"tests.{tname}.workload.write_cache",
                "the write cache is set once for the whole run: set workload.write_cache",
            )
        trd = section(f"tests.{tname}.rounds", traw.get("rounds"), ROUNDS_SCHEMA, rd)
        own = traw.get("workload")
        _pattern_defaults(f"tests.{tname}.workload", twl, own if isinstance(own, dict) else {}, err)
        _procedure_defaults(tname, t, err)
        _sweep_defaults(scope, tname, t, twl, err)
        _copy_defaults(scope, tname, t, twl, err)
        _vfile_defaults(scope, tname, t, twl, traw, err)
        _cache_defaults(tname, t, twl, err)
        for req in ("mixes", "block_sizes"):
            if t[req] is None:
                raise err(f"tests.{tname}.{req}", "missing")
        if trd["window"] > trd["max"]:
            raise err(f"tests.{tname}.rounds.window", "window exceeds rounds.max")
        tracking: tuple[Tracking, ...] = t["tracking"]
        for tr in tracking:
            if tr.bs not in t["block_sizes"] or tr.mix not in t["mixes"]:
                raise err(
                    f"tests.{tname}.tracking",
                    f"{tr.label!r} is not a point of the test (block sizes x mixes)",
                )
        if t["kind"] == "steady" and not tracking and not t["procedure"]:
            raise err(f"tests.{tname}.tracking", "a steady-state test needs tracking variables")
        _check_scope(scope, tname, t, err)
        _check_repeat_until(tname, t, err)
        tests.append(
            TestSpec(
                name=tname,
                title=t["title"] or tname.replace("-", " ").replace("_", " ").title(),
                kind=t["kind"],
                pattern=t["pattern"],
                mixes=t["mixes"],
                block_sizes=t["block_sizes"],
                point_runtime=t["point_runtime"],
                purge=t["purge"],
                precondition=t["precondition"],
                precondition_bs=t["precondition_bs"],
                split_block_sizes=t["split_block_sizes"],
                tracking=tracking,
                workload=Workload(**twl),
                rounds=Rounds(**trd),
                percentiles=tuple(sorted(t["percentiles"])),
                histogram=t["histogram"],
                repeat=t["repeat"],
                stop_written_multiple=t["stop_written_multiple"],
                max_duration=t["max_duration"],
                description=t["description"],
                file_size=t["file_size"],
                fsync=t["fsync"],
                end_fsync=t["end_fsync"],
                response_histogram=t["response_histogram"],
                **{k: t[k] for k in PROCEDURE_KEYS},
                **{k: t[k] for k in SWEEP_KEYS},
                **{k: t[k] for k in COPY_KEYS},
                repeat_until=t["repeat_until"],
                repeat_max=t["repeat_max"],
                **{k: t[k] for k in CACHE_KEYS + VFILE_KEYS},
            )
        )
    if not tests:
        raise err("tests", "the profile defines no enabled test")
    names = {t.name for t in tests}
    for spec in tests:
        if spec.split_block_sizes:
            names.update(f"{spec.name}-{format_size(bs)}" for bs in spec.block_sizes)
    for c in ac["criteria"]:
        if c.test not in names:
            raise err(
                "acceptance.criteria", f"no test {c.test!r} (tests: {', '.join(sorted(names))})"
            )
        if c.is_figure:
            _check_figure(c, next((t for t in tests if t.name == c.test), None), err)
    name = data.get("name") or Path(source).stem
    # recorded even when inherited or left out, so that a stored run says which variant
    # it claimed (runs stored before the key existed lack it: tkbench.analysis.pts)
    variant = data.get("pts_variant", "none")
    data = {**data, "pts_variant": variant}
    return Profile(
        name=name,
        description=data.get("description", ""),
        source=source,
        workload=Workload(**wl),
        rounds=Rounds(**rd),
        purge=PurgeSpec(**pg),
        precondition=PreconditionSpec(**pc),
        report=ReportSpec(**rp),
        tests=tuple(tests),
        acceptance=Acceptance(**ac),
        resolved=data,
        scope=scope,
        volume=VolumeSpec(**vol),
        pts_variant=None if variant == "none" else variant,
    )


PROCEDURE_KEYS = (
    "procedure",
    "intervals",
    "tracking_interval",
    "threads",
    "iodepths",
    "bssplit",
    "zones",
    "prewrite",
    "wait_states",
    "bursts",
    "burst",
    "baseline",
    "groups",
    "sample",
    "response_ceiling",
    "operating_prewrite",
    "operating_runtime",
)


def _check_figure(
    c: Criterion, spec: TestSpec | None, err: Callable[[str, str], ProfileError]
) -> None:
    """A volume figure's criterion names a figure its test will have."""
    from .analysis.volfigures import figure_names

    known = figure_names(spec) if spec is not None else None
    if known is None:
        raise err(
            "acceptance.criteria",
            f"{c.label}: test {c.test!r} has no volume figures (only a bulk-I/O sweep, a "
            "copy test and a virtual-file test have; give a point: TEST METRIC BS R/W OP VALUE)",
        )
    if c.metric not in known:
        raise err(
            "acceptance.criteria",
            f"{c.label}: test {c.test!r} has no figure {c.metric!r} "
            f"(it has: {', '.join(sorted(known))})",
        )


SWEEP_KEYS = ("modes", "buffer_counts", "max_buffer_space")
COPY_KEYS = ("sets", "data_patterns", "copy_buffer", "verify")
# drop_caches: a cold test's (tkbench.cache) and a copy test's (tkbench.kinds.copy)
CACHE_KEYS = ("cache", "drop_caches", "sync")
VFILE_KEYS = ("nodes", "node_size", "operations", "thread_counts", "caches")
# the keys each procedure needs (docs/profiles.md, "Tests of several stages")
_NEEDS = {
    "hir": ("wait_states",),
    "xsr": ("groups",),
    "cbw": ("bssplit", "threads", "iodepths"),
    "dirth": ("threads", "iodepths"),
}


def _procedure_defaults(
    tname: str, t: dict[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """Check a test of several stages and fill in what its procedure implies
    (the block sizes of XSR's groups, CBW's composite block size)."""
    if t["bssplit"]:
        total = math.fsum(s.pct for s in t["bssplit"])
        if abs(total - 100.0) > 0.01:
            raise err(f"tests.{tname}.bssplit", f"the shares add up to {total:g} %, not 100 %")
    if t["zones"]:
        for what, total in (
            ("accesses", math.fsum(z.pct for z in t["zones"])),
            ("ranges", math.fsum(z.value for z in t["zones"])),
        ):
            if abs(total - 100.0) > 0.01:
                raise err(f"tests.{tname}.zones", f"the {what} add up to {total:g} %, not 100 %")
    preset = WSAT_WORKLOADS.get(t["wsat_workload"])
    if preset is not None:  # Write Saturation's optional workloads (PTS 2.0)
        if t["kind"] != "saturation":
            raise err(f"tests.{tname}.wsat_workload", "only a saturation test has these")
        t.update(preset)
        t["tracking"] = (Tracking.parse(f"iops {preset['track']} {preset['mixes'][0].label}"),)
        del t["track"]
    proc = t["procedure"]
    if not proc:
        if t["bssplit"]:  # a block-size mix: one composite point per mix
            t["block_sizes"] = (COMPOSITE,)
        return
    for key in _NEEDS[proc]:
        if not t[key]:
            raise err(f"tests.{tname}.{key}", f"a {proc} test needs {key}")
    if proc == "xsr":
        t["block_sizes"] = tuple(dict.fromkeys(g.bs for g in t["groups"]))
        t["mixes"] = t["mixes"] or (Mix(0),)
    if proc == "cbw":
        t["block_sizes"] = (COMPOSITE,)
    for key in ("mixes", "block_sizes"):
        if proc != "xsr" and t[key] is not None and len(t[key]) != 1:
            raise err(f"tests.{tname}.{key}", f"a {proc} test has exactly one")
    if t["precondition"] and proc in ("hir", "xsr"):
        raise err(
            f"tests.{tname}.precondition",
            f"a {proc} test has no workload-independent preconditioning: set precondition = false",
        )


def _sweep_defaults(
    scope: str,
    tname: str,
    t: dict[str, Any],
    wl: Mapping[str, Any],
    err: Callable[[str, str], ProfileError],
) -> None:
    """A bulk-I/O sweep (``modes``): its buffer sizes become the test's block sizes and
    its modes its mixes; it needs a volume's shared test file and a sequential pattern."""
    sweep_keys = ("buffer_sizes", "buffer_counts")
    if not t["modes"]:
        for key in sweep_keys:
            if t[key]:
                raise err(f"tests.{tname}.{key}", "belongs to a bulk-I/O sweep: set modes too")
        return
    if scope != "volume":
        raise err(
            f"tests.{tname}.modes", 'a bulk-I/O sweep is a volume benchmark (scope = "volume")'
        )
    if t["procedure"] or t["bssplit"] or t["zones"]:
        raise err(f"tests.{tname}.modes", "a bulk-I/O sweep has no procedure, bssplit or zones")
    for key in sweep_keys:
        if not t[key]:
            raise err(f"tests.{tname}.{key}", "a bulk-I/O sweep needs it")
    for key in ("block_sizes", "mixes"):
        if t[key] is not None:
            raise err(
                f"tests.{tname}.{key}", "a bulk-I/O sweep sets it from buffer_sizes and modes"
            )
    if t["pattern"] != "sequential":
        raise err(f"tests.{tname}.pattern", "a bulk-I/O sweep reads and writes front to back")
    if wl["numjobs"] != 1:
        raise err(f"tests.{tname}.workload.numjobs", "a bulk-I/O sweep runs one job (numjobs = 1)")
    t["block_sizes"] = t["buffer_sizes"]
    reads = [m.endswith("-read") for m in t["modes"]]
    t["mixes"] = tuple(Mix(r) for r in (100, 0) if (r == 100) in reads)
    if min(t["buffer_sizes"]) * min(t["buffer_counts"]) > t["max_buffer_space"]:
        raise err(
            f"tests.{tname}.max_buffer_space",
            f"{format_size(t['max_buffer_space'])} skips every buffer size x count",
        )


def _copy_defaults(
    scope: str,
    tname: str,
    t: dict[str, Any],
    wl: dict[str, Any],
    err: Callable[[str, str], ProfileError],
) -> None:
    """A copy test (``kind = "copy"``): its file sets and data patterns; its one point
    per set x pattern reads and writes ``copy_buffer`` bytes at a time, one file after
    another (block size: the buffer; mix: 50/50, every byte read once and written once)."""
    keys = ("sets", "data_patterns")
    if t["kind"] != "copy":
        for key in keys:
            if t[key]:
                raise err(f"tests.{tname}.{key}", 'belongs to a copy test (kind = "copy")')
        return
    if scope != "volume":
        raise err(f"tests.{tname}.kind", 'a copy test is a volume benchmark (scope = "volume")')
    if not t["sets"]:
        raise err(f"tests.{tname}.sets", "a copy test needs its file sets")
    kinds = [s.kind for s in t["sets"]]
    if len(set(kinds)) != len(kinds):
        raise err(f"tests.{tname}.sets", "each kind of file set at most once")
    for key in ("block_sizes", "mixes", "file_size", "modes", "procedure", "bssplit", "zones"):
        if t[key]:
            raise err(f"tests.{tname}.{key}", "does not apply to a copy test")
    t["data_patterns"] = t["data_patterns"] or ("zero", "random")
    t["block_sizes"] = (t["copy_buffer"],)
    t["mixes"] = (Mix(50),)
    t["pattern"] = "sequential"
    # one file at a time through one buffer, through the page cache
    wl.update(numjobs=1, iodepth=1, direct=False)


def _check_repeat_until(
    tname: str, t: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """``repeat_until`` repeats a fixed test's runs (not a sweep's or a stage's) between
    ``max(repeat, 2)`` and ``repeat_max`` times."""
    if not t["repeat_until"]:
        return
    key = f"tests.{tname}.repeat_until"
    if t["kind"] != "fixed":
        raise err(key, "applies to tests of kind fixed only")
    if t["procedure"] or t["modes"]:
        raise err(key, "applies to plain fixed tests, not to a procedure or a bulk-I/O sweep")
    least = max(t["repeat"], 2)
    if t["repeat_max"] < least:
        raise err(
            f"tests.{tname}.repeat_max",
            f"{t['repeat_max']} is less than the least number of runs, {least} "
            "(repeat, and at least 2 to have a deviation)",
        )


def _check_scope(
    scope: str, tname: str, t: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """A volume profile touches only its own files (no purge, no preconditioning, a
    test file per job); a device profile has no test files.  Mixing is refused."""
    if scope == "volume":
        for key in ("purge", "precondition"):
            if t[key]:
                raise err(
                    f"tests.{tname}.{key}",
                    f"a volume benchmark never purges or preconditions: set {key} = false",
                )
        if t["kind"] not in ("fixed", "copy"):
            raise err(f"tests.{tname}.kind", "a volume benchmark's tests are of kind fixed or copy")
        if not t["file_size"] and t["kind"] != "copy":
            raise err(f"tests.{tname}.file_size", "a volume benchmark's test needs a file_size")
    elif t["file_size"]:
        raise err(
            f"tests.{tname}.file_size",
            'test files belong to volume profiles (scope = "volume"); a device test '
            "addresses the ActiveRange",
        )


def _pattern_defaults(
    where: str,
    wl: dict[str, Any],
    own: Mapping[str, Any],
    err: Callable[[str, str], ProfileError],
) -> None:
    """``compress_percentage`` belongs to the compressible pattern (50 when not given);
    a test that chooses another pattern drops the percentage it inherited."""
    given = "compress_percentage" in own
    if wl["data_pattern"] == "compressible":
        wl["compress_percentage"] = wl["compress_percentage"] or 50
    elif given:
        raise err(f"{where}.compress_percentage", 'applies only to data_pattern = "compressible"')
    else:
        wl["compress_percentage"] = 0


def _vfile_defaults(
    scope: str,
    tname: str,
    t: dict[str, Any],
    wl: dict[str, Any],
    raw: Mapping[str, Any],
    err: Callable[[str, str], ProfileError],
) -> None:
    """A virtual-file test (``nodes``): one database file of nodes x node size, its
    pages read and written by every operation x thread count x cache state; the file
    size, block size and mixes follow from its keys."""
    vfile_keys = ("node_size", "page_size", "operations", "thread_counts", "caches")
    if not t["nodes"]:
        for key in vfile_keys:
            if key in raw:
                raise err(f"tests.{tname}.{key}", "belongs to a virtual-file test: set nodes too")
        t["operations"] = t["thread_counts"] = t["caches"] = ()
        return
    if scope != "volume":
        raise err(
            f"tests.{tname}.nodes", 'a virtual-file test is a volume benchmark (scope = "volume")'
        )
    if t["procedure"] or t["bssplit"] or t["zones"] or t["modes"] or t["kind"] == "copy":
        raise err(
            f"tests.{tname}.nodes",
            "a virtual-file test has no procedure, bssplit, zones or modes and is no copy test",
        )
    for key in ("block_sizes", "mixes", "file_size", "cache"):
        if key in raw:
            raise err(
                f"tests.{tname}.{key}",
                "a virtual-file test sets it from nodes, node_size, page_size, operations "
                "and caches",
            )
    size = t["nodes"] * t["node_size"]
    need = t["page_size"] * max(t["thread_counts"])
    if size < need:
        raise err(
            f"tests.{tname}.nodes",
            f"{t['nodes']} x {format_size(t['node_size'])} = {format_size(size)} is smaller "
            f"than a page ({format_size(t['page_size'])}) for each of "
            f"{max(t['thread_counts'])} threads",
        )
    t["file_size"] = size
    t["block_sizes"] = (t["page_size"],)
    wl["numjobs"] = max(t["thread_counts"])  # the most threads at once (each point its own)
    reads = [op.endswith("-read") for op in t["operations"]]
    t["mixes"] = tuple(Mix(r) for r in (100, 0) if (r == 100) in reads)


def _cache_defaults(
    tname: str, t: dict[str, Any], wl: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """A warm cache needs the page cache (buffered I/O); ``drop_caches`` makes a cold
    cache colder and means nothing otherwise."""
    states = t["caches"] or (t["cache"],)
    key = "caches" if t["caches"] else "cache"
    if t["kind"] == "copy":
        if t["cache"] != "as-is":  # its sources are cold: tkbench.kinds.copy
            raise err(f"tests.{tname}.cache", "a copy test does not take a cache state")
        return  # its drop_caches is its own
    if t["cache"] != "as-is" and (t["procedure"] or t["modes"]):
        raise err(
            f"tests.{tname}.cache",
            "a bulk-I/O sweep is always cold"
            if t["modes"]
            else "a test of several stages does not take a cache state",
        )
    if "warm" in states and wl["direct"]:
        raise err(
            f"tests.{tname}.{key}",
            "a warm cache needs buffered I/O: set workload.direct = false (O_DIRECT bypasses "
            "the page cache)",
        )
    if t["drop_caches"] and "cold" not in states:
        raise err(f"tests.{tname}.drop_caches", 'applies only to a cold cache (cache = "cold")')
