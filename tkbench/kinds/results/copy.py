"""A copy test's results (tkbench.kinds.copy, tkbench.kinds.copyrun): per file set and data
pattern, every run's MB/s (10^6 bytes/s: the set's bytes / the seconds of its copy)
and seconds, with their repeatability (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench.analysis.repeat import Repeatability, repeatability
from tkbench.rundir.records import Round, TestPlan

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed

MB = 1e6
ROLE = "copy"
NAMES = {"iso": "ISO", "program": "Program", "game": "Game"}
TITLES = {
    "iso": "ISO (large files)",
    "program": "Program (many small files in folders)",
    "game": "Game (small and large files)",
}


@dataclass(frozen=True)
class CopyRow:
    """One file set x data pattern over the test's runs (in run order)."""

    copy_set: str
    data: str
    files: int
    size: int
    mb_s: Repeatability
    seconds: Repeatability

    @property
    def title(self) -> str:
        return TITLES.get(self.copy_set, self.copy_set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.copy_set,
            "data_pattern": self.data,
            "files": self.files,
            "bytes": self.size,
            "unit": "MB/s",
            **self.mb_s.to_dict(),
            "seconds": self.seconds.to_dict(),
        }


def is_copy(plan: TestPlan) -> bool:
    return plan.kind == "copy"


def copy_rows(plan: TestPlan, rounds: Sequence[Round]) -> list[CopyRow] | None:
    """The rows of a copy test in the plan's order (None: no copy test, or no run yet)."""
    if not is_copy(plan) or not rounds:
        return None
    mbs: dict[tuple[str, str], list[float]] = {}
    secs: dict[tuple[str, str], list[float]] = {}
    for r in rounds:
        for p in r.points:
            if p.role != ROLE:
                continue
            key = (p.copy_set, p.data)
            mbs.setdefault(key, []).append(p.bw_bytes / MB)
            secs.setdefault(key, []).append(p.write.runtime_ms / 1000.0)
    rows = []
    for planned in plan.points:
        key = (planned.copy_set, planned.data)
        if planned.role == ROLE and key in mbs:
            rows.append(
                CopyRow(
                    planned.copy_set,
                    planned.data,
                    planned.files,
                    planned.size,
                    repeatability(mbs[key]),
                    repeatability(secs[key]),
                )
            )
    return rows


@dataclass(frozen=True)
class CopyRows:
    """A copy test's rows, as its type's own result (:attr:`Analysed.own`)."""

    rows: tuple[CopyRow, ...]


def copies_in(a: Analysed) -> tuple[CopyRow, ...] | None:
    """A copy test's rows as its analysis keeps them (None: not one, or no run yet):
    :func:`copy_rows`, computed once per test."""
    return a.own.rows if isinstance(a.own, CopyRows) else None
