"""The PDF report: rendered for real from a small real run (real fio on a file) and from
a synthetic full-size PTS-E run, then read back with poppler (pdftotext, pdfinfo,
pdffonts, pdftoppm).  Expected numbers are computed here from the round records
themselves, not with the report's own code.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from tests._helpers import STAGED_OFF, layout_text
from tests.synthetic import SYNTHETIC_MODEL, make_synthetic_run
from tkbench import cli
from tkbench.engine.runs import RunRequest, start
from tkbench.errors import InputError, RunDirError
from tkbench.report import build_comparison, build_report, render

MiB = 1024 * 1024
POPPLER = ("pdftotext", "pdfinfo", "pdffonts", "pdftoppm")
# the quick profile, shrunk: 5 rounds of 0.2 s points; IOPS limits so loose that it is
# steady after exactly 5 rounds, latency limits so tight that it never converges
OVERRIDES = [
    *STAGED_OFF,  # the basic four (tests/test_stage_report.py: the stages' chapters)
    "tests.iops.point_runtime=0.2s",
    "tests.throughput.point_runtime=0.2s",
    "tests.latency.point_runtime=0.2s",
    "tests.wsat.point_runtime=0.2s",
    "precondition.capacity_multiple=1.0",
    "tests.iops.rounds.max=5",
    "tests.throughput.rounds.max=5",
    "tests.latency.rounds.max=5",
    "tests.iops.rounds.max_excursion=9.0",
    "tests.iops.rounds.max_slope_excursion=9.0",
    "tests.latency.rounds.max_excursion=0.001",
    "tests.latency.rounds.max_slope_excursion=0.001",
]
HOSTILE_OPERATOR = '<img src="file:///etc/passwd">'
HOSTILE_TITLE = "Report <script>alert('x')</script> & co"
HOSTILE_MODEL = '<b>Evil</b> SSD <img src="http://example.invalid/x.png">'
HOSTILE_LOGO = (
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
    'width="40" height="20"><rect width="40" height="20" fill="#0b2a4a"/>'
    '<image xlink:href="file:///etc/hostname" width="10" height="10"/></svg>'
)

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in POPPLER), reason="needs poppler-utils"
)


# --------------------------------------------------------------------------- helpers


@dataclass
class Rendered:
    pdf: Path
    pages: list[str]  # text of every page (pdftotext)

    @property
    def text(self) -> str:
        return "\n".join(self.pages)

    @property
    def flat(self) -> str:
        """All text with whitespace runs collapsed (line breaks inside sentences)."""
        return re.sub(r"\s+", " ", self.text)


def run_tool(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120).stdout


def read_pdf(pdf: Path) -> Rendered:
    text = run_tool("pdftotext", "-enc", "UTF-8", str(pdf), "-")
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages = pages[:-1]
    return Rendered(pdf, pages)


def page_count(pdf: Path) -> int:
    m = re.search(r"^Pages:\s+(\d+)", run_tool("pdfinfo", str(pdf)), re.M)
    assert m
    return int(m.group(1))


def page_size(pdf: Path) -> tuple[float, float]:
    m = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", run_tool("pdfinfo", str(pdf)), re.M)
    assert m
    return float(m.group(1)), float(m.group(2))


def fonts(pdf: Path) -> list[list[str]]:
    lines = run_tool("pdffonts", str(pdf)).splitlines()[2:]
    return [line.split() for line in lines if line.strip()]


def rounds_of(run: Path, test: str) -> list[dict[str, Any]]:
    rdir = run / "tests" / test / "rounds"
    return [json.loads(p.read_text()) for p in sorted(rdir.glob("[0-9]*.json"))]


def window_mean(rounds: list[dict[str, Any]], bs: int, read_pct: int, key: str) -> float:
    """Mean of a point's value over the last 5 rounds, straight from the records."""
    values = [
        float(p[key])
        for r in rounds[-5:]
        for p in r["points"]
        if p["bs"] == bs and p["read_pct"] == read_pct
    ]
    assert len(values) == min(5, len(rounds))
    return sum(values) / len(values)


