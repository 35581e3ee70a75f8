"""What a value in a fio job file may hold (pure; the base of every path fio is given).

fio cuts a job-file value at ';' or '#' (comments) and expands '${VAR}': a path
holding one would make fio write somewhere no guard ever checked.  Kept apart from
:mod:`tkbench.fio.jobfile` so that the run directory and the targets can check their
paths without importing job-file rendering (and the plan behind it).
"""

from __future__ import annotations

import re

from tkbench.errors import InputError

UNSAFE = ("\n", "\r", ";", "#", "$")


def check_value(value: str, what: str) -> None:
    """InputError unless ``value`` reaches fio exactly as written."""
    bad = [c for c in UNSAFE if c in value]
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise InputError(
            f"{what} {value!r} contains {shown}, which fio's job files do not carry "
            "literally; use a path without it"
        )


def escape(value: str) -> str:
    """A job-file value as fio will read it; our own "$$" (the shell's pid in
    exec_postrun) passes, fio expands only ${VAR} and $keyword."""
    check_value(re.sub(r"\$\$(?![{A-Za-z])", "", value), "job file value")
    return value


def filename_value(path: str) -> str:
    """fio splits ``filename`` on ':'; escape it."""
    return escape(path).replace(":", "\\:")
