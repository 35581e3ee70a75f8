"""Acceptance criteria, JUnit XML, the history index, regressions and compare."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF, layout_text, sets
from tkbench import analysis, cli
from tkbench.report import build_report
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio

ONLY_IOPS = [
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=3",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
]


def _run(tmp: Path, name: str, *extra: str, overrides: tuple[str, ...] = ()) -> int:
    args = [
        "run",
        "--profile",
        "quick",
        "--target",
        str(tmp / "t.img"),
        "--yes",
        "--out",
        str(tmp / name),
        "--no-report",
        "--history",
        str(tmp / "h.sqlite"),
        *extra,
    ]
    if not (tmp / "t.img").exists():
        args += ["--size", "16M"]
    args += sets(*ONLY_IOPS, *overrides)
    return cli.main(args)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("checks")
    assert _run(tmp, "base") == 0
    return tmp


def test_acceptance_pass_and_fail_with_junit(
    base_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = base_run
    run = load_run(tmp / "base")
    measured = analysis.value(run.test("iops"), "iops", 4096, 0)
    assert measured > 0
    crit = [
        f'acceptance.criteria=["iops iops 4k 0/100 >= {measured / 1000:.0f}", '
        f'"iops p99 4k 0/100 <= 100000", "iops iops 64k 100/0 >= 1e12"]'
    ]
    code = _run(tmp, "acc", "--junit", str(tmp / "junit.xml"), overrides=tuple(crit))
    err = capsys.readouterr().err
    assert code == 1, err
    assert "checks: FAIL (2 of 3 passed)" in err
    assert "FAIL iops: iops 64k 100/0 >= 1e+12 IOPS" in err
    checks = json.loads((tmp / "acc" / "checks.json").read_text())
    assert [c["passed"] for c in checks["checks"]] == [True, True, False]
    suite = ET.parse(tmp / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    failures = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failures == ["iops: iops 64k 100/0 >= 1e+12 IOPS"]
    # the report carries the verdict on its first page and a checks chapter
    pdf = build_report(tmp / "acc", tmp / "acc" / "report.pdf")
    text = layout_text(pdf)
    first_page = text.split("\f")[0]
    assert "FAIL" in first_page and "2 of 3 checks passed" in first_page
    assert "Acceptance checks" in text
    assert "iops: iops 64k 100/0 >= 1e+12 IOPS" in " ".join(text.split())


def test_steady_state_requirement_fails_a_non_steady_run(base_run: Path) -> None:
    code = _run(
        base_run,
        "steady",
        overrides=("acceptance.steady_state=true", "tests.iops.rounds.max_excursion=0.0000001"),
    )
    assert code == 1
    checks = json.loads((base_run / "steady" / "checks.json").read_text())
    assert checks["checks"][0]["kind"] == "steady_state"
    assert checks["checks"][0]["passed"] is False


def test_history_lists_runs_by_drive(base_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert cli.main(["history", "--history", str(base_run / "h.sqlite"), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    dirs = {Path(e["run_dir"]).name for e in entries}
    assert "base" in dirs
    base = next(e for e in entries if Path(e["run_dir"]).name == "base")
    assert base["model"] == "regular file"
    assert base["headline"]["iops: iops 4k 0/100"] > 0
    assert cli.main(["history", "--history", str(base_run / "h.sqlite")]) == 0
    assert "regular file" in capsys.readouterr().out


def test_regression_against_a_faster_baseline_fails(
    base_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = base_run
    # a synthetic baseline: the real base run with every IOPS ten times higher (made for
    # this test; a factor of two was within the run-to-run spread of a loaded machine)
    fast = tmp / "fast-baseline"
    shutil.copytree(tmp / "base", fast)
    for f in (fast / "tests" / "iops" / "rounds").glob("*.json"):
        rec = json.loads(f.read_text())
        for p in rec["points"]:
            p["iops"] *= 10
        rec["tracking"] = {k: v * 10 for k, v in rec["tracking"].items()}
        f.write_text(json.dumps(rec))
    code = _run(tmp, "regress", "--baseline", str(fast), "--regression-threshold", "20")
    err = capsys.readouterr().err
    assert code == 1, err
    assert "regression: iops: iops 4k 0/100" in err
    # against itself there is no regression
    capsys.readouterr()
    assert _run(tmp, "same", "--baseline", str(tmp / "base"), "--regression-threshold", "99") == 0


def test_compare_json_and_text(base_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a second run of the same profile, made here: no test depends on another's order
    # (make test's workers may run a module's tests in any order)
    assert _run(base_run, "again") == 0
    capsys.readouterr()
    a, b = base_run / "base", base_run / "again"
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert len(rows) == 6  # the quick IOPS points
    row = next(r for r in rows if r["point"] == "4k 0/100")
    va, vb = row["values"]
    assert row["delta_pct"][1] == pytest.approx((vb - va) / va * 100)
    assert out["differences"] == []  # same profile, same conditions
    assert cli.main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "Δ run 2" in text and "conditions that differ" not in text


def test_compare_names_conditions_that_differ(
    base_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run at another queue depth is not comparable point for point: compare says so."""
    tmp = base_run
    assert _run(tmp, "qd1", overrides=("workload.iodepth=1",)) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp / "base"), str(tmp / "qd1"), "--json"]) == 0
    diffs = json.loads(capsys.readouterr().out)["differences"]
    assert diffs == [
        {
            "test": "iops",
            "condition": "outstanding I/O",
            "values": ["2 jobs × QD 8", "2 jobs × QD 1"],
        }
    ]
    pdf = tmp / "cmp" / "qd.pdf"
    assert cli.main(["compare", str(tmp / "base"), str(tmp / "qd1"), "--out", str(pdf)]) == 0
    assert (
        "iops: outstanding I/O differs (run 1: 2 jobs × QD 8; run 2: 2 jobs × QD 1)"
        in capsys.readouterr().out
    )
    text = subprocess.run(
        ["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    assert "Conditions differ." in text
    assert "outstanding I/O: run 1 2 jobs × QD 8; run 2 2 jobs × QD 1" in " ".join(text.split())