def whole(value: float) -> str:
    """How a value reads in the report: 1,000 or more rounded with thousands separators,
    smaller ones with four significant digits (a loaded machine's file can be slower)."""
    if value >= 1000:
        return f"{round(value):,}"
    assert value >= 1
    decimals = 3 - math.floor(math.log10(value))
    return f"{value:.{decimals}f}"


def shown(value: float) -> str:
    """How the report writes a measured value: whole from 1,000 up, else four
    significant digits (746.4 MB/s on a busy machine, 1,502 MB/s on an idle one)."""
    if value >= 1000:
        return whole(value)
    return f"{value:.{max(0, 3 - math.floor(math.log10(value)))}f}"


def edit_manifest(run: Path, **fields: Any) -> None:
    path = run / "manifest.json"
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("report.*"))
    return dst


class RecordingFetcher(render.AssetFetcher):
    """The report's own URL fetcher, remembered so a test can inspect what it was asked."""

    instances: ClassVar[list[RecordingFetcher]] = []

    def __init__(self, assets: Any) -> None:
        super().__init__(assets)
        RecordingFetcher.instances.append(self)


@pytest.fixture
def fetchers(monkeypatch: pytest.MonkeyPatch) -> list[RecordingFetcher]:
    RecordingFetcher.instances = []
    monkeypatch.setattr(render, "AssetFetcher", RecordingFetcher)
    return RecordingFetcher.instances


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("real")
    out, manifest = start(
        RunRequest(
            profile="quick",
            target=str(tmp / "t.img"),
            size=32 * MiB,
            assume_yes=True,
            out=tmp / "run",
            overrides=OVERRIDES,
            command_line=["tkbench", "run", "--profile", "quick"],
        )
    )
    assert manifest.status == "complete"
    return out


@pytest.fixture(scope="module")
def real_report(real_run: Path) -> Rendered:
    pdf = build_report(
        real_run, real_run / "report.pdf", operator="A. Tester", organisation="Lab 7"
    )
    return read_pdf(pdf)


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_synthetic_run(tmp_path_factory.mktemp("synthetic") / "run", seed=0)


@pytest.fixture(scope="module")
def synthetic_report(synthetic_run: Path) -> Rendered:
    return read_pdf(build_report(synthetic_run, synthetic_run / "report.pdf"))


# --------------------------------------------------------------------------- a real run


@pytest.mark.fio
def test_real_report_headline_numbers_match_the_records(
    real_run: Path, real_report: Rendered
) -> None:
    iops = rounds_of(real_run, "iops")
    assert len(iops) == 5
    # the Summary: page 1 (test_page_one_counts_the_departures_and_shows_the_headline_table)
    summary = real_report.pages[0]
    assert "Headline results" in summary
    for read_pct in (100, 0):
        assert whole(window_mean(iops, 4096, read_pct, "iops")) in summary
    tput = rounds_of(real_run, "throughput")
    for read_pct in (100, 0):
        mbs = window_mean(tput, 131072, read_pct, "bw_bytes") / 1e6
        assert shown(mbs) in summary
    assert "MB/s" in summary and "IOPS" in summary and re.search(r"\bms\b", summary)


@pytest.mark.fio
def test_page_one_counts_the_departures_and_shows_the_headline_table(
    real_run: Path, real_report: Rendered
) -> None:
    """The claim and the numbers first: a reduced run departs from the PTS in over ten
    ways, which page 1 counts by test, leaving it room for the headline table; the
    set-up lists every departure, with what the PTS requires."""
    pages = layout_text(real_report.pdf).split("\f")
    page1 = " ".join(pages[0].split())
    found = re.search(r"This run departs from SNIA PTS-E 2\.0\.2 in (\d+) ways", page1)
    assert found and int(found.group(1)) > 10, page1
    assert "IOPS: " in page1, page1
    # (a line may break after set-up's hyphen)
    assert re.search(r"details: Test set-\s?up, SNIA PTS departures, page ", page1), page1
    iops = rounds_of(real_run, "iops")
    read, write = (whole(window_mean(iops, 4096, pct, "iops")) for pct in (100, 0))
    first_row = rf"4k random +2 jobs × QD 8 +{read} +{write} +IOPS +mean of rounds 1–5"
    assert re.search(first_row, pages[0]), pages[0]
    # every departure in words, with the PTS's requirement, is in the set-up, not on page 1
    assert "Every departure, by test" not in page1
    listed = [i for i, p in enumerate(pages) if "SNIA PTS departures" in p and "(PTS 2.0.2: " in p]
    assert listed and listed[0] > 0


