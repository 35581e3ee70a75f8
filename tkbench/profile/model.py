"""A profile as frozen dataclasses: the values of its keys (mixes, tracking variables,
shares, groups, file sets, criteria) and the profile, its sections and its tests,
with every default resolved."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tkbench import vocab
from tkbench.device.purge import METHODS as _DEVICE_METHODS
from tkbench.profile.convert import DAY, _block_size, _duration, _size
from tkbench.units import COMPOSITE, format_size, parse_size, size_label
from tkbench.vocab import metric

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
    (tkbench.kinds.figures), e.g. ``sweep best_write_mb_s >= 500``, ``copy
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


# a volume benchmark's figure in a criterion (tkbench.kinds.figures: the same names)
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


class FamilySpec:
    """The keys of a profile's test that belong to its type alone (a dataclass of
    :mod:`tkbench.kinds`: ``SweepSpec``, ``CopySpec``, ``VfileSpec``, ``StagedSpec``)."""


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

    # a block-size mix (fio bssplit) and LBA zones of the random accesses (fio zoned
    # distribution): a basic test's composite point, a stage's stimulus
    bssplit: tuple[Share, ...] = ()
    zones: tuple[Share, ...] = ()

    # a test type's own keys (tkbench.kinds: a bulk-I/O sweep's, a copy test's, a
    # virtual file's, a test of several stages'); None for the basic tests
    family: FamilySpec | None = None
    # also drop the kernel's caches (root): a copy test's before each copy, a cold
    # test's before each point
    drop_caches: bool = False
    # a fixed test repeated until its runs agree (docs/volume.md, "Repeatability"): stop
    # once every point's mean absolute deviation is within this percentage of its mean,
    # after at least max(repeat, 2) and at most repeat_max runs (0.0: exactly repeat runs)
    repeat_until: float = 0.0
    repeat_max: int = 10

    # the page cache (tkbench.cache): "as-is" (not controlled), "cold", "warm"
    cache: str = "as-is"
    sync: bool = False  # fio sync=1: every write opens O_SYNC (write-through)


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
