"""Tests of several stages: the PTS 2.0.2 tests beyond the basic four (pure planning).

Each such test of a profile (``procedure = "hir" | "xsr" | "cbw" | "dirth"``)
becomes a sequence of planned tests, its *stages*, which the engine runs like any
other test (purge, rounds until the stage's kind says stop, records) one after the
other.  The stages are built from general capabilities of a point: its own thread
count and queue depth, a block-size mix (``bssplit``), LBA zones, repeated
intervals, unmeasured pre-writes, host idle (``thinktime``) and per-interval logs
(``sample``); and one derived step: a stage whose points are chosen, when it
starts, from an earlier stage's measurement window (the operating points).

=========  =============================================================
procedure  stages (test directory names)
=========  =============================================================
hir        ``hir-precondition`` (steady: intervals of 4 KiB random writes),
           ``hir-recovery`` (one round: per wait state, write bursts with
           host idle, then a return to baseline; sampled per interval)
xsr        ``xsr`` (one round: the access groups back to back, sampled)
cbw/dirth  ``<name>-precondition`` (steady: intervals of 100 % writes at the
           highest load), ``<name>-intensity`` (steady: a pre-write, then
           the thread count x queue depth grid at the test's mix),
           ``<name>-operating`` (one round: for MaxIOPS, MidIOPS and MinIOPS a
           pre-write and a measurement with the full latency histogram)
=========  =============================================================

docs/methodology.md says where each parameter comes from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .planned import PlannedTest, Point, Precondition
from .profile import Mix, Share, TestSpec, Tracking
from .records import OperatingPoint
from .units import format_duration, format_size

WRITE = Mix(0)
NAMES = ("max", "mid", "min")
TITLES = {"max": "MaxIOPS", "mid": "MidIOPS", "min": "MinIOPS"}


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


def _stage(spec: TestSpec, kind: str, **changes: object) -> TestSpec:
    """The spec a stage runs with: its kind, and no phase of the basic tests."""
    base: dict[str, object] = {
        "kind": kind,
        "precondition": False,
        "response_histogram": 0.0,
        "split_block_sizes": False,
        "intervals": 1,
        "sample": 0.0,
    }
    base.update(changes)
    return dataclasses.replace(spec, **base)  # type: ignore[arg-type]


def _load(spec: TestSpec, numjobs: int, iodepth: int) -> TestSpec:
    """``spec`` with the stage's own load as its workload."""
    return dataclasses.replace(
        spec, workload=dataclasses.replace(spec.workload, numjobs=numjobs, iodepth=iodepth)
    )


def _intervals(spec: TestSpec, base: Point) -> tuple[Point, ...]:
    """A round of ``spec.intervals`` repetitions of ``base``; the one the tracking
    variable reads (the first or the last) has role "", the others "interval"."""
    n = spec.intervals
    tracked = 0 if spec.tracking_interval == "first" else n - 1
    return tuple(
        dataclasses.replace(
            base,
            index=i,
            role="" if i == tracked else "interval",
            tag=f"#{i + 1}" if n > 1 else "",
        )
        for i in range(n)
    )


def stages(
    spec: TestSpec,
    active: int,
    sector: int,
    wipc: Precondition | None = None,
    notes: Sequence[str] = (),
) -> tuple[list[PlannedTest], list[str]]:
    """The stages of a test of several stages, and plan notes (a test that cannot
    run on this device is left out with a note).  ``wipc``: the workload-independent
    preconditioning of the first stage (CBW and DIRTH; None: none)."""
    build = {"hir": _hir, "xsr": _xsr, "cbw": _intensity, "dirth": _intensity}[spec.procedure]
    bss = ""
    notes = list(notes)
    if spec.bssplit:
        bss, fold = bssplit_text(spec.bssplit, sector)
        notes += fold
    elif any(bs % sector for bs in spec.block_sizes):
        return [], [f"test {spec.name} skipped: its block size does not fit {sector}-byte sectors"]
    staged = build(spec, active, bss, tuple(notes))
    if wipc is not None:
        staged[0] = dataclasses.replace(staged[0], precondition=wipc)
    return staged, []


def _base(spec: TestSpec, bss: str, mix: Mix, numjobs: int, iodepth: int, runtime: float) -> Point:
    return Point(
        index=0,
        bs=spec.block_sizes[0],
        mix=mix,
        pattern=spec.pattern,
        numjobs=numjobs,
        iodepth=iodepth,
        runtime=runtime,
        bssplit=bss,
        zones=zones_text(spec.zones) if spec.zones else "",
    )


def _hir(spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]) -> list[PlannedTest]:
    wl = spec.workload
    base = _base(spec, bss, spec.mixes[0], wl.numjobs, wl.iodepth, spec.point_runtime)
    pre_spec = _stage(spec, "steady", intervals=spec.intervals)
    pre = PlannedTest(
        name=f"{spec.name}-precondition",
        spec=pre_spec,
        title=f"{spec.title}: preconditioning",
        purge=spec.purge,
        precondition=None,
        points=_intervals(spec, base),
        tracking=(Tracking("iops", base.bs, base.mix),),
        active_bytes=active,
        notes=notes,
        stage="precondition",
    )
    points: list[Point] = []
    for idle in spec.wait_states:
        points.append(
            dataclasses.replace(
                base,
                index=len(points),
                runtime=spec.bursts * (spec.burst + idle),
                idle=idle,
                busy=spec.burst,
                tag=f"idle {format_duration(idle)}",
            )
        )
        if spec.baseline > 0:
            points.append(
                dataclasses.replace(
                    base,
                    index=len(points),
                    runtime=spec.baseline,
                    tag=f"baseline after {format_duration(idle)}",
                )
            )
    recovery = PlannedTest(
        name=f"{spec.name}-recovery",
        spec=_stage(spec, "fixed", repeat=1, purge=False, sample=spec.sample or spec.burst),
        title=f"{spec.title}: wait states",
        purge=False,
        precondition=None,
        points=tuple(points),
        tracking=(),
        active_bytes=active,
        notes=notes,
        stage="recovery",
    )
    return [pre, recovery]


