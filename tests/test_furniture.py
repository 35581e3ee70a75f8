"""Licence, version, man page, shell completions and how tkbench names itself."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import tkbench
from tkbench import cli
from tkbench.cli import docgen
from tkbench.cli.support import command_name

CHECKOUT = Path(__file__).resolve().parents[1]


def test_licence_and_version_are_written_once() -> None:
    text = (CHECKOUT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 2, June 1991" in text
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "GPL-2.0-or-later"
    assert "version" not in project and project["dynamic"] == ["version"]
    assert importlib.metadata.version("tkbench") == tkbench.__version__
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "--version"], capture_output=True, text=True
    )
    assert done.stdout == f"tkbench {tkbench.__version__}\n"


def test_the_man_page_documents_every_command_and_option() -> None:
    page = docgen.manpage()
    parser = cli.build_parser()
    commands = list(docgen._all_commands(parser))
    assert {"run", "doctor", "export", "profiles", "emulate", "report", "history prune"} <= {
        n for n, _, _ in commands
    }
    for name, _, sub in commands:
        assert f'.SS "tkbench {name}"' in page
        for action in docgen._options(sub):
            for opt in action.option_strings:
                if opt not in ("-h", "--help", "-v", "-q", "--quiet"):
                    roff = opt.replace("-", "\\-")
                    assert f"\\fB{roff}\\fR" in page, (name, opt)
    assert ".SH EXIT STATUS" in page and "\\fB5\\fR" in page
    if shutil.which("groff") is None:
        pytest.skip("groff not installed")
    done = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-z"],
        input=page,
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert (done.returncode, done.stderr) == (0, "")


def _bash_complete(script: Path, words: list[str]) -> list[str]:
    """COMPREPLY of the generated bash completion for a command line being typed."""
    tkbench_bin = str(Path(sys.executable).parent / "tkbench")
    quoted = " ".join(f"'{w}'" for w in [tkbench_bin, *words])
    program = (
        f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; "
        '_tkbench; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_bash_completion_completes_commands_options_and_values(tmp_path: Path) -> None:
    script = tmp_path / "tkbench.bash"
    script.write_text(docgen.bash_completion())
    assert {"run", "doctor", "export", "-v", "-q"} <= set(_bash_complete(script, [""]))
    assert _bash_complete(script, ["ex"]) == ["export"]
    assert _bash_complete(script, ["run", "--pro"]) == ["--profile"]
    assert _bash_complete(script, ["-q", "plan", "--profile", ""]) == [
        "ars",
        "bulk-sweep",
        "copy",
        "pts-c",
        "pts-e",
        "quick",
        "rwsw",
        "vfile",
    ]
    assert _bash_complete(script, ["export", "run1", "--format", "o"]) == ["openmetrics"]
    assert _bash_complete(script, ["history", "pr"]) == ["prune"]
    assert _bash_complete(script, ["doctor", "--for", ""]) == sorted(
        ["demo", "nvme", "report", "run", "sas", "sata"]
    )


def test_zsh_completion_is_valid_zsh(tmp_path: Path) -> None:
    script = tmp_path / "_tkbench"
    script.write_text(docgen.zsh_completion())
    assert script.read_text().startswith("#compdef tkbench\n")
    if shutil.which("zsh") is None:
        pytest.skip("zsh not installed")
    done = subprocess.run(["zsh", "-n", str(script)], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_the_demo_names_tkbench_as_the_user_should_type_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path(sys.executable).parent / "tkbench"
    monkeypatch.setenv("PATH", str(tmp_path))  # tkbench not on PATH
    assert command_name(".venv/bin/tkbench") == ".venv/bin/tkbench"
    assert command_name(str(real)) == str(real)
    assert command_name("/x/tkbench/__main__.py") == f"{sys.executable} -m tkbench"
    (tmp_path / "tkbench").symlink_to(real)  # now it is, and it is this program
    assert command_name(str(real)) == "tkbench"
    assert command_name("tkbench") == "tkbench"
    other = tmp_path / "other"
    other.mkdir()
    (other / "tkbench").write_text("#!/bin/sh\n")
    (other / "tkbench").chmod(0o755)
    monkeypatch.setenv("PATH", str(other))  # another tkbench first on PATH
    assert command_name(str(real)) == str(real)


def _loaded_by(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a ``tkbench`` command line imports (in a fresh interpreter)."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['tkbench', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('tkbench', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"loaded = [m for m in {modules!r} if m in sys.modules]\n"
        "sys.stderr.write(f'LOADED {loaded!r}\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, done.stderr[-500:]
    return list(ast.literal_eval(line[-1].removeprefix("LOADED ")))


@pytest.mark.parametrize("argv", [["--help"], ["run", "--no-such-option"]])
def test_help_and_a_bad_option_load_neither_the_engine_nor_the_numerics(argv: list[str]) -> None:
    """--help and an argument error answer without importing the engine, matplotlib or
    numpy: what they print needs none of them (the capture command imports the
    workload reader, numpy's user, when it runs)."""
    assert _loaded_by(argv, ("matplotlib", "numpy", "tkbench.engine")) == []


@pytest.mark.parametrize("argv", [["--help"], ["run", "--no-such-option"]])
def test_help_and_a_bad_option_do_not_load_the_test_types(argv: list[str]) -> None:
    """--help and an argument error answer without importing the test types
    (tkbench.kinds) or what asks them (the profile loader, the planner, the fleet's
    summary): the profile package exports its model, not its loader, and ``tkbench
    plan`` asks the plan it gets to describe itself."""
    heavy = ("tkbench.kinds", "tkbench.profile.build", "tkbench.plan.build")
    assert _loaded_by(argv, (*heavy, "tkbench.fleet.summary")) == []