@pytest.mark.fio
def test_real_report_states_steady_state_and_its_rounds(real_report: Rendered) -> None:
    flat = real_report.flat
    assert "IOPS STEADY STATE" in flat
    assert "Steady state reached in rounds 1–5 (after 5 rounds)" in flat
    # latency was given limits it cannot meet: shown, and marked as not steady
    assert "Latency NOT AT STEADY STATE" in flat
    assert "Steady state NOT reached after 5 of at most 5 rounds" in flat
    assert "do not describe steady-state performance" in flat
    assert "Steady-state determination: iops 4k 0/100 (IOPS)" in flat
    assert "Measurement window: rounds 1–5" in flat


@pytest.mark.fio
def test_real_report_has_setup_procedure_and_contents(real_report: Rendered) -> None:
    flat = real_report.flat
    for text in (
        "Contents",
        "Test set-up",
        "Device under test",
        "regular file",
        "fio-3",
        "tkbench run --profile quick",
        "A. Tester",
        "Lab 7",
        "6, back to back, 200 ms each",  # IOPS: 2 block sizes x 3 mixes of 0.2 s
        "2 jobs × queue depth 8 (16 outstanding I/Os)",
        "1 job × queue depth 1 (1 outstanding I/O)",
        "file-recreate (NOT a PTS-compliant purge)",
        "= 1.00× the ActiveRange",
        "Response-time histograms",
        "Write Saturation",
        "MB/s = 10",
    ):
        assert text in flat, text
    assert "1 outstanding I/Os" not in flat
    n = len(real_report.pages)
    for i, page in enumerate(real_report.pages, 1):
        assert f"Page {i} of {n}" in page


@pytest.mark.fio
def test_real_report_fonts_embedded_and_pages_rasterise(
    real_report: Rendered, tmp_path: Path
) -> None:
    rows = fonts(real_report.pdf)
    assert rows, "no fonts at all"
    for row in rows:
        # name type... encoding emb sub uni object ID: emb is the 5th field from the end
        assert row[-5] == "yes", row
    assert any("DejaVu" in row[0] for row in rows)
    pages = page_count(real_report.pdf)
    assert pages == len(real_report.pages)
    run_tool("pdftoppm", "-r", "20", "-png", str(real_report.pdf), str(tmp_path / "p"))
    pngs = sorted(tmp_path.glob("p-*.png"))
    assert len(pngs) == pages
    assert all(p.stat().st_size > 200 for p in pngs)