def _xsr(spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]) -> list[PlannedTest]:
    wl = spec.workload
    points = tuple(
        Point(
            index=i,
            bs=g.bs,
            mix=spec.mixes[0],
            pattern=g.pattern,
            numjobs=wl.numjobs,
            iodepth=wl.iodepth,
            runtime=g.duration,
            tag=f"group {i + 1}",
        )
        for i, g in enumerate(spec.groups)
    )
    return [
        PlannedTest(
            name=spec.name,
            spec=_stage(spec, "fixed", repeat=1, sample=spec.sample or 60.0),
            title=spec.title,
            purge=spec.purge,
            precondition=None,
            points=points,
            tracking=(),
            active_bytes=active,
            notes=notes,
            stage="groups",
        )
    ]


def _intensity(spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]) -> list[PlannedTest]:
    top_t, top_q = max(spec.threads), max(spec.iodepths)
    mix = spec.mixes[0]
    write = _base(spec, bss, WRITE, top_t, top_q, spec.point_runtime)
    spec = _load(spec, top_t, top_q)
    pre = PlannedTest(
        name=f"{spec.name}-precondition",
        spec=_stage(spec, "steady", intervals=spec.intervals),
        title=f"{spec.title}: preconditioning",
        purge=spec.purge,
        precondition=None,
        points=_intervals(spec, write),
        tracking=(Tracking("iops", write.bs, WRITE),),
        active_bytes=active,
        notes=notes,
        stage="precondition",
    )
    grid: list[Point] = []
    if spec.prewrite > 0:
        grid.append(
            dataclasses.replace(write, runtime=spec.prewrite, role="prewrite", tag="pre-write")
        )
    for t in spec.threads:  # PTS: thread count outer, queue depth inner
        for q in spec.iodepths:
            grid.append(
                dataclasses.replace(
                    write,
                    index=len(grid),
                    mix=mix,
                    numjobs=t,
                    iodepth=q,
                    role="" if (t, q) == (top_t, top_q) else "grid",
                    tag=f"T{t}Q{q}",
                )
            )
    intensity = PlannedTest(
        name=f"{spec.name}-intensity",
        spec=_stage(spec, "steady", purge=False),
        title=f"{spec.title}: demand intensity",
        purge=False,
        precondition=None,
        points=tuple(grid),
        tracking=(Tracking("iops", write.bs, mix),),
        active_bytes=active,
        notes=notes,
        stage="intensity",
    )
    placeholder = tuple(
        OperatingPoint(name=n, numjobs=1, iodepth=1, why="chosen when the stage starts")
        for n in NAMES
    )
    operating = PlannedTest(
        name=f"{spec.name}-operating",
        spec=_stage(spec, "fixed", repeat=1, purge=False, histogram=True),
        title=f"{spec.title}: operating points",
        purge=False,
        precondition=None,
        points=operating_points(spec, write, placeholder),
        tracking=(),
        active_bytes=active,
        notes=notes,
        stage="operating",
        derive_from=intensity.name,
        operating=placeholder,
    )
    return [pre, intensity, operating]


def operating_points(
    spec: TestSpec, write: Point, chosen: Sequence[OperatingPoint]
) -> tuple[Point, ...]:
    """The operating-point stage's round: for each chosen load a pre-write (100 %
    writes at that load) and the measurement at the test's mix."""
    points: list[Point] = []
    for op in chosen:
        name = TITLES[op.name]
        if spec.operating_prewrite > 0:
            points.append(
                dataclasses.replace(
                    write,
                    index=len(points),
                    runtime=spec.operating_prewrite,
                    role="prewrite",
                    tag=f"pre-write {name}",
                    numjobs=op.numjobs,
                    iodepth=op.iodepth,
                )
            )
        points.append(
            dataclasses.replace(
                write,
                index=len(points),
                mix=spec.mixes[0],
                runtime=spec.operating_runtime,
                role="",
                tag=f"{name} T{op.numjobs}Q{op.iodepth}",
                numjobs=op.numjobs,
                iodepth=op.iodepth,
            )
        )
    return tuple(points)


def resolve(test: PlannedTest, chosen: Sequence[OperatingPoint]) -> PlannedTest:
    """The operating-point stage with its loads chosen (``chosen``: max, mid, min)."""
    write = test.points[0]
    write = dataclasses.replace(write, mix=WRITE, role="", tag="")
    return dataclasses.replace(
        test,
        points=operating_points(test.spec, write, chosen),
        operating=tuple(chosen),
    )


__all__ = ["NAMES", "TITLES", "operating_points", "resolve", "stages"]
