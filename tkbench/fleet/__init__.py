"""Several drives on one host, in parallel: one independent ``tkbench run`` per target.

One module per concern: the targets checked together before anything starts
(:mod:`.together`), the drives and their run directories (:mod:`.drives`), what the
plan says of the host (:mod:`.host`), the children started, watched and signalled
(:mod:`.supervisor`), their reports rendered a few at a time (:mod:`.reports`), their
exit codes (:mod:`.outcomes`), ``fleet.json`` (:mod:`.record`), the summary
(:mod:`.summary`) and each drive's progress read from its lines (:mod:`.progress`).
What the CLI and the tests use is re-exported here, but the summary: it reads the
runs' results through the test types, which a command that only starts a fleet
(or ``--help``) need not load.
"""

from __future__ import annotations

from tkbench.errors import EXIT_INTERRUPTED
from tkbench.fleet.drives import Drive, plan_drives, run_name, unique
from tkbench.fleet.host import cpu_cores, fio_jobs, oversubscription, pci_path, sharing_warnings
from tkbench.fleet.outcomes import OUTCOMES, exit_code_of, outcome, worst
from tkbench.fleet.progress import STATUS_ENV, DriveState, fields, line_kind
from tkbench.fleet.record import (
    FLEET_FILE,
    FORMAT,
    VERSION,
    FleetRecord,
    RunEntry,
    is_fleet,
    new_record,
    unfinished,
)
from tkbench.fleet.reports import REPORTS_ENV, ReportSlots, default_jobs, report_turn
from tkbench.fleet.supervisor import PARENT_ENV, Child, Fleet, bind_to_parent, child_command
from tkbench.fleet.together import check_together, reach, sized

__all__ = [
    "EXIT_INTERRUPTED",
    "FLEET_FILE",
    "FORMAT",
    "OUTCOMES",
    "PARENT_ENV",
    "REPORTS_ENV",
    "STATUS_ENV",
    "VERSION",
    "Child",
    "Drive",
    "DriveState",
    "Fleet",
    "FleetRecord",
    "ReportSlots",
    "RunEntry",
    "bind_to_parent",
    "check_together",
    "child_command",
    "cpu_cores",
    "default_jobs",
    "exit_code_of",
    "fields",
    "fio_jobs",
    "is_fleet",
    "line_kind",
    "new_record",
    "outcome",
    "oversubscription",
    "pci_path",
    "plan_drives",
    "reach",
    "report_turn",
    "run_name",
    "sharing_warnings",
    "sized",
    "unfinished",
    "unique",
    "worst",
]