@pytest.mark.fio
def test_real_report_html_is_written_beside_and_self_contained(
    real_run: Path, real_report: Rendered
) -> None:
    html = (real_run / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<svg") >= 8  # figures inlined
    assert "tkbench-figure:" not in html
    assert not re.search(r'(src|href)="(?!#|data:)', html), "external reference in the HTML"
    assert "@page" in html  # the stylesheet is inlined
    assert page_size(real_report.pdf) == pytest.approx((595.28, 841.89), abs=0.1)  # A4


@pytest.mark.fio
def test_report_needs_only_the_records(real_run: Path, tmp_path: Path) -> None:
    """No raw fio output, no job file: the report is computed from the JSON records."""
    run = copy_run(real_run, tmp_path / "run")
    for p in [*run.rglob("*.out"), *run.rglob("*.fio")]:
        p.unlink()
    text = read_pdf(build_report(run, tmp_path / "r.pdf")).text
    iops = rounds_of(run, "iops")
    assert whole(window_mean(iops, 4096, 0, "iops")) in text


# --------------------------------------------------------------------------- safety


@pytest.mark.fio
def test_hostile_strings_are_text_and_load_nothing(
    real_run: Path, tmp_path: Path, fetchers: list[RecordingFetcher]
) -> None:
    run = copy_run(real_run, tmp_path / "run")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["target"]["identity"]["model"] = HOSTILE_MODEL
    (run / "manifest.json").write_text(json.dumps(manifest))
    logo = tmp_path / "logo.svg"
    logo.write_text(HOSTILE_LOGO)
    out = tmp_path / "out" / "hostile.pdf"
    code = cli.main(
        [
            "report",
            str(run),
            "--out",
            str(out),
            "--title",
            HOSTILE_TITLE,
            "--operator",
            HOSTILE_OPERATOR,
            "--logo",
            str(logo),
            "--paper",
            "letter",
        ]
    )
    assert code == 0
    flat = read_pdf(out).flat
    assert HOSTILE_OPERATOR in flat
    assert HOSTILE_TITLE in flat
    assert "<b>Evil</b> SSD" in flat
    html = out.with_suffix(".html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<img src="file:' not in html and "&lt;img src=&#34;file:///etc/passwd&#34;&gt;" in html
    assert "<b>Evil</b>" not in html
    # WeasyPrint asked only for the report's own assets; the logo's embedded file
    # reference was refused, and nothing was fetched from the hostile strings
    (fetcher,) = fetchers
    allowed = set(fetcher.assets)
    assert [u for u in fetcher.requested if u not in allowed] == ["file:///etc/hostname"]
    assert fetcher.rejected == ["file:///etc/hostname"]
    assert not any("passwd" in u or "example.invalid" in u for u in fetcher.requested)
    assert any(u.startswith("tkbench-figure:") for u in fetcher.requested)
    assert page_size(out) == pytest.approx((612.0, 792.0), abs=0.1)  # Letter


def test_url_fetcher_serves_only_registered_assets() -> None:
    fetcher = render.AssetFetcher({"tkbench-figure:1": (b"<svg/>", "image/svg+xml")})
    response = fetcher.fetch("tkbench-figure:1")
    assert response.read() == b"<svg/>"
    for url in ("file:///etc/passwd", "http://example.invalid/", "tkbench-figure:2", "x.png"):
        with pytest.raises(render.BlockedURL):
            fetcher.fetch(url)
    assert len(fetcher.rejected) == 4


@pytest.mark.fio
def test_bad_inputs_are_one_line_errors(real_run: Path, tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no such run directory"):
        build_report(tmp_path / "missing", tmp_path / "r.pdf")
    with pytest.raises(InputError, match=r"logo .*: not a file"):
        build_report(real_run, tmp_path / "r.pdf", logo=tmp_path / "none.png")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"GIF89a not really")
    with pytest.raises(InputError, match="not a PNG, JPEG or SVG"):
        build_report(real_run, tmp_path / "r.pdf", logo=junk)
    with pytest.raises(InputError, match="A4 or Letter"):
        build_report(real_run, tmp_path / "r.pdf", paper="B5")
    with pytest.raises(InputError, match=r"must end in \.pdf"):
        build_report(real_run, tmp_path / "r.html")
    assert cli.main(["report", str(tmp_path / "missing")]) == 2
    assert not (tmp_path / "missing").exists()


# --------------------------------------------------------------------------- partial runs


@pytest.mark.fio
def test_interrupted_run_on_the_emulator_is_marked(real_run: Path, tmp_path: Path) -> None:
    run = copy_run(real_run, tmp_path / "run")
    (run / "tests" / "wsat" / "result.json").unlink()
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    manifest["target"]["identity"].update(model="tkbench SSD emulator", emulated=True)
    (run / "manifest.json").write_text(json.dumps(manifest))
    rep = read_pdf(build_report(run, tmp_path / "r.pdf"))
    first = re.sub(r"\s+", " ", rep.pages[0])
    assert "INTERRUPTED RUN" in first
    assert "bundled SSD emulator, not a real drive" in first
    assert "EMULATED DRIVE" in first
    for page in rep.pages:
        assert "EMULATED DRIVE — NOT A REAL DEVICE" in page
    assert "Write Saturation INTERRUPTED" in rep.flat
    n = len(rounds_of(run, "wsat"))
    assert f"INTERRUPTED before the test finished; {n} complete round" in rep.flat


@pytest.mark.fio
def test_failed_run_reports_what_it_has(real_run: Path, tmp_path: Path) -> None:
    run = copy_run(real_run, tmp_path / "run")
    (run / "tests" / "latency" / "result.json").unlink()
    for p in sorted((run / "tests" / "latency" / "rounds").glob("0004.*")) + sorted(
        (run / "tests" / "latency" / "rounds").glob("0005.*")
    ):
        p.unlink()
    shutil.rmtree(run / "tests" / "wsat")
    edit_manifest(run, status="failed", error="fio job p001_4k_0-100: error 5 (EIO)")
    flat = read_pdf(build_report(run, tmp_path / "r.pdf")).flat
    assert "FAILED RUN" in flat
    assert "The run FAILED: fio job p001_4k_0-100: error 5 (EIO)" in flat
    assert "Latency NOT AT STEADY STATE FAILED" in flat
    assert "3 complete rounds shown" in flat
    assert "wsat NOT RUN" in flat
    # the tests that finished are reported as usual
    assert "Steady state reached in rounds 1–5 (after 5 rounds)" in flat


# --------------------------------------------------------------------------- synthetic full size


def test_synthetic_report_is_marked_on_every_page(synthetic_report: Rendered) -> None:
    assert len(synthetic_report.pages) >= 20
    for page in synthetic_report.pages:
        assert "SYNTHETIC DATA — NOT A MEASUREMENT" in page
    first = re.sub(r"\s+", " ", synthetic_report.pages[0])
    assert SYNTHETIC_MODEL in first
    assert "No drive was tested for this report" in first


def test_synthetic_report_numbers_match_the_records(
    synthetic_run: Path, synthetic_report: Rendered
) -> None:
    iops = rounds_of(synthetic_run, "iops")
    assert len(iops) == 25 and len(iops[0]["points"]) == 56
    summary = synthetic_report.pages[0]
    assert whole(window_mean(iops, 4096, 100, "iops")) in summary
    assert whole(window_mean(iops, 4096, 0, "iops")) in summary
    for test, bs in (("throughput-1024k", 1048576), ("throughput-128k", 131072)):
        rounds = rounds_of(synthetic_run, test)
        assert whole(window_mean(rounds, bs, 0, "bw_bytes") / 1e6) in summary
    wsat = rounds_of(synthetic_run, "wsat")
    assert len(wsat) == 1440
    assert whole(wsat[0]["points"][0]["iops"]) in summary
    final = sum(r["points"][0]["iops"] for r in wsat[-5:]) / 5
    assert whole(final) in summary
    flat = synthetic_report.flat
    assert "Steady state reached in rounds 21–25 (after 25 rounds)" in flat
    assert "Throughput 1024k" in flat and "Throughput 128k" in flat
    assert "1,440 rounds wrote" in flat
    # the latency table's 4k 0/100 write mean, from the records, in ms
    lat = rounds_of(synthetic_run, "latency")
    window = [r for r in lat[-5:]]
    mean_ms = (
        sum(
            p["write"]["lat_mean_ns"]
            for r in window
            for p in r["points"]
            if p["bs"] == 4096 and p["read_pct"] == 0
        )
        / len(window)
        / 1e6
    )
    assert f"{mean_ms:.{3 - math.floor(math.log10(mean_ms))}f}" in flat


def test_synthetic_run_is_a_real_run_directory(synthetic_run: Path) -> None:
    from tkbench.outputs.show import run_summary
    from tkbench.rundir.store import load_run

    run = load_run(synthetic_run)
    assert run.manifest.synthetic is True
    assert run.manifest.target.identity["model"] == SYNTHETIC_MODEL
    names = [t.name for t in run.tests]
    assert names == [
        "iops",
        "throughput-1024k",
        "throughput-128k",
        "latency",
        "wsat",
        *("hir-precondition", "hir-recovery", "xsr"),
        *(f"{t}-{s}" for t in ("cbw", "dirth") for s in ("precondition", "intensity", "operating")),
    ]
    summary = run_summary(run)
    steady = {t["name"]: t["steady_state"] for t in summary["tests"]}
    assert steady["iops"] is True and steady["wsat"] is None
    latency = run.test("latency")
    point = latency.rounds[0].points[0]
    assert point.read.bins_ns and sum(point.read.bins_ns.values()) == point.read.total_ios
    assert all(t.result is not None for t in run.tests)


def scaled_copy(run: Path, dest: Path, factor: float) -> Path:
    """A copy of ``run`` whose IOPS and throughput are ``factor`` times the measured ones
    (every point of every round, and the tracking values made from them)."""
    shutil.copytree(run, dest)
    for f in dest.glob("tests/*/rounds/[0-9]*.json"):
        rec = json.loads(f.read_text())
        for p in rec["points"]:
            p["iops"] *= factor
            p["bw_bytes"] *= factor
        rec["tracking"] = {
            k: v * factor if k.split()[0] in ("iops", "bw") else v
            for k, v in rec["tracking"].items()
        }
        f.write_text(json.dumps(rec))
    return dest


def page_pixels(pdf: Path, page: int, color: str, tmp: Path) -> int:
    """Pixels of one page (1-based), rendered at 100 dpi, within ±24 of ``color`` (#rrggbb)."""
    from PIL import Image

    run_tool(
        "pdftoppm", "-r", "100", "-f", str(page), "-l", str(page), "-png", str(pdf), str(tmp / "pg")
    )
    png = next(tmp.glob("pg*.png"))
    want = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)])
    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=int)
    png.unlink()
    return int((np.abs(pixels - want) <= 24).all(axis=-1).sum())


