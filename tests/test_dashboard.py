"""``tkbench dashboard``: the static site of the history, checked in a real headless
Chromium (tests/_chromium.py) and as files.

A lab history is made from copies of the kept run directories (tests/data/rundirs/)
renamed to drives: two serials of one model on two firmwares with a regression, an
acceptance failure and an interrupted run, and a drive whose model, firmware, serial
and host are hostile HTML.  The done-when test makes two real runs into PostgreSQL.
Screenshots of every page loaded are kept in build/test-artefacts/dashboard/.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from tests._chromium import Browser, Page
from tkbench import cli, history
from tkbench.dashboard import build_site
from tkbench.dashboard.chart import nice_ticks
from tkbench.dashboard.model import number, page_name
from tkbench.dashboard.site import render as build_pages
from tkbench.history import Entry, VolumeFigure, baseline_of
from tkbench.outputs.checks import criterion_checks
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import Checks
from tkbench.rundir.store import load_run

RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"
ARTEFACTS = Path(__file__).resolve().parents[1] / "build" / "test-artefacts" / "dashboard"
DAY = 86400.0
T0 = 1_795_417_200.0  # 2026-11-23 07:00 UTC, the kept runs' day

MODEL, FW1, FW2 = "Acme NVMe 3000", "1.0", "2.0"
EVIL_MODEL = '<script>alert("model")</script><img src=x onerror="alert(1)"> & Co'
EVIL_FW = '"><svg onload=alert(2)>'
EVIL_SERIAL = "'; alert(3); '<b>bold</b>"
EVIL_HOST = "<i>rig</i>"


def tk(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str], match: str) -> None:
    code, out, err = tk(argv, capsys)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("tkbench: error: "), err
    assert match in err, err
    assert out == ""


def drive_copy(
    src: str,
    dst: Path,
    *,
    started: float,
    model: str = MODEL,
    serial: str = "S1",
    firmware: str = FW1,
    status: str = "complete",
    host: str | None = None,
) -> Path:
    """A kept run directory copied and renamed to a drive, started at ``started``."""
    shutil.copytree(RUNDIRS / src, dst)
    manifest = dst / "manifest.json"
    data = json.loads(manifest.read_text())
    data["target"]["identity"].update(model=model, serial=serial, firmware=firmware)
    duration = data["ended"] - data["started"]
    data.update(started=started, ended=started + duration, status=status, run_id=str(uuid.uuid4()))
    if host is not None:
        data["host"]["hostname"] = host
    manifest.write_text(json.dumps(data))
    return dst


def stand_in_report(run: Path, pdf: bool = True) -> None:
    """A report file where the report would be (the report itself is not under test)."""
    (run / "report.html").write_text(
        f"<!DOCTYPE html><html><head><title>stand-in report of {run.name}</title></head>"
        "<body><p>stand-in</p></body></html>"
    )
    if pdf:
        (run / "report.pdf").write_bytes(b"%PDF-1.4\n% stand-in\n")


@dataclass
class Lab:
    root: Path
    location: str
    runs: dict[str, Path]
    site: Path


def make_lab(root: Path) -> Lab:
    """The lab history (an SQLite file) and its runs; see the module docstring."""
    runs = {
        "r1": drive_copy("file-b", root / "r1", started=T0),
        "r2": drive_copy("file-a", root / "r2", started=T0 + DAY),
        "r3": drive_copy("resumed", root / "r3", started=T0 + 2 * DAY),
        "r4": drive_copy("file-a", root / "r4", started=T0 + DAY + 3600, serial="S2"),
        "r5": drive_copy(
            "file-b", root / "r5", started=T0 + 2 * DAY + 3600, serial="S2", status="interrupted"
        ),
        "r6": drive_copy("emu", root / "r6", started=T0 + 3 * DAY, firmware=FW2),
        "r7": drive_copy(
            "emu",
            root / "r7",
            started=T0 + 3 * DAY,
            model=EVIL_MODEL,
            serial=EVIL_SERIAL,
            firmware=EVIL_FW,
            host=EVIL_HOST,
        ),
    }
    stand_in_report(runs["r1"])
    stand_in_report(runs["r6"], pdf=False)
    location = str(root / "lab.sqlite")
    h = history.open_history(location)
    acceptance = load_profile(
        "quick", ['acceptance.criteria=["iops iops 4k 0/100 >= 50000"]']
    ).acceptance
    r4 = load_run(runs["r4"])
    failed = Checks.of(criterion_checks(r4, acceptance), evaluated=T0 + DAY + 4000)
    h.index([(load_run(runs[r]), None) for r in ("r1", "r2", "r3")], rig="rig-1")
    h.index([(r4, failed)])
    h.index([(load_run(runs[r]), None) for r in ("r5", "r6", "r7")])
    shutil.rmtree(runs["r7"])  # indexed elsewhere: its directory is not on this machine
    return Lab(root, location, runs, root / "site")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    """The lab history and its dashboard, built once for the module's browser tests."""
    made = make_lab(tmp_path_factory.mktemp("lab"))
    built = build_site(history.open_history(made.location), made.site, threshold=10)
    assert built.index == made.site / "index.html"
    return made


