"""Host Idle Recovery (PTS 2.0.2 HIR): ``<name>-precondition`` (steady: intervals of
4 KiB random writes) and ``<name>-recovery`` (one round: per wait state, write bursts
with host idle, then a return to baseline; sampled per interval)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.kinds.pts.common import I_AD
from tkbench.kinds.staged import results as stages
from tkbench.kinds.staged.common import Staged, base_point, intervals, own, stage_spec
from tkbench.kinds.staged.reference import K, StagedRequirement
from tkbench.kinds.staged.results import Recovery
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import TestSpec, Tracking
from tkbench.units import format_duration

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed


# what the PTS requires (docs/methodology.md, "The tests beyond the basic four")
PTS = StagedRequirement(
    "hir",
    "Host Idle Recovery",
    tracked="last",
    block_size=4 * K,
    wait_states=(5.0, 10.0, 15.0, 25.0, 50.0),
    bursts=360,
    burst=5.0,
    baseline=1800.0,
)


class Hir(Staged):
    name = "hir"
    procedures = ("hir",)
    stages = ("precondition", "recovery")
    source = f"{I_AD}; cloudharmony; Fateast/ssd-test (PTS-E 1.1 §11)"
    references = (PTS,)
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {"hir": ("wait_states",)}
    preconditions = False

    def build(
        self, spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]
    ) -> list[PlannedTest]:
        o = own(spec)
        wl = spec.workload
        base = base_point(spec, bss, spec.mixes[0], wl.numjobs, wl.iodepth, spec.point_runtime)
        pre_spec = stage_spec(spec, "steady", intervals=o.intervals)
        pre = PlannedTest(
            name=f"{spec.name}-precondition",
            spec=pre_spec,
            title=f"{spec.title}: preconditioning",
            purge=spec.purge,
            precondition=None,
            points=intervals(spec, base),
            tracking=(Tracking("iops", base.bs, base.mix),),
            active_bytes=active,
            notes=notes,
            stage="precondition",
        )
        points: list[Point] = []
        for idle in o.wait_states:
            points.append(
                dataclasses.replace(
                    base,
                    index=len(points),
                    runtime=o.bursts * (o.burst + idle),
                    idle=idle,
                    busy=o.burst,
                    tag=f"idle {format_duration(idle)}",
                )
            )
            if o.baseline > 0:
                points.append(
                    dataclasses.replace(
                        base,
                        index=len(points),
                        runtime=o.baseline,
                        tag=f"baseline after {format_duration(idle)}",
                    )
                )
        recovery = PlannedTest(
            name=f"{spec.name}-recovery",
            spec=stage_spec(spec, "fixed", repeat=1, purge=False, sample=o.sample or o.burst),
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

    def stage_result(self, a: Analysed) -> Recovery | None:
        """The recovery stage's wait states against the preconditioning's steady state."""
        return stages.recovery(a) if a.plan.stage == "recovery" else None

    def stage_summary(self, a: Analysed) -> dict[str, Any]:
        found = stages.staged_as(a, Recovery)
        if found is None:
            return {}
        out: dict[str, Any] = {}
        out["steady_state_iops"] = found.steady_iops
        out["wait_states"] = [
            {
                "idle_s": w.idle_s,
                "bursts": len(w.bursts),
                "mean_iops": round(w.mean_iops, 3),
                "recovery": None if w.recovery is None else round(w.recovery, 4),
                "baseline_iops": None if w.baseline_iops is None else round(w.baseline_iops, 3),
            }
            for w in found.waits
        ]
        return out


HIR = Hir()
