"""The report model: everything the report shows, computed from a run's records.

Frozen dataclasses of numbers and plain strings.  :mod:`.analysis` builds them
(pure); :mod:`.figures` and the templates only read them.  Units are part of
every quantity's name or carried next to it: IOPS, MB/s (10^6 bytes/s), ms,
bytes, GB (10^9 bytes), epoch seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tkbench.analysis.confidence import HistogramPhase
from tkbench.analysis.hosts import HostMean
from tkbench.analysis.responses import ResponseTimes
from tkbench.analysis.thermal import TestTemperature
from tkbench.report.copy import CopyReport
from tkbench.report.matrix import Matrix
from tkbench.report.repeats import RecipeTable, RepeatPart
from tkbench.report.sweep import SweepReport
from tkbench.report.vfile import VfileReport

if TYPE_CHECKING:
    from tkbench.report.stages import StagePart
    from tkbench.report.workload import WorkloadChapter

# test status values
COMPLETE = "complete"
INTERRUPTED = "interrupted"
FAILED = "failed"
INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class Row:
    """A label/value line of a setup or procedure table."""

    label: str
    value: str
    mono: bool = False  # show the value in a monospaced font (command lines, paths)


@dataclass(frozen=True)
class Series:
    """One line of a plot: ``y`` over ``x``."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    emphasis: bool = False  # a tracking variable: drawn stronger


@dataclass(frozen=True)
class Determination:
    """The steady-state determination of one tracking variable (PTS 2.0.2 §2.1.24)."""

    variable: str  # e.g. "iops 4k 0/100"
    unit: str
    reached: bool
    reason: str
    window: int  # rounds the window must have
    rounds: tuple[int, ...]
    values: tuple[float, ...]
    mean: float
    excursion: float  # max - min over the window
    allowed_excursion: float  # in the variable's unit
    max_excursion: float  # as a fraction of the mean
    excursion_ratio: float
    slope: float  # per round
    intercept: float  # value of the line at the window's first round
    slope_excursion: float  # |slope| x (rounds - 1)
    allowed_slope_excursion: float
    max_slope_excursion: float
    slope_excursion_ratio: float

    @property
    def excursion_ok(self) -> bool:
        return self.excursion <= self.allowed_excursion

    @property
    def slope_ok(self) -> bool:
        return self.slope_excursion <= self.allowed_slope_excursion

    @property
    def complete(self) -> bool:
        return len(self.rounds) >= self.window

    def fit(self, round_number: float) -> float:
        if not self.rounds:
            return float("nan")
        return self.intercept + self.slope * (round_number - self.rounds[0])


@dataclass(frozen=True)
class RoundRow:
    """One round of a test, as the per-round table lists it."""

    number: int
    segment: int
    started: float
    seconds: float
    values: tuple[float | None, ...]  # per tracking variable, in its unit
    written_bytes: int
    in_window: bool


@dataclass(frozen=True)
class LatencyRow:
    """Latency of one point and direction over the measurement window (ms)."""

    bs: str
    mix: str
    direction: str  # "read" | "write" | "R+W" (a mixed point's reads and writes together)
    iops: float
    mean_ms: float
    max_ms: float
    percentiles_ms: tuple[float | None, ...]  # in the order of TestReport.percentile_names
    samples: int = 0  # I/Os behind the percentiles


@dataclass(frozen=True)
class Histogram:
    """Response-time histogram of one point and direction, summed over the window."""

    point: str  # "4k 65/35"
    bs: str
    mix: str
    direction: str
    edges_ms: tuple[float, ...]  # len(counts) + 1, logarithmically spaced
    counts: tuple[int, ...]
    total: int
    mean_ms: float
    p9999_ms: float | None
    max_ms: float


@dataclass(frozen=True)
class Saturation:
    """Write saturation: one value per round, over time and over data written."""

    point: str
    minutes: tuple[float, ...]  # end of each round since the test's first round started
    written_gb: tuple[float, ...]  # total written at the end of each round (10^9 bytes)
    iops: tuple[float, ...]
    lat_mean_ms: tuple[float, ...]
    lat_max_ms: tuple[float, ...]
    capacity_bytes: int
    final_rounds: tuple[int, ...]  # the last rounds, whose mean is the "saturated" value
    final_iops: float
    final_lat_ms: float
    rows: tuple[Row, ...]  # summary table


@dataclass(frozen=True)
class Headline:
    """One line of the summary: a read and a write number, with where they come from."""

    label: str  # "4k random", "128k sequential"
    read: float | None
    write: float | None
    unit: str
    detail: str  # conditions: "4 jobs × QD 32"
    basis: str  # "mean of rounds 21–25"
    steady: bool | None  # None: the test has no steady-state criterion
    anchor: str  # section of the test
    steady_rule: str = ""  # how the test's steady-state rule departs from the PTS's