def page_url(path: Path) -> str:
    return path.resolve().as_uri()


def load(page: Page, path: Path, shot: str) -> None:
    """Load a page of the site, keep its screenshot, and check it logged no error and
    ran no script it should not have (an alert() of a hostile name)."""
    page.errors.clear()
    page.goto(page_url(path))
    png = page.screenshot(ARTEFACTS / f"{shot}.png")
    print(f"screenshot: {png}")
    assert png.stat().st_size > 5000
    assert page.errors == [], page.errors
    assert page.dialogs == [], page.dialogs


def texts(page: Page, selector: str) -> list[str]:
    return list(
        page.evaluate(
            f"Array.from(document.querySelectorAll({json.dumps(selector)}),"
            " e => e.textContent.trim())"
        )
    )


def table(page: Page, selector: str) -> list[dict[str, str]]:
    """The rows of a table as {column heading: cell text}."""
    script = f"""
    (() => {{
      const t = document.querySelector({json.dumps(selector)});
      const heads = Array.from(t.querySelectorAll("thead th"), th => th.textContent.trim());
      return Array.from(t.querySelectorAll("tbody tr"), tr => Object.fromEntries(
        Array.from(tr.children,
                   (td, i) => [heads[i], td.textContent.trim().replace(/\\s+/g, " ")])));
    }})()"""
    rows: list[dict[str, str]] = page.evaluate(script)
    return rows


@pytest.fixture
def page(browser: Browser) -> Any:
    tab = browser.new_page()
    yield tab
    tab.close()


# --------------------------------------------------------------------------- in the browser


@pytest.mark.chromium
def test_the_index_lists_every_drive_with_its_latest_run(lab: Lab, page: Page) -> None:
    load(page, lab.site / "index.html", "index")
    rows = table(page, "table.drives")
    got = [
        (r["Model"], r["Serial"], r["Firmware"], r["Runs"], r["Status"], r["Verdict"]) for r in rows
    ]
    assert got == [
        (EVIL_MODEL, EVIL_SERIAL, EVIL_FW, "1", "complete", "OK"),
        (MODEL, "S1", FW2, "4", "complete", "REGRESSION"),
        (MODEL, "S2", FW1, "2", "interrupted", "INTERRUPTED"),
    ]
    s1 = rows[1]
    assert s1["Latest run"] == "2026-11-26 07:00 UTC"
    assert s1["Regressions"] == "2 regressions"
    assert s1["Trends"] == "trends, firmware 1.0"
    links = page.evaluate(
        "Array.from(document.querySelectorAll('table.drives tbody tr')[1]"
        ".querySelectorAll('a.page'), a => a.getAttribute('href'))"
    )
    assert links == [page_name(MODEL, FW2), page_name(MODEL, FW1)]
    for href in links:
        assert (lab.site / href).is_file()
    # the hostile names are text: no element, no script of theirs
    assert page.evaluate("document.querySelectorAll('img, b, i, main svg').length") == 0
    assert page.evaluate("document.scripts.length") == 1  # dashboard.js
    assert page.evaluate("document.title") == "Drives · tkbench dashboard"