def signed(delta: float) -> str:
    """A delta as the comparison prints it: sign, one decimal, a true minus."""
    return f"{delta:+.1f} %".replace("-", "\u2212")


@pytest.mark.fio
def test_comparison_pdf_of_a_real_and_a_synthetic_run(
    real_run: Path, synthetic_run: Path, tmp_path: Path
) -> None:
    from tkbench.rundir.store import load_run

    runs = [load_run(real_run), load_run(synthetic_run)]
    pdf = build_comparison(runs, tmp_path / "cmp.pdf")
    rep = read_pdf(pdf)
    assert pdf.with_suffix(".html").exists()
    for page in rep.pages:
        assert "INCLUDES SYNTHETIC DATA" in page
    flat = rep.flat
    assert "Comparison of 2 runs" in flat
    assert "Run 2: SYNTHETIC DATA — NOT A MEASUREMENT" in flat
    real_4k_write = window_mean(rounds_of(real_run, "iops"), 4096, 0, "iops")
    synthetic_4k_write = window_mean(rounds_of(synthetic_run, "iops"), 4096, 0, "iops")
    delta = (synthetic_4k_write - real_4k_write) / real_4k_write * 100
    assert (
        f"4k 0/100 IOPS {whole(real_4k_write)} {whole(synthetic_4k_write)} {signed(delta)}" in flat
    )
    # a quick run and a PTS-E run: different conditions, said on page 1 and per test
    assert "Conditions differ." in rep.pages[0]
    assert "block sizes: run 1 4k, 64k; run 2 512, 4k, 8k, 16k, 32k, 64k, 128k, 1024k" in flat
    assert "outstanding I/O: run 1 2 jobs × QD 8; run 2 4 jobs × QD 32" in flat
    # a test only one run has is still compared: the other run has dashes
    assert "Run 1 did not run this test." in flat
    assert "Throughput 128k: every point" in flat and "128k 0/100 MB/s – " in flat
    for caption in ("Convergence.", "Measurements.", "Change against run 1.", "Write saturation."):
        assert caption in flat


