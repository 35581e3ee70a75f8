"""The run directory's records: one frozen dataclass per file, which owns its JSON.

Every record file of a run directory is read through its class here (``load``:
refuse a newer format, upgrade an older one, check every field) and written from
it (``to_json``); nothing else builds or parses one.  The classes' fields are the
formats; docs/run-directory.md says what they mean, each class's docstring keeps
its format history.
"""

from tkbench.rundir.records.base import Context, Record
from tkbench.rundir.records.histogram import ResponseHistogram
from tkbench.rundir.records.round import (
    Direction,
    FioCall,
    HostResult,
    PlannedPoint,
    PointResult,
    Round,
    Series,
    Thermal,
)
from tkbench.rundir.records.run import (
    KIND,
    SCHEMA,
    CheckItem,
    Checks,
    Host,
    Manifest,
    ProfileRef,
    Resume,
    TargetRecord,
    TargetState,
)
from tkbench.rundir.records.test import (
    Failure,
    Limits,
    OperatingPoint,
    Precondition,
    PreconditionPlan,
    Purge,
    Result,
    TestPlan,
    VerdictRecord,
    Workload,
)

__all__ = [
    "KIND",
    "SCHEMA",
    "CheckItem",
    "Checks",
    "Context",
    "Direction",
    "Failure",
    "FioCall",
    "Host",
    "HostResult",
    "Limits",
    "Manifest",
    "OperatingPoint",
    "PlannedPoint",
    "PointResult",
    "Precondition",
    "PreconditionPlan",
    "ProfileRef",
    "Purge",
    "Record",
    "ResponseHistogram",
    "Result",
    "Resume",
    "Round",
    "Series",
    "TargetRecord",
    "TargetState",
    "TestPlan",
    "Thermal",
    "VerdictRecord",
    "Workload",
]