@pytest.mark.chromium
def test_the_filter_box_keeps_the_drives_that_match(lab: Lab, page: Page) -> None:
    load(page, lab.site / "index.html", "index-filtered")
    shown = (
        "Array.from(document.querySelectorAll('table.drives tbody tr'))"
        ".filter(r => !r.hidden).map(r => r.querySelector('.serial').textContent)"
    )
    assert page.evaluate(shown) == [EVIL_SERIAL, "S1", "S2"]
    page.evaluate(
        "(() => { const i = document.querySelector('.filter input'); i.value = 'interrupted';"
        " i.dispatchEvent(new Event('input')); })()"
    )
    assert page.evaluate(shown) == ["S2"]
    assert page.errors == []


@pytest.mark.chromium
def test_a_model_page_shows_the_numbers_regressions_and_failures(lab: Lab, page: Page) -> None:
    load(page, lab.site / page_name(MODEL, FW1), "model-firmware-1.0")
    assert texts(page, "h1") == [f"{MODEL} firmware {FW1}"]
    assert texts(page, "table.serials .serial") == ["S1", "S2"]
    runs = table(page, "table.runs")
    key = "iops: iops 4k 0/100"
    got = [(r["Serial"], r["Started"], r["Status"], r[key], r["Acceptance"]) for r in runs]
    assert got == [
        ("S2", "2026-11-25 08:00 UTC", "interrupted", "45,719", "not checked"),
        ("S1", "2026-11-25 07:00 UTC", "complete", "48,171", "not checked"),
        ("S2", "2026-11-24 08:00 UTC", "complete", "27,262", "FAIL" + runs[2]["Acceptance"][4:]),
        ("S1", "2026-11-24 07:00 UTC", "complete", "27,262", "not checked"),
        ("S1", "2026-11-23 07:00 UTC", "complete", "45,719", "not checked"),
    ]
    assert "iops: iops 4k 0/100 >= 50000 IOPS: measured 2.726e+04 IOPS" in runs[2]["Acceptance"]
    # r2 against r1: three numbers more than 10 % worse, each named with its delta
    r2 = runs[3]
    assert r2["Regressions"].startswith("3 regressions")
    assert (
        "iops: iops 4k 0/100: -40.4 % against the run of 2026-11-23 07:00 UTC"
        in (r2["Regressions"])
    )
    regressed = page.evaluate(
        "Array.from(document.querySelectorAll('tr.run')[3].querySelectorAll('td.regression'),"
        " td => td.textContent.trim())"
    )
    assert regressed == ["27,262", "10,423", "32,243"]
    assert [r["Regressions"] for r in runs] == [
        "not checked",
        "none",
        "no baseline",
        r2["Regressions"],
        "no baseline",
    ]
    # the IOPS chart: a line per serial, a point per run, marks where they belong
    chart = "figure.trend:first-of-type svg"
    per_series = page.evaluate(
        f"Array.from(document.querySelectorAll('{chart} g.series'), "
        "g => Array.from(g.querySelectorAll('a.point'), a => a.dataset.value))"
    )
    assert per_series == [["45,719", "27,262", "48,171"], ["27,262", "45,719"]]
    marked = page.evaluate(
        f"['regression', 'failed', 'incomplete'].map(c => Array.from("
        f"document.querySelectorAll('{chart} a.point.' + c), a => a.dataset.value))"
    )
    assert marked == [["27,262"], ["27,262"], ["45,719"]]
    assert page.evaluate(f"document.querySelectorAll('{chart} .mark-regression').length") == 1
    assert page.evaluate(f"document.querySelectorAll('{chart} .mark-failed').length") == 1
    titles = texts(page, f"{chart} a.point title")
    assert any(t.startswith("iops: IOPS, 4k 0/100: 27,262 IOPS\nserial S1") for t in titles)
    assert page.evaluate("document.querySelectorAll('figure.trend').length") == 5