@pytest.mark.fio
def test_comparison_overlays_every_run_and_shows_the_deltas(real_run: Path, tmp_path: Path) -> None:
    """Run 2 is run 1 with every IOPS and MB/s value ×1.25: every delta is +25.0 %, and
    the convergence figure draws both runs in their colours."""
    from tkbench.report.comparison_figures import run_style
    from tkbench.rundir.store import load_run

    faster = scaled_copy(real_run, tmp_path / "faster", 1.25)
    pdf = build_comparison([load_run(real_run), load_run(faster)], tmp_path / "cmp.pdf")
    rep = read_pdf(pdf)
    flat = rep.flat
    assert "Conditions differ" not in flat  # a copy: the same conditions
    for bs, rp in ((4096, 0), (65536, 65), (4096, 100)):
        v = window_mean(rounds_of(real_run, "iops"), bs, rp, "iops")
        point = f"{'4k' if bs == 4096 else '64k'} {rp}/{100 - rp}"
        assert f"{point} IOPS {whole(v)} {whole(v * 1.25)} +25.0 %" in flat
    # the IOPS test's delta map: +25.0 in each of its 6 cells
    page = next(p for p in rep.pages if "Change against run 1." in p)
    assert re.findall(r"\+25\.0(?! %)", page) == ["+25.0"] * 6
    # both runs are drawn on the convergence page
    conv = next(i for i, p in enumerate(rep.pages, 1) if "Convergence." in p)
    for style in (run_style(0), run_style(1)):
        assert page_pixels(pdf, conv, style.color, tmp_path) > 200, style
    # +25 % counts as better only where it exceeds the point's own excursion within
    # run 1's window (the copy has the same relative excursions); computed here from
    # the records
    window = rounds_of(real_run, "iops")[-5:]
    better = noise = 0
    for key in {(p["bs"], p["read_pct"]) for p in window[0]["points"]}:
        vals = [p["iops"] for r in window for p in r["points"] if (p["bs"], p["read_pct"]) == key]
        excursion = (max(vals) - min(vals)) / (sum(vals) / len(vals)) * 100
        if max(5.0, excursion) <= 25.0:
            better += 1
        else:
            noise += 1
    assert (
        f"Run 2 against run 1: {better} point{'s' if better != 1 else ''} better, 0 worse, "
        f"{noise} within the noise." in flat
    )
    html = pdf.with_suffix(".html").read_text()
    iops_table = html[html.index("IOPS: every point") :]
    iops_table = iops_table[: iops_table.index("</table>")]
    assert iops_table.count('class="delta better"') == better
    assert 'class="delta worse"' not in iops_table


