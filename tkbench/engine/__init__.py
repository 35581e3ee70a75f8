"""The engine: executes a plan on a target, storing every step before the next
(:mod:`tkbench.engine.session`).

What other modules, the benchmarks and the tests import from ``tkbench.engine`` is
re-exported here.  The engine's clock is the :mod:`time` module of its modules; a test
replaces it for all of them at once as ``tkbench.engine.time`` (tests/fakes/fio_runner.py
``FakeClock``): this package passes the assignment on to each of its modules.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

from tkbench.engine import copying, manifest, parts, pipeline, rounds, session, state, steps
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
    "time",
]

# the modules that read the clock (``time``)
_CLOCKED: tuple[types.ModuleType, ...] = (
    copying,
    manifest,
    parts,
    pipeline,
    rounds,
    session,
    state,
    steps,
)


class _Engine(types.ModuleType):
    """This package, whose ``time`` is every engine module's clock."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "time":
            for module in _CLOCKED:
                module.__dict__["time"] = value


sys.modules[__name__].__class__ = _Engine
assert time  # the clock as it is until a test replaces it
