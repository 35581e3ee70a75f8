"""What the PTS 2.0.2 requires of a test of several stages (pure): the shape of a
staged test's reference values (:class:`StagedRequirement`) and the values its types
share.  Each type holds its own reference (``PTS`` in :mod:`.hir`, :mod:`.xsr`,
:mod:`.intensity`) and its rows (:mod:`.rows`).

Where each value comes from is in docs/methodology.md, "The tests beyond the basic
four": the specification's text could not be read where tkbench was built, so
the values follow the issue that asked for the tests and two PTS 2.0
implementations.
"""

from __future__ import annotations

from dataclasses import dataclass

K = 1024
GRID = (32, 16, 8, 6, 4, 2, 1)
COMPOSITE = (
    (512, 4),
    (1 * K, 1),
    (1536, 1),
    (2 * K, 1),
    (2560, 1),
    (3 * K, 1),
    (3584, 1),
    (4 * K, 67),
    (8 * K, 10),
    (16 * K, 7),
    (32 * K, 3),
    (64 * K, 3),
)
ZONES = "zoned:50/5:30/15:20/80"


@dataclass(frozen=True)
class StagedRequirement:
    procedure: str
    title: str
    intervals: int = 30  # preconditioning rounds: 30 one-minute intervals
    tracked: str = "last"  # the interval a preconditioning round's IOPS are read from
    load: tuple[int, int] | None = None  # preconditioning load; None: the variant's
    block_size: int = 0  # the stimulus' one block size (0: composite, or the operator's)
    sample: float = 0.0  # seconds per sample the stage is reported in (0: not fixed)
    # host idle recovery
    wait_states: tuple[float, ...] = ()
    bursts: int = 0
    burst: float = 0.0
    baseline: float = 0.0
    # cross-stimulus recovery: (block size, pattern, seconds) in order; its load
    groups: tuple[tuple[int, str, float], ...] = ()
    # demand intensity
    grid: tuple[int, ...] = ()
    mix: int | None = None  # read % (None: the operator's choice)
    composite: bool = False
    prewrite: float = 0.0
    operating_prewrite: float = 0.0
    operating_runtime: float = 0.0
    ceiling: float = 0.0  # seconds
    wipc: bool = False  # workload-independent preconditioning before the first stage


HOUR = 3600.0
