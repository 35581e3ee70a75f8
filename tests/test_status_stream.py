"""Live figures from fio's status reports, worked out exactly: what each job section
did between two reports (its clones' entries summed, reads and writes together)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tkbench.fio.results import LiveFigures, StatusStream


def entry(name: str, ios: int, nbytes: int, lat_ns: float, runtime_ms: int) -> dict[str, Any]:
    half = {"total_ios": ios // 2, "io_bytes": nbytes // 2, "runtime": runtime_ms,
            "lat_ns": {"mean": lat_ns}}  # fmt: skip
    return {"jobname": name, "read": half, "write": dict(half, runtime=runtime_ms - 100)}


def report(*jobs: dict[str, Any]) -> list[str]:
    text = json.dumps({"fio version": "fio-3.33", "jobs": list(jobs)}, indent=1)
    return text.splitlines(keepends=True)


def test_the_figures_are_the_difference_of_two_reports() -> None:
    seen: list[LiveFigures] = []
    stream = StatusStream({"p1": "4k 70/30"}, seen.append)
    # two clones of p1 (no group_reporting): their entries are summed
    for line in report(
        entry("p1", 1000, 4_000_000, 200_000.0, 1000), entry("p1", 1000, 4_000_000, 400_000.0, 900)
    ):
        stream.feed(line)
    for line in report(
        entry("p1", 3000, 12_000_000, 200_000.0, 2000),
        entry("p1", 3000, 12_000_000, 400_000.0, 2000),
    ):
        stream.feed(line)
    first, second = seen
    assert first == LiveFigures(point="4k 70/30", iops=2000.0, mbs=8.0, lat_ms=0.3, seconds=1.0)
    assert second.iops == pytest.approx(4000.0)
    assert second.mbs == pytest.approx(16.0)
    assert second.lat_ms == pytest.approx(0.3)
    assert second.seconds == pytest.approx(1.0)


def test_a_job_that_did_nothing_since_gives_no_figures() -> None:
    seen: list[LiveFigures] = []
    stream = StatusStream({}, seen.append)
    for _ in range(2):
        for line in report(entry("p1", 1000, 4_000_000, 1.0, 1000)):
            stream.feed(line)
    assert [f.point for f in seen] == ["p1"]
