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
from tkbench.profile.build import load as load_profile
from tkbench.rundir.store import load_run

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
    limit = time.monotonic() + 300  # a bound, not a timing: a loaded host stalls
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
    # night 2 as if the rig had stopped between its last round and its checks: the
    # next invocation finishes it (checks, report) instead of starting night 3
    (night2 / "checks.json").unlink()
    rounds = sorted(p.name for p in night2.glob("tests/*/rounds/*.json"))
    time.sleep(1.1)
    code, log = _finish(_nightly(tmp_path, *args))
    assert code == 0, log
    assert f"resuming {night2}" in log
    assert _runs(tmp_path) == [night1, night2]
    assert json.loads((night2 / "checks.json").read_text())["checks"]
    assert sorted(p.name for p in night2.glob("tests/*/rounds/*.json")) == rounds


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


# --------------------------------------------------------------------------- systemd units

UNITS = ("tkbench-nightly@.service", "tkbench-nightly@.timer")
INSTALLED = "/opt/tkbench/examples/nightly.sh"  # where the units expect the checkout


def _analyze(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def _verify(units: Path) -> str:
    """systemd-analyze verify of one instance of both units, as installed from
    ``units``; everything it said (it says nothing about a sound unit, and exits 0
    after some warnings, so any output counts as a failure)."""
    proc = _analyze("verify", "--man=no", "./tkbench-nightly@nvme1.service",
                    "./tkbench-nightly@nvme1.timer", cwd=units)  # fmt: skip
    said = (proc.stdout + proc.stderr).strip()
    return said or ("" if proc.returncode == 0 else f"exit {proc.returncode}")


def _install(tmp: Path, edit: tuple[str, str, str] | None = None) -> Path:
    """The example units in ``tmp``, pointed at this checkout's nightly.sh instead of
    /opt/tkbench's (``systemd-analyze verify`` checks that ExecStart is executable);
    ``edit``: (unit, old, new), one more replacement to break a unit on purpose."""
    tmp.mkdir()
    for name in UNITS:
        text = (EXAMPLES / name).read_text()
        if name.endswith(".service"):
            assert f"ExecStart={INSTALLED} " in text
            text = text.replace(f"ExecStart={INSTALLED}", f"ExecStart={NIGHTLY}")
        if edit is not None and edit[0] == name:
            assert edit[1] in text
            text = text.replace(edit[1], edit[2])
        (tmp / name).write_text(text)
    return tmp


def test_systemd_units_verify(tmp_path: Path) -> None:
    assert os.access(NIGHTLY, os.X_OK)
    assert _verify(_install(tmp_path / "ok")) == ""
    # the checker catches a broken unit: a misspelled key (a warning, exit 0), a
    # schedule systemd cannot parse, a command that is not there
    broken = [
        ("tkbench-nightly@.timer", "Persistent=", "Persistant="),
        ("tkbench-nightly@.timer", "01:30:00", "25:30:00"),
        ("tkbench-nightly@.service", "TimeoutStartSec=", "TimeoutStartSecs="),
        ("tkbench-nightly@.service", f"ExecStart={NIGHTLY}", "ExecStart=/nonexistent/nightly.sh"),
    ]
    for i, edit in enumerate(broken):
        assert _verify(_install(tmp_path / f"broken{i}", edit)) != "", edit


def test_systemd_timer_runs_at_the_documented_time_and_settings_match(tmp_path: Path) -> None:
    timer = (EXAMPLES / "tkbench-nightly@.timer").read_text()
    (calendar,) = [ln.split("=", 1)[1] for ln in timer.splitlines() if ln.startswith("OnCalendar=")]
    proc = _analyze("calendar", calendar, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Normalized form: *-*-* 01:30:00" in proc.stdout
    assert "every night at 01:30" in timer
    # the settings file names what the service's command line and nightly.sh read
    env = dict(
        ln.split("=", 1)
        for ln in (EXAMPLES / "nightly.env").read_text().splitlines()
        if ln and not ln.startswith("#")
    )
    service = (EXAMPLES / "tkbench-nightly@.service").read_text()
    assert "${TARGET} ${RESULTS}" in service and {"TARGET", "RESULTS"} <= set(env)
    script = NIGHTLY.read_text()
    assert all(f"${{{key}" in script for key in ("PROFILE", "CONFIRM", "THRESHOLD"))
    assert {"PROFILE", "CONFIRM", "THRESHOLD"} <= set(env)
