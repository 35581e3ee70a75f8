"""The response-time histogram phase's record (``tests/<test>/histogram.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tkbench.rundir.records.base import Record
from tkbench.rundir.records.round import FioCall, PointResult


@dataclass(frozen=True)
class ResponseHistogram(Record):
    """After a test's rounds: 4 KiB random writes at the test's load for the profile's
    ``response_histogram`` duration, with fio's full json+ latency histogram (the
    point's ``bins_ns``), for the PTS response-time histogram and confidence-level plot.

    Format history: 1 — the first."""

    VERSION = 1

    point: PointResult  # as a round's point: IOPS, latencies, percentiles, bins
    test: str = ""
    after_round: int = 0  # the last round before it
    after: str = ""  # what that round ended: "steady state", "write saturation", ...
    idle_seconds: float = 0.0  # from the end of that round to the phase's start
    started: float = 0.0  # epoch seconds
    ended: float = 0.0
    fio: FioCall = field(default_factory=FioCall)
