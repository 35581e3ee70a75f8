"""``tkbench doctor`` and the pre-flight checks of ``run``, run for real in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TKBENCH = [sys.executable, "-m", "tkbench"]
CHECKOUT = Path(__file__).resolve().parents[1]


def tkbench(
    *args: str, path: str | None = None, pre: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(CHECKOUT)
    if path is not None:
        env["PATH"] = path
    argv = (
        TKBENCH
        if not pre
        else [
            sys.executable,
            "-c",
            f"{pre}; from tkbench.cli import main; sys.exit(main(sys.argv[1:]))",
        ]
    )
    return subprocess.run(
        [*argv, *args], env=env, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def bin_without(tmp_path: Path, *tools: str, extra: dict[str, str] | None = None) -> str:
    """A PATH directory holding links to the programs doctor looks for, except ``tools``."""
    d = tmp_path / "bin"
    d.mkdir()
    for name in ("fio", "fc-match", "nbdkit", "nvme", "smartctl", "hdparm", "sg_format"):
        where = shutil.which(name)
        if where and name not in tools:
            (d / name).symlink_to(where)
    for name, script in (extra or {}).items():
        (d / name).write_text(script)
        (d / name).chmod(0o755)
    return str(d)


def lines_by_name(out: str) -> dict[str, str]:
    return {line.split()[1]: line for line in out.splitlines()}


@pytest.mark.fio
def test_doctor_passes_on_a_machine_set_up_by_the_readme() -> None:
    done = tkbench("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = lines_by_name(done.stdout)
    for name in ("fio", "WeasyPrint", "Pango", "fonts", "nbdkit", "root"):
        assert name in lines
    for name in ("fio", "WeasyPrint", "Pango", "fonts"):
        assert lines[name].startswith("ok "), lines[name]
    assert "fio-3." in lines["fio"]
    assert done.stderr == "doctor: everything run needs is here\n"


def test_doctor_without_fio_names_the_fix(tmp_path: Path) -> None:
    done = tkbench("doctor", path=bin_without(tmp_path, "fio"))
    assert done.returncode == 4
    line = lines_by_name(done.stdout)["fio"]
    assert line.startswith("MISSING")
    assert "not found on PATH" in line and "fix: apt-get install fio" in line
    assert done.stderr.strip() == "doctor: 1 prerequisite(s) for run missing: fio"


@pytest.mark.fio
def test_doctor_for_the_demo_needs_nbdkit(tmp_path: Path) -> None:
    path = bin_without(tmp_path, "nbdkit")
    assert tkbench("doctor", path=path).returncode == 0  # a run does not need it
    done = tkbench("doctor", "--for", "demo", "--json", path=path)
    assert done.returncode == 4
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["for"] == ["demo"]
    (nbd,) = [c for c in data["checks"] if c["name"] == "nbdkit"]
    assert nbd["needed"] and not nbd["ok"]
    assert nbd["fix"] == "apt-get install nbdkit nbdkit-plugin-python"


@pytest.mark.fio
def test_doctor_checks_direct_io_in_a_directory(tmp_path: Path) -> None:
    done = tkbench("doctor", "--dir", str(tmp_path))
    assert done.returncode == 0
    assert lines_by_name(done.stdout)["O_DIRECT"].startswith("ok ")
    assert list(tmp_path.iterdir()) == []  # its probe file is gone
    done = tkbench("doctor", "--dir", str(tmp_path / "nope"))
    assert done.returncode == 4
    assert "not a directory" in lines_by_name(done.stdout)["O_DIRECT"]


def test_doctor_bad_purpose_is_bad_input() -> None:
    done = tkbench("doctor", "--for", "toaster")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "invalid choice" in done.stderr


OLD_FIO = "#!/bin/sh\necho fio-2.1.4\n"


def test_an_old_fio_is_refused_at_once_with_the_fix(tmp_path: Path) -> None:
    path = bin_without(tmp_path, "fio", extra={"fio": OLD_FIO})
    done = tkbench("doctor", path=path)
    assert done.returncode == 4
    assert "fio-2.1.4" in lines_by_name(done.stdout)["fio"]
    target = tmp_path / "t.img"
    done = tkbench(
        "run", "--target", str(target), "--size", "16M", "--yes", "--no-report",
        "--out", str(tmp_path / "run"), path=path,
    )  # fmt: skip
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1
    assert "fio-2.1.4 is too old" in done.stderr and "fix: apt-get install fio" in done.stderr
    assert not target.exists() and not (tmp_path / "run").exists()


BLOCK_WEASYPRINT = "import sys; sys.modules['weasyprint'] = None"


def test_run_refuses_in_its_first_second_when_the_report_cannot_be_rendered(
    tmp_path: Path,
) -> None:
    target = tmp_path / "t.img"
    args = ["run", "--target", str(target), "--size", "16M", "--yes", "--out", str(tmp_path / "r")]
    done = tkbench(*args, pre=BLOCK_WEASYPRINT)
    assert done.returncode == 4
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("tkbench: error: the report cannot be rendered: WeasyPrint")
    assert "fix: pip install 'weasyprint>=68'" in done.stderr and "--no-report" in done.stderr
    assert not target.exists() and not (tmp_path / "r").exists()
    # doctor says the same
    doc = tkbench("doctor", "--for", "report", pre=BLOCK_WEASYPRINT)
    assert doc.returncode == 4
    assert lines_by_name(doc.stdout)["WeasyPrint"].startswith("MISSING")


def test_an_old_weasyprint_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "weasyprint"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '67.0'\n")
    pre = f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r})"
    done = tkbench("run", "--target", str(tmp_path / "t.img"), "--size", "16M", pre=pre)
    assert done.returncode == 4
    assert "WeasyPrint: 67.0 is older than 68" in done.stderr
