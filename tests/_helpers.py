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
