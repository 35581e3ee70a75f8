"""Render the dashboard's pages and write them into the site's directory.

The directory may hold other files: the dashboard writes only its own
(``index.html``, ``dashboard.css``, ``dashboard.js``, ``drive-*.html``), refuses to
overwrite a file of those names that it did not write (each carries
:data:`MARKER`), and removes only drive pages of its own that a new build no longer
has (a model or firmware pruned from the history).  Every file name is checked
before anything is written (the names come from the runs the history counts per
model, firmware and profile; a page of runs indexed since then is checked when it
comes); then each page is written as it is rendered, one drive model at a time, the
index last (a lab's year is hundreds of megabytes of pages and tens of thousands of
runs, never held whole).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from tkbench.dashboard.chart import Budget, Chart, build_chart, colour
from tkbench.dashboard.model import (
    DriveRow,
    ModelPage,
    ModelPart,
    RunView,
    Site,
    number,
    value_cells,
)
from tkbench.errors import InputError
from tkbench.outputs.files import check_output, run_directory_of, write_output
from tkbench.profile.paths import bundled
from tkbench.rundir.store import check_creatable

MARKER = "tkbench dashboard"  # in every file the dashboard writes, near its top
ASSETS = ("dashboard.css", "dashboard.js")  # copied as they are
PAGES = "drive-*.html"
# what the charts of one model page draw at most, shared among them (chart.Budget): a
# point is some 400 bytes of markup, a corner of a line some 12; with the newest runs'
# table (model.ROWS_SHOWN) a page stays near 1.5 MB whatever the history's size
MARKS_PER_PAGE = 2000
CORNERS_PER_PAGE = 30000


@dataclass(frozen=True)
class Written:
    index: Path
    files: tuple[Path, ...]
    removed: tuple[Path, ...]  # drive pages of an earlier build that this one has not


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(bundled("templates") / "dashboard"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=number, pct=lambda v: f"{v:g}")
    env.globals.update(
        value_cells=value_cells,
        verdict=verdict,
        acceptance=acceptance,
        regressions=regressions,
        report=report,
        swatch=swatch,
        run_rows=run_rows,
    )
    return env


# A run's row and its pieces, made here rather than by the templates: a lab's year is
# tens of thousands of rows, and Jinja's calls and escapes cost more than the row.


def verdict(run: RunView) -> Markup:
    v = escape(run.verdict)
    return Markup(f'<span class="verdict v-{v.lower()}">{v}</span>')


def acceptance(run: RunView) -> Markup:
    kind = escape(run.acceptance.replace(" ", "-").lower())
    return Markup(f'<span class="acc acc-{kind}">{escape(run.acceptance)}</span>')


def regressions(run: RunView) -> Markup:
    found = " reg-found" if run.regressions else ""
    return Markup(f'<span class="reg{found}">{escape(run.regression_state)}</span>')


def report(run: RunView) -> Markup:
    """A link to the run's report (and its PDF), else its directory and why not."""
    r = run.report
    if r.href:
        html = f'<a class="report" href="{escape(r.href)}">report</a>'
        if r.pdf_href:
            html += f' <a class="report" href="{escape(r.pdf_href)}">PDF</a>'
        return Markup(html)
    return Markup(
        f'<span class="path">{escape(r.path)}</span> <span class="note">({escape(r.note)})</span>\n'
    )


def swatch(colour: str) -> Markup:
    return Markup(
        '<svg class="swatch" width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">'
        f'<circle cx="6" cy="6" r="5" fill="{escape(colour)}"/></svg>'
    )


def run_rows(runs: Iterable[RunView], keys: Sequence[str], colours: Mapping[str, str]) -> Markup:
    """The rows of a table of runs, each ended by a newline."""
    return Markup("".join(f"{run_row(run, keys, colours)}\n" for run in runs))


def run_row(run: RunView, keys: Sequence[str], colours: Mapping[str, str]) -> Markup:
    """A run's row in a table of runs (``keys``: its numbers' columns)."""
    e = run.entry
    anchor = escape(run.anchor)
    rig = f' <span class="rig">(rig {escape(e.rig)})</span>' if e.rig else ""
    failed = regressed = ""
    if run.failed_checks:
        items = "".join(f"<li>{escape(c)}</li>" for c in run.failed_checks)
        failed = f'<ul class="failed-checks">{items}</ul>'
    if run.regressions:
        items = "".join(f"<li>{escape(g.key)}: {escape(g.message)}</li>" for g in run.regressions)
        regressed = f'<ul class="regressions">{items}</ul>'
    return Markup(
        f'<tr class="run" id="{anchor}" data-run="{anchor}">\n'
        f'<td class="when">{escape(run.started)}</td>\n'
        f'<td class="serial">{swatch(colours[e.serial])} {escape(e.serial)}</td>\n'
        f"<td>{escape(e.host)}{rig}</td>\n"
        f'<td class="status">{escape(e.status)}</td>\n'
        f"<td>{acceptance(run)}{failed}</td>\n"
        f"<td>{regressions(run)}{regressed}</td>\n"
        f"{value_cells(run, keys)}\n"
        f"<td>{report(run)}</td>\n"
        "</tr>"
    )


