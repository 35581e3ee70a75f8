"""The report's parts of the PTS tests beyond the core ones, rendered for real
(WeasyPrint) and read back with pdftotext: write saturation's response times against
drive fills.  Expected numbers are computed here from the round records."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.synthetic import make_synthetic_run
from tkbench.report import build_report
from tkbench.report.fmt import sig

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"


def pdf_text(pdf: Path) -> str:
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return re.sub(r"\s+", " ", out)


def rounds_of(run: Path, test: str) -> list[dict]:
    files = sorted((run / "tests" / test / "rounds").glob("*.json"))
    return [json.loads(p.read_text()) for p in files]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A synthetic PTS-E run (40 one-minute write-saturation rounds of millions of
    I/Os each), its report read back."""
    run = make_synthetic_run(tmp_path_factory.mktemp("parts") / "run", seed=3, wsat_rounds=40)
    return run, pdf_text(build_report(run, run / "report.pdf"))


def test_wsat_response_times_table_from_the_records(synthetic: tuple[Path, str]) -> None:
    run, text = synthetic
    manifest = json.loads((run / "manifest.json").read_text())
    capacity = manifest["target"]["capacity_bytes"]
    rounds = rounds_of(run, "wsat")
    assert "Response times against drive fills" in text
    # the first drive-fill interval: rounds whose fills end in it
    fills = [r["total_written_bytes"] / capacity for r in rounds]
    step = 0.05  # 40 rounds of this drive fill about 0.3 x: the first step giving <= 8 rows
    first = [r for r, f in zip(rounds, fills, strict=True) if f <= step]
    writes = [r["points"][0]["write"] for r in first]
    ios = int(sum(w["total_ios"] for w in writes))
    art = sum(w["lat_mean_ns"] * w["total_ios"] for w in writes) / ios / 1e6
    nines = max(w["percentiles_ns"]["99.999"] for w in writes) / 1e6  # no histograms: bound
    mrt = max(r["points"][0]["lat_max_ns"] for r in first) / 1e6
    row = f"0–0.05× 1–{first[-1]['round']} {ios:,} {sig(art)} {sig(nines)} {sig(mrt)} 0.05–0.1×"
    assert row in text
    assert "The 99.999 % response time is left out" not in text  # every round had enough


def test_wsat_too_few_ios_for_five_nines_is_said(tmp_path: Path) -> None:
    """The kept emulator run: rounds of about 2,000 I/Os, far below 1,000,000."""
    run = tmp_path / "emu"
    shutil.copytree(RUNDIRS / "emu", run)
    text = pdf_text(build_report(run, tmp_path / "r.pdf"))
    most = max(r["points"][0]["write"]["total_ios"] for r in rounds_of(run, "wsat"))
    assert (
        "The 99.999 % response time is left out of every round: a round needs at least "
        f"1,000,000 I/Os for it (ten beyond it), and the largest round had {most:,}."
    ) in text
    assert "last 5 rounds 1–5" in text