@pytest.mark.chromium
def test_points_link_to_their_reports_or_say_why_not(lab: Lab, page: Page) -> None:
    load(page, lab.site / page_name(MODEL, FW1), "model-firmware-1.0-links")
    hrefs = page.evaluate(
        "Array.from(document.querySelectorAll('figure.trend:first-of-type a.point'),"
        " a => [a.dataset.run, a.getAttribute('href'), a.href.baseVal])"
    )
    by_run = {run: (raw, resolved) for run, raw, resolved in hrefs}
    rows = page.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('tr.run'),"
        " tr => [tr.id, tr.querySelector('td:last-child').textContent.trim()]))"
    )
    linked = [run for run, (href, _) in by_run.items() if not href.startswith("#")]
    assert len(linked) == 1  # r1: the only run of this page with a report
    report_href, report_url = by_run[linked[0]]
    assert not report_href.startswith(("/", "file:"))  # relative, from the site's directory
    assert report_url == report_href  # an SVG link's href as written
    url = page.evaluate(f"new URL({json.dumps(report_href)}, location.href).href")
    assert Path(unquote(urlparse(url).path)) == lab.runs["r1"] / "report.html"
    assert rows[linked[0]] == "report PDF"
    for run, (href, _) in by_run.items():
        if run != linked[0]:
            assert href == f"#{run}"  # no report: the point leads to its row, which says why
            assert rows[run].endswith("(no report in the run directory)")
    # following the link opens the run's report
    page.goto(url)
    assert page.evaluate("document.title") == "stand-in report of r1"


@pytest.mark.chromium
def test_a_firmware_page_and_the_hostile_drive_page(lab: Lab, page: Page) -> None:
    load(page, lab.site / page_name(MODEL, FW2), "model-firmware-2.0")
    runs = table(page, "table.runs")
    assert [(r["Serial"], r["iops: iops 4k 0/100"], r["Report"]) for r in runs] == [
        ("S1", "4,055", "report")
    ]
    # against the last run of the same drive and profile, on the earlier firmware
    assert runs[0]["Regressions"].startswith("2 regressions")
    assert "-91.6 % against the run of 2026-11-25 07:00 UTC" in runs[0]["Regressions"]

    load(page, lab.site / page_name(EVIL_MODEL, EVIL_FW), "hostile-drive")
    assert texts(page, "h1 .model") == [EVIL_MODEL]
    assert texts(page, "h1 .firmware") == [EVIL_FW]
    assert page.evaluate("document.title") == f"{EVIL_MODEL} firmware {EVIL_FW} · tkbench dashboard"
    runs = table(page, "table.runs")
    assert runs[0]["Serial"] == EVIL_SERIAL and runs[0]["Host"] == EVIL_HOST
    assert runs[0]["Report"] == f"{lab.runs['r7']} (run directory not on this machine)"
    assert page.evaluate("document.querySelectorAll('img, b, i').length") == 0
    assert page.evaluate("document.querySelectorAll('svg.chart').length") == 3
    assert page.evaluate("document.scripts.length") == 1


@pytest.mark.chromium
def test_the_pages_read_the_same_without_javascript(lab: Lab, page: Page) -> None:
    page.call("Emulation.setScriptExecutionDisabled", {"value": True})
    load(page, lab.site / page_name(MODEL, FW1), "model-firmware-1.0-no-javascript")
    assert page.evaluate("document.querySelectorAll('tr.run').length") == 5
    assert page.evaluate("document.querySelectorAll('a.point').length") == 5 + 5 + 3 + 5 + 5
    load(page, lab.site / "index.html", "index-no-javascript")
    assert page.evaluate("document.querySelector('.filter')") is None  # the script's extra
    assert len(texts(page, "table.drives tbody tr")) == 3