def _ours(path: Path) -> bool:
    """Whether a file was written by the dashboard (its marker near the top)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return MARKER.encode() in head


def check_out_dir(out: Path) -> None:
    """Refuse, before any work, a ``--out`` the site cannot be written into: a file,
    a place that cannot be created, no write permission."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is not a directory")
    run = run_directory_of(out / "index.html")
    if run is not None:
        raise InputError(f"--out {out} is inside the run directory {run}: give another directory")
    check_creatable(out / "index.html", "--out")


def _check_names(out: Path, names: list[str]) -> None:
    for name in names:
        path = out / name
        if path.is_dir() or ((path.exists() or path.is_symlink()) and not _ours(path)):
            raise InputError(
                f"--out {out}: {name} is there and was not written by tkbench dashboard; "
                "give a new or empty directory, or the dashboard's own"
            )
        check_output(path, "--out")  # the rule of every output path (not a run's record)


def render(site: Site, location: str, built: float | None = None) -> dict[str, str]:
    """Every page of the site: file name -> HTML."""
    return dict(each_page(site, location, built))


def each_page(site: Site, location: str, built: float | None = None) -> Iterator[tuple[str, str]]:
    """The site's pages, (file name, HTML), one at a time, the index first."""
    env = _environment()
    common = _common(location, built, site.threshold)
    yield "index.html", env.get_template("index.html.j2").render(site=site, **common)
    for page in site.pages:
        yield from _model_pages(env, page, common)


@dataclass
class Index:
    """What the index shows, gathered as the model pages are made (:func:`each_part_page`)."""

    threshold: float
    drives: list[DriveRow] = field(default_factory=list)
    runs: int = 0
    page_count: int = 0


def each_part_page(
    parts: Iterable[ModelPart],
    location: str,
    threshold: float,
    index: Index,
    built: float | None = None,
) -> Iterator[tuple[str, str]]:
    """The pages of a site made one drive model at a time (:func:`.model.each_model`),
    (file name, HTML) as they are made, the index last: a lab's year is hundreds of
    megabytes of HTML and thousands of runs per model, written as they are made rather
    than held whole.  ``index`` gathers the drives, runs and pages."""
    env = _environment()
    common = _common(location, built, threshold)
    for part in parts:
        for page in part.pages:
            yield from _model_pages(env, page, common)
        index.drives.extend(part.drives)
        index.runs += part.runs
        index.page_count += len(part.pages)
    yield "index.html", env.get_template("index.html.j2").render(site=index, **common)


def _common(location: str, built: float | None, threshold: float) -> dict[str, Any]:
    return {
        "marker": MARKER,
        "location": location,
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(built or time.time())),
        "threshold": threshold,
    }


def _model_pages(
    env: jinja2.Environment, page: ModelPage, common: dict[str, Any]
) -> Iterator[tuple[str, str]]:
    """A model page and its pages of older runs."""
    drawn = _page_charts(page)
    yield page.filename, env.get_template("drive.html.j2").render(page=page, **common, **drawn)
    older = env.get_template("runs.html.j2")
    for section in page.sections:
        for runs in section.older:
            yield runs.filename, older.render(runs=runs, colours=drawn["colours"], **common)


def _page_charts(page: ModelPage) -> dict[str, Any]:
    serial_index = {s.serial: i for i, s in enumerate(page.serials)}
    count = sum(1 for section in page.sections for t in section.trends if t.series)
    budget = Budget(
        marks=max(len(serial_index), MARKS_PER_PAGE // max(count, 1)),
        path=max(2 * len(serial_index), CORNERS_PER_PAGE // max(count, 1)),
    )
    charts: dict[str, dict[str, Chart]] = {}
    for section in page.sections:
        charts[section.profile] = {
            t.key: build_chart(t, serial_index, page.filename, budget)
            for t in section.trends
            if t.series
        }
    return {
        "serial_index": serial_index,
        "colours": {s: colour(i) for s, i in serial_index.items()},
        "charts": charts,
    }


def write(
    out: Path, pages: Mapping[str, str] | Iterable[tuple[str, str]], names: list[str] | None = None
) -> Written:
    """Write the pages and assets into ``out`` (made if missing).  ``pages``: file name
    to HTML, or (file name, HTML) pairs as they are made, whose ``names`` are given
    (every name is checked before the first page is written)."""
    if isinstance(pages, Mapping):
        names, pages = list(pages), list(pages.items())
    assert names is not None
    check_out_dir(out)
    if out.is_dir():
        _check_names(out, [*names, *ASSETS])
    files = []
    checked = set(names)
    for name, html in pages:
        if name not in checked:  # runs indexed since the names were counted: a new page
            _check_names(out, [name])
            checked.add(name)
        write_output(out / name, html, "--out")
        files.append(out / name)
    for name in ASSETS:
        write_output(out / name, (bundled("templates") / "dashboard" / name).read_bytes(), "--out")
        files.append(out / name)
    removed = []
    kept = {f.name for f in files}
    for old in sorted(out.glob(PAGES)):
        if old.name not in kept and old.is_file() and not old.is_symlink() and _ours(old):
            old.unlink()
            removed.append(old)
    return Written(out / "index.html", tuple(files), tuple(removed))
