"""The PTS 2.0.2 tests beyond the basic four (Host Idle Recovery, Cross-Stimulus
Recovery, Composite Block Size Workload, Demand Intensity / Response Time
Histogram) as a reference table (pure): each test type of several stages holds its
own values and rows (tkbench.kinds.staged: ``PTS`` of each type's module,
:mod:`tkbench.kinds.staged.rows`); :data:`STAGED` collects them from the registry,
by procedure.

Where each value comes from is in docs/methodology.md, "The tests beyond the basic
four".
"""

from __future__ import annotations

from tkbench import kinds
from tkbench.kinds.staged.reference import COMPOSITE, GRID, ZONES, StagedRequirement

STAGED: dict[str, StagedRequirement] = {
    proc: ref
    for typ in kinds.TYPES
    for proc in typ.procedures
    if (ref := typ.pts_reference(proc)) is not None
}

__all__ = ["COMPOSITE", "GRID", "STAGED", "ZONES", "StagedRequirement"]
