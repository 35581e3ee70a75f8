"""What the dashboard shows, from the history's entries (pure, but for looking at
whether a run's report is reachable from the site's directory).

Pages: one per drive model and firmware (:class:`ModelPage`), its runs grouped by
profile (:class:`ProfileSection`: a chart per headline number and per volume
benchmark figure, a line per serial, the newest :data:`ROWS_SHOWN` runs' rows),
the older runs' rows on pages of :data:`ROWS_PER_PAGE` (:class:`RunsPage`);
the index lists every drive (model and serial, :class:`DriveRow`) with its latest
run.  Regressions are the regression check of ``tkbench run`` (:func:`tkbench.outputs.checks.
regression_checks`) against the baseline that check would have used
(:func:`tkbench.history.baseline_of`: the previous complete run of the same drive
and profile), with the dashboard's threshold -- for a volume figure, beyond its runs'
noise too (:func:`tkbench.outputs.checks.volume_regression_checks`); acceptance
failures are the failed checks the run was indexed with (steady state, criteria).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from urllib.parse import quote

import numpy as np
from markupsafe import Markup

from tkbench.analysis import better_is_higher
from tkbench.history import Entry, baseline_of
from tkbench.history.parts import EntryChecks
from tkbench.kinds.figures import unit_of
from tkbench.outputs.checks import regression_checks, volume_regression_checks
from tkbench.vocab import metric

REPORTS = ("report.html", "report.pdf")  # what a run directory's report is called, preferred first
# a model page lists the newest runs of each profile; older ones are on pages of their
# own, so that no page grows with the history (a lab's year: thousands of runs a model)
ROWS_SHOWN = 100
ROWS_PER_PAGE = 300


def when(t: float | None) -> str:
    """A start time as the site shows it: UTC, to the minute (one lab, many time zones)."""
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))


def number(v: float) -> str:
    """A headline value for people: whole numbers from 1000 on (thousands separated),
    else four significant digits."""
    if not math.isfinite(v):
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 10:
        return f"{v:.2f}"
    if abs(v) >= 1:
        return f"{v:.3f}"
    return f"{v:.4g}"


@dataclass(frozen=True)
class Report:
    """Where a run's report is, as seen from the site's directory."""

    href: str | None  # relative URL of report.html (else report.pdf); None: not reachable
    pdf_href: str | None  # report.pdf beside the HTML one, when both are there
    path: str  # the run directory as indexed (shown as text when there is no link)
    note: str  # why there is no link ("" when there is one)


def find_report(run_dir: str, site_dir: Path) -> Report:
    """The run's report, linked relatively from ``site_dir`` when it is on this
    machine's file system; else the run directory as text and why."""
    root = Path(run_dir)
    if not root.is_absolute():
        return Report(None, None, run_dir, "not an absolute path")
    try:
        if not root.is_dir():
            return Report(None, None, run_dir, "run directory not on this machine")
        found = [root / name for name in REPORTS if (root / name).is_file()]
    except OSError:
        return Report(None, None, run_dir, "run directory cannot be read here")
    if not found:
        return Report(None, None, run_dir, "no report in the run directory")

    def url(p: Path) -> str:
        return quote(os.path.relpath(p, site_dir), safe="/")

    pdf = url(found[1]) if len(found) == 2 else None
    return Report(url(found[0]), pdf, run_dir, "")


@dataclass(frozen=True)
class Regression:
    key: str  # the headline number: "TEST: METRIC BS MIX"
    message: str  # "-40.3 % against the run of ... (4.572e+04 -> 2.726e+04)"


