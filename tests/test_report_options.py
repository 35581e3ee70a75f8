"""The report's options from the run's profile ``[report]`` table, as the manifest
keeps it resolved: read once into a typed record (tkbench.report.options.ReportTable),
the command line's options first.  Real kept run directory, no fake."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tkbench.errors import RunDirError
from tkbench.report.options import DEFAULT_TITLE, resolve_options
from tkbench.rundir.records import Manifest
from tkbench.rundir.store import load_run

KEPT = Path(__file__).resolve().parent / "data" / "rundirs" / "file-a"


def _manifest(report: Any, source: str = "/srv/profiles/mine.toml") -> Manifest:
    m = load_run(KEPT).manifest
    resolved = {k: v for k, v in m.profile.resolved.items() if k != "report"}
    if report is not None:
        resolved["report"] = report
    profile = dataclasses.replace(m.profile, resolved=resolved, source=source)
    return dataclasses.replace(m, profile=profile)


def test_the_table_fills_what_the_command_line_leaves_out() -> None:
    table = {"title": "Night 4", "operator": "", "organisation": "Lab", "logo": "l.png"}
    opts = resolve_options(_manifest(table | {"paper": "Letter"}), operator="Ann")
    assert (opts.title, opts.operator, opts.organisation) == ("Night 4", "Ann", "Lab")
    assert opts.paper == "Letter"
    assert opts.logo == Path("/srv/profiles/l.png")  # beside the profile it came from


def test_a_run_without_the_table_takes_the_defaults() -> None:
    opts = resolve_options(_manifest(None))
    assert (opts.title, opts.operator, opts.organisation, opts.logo, opts.paper) == (
        DEFAULT_TITLE,
        "",
        "",
        None,
        "A4",
    )


def test_a_table_of_the_wrong_shape_is_one_line_naming_the_field() -> None:
    with pytest.raises(RunDirError, match=r"field profile\.resolved\.report\.title is a"):
        resolve_options(_manifest({"title": 5}))
