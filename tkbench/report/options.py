"""Report options: what the command line gives, else the run's profile ``[report]`` table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tkbench.errors import InputError
from tkbench.rundir.records import Manifest
from tkbench.rundir.records.base import build

PAPERS = {"a4": "A4", "letter": "Letter"}
DEFAULT_TITLE = "SSD Performance Report"


@dataclass(frozen=True)
class ReportOptions:
    title: str
    operator: str
    organisation: str
    logo: Path | None
    paper: str


@dataclass(frozen=True)
class ReportTable:
    """The run's profile's ``[report]`` table as the manifest keeps it resolved (a key
    it lacks, or a run made before the table existed: the built-in default)."""

    title: str | None = None
    operator: str | None = None
    organisation: str | None = None
    logo: str | None = None
    paper: str | None = None


@dataclass(frozen=True)
class _Resolved:
    """What the report reads of the resolved profile (its other tables aside)."""

    report: ReportTable = ReportTable()


def normalise_paper(paper: str) -> str:
    try:
        return PAPERS[paper.strip().lower()]
    except KeyError:
        raise InputError(f"paper size {paper!r}: use A4 or Letter") from None


def resolve_options(
    manifest: Manifest,
    *,
    title: str | None = None,
    operator: str | None = None,
    organisation: str | None = None,
    logo: str | Path | None = None,
    paper: str | None = None,
) -> ReportOptions:
    """Explicit options win; the rest comes from the run's profile ``[report]`` table.

    A relative logo path from the profile is taken relative to the profile file.
    """
    profile = manifest.profile
    where = Path("manifest.json")  # the profile's [report] table, as resolved
    defaults = build(_Resolved, dict(profile.resolved), where, "profile.resolved.").report
    logo_path: Path | None = None
    if logo is not None and str(logo):
        logo_path = Path(logo)
    elif defaults.logo:
        logo_path = Path(defaults.logo)
        source = profile.source
        if not logo_path.is_absolute() and source:
            logo_path = Path(source).parent / logo_path
    return ReportOptions(
        title=_first_text(title, defaults.title, DEFAULT_TITLE),
        operator=_first_text(operator, defaults.operator, ""),
        organisation=_first_text(organisation, defaults.organisation, ""),
        logo=logo_path,
        paper=normalise_paper(_first_text(paper, defaults.paper, "A4")),
    )


def _first_text(*values: object) -> str:
    for v in values:
        if v is not None and str(v) != "":
            return str(v)
    return ""
