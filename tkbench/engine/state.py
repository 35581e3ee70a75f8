"""A test's progress while the engine runs it: one object that the round loop, the
stage parts, the stop rules and the result read and move on, instead of its rounds,
their segment, the bytes written and the start of its rounds passed from step to step."""

from __future__ import annotations

from dataclasses import dataclass

from tkbench.analysis.stoprules import Standing
from tkbench.engine import clock
from tkbench.plan.model import PlannedTest
from tkbench.rundir.records import Round


@dataclass
class TestState:
    """Where ``test`` stands: its stored ``rounds`` (the list the engine appends to),
    the ``segment`` its next round belongs to (docs/resume.md), the bytes its rounds
    wrote in all and when its rounds began (epoch seconds)."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    test: PlannedTest
    rounds: list[Round]
    segment: int = 1
    total_written: int = 0
    started: float = 0.0

    @classmethod
    def of(cls, test: PlannedTest, rounds: list[Round]) -> TestState:
        """The state the stored ``rounds`` of ``test`` left (a resume, or none yet)."""
        return cls(
            test=test,
            rounds=rounds,
            segment=max((r.segment for r in rounds), default=1),
            total_written=written(rounds),
            started=started(rounds),
        )

    def standing(self, capacity: int, now: float) -> Standing:
        """What the test's kind judges its stop rules by, as of ``now``."""
        return Standing(
            rounds=self.rounds,
            segment=self.segment,
            total_written=self.total_written,
            started=self.started,
            now=now,
            capacity=capacity,
        )


def written(rounds: list[Round]) -> int:
    """The bytes the stored rounds wrote in all (the last one's count)."""
    return int(rounds[-1].total_written_bytes) if rounds else 0


def started(rounds: list[Round]) -> float:
    """When the stored rounds began; now, before the first."""
    return rounds[0].started if rounds else clock.time()
