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


def merged(*overrides: str) -> list[str]:
    """FAST with ``overrides`` (a key in both takes the override's value: tkbench
    itself refuses one key given twice)."""
    keys = {o.split("=", 1)[0] for o in overrides}
    return [o for o in FAST if o.split("=", 1)[0] not in keys] + list(overrides)


def sets(*overrides: str) -> list[str]:
    """``--set`` options for :func:`merged` FAST and ``overrides``."""
    out: list[str] = []
    for o in merged(*overrides):
        out += ["--set", o]
    return out
