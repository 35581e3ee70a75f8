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


# --------------------------------------------------------------------------- drive temperature


def heat_up(run: Path) -> list[int]:
    """Give a copy of the synthetic run a drive that reports temperatures: an NVMe
    identity with a 75 °C warning temperature, 60 °C after every round, and in the
    IOPS test's last round 30 s of throttling at 78 °C.  Returns the IOPS rounds."""
    mpath = run / "manifest.json"
    manifest = json.loads(mpath.read_text())
    manifest["target"]["identity"].update(interface="nvme", warning_temp_c=75.0)
    mpath.write_text(json.dumps(manifest))
    numbers = []
    for test in ("iops", "wsat"):
        for f in sorted((run / "tests" / test / "rounds").glob("*.json")):
            data = json.loads(f.read_text())
            data.update(schema=3, temperature_c=60.0)
            data["thermal"] = {"source": "nvme smart-log", "throttle_seconds": 0.0}
            if test == "iops":
                numbers.append(data["round"])
            f.write_text(json.dumps(data))
    last = run / "tests" / "iops" / "rounds" / f"{numbers[-1]:04d}.json"
    data = json.loads(last.read_text())
    data.update(temperature_c=78.0, thermal={"source": "nvme smart-log", "throttle_seconds": 30})
    last.write_text(json.dumps(data))
    return numbers


def test_heat_inside_the_window_is_warned_on_page_1_and_in_the_chapter(
    synthetic: tuple[Path, str], tmp_path: Path
) -> None:
    run = tmp_path / "hot"
    shutil.copytree(synthetic[0], run, ignore=shutil.ignore_patterns("report.*"))
    numbers = heat_up(run)
    text = pdf_text(build_report(run, tmp_path / "hot.pdf"))
    summary = text[: text.index("Contents Summary")]  # page 1, the summary (and its overflow)
    warning = (
        f"Heat: inside the measurement window of IOPS the drive throttled or ran at or above "
        f"its warning temperature (round {numbers[-1]}: 30 s in thermal management "
        f"(throttling); 78 °C, at or above its warning temperature of 75 °C)."
    )
    assert warning in summary
    assert text.count(warning) == 2  # the summary and the IOPS chapter
    # the figure of IOPS and of write saturation (read too, without events)
    assert text.count("Drive temperature. The drive's temperature (°C)") == 2
    assert "dashed: the drive's warning temperature, 75 °C" in text
    # write saturation was read too, without events: a figure and no warning
    assert "inside the measurement window of Write Saturation" not in text
    # the tests that read none say so
    assert "Not available: synthetic data: no drive was read." in text


@pytest.mark.fio
def test_a_run_on_a_regular_file_records_no_temperature(tmp_path: Path) -> None:
    """Real fio on a regular file: every round records null, the report says why."""
    from tests._helpers import TWO_IOPS_ROUNDS, sets
    from tkbench import cli

    out = tmp_path / "run"
    argv = ["run", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M"]
    argv += ["--yes", "--out", str(out), "--no-history", *sets(*TWO_IOPS_ROUNDS)]
    assert cli.main(argv) == 0
    rounds = rounds_of(out, "iops")
    assert len(rounds) == 2
    assert all(r["schema"] == 3 and r["temperature_c"] is None for r in rounds)
    assert all("thermal" not in r for r in rounds)
    text = pdf_text(out / "report.pdf")
    assert (
        "Drive temperature Not available: the target is a regular file, which has no drive "
        "temperature."
    ) in text
    assert "Manufacturer not applicable (a regular file)" in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert f"Test ID (run UUID) {manifest['run_id']}" in text
