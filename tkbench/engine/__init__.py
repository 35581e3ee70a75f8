"""The engine: executes a plan on a target, storing every step before the next
(:mod:`tkbench.engine.session`).

What other modules, the benchmarks and the tests import from ``tkbench.engine`` is
re-exported here.  The engine's clock is :mod:`tkbench.engine.clock`.
"""

from __future__ import annotations

from tkbench.engine.manifest import (
    check_resumable,
    host_info,
    new_manifest,
    purge_record,
    target_record,
)
from tkbench.engine.options import IDLE_GAP_MIN, EngineOptions, NullProgress, Progress
from tkbench.engine.pipeline import FIO_STARTUP, POLL, START_AHEAD, CounterSampler
from tkbench.engine.session import Engine
from tkbench.engine.state import TestState

__all__ = [
    "FIO_STARTUP",
    "IDLE_GAP_MIN",
    "POLL",
    "START_AHEAD",
    "CounterSampler",
    "Engine",
    "EngineOptions",
    "NullProgress",
    "Progress",
    "TestState",
    "check_resumable",
    "host_info",
    "new_manifest",
    "purge_record",
    "target_record",
]