@dataclass(frozen=True)
class TestReport:
    name: str
    title: str
    kind: str  # steady | saturation | fixed
    anchor: str
    metric: str  # iops | bw | lat_mean (of the first tracking variable)
    unit: str
    status: str  # complete | interrupted | failed | incomplete
    status_text: str
    steady: bool | None  # None for tests without a steady-state criterion
    verdict: str  # one sentence for a customer
    window: tuple[int, ...]
    window_basis: str  # "rounds 21–25 (steady state)"
    procedure: tuple[str, ...]  # paragraphs generated from the plan and the records
    parameters: tuple[Row, ...]
    tracking: tuple[str, ...]
    tracking_units: tuple[str, ...]
    convergence: tuple[Series, ...]
    convergence_title: str
    determinations: tuple[Determination, ...]
    rounds: tuple[RoundRow, ...]
    matrices: tuple[Matrix, ...]
    percentile_names: tuple[str, ...] = ()
    latency: tuple[LatencyRow, ...] = ()
    latency_blank_note: str = ""  # why percentiles of `latency` are blank (too few I/Os)
    histograms: tuple[Histogram, ...] = ()
    saturation: Saturation | None = None
    health: tuple[tuple[str, str, str], ...] = ()  # (quantity, before, after) of SMART data
    notes: tuple[str, ...] = ()
    queue_note: str = ""  # Little's law over the window (analysis.queue_check)
    queue_warn: bool = False
    # how its steady-state rule departs from the PTS's ("3-round window"; "": it does
    # not): its STEADY STATE is tkbench's by that rule (header.steady_rules)
    steady_rule: str = ""
    responses: ResponseTimes | None = None  # write saturation: ART, 5 9s, MRT per round
    temperature: TestTemperature | None = None  # the drive's, per round, and heat events
    response_histogram: HistogramPhase | None = None  # the phase after the rounds, if it ran
    stage: StagePart | None = None  # a stage's own chapter (report/stages.py)
    sweep: SweepReport | None = None  # a bulk-I/O sweep's tables and best combinations
    copy: CopyReport | None = None  # a copy test's runs per file set and data pattern
    hosts: tuple[HostMean, ...] = ()  # fio client/server mode: each host's window share
    repeat: RepeatPart | None = None  # a fixed test's runs and their spread (report/repeats.py)
    vfile: VfileReport | None = None  # a virtual-file test's nodes/s, cold and warm
    workload: WorkloadChapter | None = None  # a replay test's "Your workload on this drive"

    def matrix(self, key: str) -> Matrix | None:
        for m in self.matrices:
            if m.key == key:
                return m
        return None


@dataclass(frozen=True)
class CheckRow:
    """One PASS/FAIL check of the run (checks.json)."""

    name: str
    kind: str  # steady_state | criterion | regression
    passed: bool
    limit: str
    message: str


@dataclass(frozen=True)
class PtsClaim:
    """The first page's statement of conformance to the SNIA PTS variant the profile
    declares, with every departure (:mod:`tkbench.conformance.pts`)."""

    variant: str | None  # "E", "C"; None: no PTS claim
    conforms: bool
    statement: str
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (tests, departures in words)
    # page 1's count of them: (a test's title, or a group's tests, how many departures
    # concern it), in the order page 1 lists them (report/header.py: departure_counts)
    counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Report:
    title: str
    operator: str
    organisation: str
    paper: str  # A4 | Letter
    generated: float
    synthetic: bool
    emulated: bool
    run_status: str  # complete | interrupted | failed | running
    status_text: str
    device_line: str  # model, serial, firmware: the running header
    headlines: tuple[Headline, ...]
    summary: tuple[str, ...]
    device: tuple[Row, ...]
    platform: tuple[Row, ...]
    run: tuple[Row, ...]
    setup: tuple[Row, ...]
    tests: tuple[TestReport, ...]
    not_run: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    run_dir: str = ""
    tkbench_version: str = ""
    alerts: tuple[str, ...] = field(default=())  # red banners on the first page
    warnings: tuple[str, ...] = field(default=())  # amber notes on the first page
    flag: str = ""  # the running header's warning: synthetic, emulated, incomplete
    checks: tuple[CheckRow, ...] = ()
    checks_passed: bool | None = None  # None: the run has no checks
    checks_baseline: str = ""
    pts: PtsClaim | None = None  # None: a model made without it
    recipes: RecipeTable | None = None  # recipes run plainly and with fsync (report/repeats.py)
