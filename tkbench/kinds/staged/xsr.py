"""Cross-Stimulus Recovery (PTS 2.0.2 XSR): one stage, ``<name>`` (one round: the access
groups back to back, sampled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tkbench.kinds.base import TestKeys
from tkbench.kinds.pts.common import I_AD
from tkbench.kinds.staged import results as stages
from tkbench.kinds.staged.common import Staged, own, stage_spec
from tkbench.kinds.staged.reference import HOUR, K, StagedRequirement
from tkbench.kinds.staged.results import Groups
from tkbench.plan.model import PlannedTest, Point
from tkbench.profile.model import Mix, TestSpec

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed


# what the PTS requires (docs/methodology.md, "The tests beyond the basic four")
PTS = StagedRequirement(
    "xsr",
    "Cross-Stimulus Recovery",
    load=(1, 32),
    sample=60.0,
    groups=(
        (1024 * K, "sequential", 8 * HOUR),
        (8 * K, "random", 6 * HOUR),
        (1024 * K, "sequential", 8 * HOUR),
    ),
)


class Xsr(Staged):
    name = "xsr"
    procedures = ("xsr",)
    stages = ("groups",)
    source = f"{I_AD} (its constants)"
    references = (PTS,)
    parts_word = "groups"  # its one stage: the access groups
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {"xsr": ("groups",)}
    one_point = False
    preconditions = False

    def fill_keys(self, k: TestKeys) -> None:
        # its block sizes are its groups', in order; its mix 100 % writes unless given
        t = k.values
        t["block_sizes"] = tuple(dict.fromkeys(g.bs for g in t["groups"]))
        t["mixes"] = t["mixes"] or (Mix(0),)

    def build(
        self, spec: TestSpec, active: int, bss: str, notes: tuple[str, ...]
    ) -> list[PlannedTest]:
        o = own(spec)
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
            for i, g in enumerate(o.groups)
        )
        return [
            PlannedTest(
                name=spec.name,
                spec=stage_spec(spec, "fixed", repeat=1, sample=o.sample or 60.0),
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

    def stage_result(self, a: Analysed) -> Groups:
        """The transitions between its access groups."""
        return stages.groups(a)

    def stage_summary(self, a: Analysed) -> dict[str, Any]:
        found = stages.staged_as(a, Groups)
        out: dict[str, Any] = {}
        out["transitions"] = [
            {
                "from": x.source,
                "to": x.target,
                "group": x.group,
                "recovery_s": x.recovery_s,
                "settled_mbs": round(x.settled_mbs, 3),
            }
            for x in (found.transitions if found is not None else ())
        ]
        return out


XSR = Xsr()
