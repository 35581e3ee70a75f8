"""The SNIA PTS 2.0.2 requirement table of all eight tests (pure).

One row per requirement, kept per test family and stage (``"iops"``,
``"hir/recovery"``, ...: :func:`rows_for`), each naming the planned parameters it
governs, its source (the 2.0.2 text, an implementation of PTS 2.0, or the
operator's choice) and how it is judged.  :mod:`tkbench.conformance`
applies it to a plan and, separately, to what a run recorded.  Every planned
parameter of every PTS test has a row or a :class:`NotJudged` entry
(tests/test_requirements.py).
"""

from __future__ import annotations

from tkbench import kinds
from tkbench.conformance.pts import BY_NAME
from tkbench.conformance.requirements import basic
from tkbench.kinds.pts import common
from tkbench.kinds.pts.rows import (
    CHOICE,
    IMPL,
    TEXT,
    Choice,
    Ctx,
    Finding,
    NotJudged,
    Requirement,
    Source,
    family,
    parameters,
)
from tkbench.kinds.staged import rows as staged

# each test type's procedures and their stages (tkbench.kinds), and every row: the
# basic four's here, each stage's from its type
STAGES = {proc: typ.stages for typ in kinds.TYPES for proc in typ.procedures}
TABLE: dict[str, tuple[Requirement, ...]] = {name: basic.rows(name) for name in BY_NAME}
TABLE |= {
    f"{proc}/{stage}": typ.requirement_rows(proc, stage)
    for typ in kinds.TYPES
    for proc in typ.procedures
    for stage in typ.stages
}
# rows judged over every test of a PTS test at once (block sizes, R/W mixes)
GROUP_ROWS = basic.GROUP_ROWS


def rows_for(key: str) -> tuple[Requirement, ...]:
    """The rows of a family (``iops``) or stage (``hir/recovery``); () for none."""
    return TABLE.get(key, ())


def not_judged(key: str) -> tuple[NotJudged, ...]:
    own = staged.NOT_JUDGED if "/" in key else basic.NOT_JUDGED
    return common.NOT_JUDGED + own


def covered(key: str) -> dict[str, list[str]]:
    """Every planned parameter the table speaks of for ``key``, with what says so."""
    out: dict[str, list[str]] = {}
    for r in (*rows_for(key), *GROUP_ROWS.get(key, ())):
        for p in r.params:
            out.setdefault(p, []).append(f"{r.name} ({r.source.kind})")
    for n in not_judged(key):
        out.setdefault(n.param, []).append(f"not judged: {n.why}")
    return out


__all__ = [
    "CHOICE",
    "GROUP_ROWS",
    "IMPL",
    "STAGES",
    "TABLE",
    "TEXT",
    "Choice",
    "Ctx",
    "Finding",
    "NotJudged",
    "Requirement",
    "Source",
    "covered",
    "family",
    "not_judged",
    "parameters",
    "rows_for",
]
