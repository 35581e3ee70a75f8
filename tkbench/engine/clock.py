"""The engine's clock.  Every engine module reads the time here, never from
:mod:`time` itself, so that a test replaces one thing (``source``) to run the
engine's stop, segment and resume rules in milliseconds (tests/fakes/fio_runner.py,
``FakeClock``; docs/architecture.md, "Tests by layer")."""

from __future__ import annotations

import time as _time
from typing import Any

source: Any = _time  # what tells the time: the time module, or a test's clock


def time() -> float:
    """Seconds since the epoch."""
    return float(source.time())


def monotonic() -> float:
    return float(source.monotonic())


def monotonic_ns() -> int:
    return int(source.monotonic_ns())


def sleep(seconds: float) -> None:
    source.sleep(seconds)


def strftime(fmt: str) -> str:
    """The local time of :func:`time` formatted."""
    return _time.strftime(fmt, _time.localtime(time()))
