"""The demand-intensity pair, Composite Block Size Workload (CBW) and DIRTH (PTS
2.0.2): ``<name>-precondition`` (steady: intervals of 100 % writes at the highest
load), ``<name>-intensity`` (steady: a pre-write, then the thread count x queue
depth grid at the test's mix), ``<name>-operating`` (one round: for MaxIOPS, MidIOPS
and MinIOPS a pre-write and a measurement with the full latency histogram, chosen
when the stage starts from the intensity stage's window)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.kinds.base import TestKeys
from tkbench.kinds.pts.common import I_AD
from tkbench.kinds.pts.rows import Requirement
from tkbench.kinds.staged import results as stages
from tkbench.kinds.staged import rows
from tkbench.kinds.staged.common import (
    NAMES,
    WRITE,
    Staged,
    base_point,
    intervals,
    load_spec,
    operating_points,
    own,
    stage_spec,
)
from tkbench.kinds.staged.reference import GRID, HOUR, StagedRequirement
from tkbench.kinds.staged.results import Grid, Operated
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import COMPOSITE, TestSpec, Tracking
from tkbench.rundir.records import OperatingPoint

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed


# what the PTS requires (docs/methodology.md, "The tests beyond the basic four")
CBW = StagedRequirement(
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
)
# DIRTH: CBW's phases with one block size and mix of the operator's choice
DIRTH = dataclasses.replace(
    CBW,
    procedure="dirth",
    title="Demand Intensity / Response Time Histogram",
    mix=None,
    composite=False,
)


class Intensity(Staged):
    name = "intensity"
    procedures = ("cbw", "dirth")
    stages = ("precondition", "intensity", "operating")
    source = f"{I_AD} (its AP and ZONE constants)"
    references = (CBW, DIRTH)
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "cbw": ("bssplit", "threads", "iodepths"),
        "dirth": ("threads", "iodepths"),
    }

    def fill_keys(self, k: TestKeys) -> None:
        if k.values["procedure"] == "cbw":  # its block-size mix: one composite point
            k.values["block_sizes"] = (COMPOSITE,)

    def requirement_rows(self, procedure: str, stage: str) -> tuple[Requirement, ...]:
        out = super().requirement_rows(procedure, stage)
        if self.pts_reference(procedure) is DIRTH:  # its block size and mix are stated
            return rows.operator_stimulus(out, stage)
        return out

    def build(
        self, spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]
    ) -> list[PlannedTest]:
        o = own(spec)
        top_t, top_q = max(o.threads), max(o.iodepths)
        mix = spec.mixes[0]
        write = base_point(spec, bss, WRITE, top_t, top_q, spec.point_runtime)
        spec = load_spec(spec, top_t, top_q)
        pre = PlannedTest(
            name=f"{spec.name}-precondition",
            spec=stage_spec(spec, "steady", intervals=o.intervals),
            title=f"{spec.title}: preconditioning",
            purge=spec.purge,
            precondition=None,
            points=intervals(spec, write),
            tracking=(Tracking("iops", write.bs, WRITE),),
            active_bytes=active,
            notes=notes,
            stage="precondition",
        )
        grid: list[Point] = []
        if o.prewrite > 0:
            grid.append(
                dataclasses.replace(write, runtime=o.prewrite, role="prewrite", tag="pre-write")
            )
        for t in o.threads:  # PTS: thread count outer, queue depth inner
            for q in o.iodepths:
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
            spec=stage_spec(spec, "steady", purge=False),
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
            spec=stage_spec(spec, "fixed", repeat=1, purge=False, histogram=True),
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

    def stage_result(self, a: Analysed) -> Grid | Operated | None:
        """The intensity stage's grid; the operating points' results."""
        if a.plan.stage == "intensity":
            return stages.intensity_grid(a)
        if a.plan.stage == "operating":
            return stages.operated(a)
        return None

    def stage_summary(self, a: Analysed) -> dict[str, Any]:
        out: dict[str, Any] = {}
        grid = stages.staged_as(a, Grid)
        operated = stages.staged_as(a, Operated)
        if grid is not None:
            out["grid"] = [
                {
                    "threads": c.numjobs,
                    "iodepth": c.iodepth,
                    "iops": round(c.iops, 3),
                    "mean_latency_ms": round(c.lat_mean_ns / 1e6, 6),
                    "cpu_pct": round(c.cpu_pct, 3),
                }
                for c in grid.cells
            ]
        elif operated is not None:
            out["operating_points"] = {m.name: m.to_dict() for m in operated.measured}
        return out


INTENSITY = Intensity()