@dataclass(frozen=True)
class RunView:
    """One run as the site shows it."""

    entry: Entry
    anchor: str  # its row's id on its page: "run-7"
    started: str  # :func:`when`
    report: Report
    acceptance: str  # "PASS", "FAIL" or "not checked" (indexed without checks)
    failed_checks: tuple[str, ...]  # "NAME: MESSAGE" of each failed acceptance check
    regressions: tuple[Regression, ...]
    regression_state: str  # "none", "N regressions", "no baseline", "not checked", "off"
    baseline: str | None  # the baseline run's start time (:func:`when`), when there was one
    row_page: str = ""  # the file its row is on (a model page, or a page of older runs)

    def row_link(self, here: str) -> str:
        """Its row, as linked from the page ``here``."""
        if self.row_page in ("", here):
            return f"#{self.anchor}"
        return f"{self.row_page}#{self.anchor}"

    @cached_property
    def regressed(self) -> frozenset[str]:
        return frozenset(r.key for r in self.regressions)

    @cached_property
    def flagged(self) -> bool:
        """Failed acceptance or did not complete: a point to draw on every chart."""
        return self.acceptance == "FAIL" or self.entry.status != "complete"

    @cached_property
    def numbers(self) -> dict[str, float]:
        """Its headline numbers and its volume figures (keyed ``"TEST NAME"``)."""
        if not self.entry.volume:
            return self.entry.headline  # read only: one dict a run, not two
        return {**self.entry.headline, **{k: f.value for k, f in self.entry.volume.items()}}

    @property
    def verdict(self) -> str:
        """One word for the run: FAIL (acceptance), REGRESSION, PASS or the status."""
        if self.acceptance == "FAIL":
            return "FAIL"
        if self.regressions:
            return "REGRESSION"
        if self.entry.status != "complete":
            return self.entry.status.upper()
        return "PASS" if self.acceptance == "PASS" else "OK"


@dataclass(frozen=True)
class Series:
    serial: str
    runs: tuple[RunView, ...]  # those with a start time and this number, oldest first
    times: np.ndarray  # their start times and this number, as arrays (a chart's input)
    values: np.ndarray


@dataclass(frozen=True)
class Trend:
    """One headline number of one profile over time: a chart, a line per serial."""

    key: str
    title: str  # "iops: IOPS, 4k 0/100"
    unit: str
    higher_is_better: bool
    series: tuple[Series, ...]


@dataclass(frozen=True)
class RunsPage:
    """A page of older runs of one profile of a model and firmware: their rows only."""

    model: str
    firmware: str
    profile: str
    filename: str
    main: str  # the model page's file name
    keys: tuple[str, ...]
    runs: tuple[RunView, ...]  # newest first
    first: int  # the place of its first and last run among the profile's, newest first
    last: int
    total: int


@dataclass(frozen=True)
class ProfileSection:
    profile: str
    keys: tuple[str, ...]  # the headline numbers of its runs, in the order runs have them
    trends: tuple[Trend, ...]
    runs: tuple[RunView, ...]  # the newest (ROWS_SHOWN), newest first: the model page's rows
    total: int = 0  # runs of the profile, also those on pages of older runs
    older: tuple[RunsPage, ...] = ()


@dataclass(frozen=True)
class SerialRow:
    serial: str
    runs: int
    latest: RunView


@dataclass(frozen=True)
class ModelPage:
    model: str
    firmware: str
    filename: str
    serials: tuple[SerialRow, ...]
    sections: tuple[ProfileSection, ...]

    @property
    def runs(self) -> int:
        return sum(s.total for s in self.sections)


@dataclass(frozen=True)
class DriveRow:
    """A drive (model and serial) on the index: its latest run, its pages."""

    model: str
    serial: str
    runs: int
    latest: RunView
    page: str  # the page of the latest run's firmware
    other_pages: tuple[tuple[str, str], ...]  # (firmware, filename) of its earlier firmwares


@dataclass(frozen=True)
class Site:
    drives: tuple[DriveRow, ...]
    pages: tuple[ModelPage, ...]
    threshold: float
    runs: int

    @property
    def page_count(self) -> int:
        return len(self.pages)

    @property
    def runs_pages(self) -> tuple[RunsPage, ...]:
        return tuple(o for p in self.pages for s in p.sections for o in s.older)


