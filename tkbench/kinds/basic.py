"""The basic tests (PTS 2.0.2 IOPS, throughput, latency, write saturation, and any test
of workload points without a type of its own): the profile's block sizes x mixes as
one round of points, run until the test's stop rule (steady, saturation, fixed) ends
it; with ``split_block_sizes``, one test per block size (pure planning)."""

from __future__ import annotations

import math

from tkbench.analysis.stoprules import kind_named
from tkbench.kinds.base import Context, TestKeys, TestType
from tkbench.plan.model import PlannedTest, Point, bssplit_text, workload_independent, zones_text
from tkbench.profile.model import COMPOSITE, Mix, TestSpec, Tracking
from tkbench.profile.schema import WSAT_WORKLOADS
from tkbench.rundir.records import TestPlan
from tkbench.units import format_size


def check(k: TestKeys) -> None:
    """Every test's: its block-size mix and LBA zones add up to 100 %; Write
    Saturation's optional workloads (``wsat_workload``, PTS 2.0) set its pattern, block
    size, mix and tracking; a block-size mix outside a procedure is one composite point."""
    t = k.values
    if t["bssplit"]:
        total = math.fsum(s.pct for s in t["bssplit"])
        if abs(total - 100.0) > 0.01:
            raise k.refuse("bssplit", f"the shares add up to {total:g} %, not 100 %")
    if t["zones"]:
        for what, total in (
            ("accesses", math.fsum(z.pct for z in t["zones"])),
            ("ranges", math.fsum(z.value for z in t["zones"])),
        ):
            if abs(total - 100.0) > 0.01:
                raise k.refuse("zones", f"the {what} add up to {total:g} %, not 100 %")
    preset = WSAT_WORKLOADS.get(t["wsat_workload"])
    if preset is not None:  # Write Saturation's optional workloads (PTS 2.0)
        if t["kind"] != "saturation":
            raise k.refuse("wsat_workload", "only a saturation test has these")
        t.update(preset)
        t["tracking"] = (Tracking.parse(f"iops {preset['track']} {preset['mixes'][0].label}"),)
        del t["track"]
    if t["bssplit"] and not t["procedure"]:  # a block-size mix: one composite point per mix
        t["block_sizes"] = (COMPOSITE,)


HISTOGRAM_BS = 4096  # PTS: the response-time histogram is of 4 KiB random writes


def histogram_point(spec: TestSpec, sector: int) -> Point | None:
    """The response-time histogram phase of a test: 4 KiB random writes (100 %) at
    the test's load for ``response_histogram`` seconds; None when it has none."""
    if spec.response_histogram <= 0 or HISTOGRAM_BS % sector:
        return None
    return Point(
        index=0,
        bs=HISTOGRAM_BS,
        mix=Mix.parse("0/100"),
        pattern="random",
        numjobs=spec.workload.numjobs,
        iodepth=spec.workload.iodepth,
        runtime=spec.response_histogram,
    )


class Basic(TestType):
    """Block sizes x mixes, every point alike but for its size and mix."""

    name = "basic"

    def claims(self, spec: TestSpec) -> bool:
        return True  # asked last: a test that no other type claims

    def stored(self, plan: TestPlan) -> bool:
        return True

    def claims_keys(self, k: TestKeys) -> bool:
        return True

    def check_keys(self, k: TestKeys) -> None:
        check(k)  # every test's, whatever its type

    def expand(self, spec: TestSpec, ctx: Context) -> tuple[list[PlannedTest], list[str]]:
        sector = ctx.sector
        notes: list[str] = []
        tests: list[PlannedTest] = []
        block_sizes = tuple(bs for bs in spec.block_sizes if bs % sector == 0)
        test_notes: list[str] = []
        dropped = [bs for bs in spec.block_sizes if bs % sector]
        if dropped:
            test_notes.append(
                f"{', '.join(format_size(b) for b in dropped)} point(s) dropped: the device's "
                f"logical sector is {sector} bytes"
            )
        if not block_sizes:
            notes.append(f"test {spec.name} skipped: no block size fits {sector}-byte sectors")
            return tests, notes
        groups = [(bs,) for bs in block_sizes] if spec.split_block_sizes else [block_sizes]
        for group in groups:
            name = spec.name if len(groups) == 1 else f"{spec.name}-{format_size(group[0])}"
            title = spec.title if len(groups) == 1 else f"{spec.title} {format_size(group[0])}"
            tracking = tuple(t for t in spec.tracking if t.bs in group)
            lost = [t for t in spec.tracking if t.bs not in group and t.bs in dropped]
            group_notes = list(test_notes) + list(ctx.notes)
            if lost:
                group_notes.append(
                    "tracking variable(s) "
                    + ", ".join(t.label for t in lost)
                    + " cannot be measured on this device"
                )
            if kind_named(spec.kind).has_steady_state and not tracking:
                notes.append(f"test {name} skipped: none of its tracking variables can be measured")
                continue
            bss, folded = bssplit_text(spec.bssplit, sector)
            group_notes += folded
            points = tuple(
                Point(
                    index=i,
                    bs=bs,
                    mix=mix,
                    pattern=spec.pattern,
                    numjobs=spec.workload.numjobs,
                    iodepth=spec.workload.iodepth,
                    runtime=spec.point_runtime,
                    bssplit=bss,
                    zones=zones_text(spec.zones) if spec.zones else "",
                    cache="" if spec.cache == "as-is" else spec.cache,
                )
                # PTS test loop order: R/W mix outer, block size inner
                for i, (bs, mix) in enumerate((bs, mix) for mix in spec.mixes for bs in group)
            )
            pre = workload_independent(spec, ctx.profile, ctx.capacity, group[0])
            tests.append(
                PlannedTest(
                    name=name,
                    spec=spec,
                    title=title,
                    purge=spec.purge,
                    precondition=pre,
                    points=points,
                    tracking=tracking,
                    active_bytes=ctx.active,
                    notes=tuple(group_notes),
                    histogram_point=histogram_point(spec, sector),
                )
            )
        return tests, notes


BASIC = Basic()
