"""A virtual-file test's results (tkbench.kinds.vfile): nodes per second and MB/s of every
operation x thread count x cache state, laid out as CloudGraph publishes them: a row
per operation and thread count, the cold cache its minimum and the warm its maximum
(pure).

A cell's figure is the mean over the test's runs (``repeat``); nodes/s are the
point's bytes/s divided by the node size; MB/s are 10^6 bytes/s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tkbench.rundir.records import Round, TestPlan

if TYPE_CHECKING:
    from tkbench.kinds.results.analysed import Analysed

ROLE = "vfile"


@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    read: bool
    pattern: str  # random | sequential

    @property
    def direction(self) -> str:
        return "read" if self.read else "write"


OPERATIONS: dict[str, Operation] = {
    o.name: o
    for o in (
        Operation("random-write", "Random write", False, "random"),
        Operation("random-read", "Random read", True, "random"),
        Operation("sequential-write", "Sequential write", False, "sequential"),
        Operation("sequential-read", "Sequential read", True, "sequential"),
    )
}


def operation_of(pattern: str, read_pct: int) -> Operation:
    """The operation of a stored point, from its pattern and mix."""
    for o in OPERATIONS.values():
        if o.pattern == pattern and (read_pct == 100) == o.read:
            return o
    raise ValueError(f"no virtual-file operation is {pattern} {read_pct}/{100 - read_pct}")


MB = 1e6


@dataclass(frozen=True)
class Cell:
    """One operation x thread count x cache state: bytes/s of every run."""

    operation: str
    threads: int
    cache: str
    node_size: int
    runs: tuple[float, ...]  # bytes/s, one per run
    lat_mean_ns: float = 0.0  # mean over the runs of the point's mean latency

    @property
    def bytes_s(self) -> float:
        return math.fsum(self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def nodes_s(self) -> float:
        return self.bytes_s / self.node_size

    @property
    def mb_s(self) -> float:
        return self.bytes_s / MB

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "threads": self.threads,
            "cache": self.cache,
            "nodes_s": self.nodes_s,
            "mb_s": self.mb_s,
            "runs_nodes_s": [b / self.node_size for b in self.runs],
            "lat_mean_ms": self.lat_mean_ns / 1e6,
        }


@dataclass(frozen=True)
class Row:
    """An operation at one thread count: its cells by cache state."""

    operation: str
    title: str
    threads: int
    cells: Mapping[str, Cell]

    @property
    def min(self) -> Cell | None:
        """The cold-cache figure: a server starting."""
        return self.cells.get("cold")

    @property
    def max(self) -> Cell | None:
        """The warm-cache figure: a server running with the file cached."""
        return self.cells.get("warm")

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "title": self.title,
            "threads": self.threads,
            **{state: c.to_dict() for state, c in self.cells.items()},
        }


@dataclass(frozen=True)
class VfileResult:
    node_size: int
    page_size: int
    file_bytes: int
    write_through: bool
    rows: tuple[Row, ...]

    @property
    def nodes(self) -> int:
        return self.file_bytes // self.node_size

    @property
    def cells(self) -> list[Cell]:
        return [c for r in self.rows for c in r.cells.values()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": "nodes/s",
            "node_size": self.node_size,
            "page_size": self.page_size,
            "nodes": self.nodes,
            "file_bytes": self.file_bytes,
            "write_through": self.write_through,
            "rows": [r.to_dict() for r in self.rows],
            "points": [c.to_dict() for c in self.cells],
        }


def is_vfile(plan: TestPlan) -> bool:
    return bool(plan.points) and all(p.role == ROLE for p in plan.points)


def vfile_of(plan: TestPlan, rounds: Sequence[Round]) -> VfileResult | None:
    """A stored virtual-file test's result (None: not one, or no round yet)."""
    if not is_vfile(plan) or not rounds or plan.node_size <= 0:
        return None
    runs: dict[tuple[str, int, str], list[float]] = {}
    lats: dict[tuple[str, int, str], list[float]] = {}
    for r in rounds:
        for p in r.points:
            if p.role != ROLE:
                continue
            key = (operation_of(p.pattern, p.read_pct).name, p.numjobs, p.cache or "as-is")
            runs.setdefault(key, []).append(p.bw_bytes)
            lats.setdefault(key, []).append(p.lat_mean_ns)
    rows: dict[tuple[str, int], dict[str, Cell]] = {}
    for q in plan.points:  # the plan's order: operation, thread count, cache state
        key = (operation_of(q.pattern, q.read_pct).name, q.numjobs, q.cache or "as-is")
        if key not in runs:
            continue
        lat = lats[key]
        rows.setdefault(key[:2], {})[key[2]] = Cell(
            key[0], key[1], key[2], plan.node_size, tuple(runs[key]), math.fsum(lat) / len(lat)
        )
    return VfileResult(
        node_size=plan.node_size,
        page_size=plan.points[0].bs,
        file_bytes=plan.active_bytes,
        write_through=plan.workload.sync,
        rows=tuple(
            Row(op, OPERATIONS[op].title, threads, cells) for (op, threads), cells in rows.items()
        ),
    )


def vfile_in(a: Analysed) -> VfileResult | None:
    """A test's virtual-file result as its analysis keeps it (None: not one, or no round
    yet): :func:`vfile_of`, computed once per test."""
    return a.own if isinstance(a.own, VfileResult) else None
