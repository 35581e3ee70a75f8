"""Closed pipes, -q/-v and internal errors, with real processes and real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._helpers import TWO_IOPS_ROUNDS, sets

CHECKOUT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    """The environment as the test has it now (its private history: tests/conftest.py)."""
    return {**os.environ, "PYTHONPATH": str(CHECKOUT)}


def closed_pipe_run(*args: str, pre: str = "") -> tuple[int, str]:
    """Run tkbench with stdout on a pipe nobody reads any more (as ``| head`` leaves it
    once it has its line): the reading end is closed before tkbench writes."""
    r, w = os.pipe()
    os.close(r)
    argv = [sys.executable, "-m", "tkbench", *args]
    if pre:
        argv = [sys.executable, "-c", f"{pre}; import sys; from tkbench.cli import main; "
                "sys.exit(main(sys.argv[1:]))", *args]  # fmt: skip
    try:
        done = subprocess.run(
            argv, stdout=w, stderr=subprocess.PIPE, text=True, env=_env(), timeout=60
        )
    finally:
        os.close(w)
    return done.returncode, done.stderr


def test_profiles_and_history_into_a_closed_pipe_exit_0_silently(tmp_path: Path) -> None:
    for args in (["profiles"], ["profiles", "--json"], ["history"], ["doctor"]):
        code, err = closed_pipe_run(*args)
        assert (code, err) == (0, ""), args


def test_real_shell_pipelines_into_head(tmp_path: Path) -> None:
    for cmd in ("profiles", "history", "plan --profile pts-e --target /tmp/x.img --size 1G"):
        done = subprocess.run(
            ["bash", "-c", f"set -o pipefail; {sys.executable} -m tkbench {cmd} | head -n 1"],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        assert done.returncode == 0, (cmd, done.stderr)
        assert done.stderr == "", cmd
        assert len(done.stdout.splitlines()) == 1


def _run_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run", "--profile", "quick", "--target", str(tmp_path / "t.img"), "--size", "16M",
        "--yes", "--no-report", "--out", str(tmp_path / "run"), *sets(*TWO_IOPS_ROUNDS), *extra,
    ]  # fmt: skip


def test_an_internal_error_has_its_own_exit_code_and_one_line() -> None:
    boom = "import tkbench.cli as c, tkbench.cli.tools as t; t.cmd_profiles = lambda args: 1 / 0"
    argv = [sys.executable, "-c", f"{boom}; import sys; sys.exit(c.main(sys.argv[1:]))"]
    done = subprocess.run([*argv, "profiles"], capture_output=True, text=True, env=_env())
    assert done.returncode == 5
    assert done.stderr == (
        "tkbench: error: internal error: ZeroDivisionError: division by zero "
        "(run with -v for the traceback; please report it)\n"
    )
    for verbose in (["-v", "profiles"], ["profiles", "--verbose"]):
        done = subprocess.run([*argv, *verbose], capture_output=True, text=True, env=_env())
        assert done.returncode == 5
        assert done.stderr.startswith("Traceback (most recent call last):")
        assert done.stderr.splitlines()[-1].startswith("tkbench: error: internal error:")
    # a BrokenPipeError that is not about our own output is a bug too, not a success
    pipe = "import tkbench.cli as c, tkbench.cli.tools as t\n"
    pipe += "def f(args): raise BrokenPipeError(32, 'Broken pipe')\n"
    pipe += "t.cmd_profiles = f\nimport sys\nsys.exit(c.main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", pipe, "profiles"], capture_output=True, text=True, env=_env()
    )
    assert done.returncode == 5 and "internal error: BrokenPipeError" in done.stderr


@pytest.mark.fio
def test_an_internal_error_in_a_run_leaves_its_traceback_in_the_run_log(tmp_path: Path) -> None:
    boom = "import tkbench.engine as e; e.Engine.run_test = lambda *a: {}['no-such-key']"
    argv = [sys.executable, "-c", f"{boom}; import sys; from tkbench.cli import main; "
            "sys.exit(main(sys.argv[1:]))", *_run_args(tmp_path)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 5
    log = tmp_path / "run" / "events.log"
    last = done.stderr.splitlines()[-1]
    assert last == (
        f"tkbench: error: internal error: KeyError: 'no-such-key' "
        f"(traceback in {log}; please report it)"
    )
    text = log.read_text()
    assert "Traceback (most recent call last):" in text and "KeyError: 'no-such-key'" in text
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


@pytest.mark.fio
def test_quiet_run_prints_nothing_but_its_result(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "-q", *_run_args(tmp_path, "--json")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["status"] == "complete"
    # the same run without -q logs its progress
    (tmp_path / "b").mkdir()
    loud = subprocess.run(
        [sys.executable, "-m", "tkbench", *_run_args(tmp_path / "b")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert loud.returncode == 0 and "round done" in loud.stderr


def test_verbose_and_quiet_together_are_bad_input() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "-v", "-q", "profiles"],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