@pytest.mark.fio
@pytest.mark.postgres
@pytest.mark.chromium
def test_two_runs_into_postgres_show_on_the_dashboard(
    pg_url: str, tmp_path: Path, page: Page, capsys: pytest.CaptureFixture[str]
) -> None:
    """Done when: two runs from two invocations in one PostgreSQL history, both in
    ``tkbench history --json``, and both on the dashboard built from that database."""
    from tests._helpers import TWO_IOPS_ROUNDS, sets

    target = tmp_path / "t.img"
    base = ["run", "--profile", "quick", "--target", str(target), "--yes", "--no-report"]
    base += ["--history", pg_url, "-q", *sets(*TWO_IOPS_ROUNDS)]
    assert tk([*base, "--size", "16M", "--out", str(tmp_path / "one")], capsys)[0] == 0
    code, _, err = tk(
        [*base, "--out", str(tmp_path / "two"), "--regression-threshold", "0"], capsys
    )
    assert code == 0, err
    code, out, err = tk(["history", "--history", pg_url, "--json"], capsys)
    assert code == 0, err
    entries = json.loads(out)
    assert [Path(e["run_dir"]).name for e in entries] == ["one", "two"]

    site = tmp_path / "site"
    code, out, err = tk(["dashboard", "--history", pg_url, "--out", str(site)], capsys)
    assert (code, out) == (0, f"{site / 'index.html'}\n"), err
    assert "dashboard: 2 runs of 1 drive on 1 page" in err
    assert "s3cret" not in (site / "index.html").read_text()  # the URL without its password
    load(page, site / "index.html", "postgres-index")
    assert texts(page, "table.drives tbody .model") == ["regular file"]
    assert texts(page, "table.drives tbody td.num") == ["2"]
    load(page, site / page_name("regular file", "unknown"), "postgres-drive")
    rows = table(page, "table.runs")
    key = "iops: iops 4k 0/100"
    assert [r[key] for r in rows] == [number(e["headline"][key]) for e in reversed(entries)]
    paths = [r["Report"].split(" (")[0] for r in rows]
    assert paths == [e["run_dir"] for e in reversed(entries)]
    charts = page.evaluate(
        "Array.from(document.querySelectorAll('svg.chart'),"
        " c => c.querySelectorAll('a.point').length)"
    )
    assert charts == [2] * len(entries[0]["headline"])  # both runs in every number's chart


# --------------------------------------------------------------------------- as files


def test_the_baseline_rule_is_the_one_runs_use(tmp_path: Path) -> None:
    """baseline_of (the dashboard's) and History.previous (tkbench run's) agree."""
    made = make_lab(tmp_path)
    h = history.open_history(made.location)
    entries = h.entries()
    for name, run in made.runs.items():
        if name == "r7":
            continue  # removed
        data = load_run(run)
        mine = next(e for e in entries if e.run_id == data.manifest.run_id)
        theirs = h.previous(data)
        ours = baseline_of(
            entries,
            model=mine.model,
            serial=mine.serial,
            profile=mine.profile,
            started=mine.started,
            run_dir=mine.run_dir,
            run_id=mine.run_id,
        )
        assert (ours and ours.run_dir) == (theirs and theirs.run_dir), name
    by_dir = {Path(e.run_dir).name: e for e in entries}
    # r6 (firmware 2.0) against r3 (1.0): same drive and profile; r5 (interrupted) is no
    # baseline for anything
    assert h.previous(load_run(made.runs["r6"])) == by_dir["r3"]
    assert h.previous(load_run(made.runs["r3"])) == by_dir["r2"]
    assert h.previous(load_run(made.runs["r4"])) is None


def _entry(serial: str, started: float, iops: float, status: str = "complete") -> Entry:
    return Entry(
        run_dir=f"/nonexistent/{serial}-{started}",
        started=started,
        ended=started + 1,
        status=status,
        profile="quick",
        host="h",
        target="t",
        model="M",
        serial=serial,
        firmware="F",
        capacity=1,
        headline={"iops: iops 4k 0/100": iops, "latency: lat_mean 4k 0/100": 1.0},
        checks=None,
    )


@pytest.mark.parametrize(
    ("threshold", "states"),
    [
        (10, ["no baseline", "none", "1 regression", "not checked", "1 regression"]),
        (25, ["no baseline", "none", "none", "not checked", "1 regression"]),
        (0, ["off"] * 5),
    ],
)
def test_regressions_follow_the_threshold(
    threshold: float, states: list[str], tmp_path: Path
) -> None:
    from tkbench.dashboard import model

    entries = [
        _entry("A", T0, 1000),
        _entry("A", T0 + DAY, 950),  # -5 %
        _entry("A", T0 + 2 * DAY, 800),  # -15.8 % against 950
        _entry("A", T0 + 3 * DAY, 100, status="failed"),  # not checked, no baseline
        _entry("A", T0 + 4 * DAY, 500),  # -37.5 % against 800 (the failed run skipped)
    ]
    site = model.build(entries, threshold, tmp_path)
    runs = sorted(site.pages[0].sections[0].runs, key=lambda r: r.entry.started or 0)
    assert [r.regression_state for r in runs] == states
    if threshold == 10:
        assert runs[2].regressions[0].message.startswith("-15.8 % against the run of")


