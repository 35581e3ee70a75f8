"""The PTS 2.0.2 tests beyond the basic four (Host Idle Recovery, Cross-Stimulus
Recovery, Composite Block Size Workload, Demand Intensity / Response Time
Histogram) as a reference table, and their stages judged against it (pure).

Where each value comes from is in docs/methodology.md, "The tests beyond the basic
four": the specification's text could not be read where tkbench was built, so
the table follows the issue that asked for the tests and two PTS 2.0
implementations; each value that no source quoting the text confirms says so
(``confirmed``), and a report or plan that departs from it says which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..records import TestPlan
from ..units import format_duration, format_size

K = 1024
GRID = (32, 16, 8, 6, 4, 2, 1)
COMPOSITE = (
    (512, 4),
    (1 * K, 1),
    (1536, 1),
    (2 * K, 1),
    (2560, 1),
    (3 * K, 1),
    (3584, 1),
    (4 * K, 67),
    (8 * K, 10),
    (16 * K, 7),
    (32 * K, 3),
    (64 * K, 3),
)
ZONES = "zoned:50/5:30/15:20/80"


@dataclass(frozen=True)
class StagedRequirement:
    procedure: str
    title: str
    intervals: int = 30  # preconditioning rounds: 30 one-minute intervals
    tracked: str = "last"  # the interval a preconditioning round's IOPS are read from
    load: tuple[int, int] | None = None  # preconditioning load; None: the variant's
    # host idle recovery
    wait_states: tuple[float, ...] = ()
    bursts: int = 0
    burst: float = 0.0
    baseline: float = 0.0
    # cross-stimulus recovery: (block size, pattern, seconds) in order; its load
    groups: tuple[tuple[int, str, float], ...] = ()
    # demand intensity
    grid: tuple[int, ...] = ()
    mix: int | None = None  # read % (None: the operator's choice)
    composite: bool = False
    prewrite: float = 0.0
    operating_prewrite: float = 0.0
    operating_runtime: float = 0.0
    ceiling: float = 0.0  # seconds
    wipc: bool = False  # workload-independent preconditioning before the first stage


HOUR = 3600.0
STAGED: dict[str, StagedRequirement] = {
    "hir": StagedRequirement(
        "hir",
        "Host Idle Recovery",
        tracked="last",
        wait_states=(5.0, 10.0, 15.0, 25.0, 50.0),
        bursts=360,
        burst=5.0,
        baseline=1800.0,
    ),
    "xsr": StagedRequirement(
        "xsr",
        "Cross-Stimulus Recovery",
        load=(1, 32),
        groups=(
            (1024 * K, "sequential", 8 * HOUR),
            (8 * K, "random", 6 * HOUR),
            (1024 * K, "sequential", 8 * HOUR),
        ),
    ),
    "cbw": StagedRequirement(
        "cbw",
        "Composite Block Size Workload",
        tracked="first",
        load=(32, 32),
        grid=GRID,
        mix=40,
        composite=True,
        prewrite=300.0,
        operating_prewrite=HOUR,
        operating_runtime=600.0,
        ceiling=0.005,
        wipc=True,
    ),
}

# DIRTH: CBW's phases with one block size and mix of the operator's choice
STAGED["dirth"] = replace(
    STAGED["cbw"],
    procedure="dirth",
    title="Demand Intensity / Response Time Histogram",
    mix=None,
    composite=False,
)

Add = Callable[[str, str, str], None]


def _load(t: int, q: int) -> str:
    return f"T{t}/Q{q}"


def _secs(values: Sequence[float]) -> str:
    return ", ".join(format_duration(v) for v in values) or "none"


def judge(add: Add, ref: StagedRequirement, variant_load: tuple[int, int], plan: TestPlan) -> None:
    """What ``plan`` (one stage's test.json) departs from in the reference."""
    pts = plan.points
    measured = [p for p in pts if p.measured]
    if plan.stage == "precondition":
        if ref.wipc != (plan.precondition is not None):
            add(
                "workload-independent preconditioning",
                "2x the user capacity of 128k sequential writes after the purge"
                if ref.wipc
                else "none: the stage starts from the purged drive",
                "none" if plan.precondition is None else "2x the user capacity",
            )
        load = ref.load or variant_load
        loads = {(p.numjobs, p.iodepth) for p in pts}
        if loads != {load}:
            add(
                "preconditioning load",
                _load(*load),
                ", ".join(_load(*x) for x in sorted(loads)),
            )
        if len(pts) != ref.intervals or {p.runtime for p in pts} != {60.0}:
            add(
                "preconditioning round",
                f"{ref.intervals} one-minute intervals",
                f"{len(pts)} interval(s) of {_secs(sorted({p.runtime for p in pts}))}",
            )
        tracked = [i for i, p in enumerate(pts) if not p.role]
        wanted = 0 if ref.tracked == "first" else len(pts) - 1
        if tracked != [wanted]:
            add(
                "tracking interval",
                f"the IOPS of each round's {ref.tracked} interval",
                f"interval {', '.join(str(i + 1) for i in tracked)}",
            )
        if pts and pts[0].read_pct != 0:
            add("preconditioning stimulus", "100 % writes", f"{pts[0].label}")
    elif plan.stage == "recovery":
        waits = tuple(p.idle for p in pts if p.idle > 0)
        if waits != ref.wait_states:
            add("wait states", _secs(ref.wait_states), _secs(waits))
        for p in pts:
            if p.idle > 0:
                n = round(p.runtime / (p.busy + p.idle))
                if n != ref.bursts or p.busy != ref.burst:
                    add(
                        f"wait state {format_duration(p.idle)}",
                        f"{ref.bursts} x ({format_duration(ref.burst)} of writes, then the idle)",
                        f"{n} x ({format_duration(p.busy)} of writes, then the idle)",
                    )
        base = sorted({p.runtime for p in pts if p.idle <= 0})
        if base != [ref.baseline]:
            add(
                "return to baseline",
                f"{format_duration(ref.baseline)} of continuous writes after each wait state",
                _secs(base) or "none",
            )
    elif plan.stage == "groups":
        have = tuple((p.bs, p.pattern, p.runtime) for p in pts)
        if have != ref.groups:

            def words(gs: Sequence[tuple[int, str, float]]) -> str:
                return ", then ".join(
                    f"{format_size(b)} {pat} for {format_duration(s)}" for b, pat, s in gs
                )

            add("access groups", words(ref.groups), words(have))
        if ref.load and {(p.numjobs, p.iodepth) for p in pts} != {ref.load}:
            add("outstanding I/O", _load(*ref.load), _load(pts[0].numjobs, pts[0].iodepth))
    elif plan.stage == "intensity":
        order = [(p.numjobs, p.iodepth) for p in measured]
        if order != [(t, q) for t in ref.grid for q in ref.grid]:
            add(
                "demand-intensity grid",
                "thread count 32, 16, 8, 6, 4, 2, 1 (outer) x queue depth 32 ... 1 (inner)",
                f"{len(order)} loads, thread counts "
                f"{', '.join(str(t) for t in dict.fromkeys(t for t, _ in order))} x queue depths "
                f"{', '.join(str(q) for q in dict.fromkeys(q for _, q in order))}",
            )
        pre = [p.runtime for p in pts if p.role == "prewrite"]
        if pre != [ref.prewrite]:
            add(
                "pre-write of each round",
                f"{format_duration(ref.prewrite)} of writes at T32/Q32",
                _secs(pre),
            )
        if {p.runtime for p in measured} != {60.0}:
            add("point duration", "1 minute per load", _secs(sorted({p.runtime for p in measured})))
    elif plan.stage == "operating":
        pre = sorted({p.runtime for p in pts if p.role == "prewrite"})
        run = sorted({p.runtime for p in measured})
        if pre != [ref.operating_prewrite] or run != [ref.operating_runtime]:
            add(
                "operating points",
                f"{format_duration(ref.operating_prewrite)} of writes, then "
                f"{format_duration(ref.operating_runtime)} measured, per point",
                f"{_secs(pre)} of writes, then {_secs(run)} measured",
            )
        if plan.response_ceiling and plan.response_ceiling != ref.ceiling:
            add(
                "MaxIOPS response-time ceiling",
                f"{ref.ceiling * 1e3:g} ms",
                f"{plan.response_ceiling * 1e3:g} ms",
            )
    if plan.stage in ("precondition", "intensity", "operating") and ref.grid:
        if ref.mix is not None and plan.stage != "precondition":
            mixes = sorted({p.read_pct for p in measured})
            if mixes != [ref.mix]:
                add(
                    "R/W mix",
                    f"{ref.mix}/{100 - ref.mix}",
                    ", ".join(f"{m}/{100 - m}" for m in mixes),
                )
        split = {p.bssplit for p in pts}
        want_split = ":".join(f"{b}/{pct}" for b, pct in COMPOSITE) if ref.composite else ""
        if ref.composite and split != {want_split}:
            add(
                "block sizes",
                "the composite mix (0.5 KiB 4 %, ... 4 KiB 67 %, ... 64 KiB 3 %)",
                ", ".join(sorted(s or "one block size" for s in split)),
            )
        zones = {p.zones for p in pts}
        if ref.composite and zones != {ZONES}:
            add(
                "LBA zones",
                "50 % of accesses to the first 5 % of the ActiveRange, 30 % to the next 15 %, "
                "20 % to the remaining 80 %",
                ", ".join(sorted(z or "uniform" for z in zones)),
            )