def page_name(model: str, firmware: str) -> str:
    """A page's file name: readable where the name allows, unique by a digest of both
    (a hostile or odd model name cannot reach outside the site's directory)."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{model} {firmware}".lower()).strip("-")[:48].strip("-")
    digest = hashlib.sha256(f"{model}\0{firmware}".encode()).hexdigest()[:10]
    return f"drive-{slug or 'unnamed'}-{digest}.html"


def runs_page_name(model: str, firmware: str, profile: str, number: int) -> str:
    """The file name of a page of older runs: the model page's, the profile's digest
    and the page's number (2 for the first page of older runs)."""
    digest = hashlib.sha256(profile.encode()).hexdigest()[:8]
    return f"{page_name(model, firmware).removesuffix('.html')}-{digest}-{number}.html"


def _row_pages(views: Sequence[RunView]) -> dict[int, str]:
    """Where each run's row goes (by ``id`` of its view): the newest :data:`ROWS_SHOWN`
    runs of each model, firmware and profile on the model page, older ones on pages
    of :data:`ROWS_PER_PAGE`."""
    groups: dict[tuple[str, str, str], list[RunView]] = defaultdict(list)
    for v in views:
        groups[(v.entry.model, v.entry.firmware, v.entry.profile)].append(v)
    out = {}
    for (model, firmware, profile), group in groups.items():
        for i, v in enumerate(sorted(group, key=_start, reverse=True)):
            if i < ROWS_SHOWN:
                out[id(v)] = page_name(model, firmware)
            else:
                number = (i - ROWS_SHOWN) // ROWS_PER_PAGE + 2
                out[id(v)] = runs_page_name(model, firmware, profile, number)
    return out


def _title(key: str) -> tuple[str, str]:
    """``"iops: iops 4k 0/100"`` -> (``"iops: IOPS, 4k 0/100"``, ``"IOPS"``); a volume
    figure ``"copy iso.random.mb_s"`` -> (``"copy: iso.random"``, ``"MB/s"``)."""
    if ": " not in key:
        test, _, name = key.partition(" ")
        unit = unit_of(name)
        if unit:
            return f"{test}: {name.rsplit('.', 1)[0] if '.' in name else name}", unit
    test, _, rest = key.partition(": ")
    name, _, point = rest.partition(" ")
    try:
        m = metric(name)
    except ValueError:
        return key, ""
    return f"{test}: {m.name}, {point}", m.unit


def _higher_is_better(key: str) -> bool:
    if ": " not in key and unit_of(key.partition(" ")[2]):
        return True  # a volume figure: MB/s or nodes/s
    try:
        return better_is_higher(key)
    except ValueError:  # a metric this tkbench does not know (a newer rig's): shown only
        return True


def _known(headline: dict[str, float]) -> dict[str, float]:
    """The numbers whose direction this tkbench knows: those it can check.  A lab's
    history may hold runs of a newer tkbench with metrics this one lacks."""
    if all(map(_checkable, headline)):
        return headline  # read only, like the entry's
    return {key: value for key, value in headline.items() if _checkable(key)}


@lru_cache(maxsize=4096)
def _checkable(key: str) -> bool:
    """Whether this tkbench knows the direction of a headline number (a history holds
    the same few keys in every run: asked once each)."""
    try:
        better_is_higher(key)
    except ValueError:
        return False
    return True


def value_cells(run: RunView, keys: Sequence[str]) -> Markup:
    """The cells of a run's numbers in a table's row, one per key (``-`` where the run
    has none), a regressed one marked: HTML made here rather than by a template loop,
    since a lab's history has tens of thousands of rows of tens of numbers."""
    cells = []
    numbers, regressed = run.numbers, run.regressed
    for key in keys:
        value = numbers.get(key)
        mark = " regression" if key in regressed else ""
        text = number(value) if value is not None else "-"  # digits and signs: no escaping
        cells.append(f'<td class="num value{mark}">{text}</td>')
    return Markup("\n".join(cells))


