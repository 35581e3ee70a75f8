"""The examples in examples/ work with the tkbench beside them: real runs of the
nightly script on a file (interrupted, resumed, run again the next "night") and
the acceptance profile through `tkbench plan` and the profile loader."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests._helpers import STAGED_OFF, sets
from tkbench import cli
from tkbench.profile import load as load_profile
from tkbench.store import load_run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NIGHTLY = EXAMPLES / "nightly.sh"
# three IOPS rounds of six 0.5-second points, nothing else: long enough to interrupt
SMALL = sets(
    "tests.iops.point_runtime=0.5s",
    "tests.iops.rounds.max=3",
    "tests.iops.rounds.window=3",
    "tests.throughput.enabled=false",
    "tests.latency.enabled=false",
    "tests.wsat.enabled=false",
    *STAGED_OFF,
)


def _nightly(tmp: Path, *extra: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        PROFILE="quick",
        THRESHOLD="99",
        TKBENCH=str(Path(sys.executable).parent / "tkbench"),
    )
    return subprocess.Popen(
        ["bash", str(NIGHTLY), str(tmp / "t.img"), str(tmp / "results"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _runs(tmp: Path) -> list[Path]:
    return sorted((tmp / "results").glob("run-*"))


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = proc.communicate(timeout=180)
    return proc.returncode, out + err


@pytest.mark.fio
def test_nightly_script_interrupted_resumed_and_run_again(tmp_path: Path) -> None:
    args = ("--size", "16M", "--no-report", *SMALL)
    # night 1, stopped after its first round by a signal to the script alone
    proc = _nightly(tmp_path, *args)
    limit = time.monotonic() + 90
    while not list(tmp_path.glob("results/run-*/tests/iops/rounds/0001.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < limit
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    code, log = _finish(proc)
    assert code == 130, log
    assert "interrupted; run this script again to resume" in log
    (night1,) = _runs(tmp_path)
    interrupted = load_run(night1)
    assert interrupted.manifest.status == "interrupted"
    kept = len(interrupted.test("iops").rounds)
    # the next invocation resumes it rather than starting over; the rig was down for
    # more than a second, so the IOPS test is preconditioned again and begins a new
    # segment of up to 3 rounds (docs/resume.md)
    time.sleep(1.1)
    code, log = _finish(_nightly(tmp_path, *args))
    assert code == 0, log
    assert f"resuming {night1}" in log
    assert _runs(tmp_path) == [night1]
    summary = json.loads((night1 / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert [(t["rounds"], t["segments"]) for t in summary["tests"]] == [(kept + 3, [1, 2])]
    assert load_run(night1).manifest.resumes[0].action == "re-precondition"
    assert ET.parse(night1 / "junit.xml").getroot().tag == "testsuites"
    # night 2: a new run, checked for regressions against night 1
    time.sleep(1.1)  # run directories are named by the second
    code, log = _finish(_nightly(tmp_path, *args))
    assert code == 0, log
    night1_, night2 = _runs(tmp_path)
    assert night1_ == night1 and f"starting {night2}" in log
    checks = json.loads((night2 / "checks.json").read_text())
    assert Path(checks["baseline"]).resolve() == night1.resolve()
    assert any(c["kind"] == "regression" for c in checks["checks"])


def test_nightly_script_without_arguments() -> None:
    proc = subprocess.run(["bash", str(NIGHTLY)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage:")


def test_acceptance_example_plans_and_lists_its_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prof = load_profile(str(EXAMPLES / "acceptance.toml"))
    assert prof.name == "dc-nvme-acceptance"
    assert len(prof.acceptance.criteria) == 8
    assert prof.acceptance.steady_state and prof.acceptance.regression_threshold == 10
    code = cli.main(
        [
            "plan",
            "--profile",
            str(EXAMPLES / "acceptance.toml"),
            "--target",
            str(tmp_path / "x.img"),
            "--size",
            "1G",
            "--no-jobs",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "Acceptance (the run exits 1 when one fails):" in out
    assert "latency: p99.99 4k 0/100 <= 1 ms" in out
    assert "no headline number 10 % worse than the baseline run" in out