def test_a_metric_this_tkbench_does_not_know_is_shown_not_checked(tmp_path: Path) -> None:
    """A lab history may hold runs of a newer tkbench, with metrics unknown here."""
    from dataclasses import replace

    from tkbench.dashboard import model

    new = "iops: zork 4k 0/100"
    entries = [
        replace(e, headline={**e.headline, new: v})
        for e, v in ((_entry("A", T0, 1000), 5.0), (_entry("A", T0 + DAY, 500), 1.0))
    ]
    site = model.build(entries, 10, tmp_path)
    section = site.pages[0].sections[0]
    assert new in section.keys
    assert [g.key for g in section.runs[0].regressions] == ["iops: iops 4k 0/100"]
    pages = build_pages(site, "lab.sqlite")
    assert "iops: zork 4k 0/100" in pages[site.pages[0].filename]


def test_numbers_and_ticks_read_well() -> None:
    assert [number(v) for v in (27262.49, 1853.04, 123.456, 12.3456, 1.23456, 0.19508)] == [
        "27,262",
        "1,853",
        "123.5",
        "12.35",
        "1.235",
        "0.1951",
    ]
    assert nice_ticks(27262, 48171) == [20000, 30000, 40000, 50000]
    assert nice_ticks(0.195, 0.2038) == [0.195, 0.2, 0.205]
    assert nice_ticks(5, 5) == [4.5, 5.0, 5.5]


def test_hostile_names_are_escaped_in_the_files(tmp_path: Path) -> None:
    made = make_lab(tmp_path)
    build_site(history.open_history(made.location), made.site)
    name = page_name(EVIL_MODEL, EVIL_FW)
    assert name.startswith("drive-script-alert-model-script-img-src-x-onerror")
    assert "/" not in name and ".." not in name
    for html in (made.site / "index.html", made.site / name):
        text = html.read_text()
        for evil in (EVIL_MODEL, EVIL_FW, EVIL_SERIAL, EVIL_HOST):
            assert evil not in text
        assert "&lt;script&gt;alert(&#34;model&#34;)&lt;/script&gt;" in text
        assert text.count("<script") == 1  # dashboard.js