def _slim(e: Entry) -> Entry:
    """The entry as the site needs it, taken as it is read: of its checks only the
    failed acceptance checks (what :func:`_acceptance` shows), no repeated points (a
    lab's year is tens of thousands of entries in memory at once)."""
    checks = e.checks
    if checks is not None:
        checks = EntryChecks(checks.passed, checks.failed_acceptance())
    return replace(e, checks=checks, repeats=None)


def _acceptance(e: Entry) -> tuple[str, tuple[str, ...]]:
    if e.checks is None:
        return "not checked", ()
    failed = tuple(f"{c.name}: {c.message}" for c in e.checks.failed_acceptance())
    return ("FAIL" if failed else "PASS"), failed


class Baselines:
    """The baseline of each run of one drive, found without going through all of the
    drive's runs for each: its complete runs per profile, sorted by start time once,
    and for a run only those that started last before it handed to
    :func:`tkbench.history.baseline_of` (the one rule of ``tkbench run``)."""

    def __init__(self, same_drive: Sequence[Entry]) -> None:
        by_profile: dict[str, list[Entry]] = defaultdict(list)
        for e in same_drive:
            if e.status == "complete":
                by_profile[e.profile].append(e)
        self.complete = {p: sorted(es, key=_begun) for p, es in by_profile.items()}
        self.begun = {p: [_begun(e) for e in es] for p, es in self.complete.items()}

    def of(self, e: Entry) -> Entry | None:
        begun = self.begun.get(e.profile, [])
        k = bisect.bisect_left(begun, e.started or 0)
        if k == 0:
            return None
        # the latest start time before the run's; every run of that time is a candidate
        j = bisect.bisect_left(begun, begun[k - 1])
        return baseline_of(
            self.complete[e.profile][j:k],
            model=e.model,
            serial=e.serial,
            profile=e.profile,
            started=e.started,
            run_dir=e.run_dir,
            run_id=e.run_id,
        )


def _begun(e: Entry) -> float:
    return e.started or 0


def _beyond(
    current: dict[str, float], baseline: dict[str, float], threshold: float
) -> dict[str, float]:
    """The numbers of ``current`` that differ from the baseline's by more than
    ``threshold`` % either way, or are not finite: the only ones the regression check
    (:func:`tkbench.outputs.checks.regression_checks`) can fail, since a change within
    the threshold is within it whichever way is better.  Only these are handed to it
    (its messages cost more than the rest of a run's view); the judgement is its own."""
    within = threshold * (1 - 1e-9) / 100.0  # a hair inside: rounding never hides one
    out = {}
    for key, now in current.items():
        before = baseline.get(key)
        if before is not None and not abs(now - before) <= within * abs(before):
            out[key] = now
    return out


class Reports:
    """:func:`find_report` for the runs of a history: a run directory whose parent is
    not on this machine (another rig's) is known so without a look per run."""

    def __init__(self, site_dir: Path) -> None:
        self.site_dir = site_dir
        self.absent: dict[str, bool] = {}

    def __call__(self, run_dir: str) -> Report:
        parent = os.path.dirname(run_dir)
        absent = self.absent.get(parent)
        if absent is None:
            try:
                os.stat(parent)
                absent = False
            except (FileNotFoundError, NotADirectoryError):
                absent = os.path.isabs(run_dir)
            except OSError:
                absent = False  # find_report says what
            self.absent[parent] = absent
        if absent:
            return Report(None, None, run_dir, "run directory not on this machine")
        return find_report(run_dir, self.site_dir)