@pytest.mark.fio
def test_comparison_of_many_runs_fits_the_page(real_run: Path, tmp_path: Path) -> None:
    """Eight runs (TKperf's compare stopped at seven): every value of every run is printed,
    in tables of run 1 and at most four others."""
    from tkbench.rundir.store import load_run

    factors = [1.0 + 0.05 * k for k in range(8)]
    dirs = [real_run] + [
        scaled_copy(real_run, tmp_path / f"run{k}", f) for k, f in enumerate(factors[1:], 2)
    ]
    pdf = build_comparison([load_run(d) for d in dirs], tmp_path / "many.pdf")
    flat = read_pdf(pdf).flat
    assert "Comparison of 8 runs" in flat
    assert "IOPS: every point (runs 1, 2, 3, 4, 5)" in flat
    assert "IOPS: every point (runs 1, 6, 7, 8)" in flat
    base = window_mean(rounds_of(real_run, "iops"), 4096, 0, "iops")
    for group in (factors[1:5], factors[5:]):
        cells = " ".join(f"{whole(base * f)} {signed((f - 1) * 100)}" for f in group)
        assert f"4k 0/100 IOPS {whole(base)} {cells}" in flat


def test_comparison_column_groups() -> None:
    assert render.column_groups(1) == [[0]]
    assert render.column_groups(5) == [[0, 1, 2, 3, 4]]
    assert render.column_groups(6) == [[0, 1, 2, 3, 4], [0, 5]]
    assert render.column_groups(12, per_table=4) == [
        [0, 1, 2, 3],
        [0, 4, 5, 6],
        [0, 7, 8, 9],
        [0, 10, 11],
    ]


@pytest.mark.fio
def test_real_report_checks_littles_law_from_the_records(
    real_run: Path, real_report: Rendered
) -> None:
    """IOPS × mean response time of a real run comes out at fio's jobs × queue depth."""
    rounds = rounds_of(real_run, "iops")[-5:]
    shares = []
    for key in {(p["bs"], p["read_pct"]) for p in rounds[0]["points"]}:
        inflight = [
            p["iops"] * p["lat_mean_ns"] / 1e9
            for r in rounds
            for p in r["points"]
            if (p["bs"], p["read_pct"]) == key
        ]
        shares.append(sum(inflight) / len(inflight) / (2 * 8))  # quick: 2 jobs x QD 8
    lo, hi = (f"{x * 100:.0f} %" for x in (min(shares), max(shares)))
    kept = lo if lo == hi else f"{lo} to {hi}"
    assert f"the points kept {kept} of the 16 outstanding I/Os" in real_report.flat
    assert min(shares) > 0.5  # a real file with libaio keeps its queue filled