def test_out_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made = make_lab(tmp_path)
    base = ["dashboard", "--history", made.location, "--out"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    one_line_error([*base, str(a_file)], capsys, "is not a directory")
    one_line_error([*base, str(a_file / "site")], capsys, "is not a directory")
    one_line_error(["dashboard", "--history", made.location], capsys, "--out")
    one_line_error([*base, str(made.site), "--threshold", "-1"], capsys, "out of range")
    one_line_error(
        ["dashboard", "--history", str(tmp_path / "none.sqlite"), "--out", str(made.site)],
        capsys,
        "does not exist",
    )
    one_line_error(
        ["dashboard", "--history", "postgresql://nobody@/x?host=/nonexistent", "--out", "s"],
        capsys,
        "history database",
    )
    assert not made.site.exists() and not Path("s").exists()

    # a directory with other files: they are left alone, a foreign index.html refused
    site = made.site
    site.mkdir()
    (site / "notes.txt").write_text("mine")
    (site / "index.html").write_text("<html>someone else's</html>")
    one_line_error([*base, str(site)], capsys, "index.html is there and was not written by")
    assert (site / "index.html").read_text() == "<html>someone else's</html>"
    assert sorted(p.name for p in site.iterdir()) == ["index.html", "notes.txt"]
    (site / "index.html").unlink()
    code, out, err = tk([*base, str(site)], capsys)
    assert code == 0, err
    assert out == f"{site / 'index.html'}\n"
    first = {p.name: p.stat().st_mtime_ns for p in site.iterdir()}
    assert len(first) == 3 + 3 + 1  # index, css, js, three pages, notes.txt
    assert (site / "notes.txt").read_text() == "mine"

    # again, after a drive left the history: its page goes, nothing else does
    time.sleep(0.01)
    evil = page_name(EVIL_MODEL, EVIL_FW)
    history.open_history(made.location).remove(
        [e.run_dir for e in history.open_history(made.location).entries() if e.model == EVIL_MODEL]
    )
    code, _, err = tk([*base, str(site)], capsys)
    assert code == 0, err
    assert "1 old page removed" in err
    assert not (site / evil).exists()
    assert (site / "notes.txt").read_text() == "mine"
    assert all(
        (site / n).stat().st_mtime_ns > t for n, t in first.items() if n not in ("notes.txt", evil)
    )


def test_an_empty_history_gives_an_index_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "h.sqlite"
    history.open_history(empty).remove([])  # creates the empty history
    site = tmp_path / "site"
    code, _, err = tk(["dashboard", "--history", str(empty), "--out", str(site)], capsys)
    assert code == 0, err
    assert f"No runs in the history {empty}." in (site / "index.html").read_text()
    assert sorted(p.name for p in site.iterdir()) == ["dashboard.css", "dashboard.js", "index.html"]


def test_the_dashboard_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    from tkbench.cli import docgen

    with pytest.raises(SystemExit):
        cli.main(["dashboard", "--help"])
    helptext = capsys.readouterr().out
    for option in ("--history", "--out", "--threshold"):
        assert option in helptext
    assert '.SS "tkbench dashboard"' in docgen.manpage()
    checkout = Path(__file__).resolve().parents[1]
    assert "tkbench dashboard" in (checkout / "README.md").read_text()
    assert "## Dashboard" in (checkout / "docs" / "automation.md").read_text()


def _night(started: float, mean: float, stdev: float) -> Entry:
    """A copy benchmark's night on volume V: no headline numbers, one figure kept with
    the spread of its three runs (as the history's volume column keeps it)."""
    fig = VolumeFigure(value=mean, unit="MB/s", mean_abs_dev_pct=1.0, stdev=stdev, runs=3)
    return Entry(
        run_dir=f"/nonexistent/copy-{started}",
        started=started,
        ended=started + 1,
        status="complete",
        profile="copy",
        host="h",
        target="/mnt/v",
        model="Volume",
        serial="V",
        firmware="ext4",
        capacity=1,
        headline={},
        checks=None,
        volume={"copy iso.random.mb_s": fig},
    )


@pytest.mark.chromium
def test_volume_figures_get_a_trend_and_regressions_beyond_their_noise(
    tmp_path: Path, page: Page
) -> None:
    """Three nights of three runs: a 20 % drop within the runs' noise (standard
    deviations 10 and 2: Welch's half width t(2) x 5.888 = 25.3 %), then a 30 % drop
    beyond it (2 and 2: t(4) x 1.633 = 5.7 % of 80)."""

    nights = history.open_history(tmp_path / "nights.sqlite")
    nights.put([_night(T0, 100, 10), _night(T0 + DAY, 80, 2), _night(T0 + 2 * DAY, 56, 2)])
    built = build_site(nights, tmp_path / "site", threshold=5)
    assert built.runs == 3
    load(page, tmp_path / "site" / page_name("Volume", "ext4"), "volume-nights")
    assert texts(page, "figure.trend figcaption") == ["copy: iso.random (MB/s), higher is better"]
    points = page.evaluate(
        "Array.from(document.querySelectorAll('figure.trend svg a.point'), a => a.dataset.value)"
    )
    assert points == ["100.0", "80.00", "56.00"]
    marked = page.evaluate(
        "Array.from(document.querySelectorAll('figure.trend svg a.point.regression'),"
        " a => a.dataset.value)"
    )
    assert marked == ["56.00"]
    runs = table(page, "table.runs")
    assert [r["copy iso.random.mb_s"] for r in runs] == ["56.00", "80.00", "100.0"]
    assert runs[0]["Regressions"].startswith("1 regression")
    assert "-30.0 % against the run of 2026-11-24 07:00 UTC" in runs[0]["Regressions"]
    assert runs[1]["Regressions"] == "none"  # -20 %: within the noise
    assert "noise ±5.7 %" in runs[0]["Regressions"]