def _view(
    e: Entry, anchor: str, baselines: Baselines, threshold: float, reports: Reports
) -> RunView:
    acceptance, failed = _acceptance(e)
    regressions: tuple[Regression, ...] = ()
    baseline = None
    if threshold <= 0:
        state = "off"
    elif e.status != "complete":
        state = "not checked"  # as tkbench run: only a complete run is checked
    else:
        base = baselines.of(e)
        if base is None:
            state = "no baseline"
        else:
            baseline = when(base.started)
            label = f"the run of {baseline}"
            before = _known(base.headline)
            suspects = _beyond(_known(e.headline), before, threshold)
            checks = regression_checks(
                suspects, before, threshold, label
            ) + volume_regression_checks(e.figure_runs(), base.figure_runs(), threshold, label)
            regressions = tuple(
                Regression(c.name.removeprefix("regression: "), c.message)
                for c in checks
                if not c.passed
            )
            n = len(regressions)
            state = "none" if not n else f"{n} regression{'s' if n > 1 else ''}"
    return RunView(
        entry=e,
        anchor=anchor,
        started=when(e.started),
        report=reports(e.run_dir),
        acceptance=acceptance,
        failed_checks=failed,
        regressions=regressions,
        regression_state=state,
        baseline=baseline,
    )


def _start(v: RunView) -> tuple[bool, float, str]:
    return (v.entry.started is not None, v.entry.started or 0.0, v.entry.run_dir)


def _section(profile: str, views: list[RunView]) -> ProfileSection:
    ordered = sorted(views, key=_start)
    keys: dict[str, None] = {}
    by_serial: dict[str, list[RunView]] = defaultdict(list)
    for v in ordered:
        keys.update(dict.fromkeys(v.numbers))
        if v.entry.started is not None:
            by_serial[v.entry.serial].append(v)
    # each serial's runs as arrays, a row per run and a column per number (NaN: none),
    # read once rather than once per number
    columns = {}
    for serial, mine in sorted(by_serial.items()):
        times = np.fromiter((v.entry.started for v in mine), float, len(mine))
        values = np.array([[v.numbers.get(k, math.nan) for k in keys] for v in mine], float)
        values = values.reshape(len(mine), len(keys))
        columns[serial] = (mine, times, values, np.isfinite(values))
    trends = []
    for j, key in enumerate(keys):
        series = []
        for serial, (mine, times, values, finite) in columns.items():
            has = finite[:, j]
            if has.all():
                series.append(Series(serial, tuple(mine), times, values[:, j]))
            elif has.any():
                runs = tuple(itertools.compress(mine, has.tolist()))
                series.append(Series(serial, runs, times[has], values[has, j]))
        title, unit = _title(key)
        trends.append(Trend(key, title, unit, _higher_is_better(key), tuple(series)))
    newest = ordered[::-1]
    return ProfileSection(
        profile, tuple(keys), tuple(trends), tuple(newest[:ROWS_SHOWN]), len(newest)
    )


def _older(page: ModelPage, section: ProfileSection, newest: list[RunView]) -> ProfileSection:
    """The section with its pages of older runs (its runs beyond the model page's)."""
    older = []
    for start in older_starts(len(newest)):
        runs = tuple(newest[start : start + ROWS_PER_PAGE])
        older.append(
            RunsPage(
                page.model,
                page.firmware,
                section.profile,
                runs[0].row_page,
                page.filename,
                section.keys,
                runs,
                start + 1,
                start + len(runs),
                len(newest),
            )
        )
    return replace(section, older=tuple(older))


@dataclass(frozen=True)
class ModelPart:
    """One drive model's share of the site: its pages and its drives' rows on the index."""

    pages: tuple[ModelPage, ...]
    drives: tuple[DriveRow, ...]
    runs: int


def older_starts(total: int) -> range:
    """Where each page of older runs starts among a profile's ``total`` runs, newest
    first (none when the model page holds them all)."""
    return range(ROWS_SHOWN, total, ROWS_PER_PAGE)


