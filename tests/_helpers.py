"""Helpers shared by the tests."""

from __future__ import annotations

# Profile overrides that shrink the quick profile to sub-second points.
FAST = [
    "tests.iops.point_runtime=0.2s",
    "tests.throughput.point_runtime=0.2s",
    "tests.latency.point_runtime=0.2s",
    "tests.wsat.point_runtime=0.2s",
    "precondition.capacity_multiple=1.0",
]

# The smallest run with a steady-state window: two IOPS rounds, no other test.
TWO_IOPS_ROUNDS = [
    "tests.iops.rounds.max=2",
    "tests.iops.rounds.window=2",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
]


def sets(*overrides: str) -> list[str]:
    """``--set`` options for FAST followed by ``overrides``."""
    out: list[str] = []
    for o in (*FAST, *overrides):
        out += ["--set", o]
    return out
