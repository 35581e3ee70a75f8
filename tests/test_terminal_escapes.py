"""Strings that came from a file, a device or a profile reach the terminal with their
control characters escaped (ESC as ``\\x1b``, CR as ``\\r``): a run directory's name,
the drive's model and serial in its manifest, a profile's name, description and title,
history entries, in ``show``, ``history``, ``compare``, ``plan``, ``profiles``, the
progress lines and error messages.  JSON output is left to ``json.dumps``."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests._rundir_outputs import RUNDIRS
from tkbench import cli
from tkbench.cli.ui import LogProgress
from tkbench.engine import events

HOSTILE = "\x1b[2J\rX"  # clear the screen, then overwrite the line
SHOWN = "\\x1b[2J\\rX"


def clean(text: str) -> None:
    """No control character but newlines and tabs, and the hostile string escaped."""
    assert not [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert SHOWN in text


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / f"run{HOSTILE}"
    shutil.copytree(RUNDIRS / "file-a", run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["target"]["identity"]["model"] = f"model{HOSTILE}"
    manifest["target"]["identity"]["serial"] = f"serial{HOSTILE}"
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_show_and_compare_escape_the_run(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["show", str(run_dir)]) == 0
    out = capsys.readouterr().out
    clean(out)
    assert f"model{SHOWN}" in out
    assert cli.main(["compare", str(run_dir), str(run_dir)]) == 0
    clean(capsys.readouterr().out)


def test_json_output_is_json_escaped(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["show", str(run_dir), "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\u001b[2J" in out
    assert json.loads(out)["run_dir"] == str(run_dir)


def test_history_escapes_entries_and_progress_lines(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = str(tmp_path / "h.sqlite")
    assert cli.main(["history", "--history", history, "--add", str(run_dir)]) == 0
    got = capsys.readouterr()
    clean(got.out)
    clean(got.err)  # "indexed: RUN"
    assert f"serial{SHOWN}" in got.out
    run_dir.rename(tmp_path / "gone")
    assert cli.main(["history", "prune", "--yes", "--history", history]) == 0
    assert "dropped 1 entry" in capsys.readouterr().out


def test_an_error_naming_a_hostile_path_is_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["show", str(tmp_path / f"missing{HOSTILE}")]) == 2
    err = capsys.readouterr().err
    clean(err)
    assert err.count("\n") == 1


def hostile_profile(tmp_path: Path) -> Path:
    p = tmp_path / "hostile.toml"
    p.write_text(
        f'name = "quick{HOSTILE}"\n'.replace("\x1b", "\\u001b").replace("\r", "\\r")
        + 'description = "desc\\u001b[2J\\rX"\nextends = "quick"\n'
        + '[report]\ntitle = "title\\u001b]0;pwned\\u0007"\n'
    )
    return p


def test_plan_escapes_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = hostile_profile(tmp_path)
    argv = ["plan", "--profile", str(profile), "--target", str(tmp_path / "t.img")]
    assert cli.main([*argv, "--size", "16M"]) == 0
    out = capsys.readouterr().out
    clean(out)
    assert f"quick{SHOWN}" in out and f"desc{SHOWN}" in out


def test_profiles_listing_escapes_descriptions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "config"
    (home / "tkbench" / "profiles").mkdir(parents=True)
    shutil.copy(hostile_profile(tmp_path), home / "tkbench" / "profiles" / "hostile.toml")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    cli.main(["profiles"])
    out = capsys.readouterr().out
    clean(out)
    assert f"desc{SHOWN}" in out


def test_log_progress_lines_are_escaped() -> None:
    stream = io.StringIO()
    progress = LogProgress(stream)
    test = SimpleNamespace(name=f"iops{HOSTILE}", max_rounds=3)
    progress.event(events.TestResumed(test, f"go{HOSTILE}", 1))
    line = stream.getvalue()
    assert line.count("\n") == 1
    clean(line)
