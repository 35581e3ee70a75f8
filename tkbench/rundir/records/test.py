"""A test's records: its plan (``test.json``), its phases (purge, preconditioning),
its result (``result.json``) and the diagnostics of a failed fio run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tkbench.rundir.records.base import Context, Record
from tkbench.rundir.records.round import OMIT, FioCall, PlannedPoint

POSITIVE = {"minimum": 1}
NOT_NEGATIVE = {"minimum": 0}


@dataclass(frozen=True)
class Limits:
    """The steady-state rule: at most ``max`` rounds, a window of ``window`` rounds,
    the excursion limits as fractions of the window mean."""

    max: int = field(default=25, metadata=POSITIVE)
    window: int = field(default=5, metadata=POSITIVE)
    max_excursion: float = field(default=0.2, metadata=NOT_NEGATIVE)
    max_slope_excursion: float = field(default=0.1, metadata=NOT_NEGATIVE)


@dataclass(frozen=True)
class Workload:
    numjobs: int = field(default=1, metadata=POSITIVE)
    iodepth: int = field(default=1, metadata=POSITIVE)
    data_pattern: str = "random"
    direct: bool = True
    ioengine: str = "auto"  # as the profile said it; see TestPlan.ioengine_used
    fsync: int = 0  # fio fsync: a synchronous write after every N writes (0: none)
    end_fsync: bool = False  # fio end_fsync: written data made durable before the job ends
    # left out while they have their defaults (every run before they existed)
    sync: bool = field(default=False, metadata=OMIT)  # fio sync=1: writes O_SYNC
    compress_percentage: int = field(default=0, metadata=OMIT)  # data_pattern compressible
    drop_caches: bool = field(default=False, metadata=OMIT)  # cold points: drop_caches too


@dataclass(frozen=True)
class OperatingPoint:
    """A load chosen from a demand-intensity stage's measurement window (MaxIOPS,
    MidIOPS, MinIOPS) and what it measured there."""

    name: str  # max | mid | min
    numjobs: int = field(default=1, metadata=POSITIVE)
    iodepth: int = field(default=1, metadata=POSITIVE)
    iops: float = 0.0  # window mean at the choice
    lat_mean_ns: float = 0.0
    why: str = ""  # the rule that chose it, in words


@dataclass(frozen=True)
class PreconditionPlan:
    """Workload-independent preconditioning as planned."""

    total_bytes: float = 0.0
    bs: int = field(default=131072, metadata=POSITIVE)
    numjobs: int = 1
    iodepth: int = 1
    max_duration: float = 0.0  # seconds; 0 = until total_bytes are written


def _engine_for(target_kind: str, ioengine: str) -> str:
    # the rule as tkbench applied it before it recorded the engine (kept here, frozen,
    # so that a later change of the rule cannot change what an old run says it used)
    if target_kind == "nbd":
        return "nbd"
    if ioengine == "auto":
        return "libaio" if target_kind in ("file", "block") else "auto"
    return ioengine


@dataclass(frozen=True)
class TestPlan(Record):
    """``test.json``: the planned test, written when it starts.

    Format history: 1 (no ``schema`` field) — ``ioengine_used`` missing in runs
    before it was recorded (derived on upgrade as the engine derived it then:
    ``auto`` is nbd for NBD targets, libaio otherwise); 2 — ``schema`` written,
    ``ioengine_used`` always present; 3 — ``workload.fsync`` and
    ``workload.end_fsync`` (volume benchmarks; absent before: 0 and false).  Within
    version 3, written only when they say something (so no version step: older
    readers lose nothing they knew): ``workload.sync``, ``workload.compress_percentage``
    and ``workload.drop_caches``, each point's ``cache`` (tkbench.cache) and
    ``node_size`` (a virtual-file test); a replay test's ``capture``, its workload
    file's ``capture_sha256`` and ``capture_size``, and its points' ``random_pct``,
    ``iolog`` and ``replay``."""

    VERSION = 3
    __test__ = False  # not a pytest test class, whatever its name

    kind: str  # steady | saturation | fixed (tkbench.analysis.stoprules)
    points: tuple[PlannedPoint, ...]
    name: str = ""
    spec: str = ""  # the profile's test section it came from
    title: str = ""
    purge: bool = True
    precondition: PreconditionPlan | None = None
    tracking: tuple[str, ...] = ()  # tracking variable labels, "iops 4k 0/100"
    active_bytes: int = 0
    active_range: float = 100.0
    workload: Workload = field(default_factory=Workload)
    point_runtime: float = 0.0
    rounds: Limits = field(default_factory=Limits)
    repeat: int = 1
    stop_written_multiple: float = 4.0
    max_duration: float = 86400.0
    percentiles: tuple[float, ...] = ()
    histogram: bool = False
    notes: tuple[str, ...] = ()
    ioengine_used: str = ""  # the fio engine the test ran with ("auto" resolved)
    # a stage of a test of several stages (tkbench.kinds.staged; left out otherwise):
    # the procedure (its type's name in tkbench.kinds.staged) and the stage ("precondition", ...)
    procedure: str = field(default="", metadata=OMIT)
    stage: str = field(default="", metadata=OMIT)
    sample: float = field(default=0.0, metadata=OMIT)  # seconds per per-interval sample
    response_ceiling: float = field(default=0.0, metadata=OMIT)  # seconds (MaxIOPS)
    # the operating points chosen from the demand-intensity stage before this one ran
    operating: tuple[OperatingPoint, ...] = field(default=(), metadata=OMIT)
    # a fixed test repeated until its runs agree (left out otherwise, so that files of
    # tests without it read as before): the limit in % of the mean (0: exactly
    # ``repeat`` runs) and the most runs (tkbench.analysis.repeat.until_standing)
    repeat_until: float = field(default=0.0, metadata=OMIT)
    repeat_max: int = field(default=0, metadata=OMIT)
    # a virtual-file test (tkbench.kinds.vfile): bytes per node, for its nodes per second
    node_size: int = field(default=0, metadata=OMIT)
    # a stage run in parts: the parts whose fio stalled and which ran again (after the
    # part before them as a lead-in: tkbench.engine.parts), each once
    stalled_parts: tuple[int, ...] = field(default=(), metadata=OMIT)
    # a replay test (tkbench.kinds.replay): the captured workload's reduction (the
    # JSON of ``tkbench capture show --json`` without its schema)
    capture: Mapping[str, Any] = field(default_factory=dict, metadata=OMIT)
    # ... and the SHA-256 (hex) and size of its workload file when the test was planned
    # (absent in runs before they were pinned: a resume then cannot prove the file)
    capture_sha256: str = field(default="", metadata=OMIT)
    capture_size: int = field(default=0, metadata=OMIT)

    @property
    def block_sizes(self) -> list[int]:
        """Block sizes in the order of the plan (PTS order: largest first)."""
        return list(dict.fromkeys(p.bs for p in self.points))

    @property
    def mixes(self) -> list[int]:
        """Read percentages in the order of the plan (100/0 first)."""
        return list(dict.fromkeys(p.read_pct for p in self.points))


def _plan_v1(data: dict[str, Any], context: Context) -> dict[str, Any]:
    if not isinstance(data.get("ioengine_used"), str):
        workload = data.get("workload")
        wanted = workload.get("ioengine", "auto") if isinstance(workload, dict) else "auto"
        data["ioengine_used"] = _engine_for(context.target_kind, str(wanted))
    return data


def _plan_v2(data: dict[str, Any], context: Context) -> dict[str, Any]:
    return data  # the new workload fields default to what older runs did: no fsync


TestPlan.UPGRADES = {1: _plan_v1, 2: _plan_v2}


@dataclass(frozen=True)
class Purge(Record):
    """``purge.json`` (and ``purge-failed.json``, which has ``error``): what the
    purge ran, how long it took, whether it is PTS-compliant.

    Format history: 1 (no ``schema``); 2 — ``schema`` written."""

    VERSION = 2

    method: str = ""  # the method that ran; "" if none ran to completion
    pts_compliant: bool = False
    device: str = ""
    interface: str = ""
    requested_method: str = ""
    commands: tuple[Mapping[str, Any], ...] = ()  # each command, its output and status
    seconds: float = 0.0
    started_at: str = ""
    notes: tuple[str, ...] = ()
    started: float = 0.0
    ended: float = 0.0
    segment: int = 1
    error: str | None = None  # purge-failed.json: why


@dataclass(frozen=True)
class Precondition(Record):
    """``precondition.json`` (``precondition-sN.json`` for segment N): the
    workload-independent preconditioning as planned and as it ran.

    Format history: 1 (no ``schema``) — ``cut_short`` missing in early runs
    (derived on upgrade: fewer bytes written than planned); 2 — ``schema`` written,
    ``cut_short`` always present."""

    VERSION = 2

    total_bytes: float = 0.0
    bs: int = 131072
    numjobs: int = 1
    iodepth: int = 1
    max_duration: float = 0.0
    written_bytes: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    seconds: float = 0.0
    segment: int = 1
    fio: FioCall = field(default_factory=FioCall)
    cut_short: bool = False  # precondition.max_duration ended it before total_bytes
    notes: tuple[str, ...] = ()


def _precondition_v1(data: dict[str, Any], context: Context) -> dict[str, Any]:
    if "cut_short" not in data:
        written, total = data.get("written_bytes"), data.get("total_bytes")
        if isinstance(written, int | float) and isinstance(total, int | float):
            data["cut_short"] = written < total
    return data


Precondition.UPGRADES = {1: _precondition_v1}
Purge.UPGRADES = {1: lambda data, context: data}


@dataclass(frozen=True)
class VerdictRecord:
    """A tracking variable's steady-state verdict as ``result.json`` states it
    (:class:`tkbench.analysis.steady.Verdict` computes it)."""

    reached: bool = False
    window: int = 5
    rounds: tuple[int, ...] = ()
    values: tuple[float, ...] = ()
    mean: float = 0.0
    excursion: float = 0.0
    max_excursion: float = 0.2
    slope: float = 0.0
    intercept: float = 0.0
    slope_excursion: float = 0.0
    max_slope_excursion: float = 0.1
    reason: str = ""
    excursion_ratio: float | None = None
    slope_excursion_ratio: float | None = None


@dataclass(frozen=True)
class Result(Record):
    """``result.json``: a finished test's verdict, written after its last round.

    Format history: 1 (no ``schema``) — ``stop_reason`` missing in runs before it
    was recorded (none is shown); 2 — ``schema`` written, ``stop_reason`` always
    present (null for those upgraded from 1)."""

    VERSION = 2

    test: str = ""
    kind: str = "steady"
    status: str = "complete"
    steady_state: bool | None = None  # None: a kind without a steady-state rule
    rounds: int = 0
    segment: int = 1
    window: tuple[int, ...] = ()
    verdicts: Mapping[str, VerdictRecord] = field(default_factory=dict)
    total_written_bytes: float = 0.0
    ended: float = 0.0
    summary: str = ""
    stop_reason: str | None = None  # which limit or rule ended the test


Result.UPGRADES = {1: lambda data, context: data}


@dataclass(frozen=True)
class Failure(Record):
    """``failed/<name>.json``: the command and error of a fio run that failed (kept
    for the person fixing it; never read as data).

    Format history: 1 (no ``schema``); 2 — ``schema`` written."""

    VERSION = 2

    test: str
    error: str
    fio: FioCall = field(default_factory=FioCall)


def _failure_v1(data: dict[str, Any], context: Context) -> dict[str, Any]:
    # version 1 held fio's command and status at the top level
    call = {
        k: data.pop(k) for k in ("argv", "returncode", "seconds", "started", "stderr") if k in data
    }
    data.setdefault("fio", call)
    data.setdefault("test", "")
    data.setdefault("error", "")
    return data


Failure.UPGRADES = {1: _failure_v1}