def page_names(groups: Iterable[tuple[str, str, str, int]]) -> list[str]:
    """The file names of the pages of the site, from its (model, firmware, profile,
    number of runs) groups (what :func:`each_model` makes of them: a history counts
    them without reading every run)."""
    out: dict[str, None] = {}
    for model, firmware, profile, total in groups:
        out[page_name(model, firmware)] = None
        for k in range(len(older_starts(total))):
            out[runs_page_name(model, firmware, profile, k + 2)] = None
    return list(out)


def build(entries: Iterable[Entry], threshold: float, site_dir: Path) -> Site:
    """The site's contents, whole.  ``site_dir``: where its pages will be (report links
    are relative to it)."""
    ordered = sorted(entries, key=lambda e: e.model)
    parts = list(each_model(ordered, threshold, site_dir))
    return Site(
        tuple(d for p in parts for d in p.drives),
        tuple(page for p in parts for page in p.pages),
        threshold,
        sum(p.runs for p in parts),
    )


def each_model(entries: Iterable[Entry], threshold: float, site_dir: Path) -> Iterator[ModelPart]:
    """The site's contents one drive model at a time, from entries in the history's
    order (by model first: each model's runs come together), so that a lab's year
    is never in memory at once.  Its runs are numbered (their rows' anchors) across
    the models, as :func:`build` numbers them."""
    done = 0
    for _model, mine in itertools.groupby(entries, key=lambda e: e.model):
        part = _model_part(mine, threshold, site_dir, done)
        done += part.runs
        yield part


def _model_part(entries: Iterable[Entry], threshold: float, site_dir: Path, done: int) -> ModelPart:
    """The pages and drives of the entries of one model; ``done``: runs numbered before."""
    by_drive: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for e in entries:
        by_drive[(e.model, e.serial)].append(_slim(e))
    reports = Reports(site_dir)
    views: list[RunView] = []
    for drive in by_drive.values():
        baselines = Baselines(drive)
        for e in drive:
            views.append(_view(e, "", baselines, threshold, reports))
    views.sort(key=lambda v: (v.entry.model, v.entry.firmware, *_start(v)))
    rows = _row_pages(views)
    views = [
        replace(v, anchor=f"run-{i}", row_page=rows[id(v)])
        for i, v in enumerate(views, start=done + 1)
    ]

    by_page: dict[tuple[str, str], list[RunView]] = defaultdict(list)
    for v in views:
        by_page[(v.entry.model, v.entry.firmware)].append(v)
    pages = []
    for (model, firmware), page_views in sorted(by_page.items()):
        by_profile: dict[str, list[RunView]] = defaultdict(list)
        for v in page_views:
            by_profile[v.entry.profile].append(v)
        by_serial: dict[str, list[RunView]] = defaultdict(list)
        for v in page_views:
            by_serial[v.entry.serial].append(v)
        serials = tuple(
            SerialRow(s, len(vs), max(vs, key=_start)) for s, vs in sorted(by_serial.items())
        )
        sections = tuple(_section(p, vs) for p, vs in sorted(by_profile.items()))
        page = ModelPage(model, firmware, page_name(model, firmware), serials, sections)
        newest = {p: sorted(vs, key=_start, reverse=True) for p, vs in by_profile.items()}
        sections = tuple(_older(page, s, newest[s.profile]) for s in sections)
        pages.append(replace(page, sections=sections))

    views_of: dict[tuple[str, str], list[RunView]] = defaultdict(list)
    for v in views:
        views_of[(v.entry.model, v.entry.serial)].append(v)
    drives = []
    for (model, serial), mine in sorted(views_of.items()):
        latest = max(mine, key=_start)
        firmwares = sorted({v.entry.firmware for v in mine} - {latest.entry.firmware})
        drives.append(
            DriveRow(
                model,
                serial,
                len(mine),
                latest,
                page_name(model, latest.entry.firmware),
                tuple((fw, page_name(model, fw)) for fw in firmwares),
            )
        )
    return ModelPart(tuple(pages), tuple(drives), len(views))
