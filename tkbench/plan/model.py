"""The planning model: a planned test, its workload points, its preconditioning,
and what planning knows of a target.  :mod:`tkbench.plan.build` builds them from a
profile (:mod:`tkbench.kinds.staged` for tests of several stages); the engine runs
them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tkbench.analysis.stoprules import RoundSpec, kind_named
from tkbench.rundir.records import (
    Limits,
    OperatingPoint,
    PlannedPoint,
    PreconditionPlan,
    TestPlan,
    Workload,
)
from tkbench.units import format_size, size_label

if TYPE_CHECKING:  # the profile's model; planning needs no profile at run time
    from tkbench.profile.model import Mix, Profile, Share, TestSpec, Tracking


@dataclass(frozen=True)
class Point:
    """One fio workload point of a round."""

    index: int
    bs: int  # 0 (COMPOSITE): the block-size mix ``bssplit``
    mix: Mix
    pattern: str  # random | sequential
    numjobs: int
    iodepth: int
    runtime: float  # seconds
    role: str = ""  # see PlannedPoint.role
    bssplit: str = ""  # fio bssplit
    zones: str = ""  # fio random_distribution
    idle: float = 0.0  # seconds of host idle (fio thinktime) ...
    busy: float = 0.0  # ... after each this many seconds of I/O (thinktime_iotime)
    direct: bool | None = None  # the point's own O_DIRECT (None: the test's)
    fadvise: str = ""  # fio fadvise_hint ("": fio's default)
    file: str = ""  # fio filename: one test file shared by the test's points ("": one per job)
    tag: str = ""  # what sets the point apart from others of its block size and mix
    # a copy test's point (tkbench.kinds.copy): its file set, data pattern, files and bytes
    copy_set: str = ""
    data: str = ""
    files: int = 0
    size: int = 0
    cache: str = ""  # the page cache at its start: "cold", "warm" ("": as-is; tkbench.cache)
    # one pass: the point moves over its region once, every block once (random ones in a
    # random order), and ends then or at ``runtime``, whichever comes first
    once: bool = False
    # a replay test's (tkbench.kinds.replay): fio percentage_random per direction ("": all
    # random or all sequential by ``pattern``); a captured trace replayed from the fio
    # iolog of this name in fio's working directory, at its "captured" timing or "fast"
    random_pct: str = ""
    iolog: str = ""
    replay: str = ""

    @property
    def label(self) -> str:
        text = f"{size_label(self.bs)} {self.mix.label}"
        return f"{text} {self.tag}" if self.tag else text

    @property
    def job_name(self) -> str:
        bs = "mix" if self.bssplit else format_size(self.bs)
        return f"p{self.index:03d}_{bs}_{self.mix.read}-{100 - self.mix.read}"

    @property
    def rw(self) -> str:
        rand = self.pattern == "random"
        if self.mix.read == 100:
            return "randread" if rand else "read"
        if self.mix.read == 0:
            return "randwrite" if rand else "write"
        return "randrw" if rand else "rw"

    def record(self) -> PlannedPoint:
        return PlannedPoint(
            index=self.index,
            label=self.label,
            job=self.job_name,
            bs=self.bs,
            read_pct=self.mix.read,
            pattern=self.pattern,
            rw=self.rw,
            numjobs=self.numjobs,
            iodepth=self.iodepth,
            runtime=self.runtime,
            role=self.role,
            bssplit=self.bssplit,
            zones=self.zones,
            idle=self.idle,
            busy=self.busy,
            direct=self.direct,
            fadvise=self.fadvise,
            file=self.file,
            copy_set=self.copy_set,
            data=self.data,
            files=self.files,
            size=self.size,
            cache=self.cache,
            once=self.once,
            random_pct=self.random_pct,
            iolog=self.iolog,
            replay=self.replay,
        )


@dataclass(frozen=True)
class Precondition:
    """Workload-independent preconditioning: ``total_bytes`` (a multiple of the *user
    capacity*) of sequential writes confined to, and wrapping within, the ActiveRange."""

    total_bytes: int
    bs: int
    numjobs: int
    iodepth: int
    max_duration: float = 0.0  # seconds; 0 = until total_bytes are written

    def record(self) -> PreconditionPlan:
        return PreconditionPlan(
            max_duration=self.max_duration,
            total_bytes=self.total_bytes,
            bs=self.bs,
            numjobs=self.numjobs,
            iodepth=self.iodepth,
        )


@dataclass(frozen=True)
class PlannedTest:
    name: str  # unique in the plan, e.g. "throughput-1024k"
    spec: TestSpec
    title: str
    purge: bool
    precondition: Precondition | None
    points: tuple[Point, ...]  # one round
    tracking: tuple[Tracking, ...]
    active_bytes: int
    notes: tuple[str, ...] = ()
    # after the rounds: 4k random writes at the test's load with the full latency
    # histogram (the profile's response_histogram; None: no such phase)
    histogram_point: Point | None = None
    # a stage of a test of several stages (tkbench.kinds.staged)
    stage: str = ""
    # the stage whose measurement window chooses this stage's points when it starts
    # (tkbench.kinds.staged.common.operating_points); until then ``points`` are placeholders
    derive_from: str = ""
    operating: tuple[OperatingPoint, ...] = ()
    # seconds of work before the rounds that is no preconditioning (a copy test's
    # sources), for the estimate
    setup_seconds: float = 0.0
    # a virtual-file test (tkbench.kinds.vfile): bytes per node of its database file, which
    # fio lays out with data before the first point (0: no such file)
    node_size: int = 0
    # its points follow each other by fio's stonewall (tkbench.fio.jobfile.render_round;
    # its type's choice: a virtual-file test's)
    stonewall: bool = False
    # a stage of a test of several stages (tkbench.kinds.staged): its test's procedure;
    # seconds per sample of its per-interval logs (0: none); the highest mean response
    # time of MaxIOPS where its points are chosen from another stage (0: not chosen)
    procedure: str = ""
    sample: float = 0.0
    response_ceiling: float = 0.0
    # a replay test (tkbench.kinds.replay): the captured workload's reduction, as its
    # file holds it (the report's profile of the workload and the replay's reference)
    capture: Mapping[str, Any] = field(default_factory=dict)
    # ... and the SHA-256 and size of its file when the test was planned, which a resume
    # proves before it replays the file again ("": not pinned)
    capture_sha256: str = ""
    capture_size: int = 0

    @classmethod
    def on_own_files(
        cls,
        spec: TestSpec,
        points: tuple[Point, ...],
        active_bytes: int,
        notes: tuple[str, ...] = (),
        setup_seconds: float = 0.0,
        node_size: int = 0,
        stonewall: bool = False,
    ) -> PlannedTest:
        """A test of a volume benchmark built by its own planner (a bulk-I/O sweep, a
        virtual file, a copy test): on its own files, so no purge and no
        preconditioning, and no steady-state tracking."""
        return cls(
            name=spec.name,
            spec=spec,
            title=spec.title,
            purge=False,
            precondition=None,
            points=points,
            tracking=(),
            active_bytes=active_bytes,
            notes=notes,
            setup_seconds=setup_seconds,
            node_size=node_size,
            stonewall=stonewall,
        )

    @property
    def extra_seconds(self) -> float:
        """Seconds of phases before and after the rounds."""
        after = self.histogram_point.runtime if self.histogram_point is not None else 0.0
        return after + self.setup_seconds

    @property
    def in_parts(self) -> bool:
        """A stage of one long round of several points (hir-recovery, xsr, the
        operating points: hours to a day), which the engine runs one fio per point,
        back to back, each stored as it ends, so that an interruption loses at most
        a point of it (docs/resume.md)."""
        return (
            bool(self.stage)
            and self.spec.kind == "fixed"
            and self.spec.repeat == 1
            and len(self.points) > 1
        )

    def part(self, index: int) -> PlannedTest:
        """The test of its ``index``-th point alone (0-based): one part of it."""
        return replace(self, points=(self.points[index],))

    @property
    def round_seconds(self) -> float:
        return math.fsum(p.runtime for p in self.points)

    @property
    def min_rounds(self) -> int:
        return kind_named(self.spec.kind).round_bounds(self.round_spec)[0]

    @property
    def max_rounds(self) -> int:
        return kind_named(self.spec.kind).round_bounds(self.round_spec)[1]

    @property
    def round_spec(self) -> RoundSpec:
        return RoundSpec(
            window=self.spec.rounds.window,
            max_rounds=self.spec.rounds.max,
            repeat=self.spec.repeat,
            max_duration=self.spec.max_duration,
            round_seconds=self.round_seconds,
            max_excursion=self.spec.rounds.max_excursion,
            max_slope_excursion=self.spec.rounds.max_slope_excursion,
            stop_written_multiple=self.spec.stop_written_multiple,
            tracking=tuple(x.label for x in self.tracking),
            repeat_until=self.spec.repeat_until,
            repeat_max=self.spec.repeat_max,
        )

    def record(self, ioengine_used: str = "") -> TestPlan:
        """The test as ``test.json`` records it (with the fio engine the target
        resolved the profile's choice to)."""
        wl = self.spec.workload
        return TestPlan(
            name=self.name,
            spec=self.spec.name,
            title=self.title,
            kind=self.spec.kind,
            purge=self.purge,
            precondition=self.precondition.record() if self.precondition else None,
            points=tuple(p.record() for p in self.points),
            tracking=tuple(t.label for t in self.tracking),
            active_bytes=self.active_bytes,
            active_range=wl.active_range,
            workload=Workload(
                numjobs=wl.numjobs,
                iodepth=wl.iodepth,
                data_pattern=wl.data_pattern,
                direct=wl.direct,
                ioengine=wl.ioengine,
                fsync=self.spec.fsync,
                end_fsync=self.spec.end_fsync,
                sync=self.spec.sync,
                compress_percentage=wl.compress_percentage,
                drop_caches=self.spec.drop_caches,
            ),
            point_runtime=self.spec.point_runtime,
            rounds=Limits(
                max=self.spec.rounds.max,
                window=self.spec.rounds.window,
                max_excursion=self.spec.rounds.max_excursion,
                max_slope_excursion=self.spec.rounds.max_slope_excursion,
            ),
            repeat=self.spec.repeat,
            stop_written_multiple=self.spec.stop_written_multiple,
            max_duration=self.spec.max_duration,
            percentiles=tuple(self.spec.percentiles),
            histogram=self.spec.histogram,
            notes=tuple(self.notes),
            ioengine_used=ioengine_used,
            procedure=self.procedure,
            stage=self.stage,
            sample=self.sample,
            response_ceiling=self.response_ceiling,
            operating=self.operating,
            repeat_until=self.spec.repeat_until,
            repeat_max=self.spec.repeat_max if self.spec.repeat_until else 0,
            node_size=self.node_size,
            capture=self.capture,
            capture_sha256=self.capture_sha256,
            capture_size=self.capture_size,
        )


def precondition_bytes(capacity: int, multiple: float, unit: int) -> int:
    """Bytes of workload-independent preconditioning: ``multiple`` times the user
    capacity (PTS: "Write 2X User Capacity ... writing to the entire ActiveRange"),
    rounded up to whole ``unit`` (block size x jobs, so every job writes the same
    whole number of blocks)."""
    want = math.ceil(capacity * multiple)
    return -(-want // unit) * unit


def workload_independent(
    spec: TestSpec, profile: Profile, capacity: int, bs: int
) -> Precondition | None:
    """A test's workload-independent preconditioning (None: it has none); ``bs``: the
    test's block size, for ``precondition_bs = "match"``."""
    if not spec.precondition or profile.precondition.capacity_multiple <= 0:
        return None
    pbs = spec.precondition_bs
    if pbs is None or (pbs == 0 and not bs):
        pbs = profile.precondition.bs
    elif pbs == 0:
        pbs = bs
    return Precondition(
        total_bytes=precondition_bytes(
            capacity, profile.precondition.capacity_multiple, pbs * spec.workload.numjobs
        ),
        bs=pbs,
        numjobs=spec.workload.numjobs,
        iodepth=spec.workload.iodepth,
        max_duration=profile.precondition.max_duration,
    )


def bssplit_text(shares: Sequence[Share], sector: int) -> tuple[str, list[str]]:
    """fio's ``bssplit`` for ``shares``; sizes the device cannot address (below or
    not a multiple of its logical sector) are folded into the smallest size it
    can, with a note saying so."""
    if not shares:
        return "", []
    out: dict[int, float] = {}
    folded = []
    fits = sorted(int(s.value) for s in shares if int(s.value) % sector == 0)
    for s in shares:
        bs = int(s.value)
        if bs % sector:
            to = next((f for f in fits if f > bs), sector)
            folded.append(f"{format_size(bs)} ({s.pct:g} %)")
            bs = to
        out[bs] = out.get(bs, 0.0) + s.pct
    notes = []
    if folded:
        notes.append(
            f"block sizes {', '.join(folded)} folded into {format_size(min(out))}: the "
            f"device's logical sector is {sector} bytes"
        )
    return ":".join(f"{bs}/{pct:g}" for bs, pct in out.items()), notes


def zones_text(zones: Sequence[Share]) -> str:
    """fio's ``random_distribution`` for LBA zones (access % / range %)."""
    return "zoned:" + ":".join(f"{z.pct:g}/{z.value:g}" for z in zones)
