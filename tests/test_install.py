"""tkbench installed the way users install it, and its profile search path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tkbench import cli, profile
from tkbench.errors import ProfileError
from tkbench.profile import paths
from tkbench.profile.build import load as load_profile

CHECKOUT = Path(__file__).resolve().parents[1]


def _write_profile(d: Path, name: str, description: str, extends: str = "quick") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.toml"
    path.write_text(f'name = "{name}"\ndescription = "{description}"\nextends = "{extends}"\n')
    return path


@pytest.fixture
def system_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "etc-tkbench-profiles"
    monkeypatch.setattr(paths, "SYSTEM_PROFILES", d)
    return d


def test_user_profiles_come_first_then_system_then_bundled(
    tmp_path: Path, system_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    user_dir = config / "tkbench" / "profiles"
    _write_profile(user_dir, "quick", "my quick", extends="pts-e")
    _write_profile(user_dir, "lab", "user lab")
    _write_profile(system_dir, "lab", "system lab")
    _write_profile(system_dir, "site", "site-wide", extends="pts-c")

    entries = {e.name: e for e in profile.catalogue()}
    assert set(entries) == {
        "ars", "bulk-sweep", "copy", "pts-e", "pts-c", "quick", "rwsw", "vfile", "lab", "site",
    }  # fmt: skip
    assert (entries["quick"].origin, entries["quick"].shadows) == ("user", ("bundled",))
    assert (entries["lab"].origin, entries["lab"].shadows) == ("user", ("system",))
    assert entries["site"].origin == "system"
    assert entries["pts-e"].origin == "bundled"
    assert entries["pts-e"].path == paths.bundled("profiles") / "pts-e.toml"

    assert load_profile("lab").description == "user lab"
    # a user profile named like a bundled one wins, and may extend the bundled one
    mine = load_profile("quick")
    assert mine.description == "my quick"
    assert mine.test("iops").point_runtime == 60.0  # from pts-e, not the bundled quick
    # the bundled pts-c still extends the bundled pts-e beside it
    assert load_profile("site").workload.active_range == 75.0


def test_profiles_command_names_the_origin(
    tmp_path: Path,
    system_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    _write_profile(tmp_path / "cfg" / "tkbench" / "profiles", "quick", "mine")
    _write_profile(system_dir, "site", "site-wide")
    assert cli.main(["profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {line.split()[0]: line for line in lines}
    assert by_name["quick"].split()[1:4] == ["user", "(hides", "bundled)"]
    assert "mine" in by_name["quick"]
    assert by_name["site"].split()[1] == "system"
    assert by_name["pts-e"].split()[1] == "bundled"
    assert cli.main(["profiles", "--json"]) == 0
    data = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert data["site"]["path"] == str(system_dir / "site.toml")


def test_an_invalid_user_profile_is_listed_and_fails_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    d = tmp_path / "tkbench" / "profiles"
    d.mkdir(parents=True)
    (d / "broken.toml").write_text("[x\n")
    assert cli.main(["profiles"]) == 2
    out = capsys.readouterr().out
    assert "broken" in out and "INVALID" in out and "pts-e" in out


def test_relative_xdg_config_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    monkeypatch.setenv("HOME", "/nonexistent-home")
    assert paths.profile_dirs()[0] == paths.ProfileDir(
        Path("/nonexistent-home/.config/tkbench/profiles"), "user"
    )


def test_unknown_profile_names_the_search_path_results() -> None:
    names = r"available: ars, bulk-sweep, copy, pts-c, pts-e, quick, rwsw, vfile"
    with pytest.raises(ProfileError, match=names):
        profile.find("no-such-profile")


@pytest.mark.slow
def test_a_non_editable_install_finds_its_profiles_and_templates(tmp_path: Path) -> None:
    """Build the wheel as pip does, install it into a directory of its own (not
    editable, not the checkout) and run the installed ``tkbench`` from elsewhere."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(CHECKOUT)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("tkbench-*.whl")
    import tkbench

    assert wheel.name.startswith(f"tkbench-{tkbench.__version__}-")
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"tkbench-{tkbench.__version__}.dist-info/METADATA").decode()
        names = zf.namelist()
    assert "License-Expression: GPL-2.0-or-later" in meta.splitlines()
    assert f"tkbench-{tkbench.__version__}.dist-info/licenses/LICENSE" in names
    assert "scipy" not in meta and "Requires-Dist: weasyprint>=68" in meta.splitlines()
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    assert not (site / "share").exists()  # no data files outside the package
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "XDG_CONFIG_HOME": str(tmp_path / "empty-config"),
    }

    def tkbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(site / "bin" / "tkbench"), *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import tkbench; print(tkbench.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site)

    listed = tkbench("profiles")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == ["ars", "bulk-sweep", "copy", "pts-c", "pts-e", "quick", "rwsw", "vfile"]
    assert all(line.split()[1] == "bundled" for line in listed.stdout.splitlines())
    assert str(site) in json.loads(tkbench("profiles", "--json").stdout)[0]["path"]

    plan = tkbench("plan", "--profile", "pts-e", "--target", "/tmp/x.img", "--size", "1G")
    assert plan.returncode == 0, plan.stderr
    assert "IOPS" in plan.stdout and "[global]" in plan.stdout
    assert plan.stderr == ""

    templates = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tkbench.report import render; "
            "env = render.environment(); "
            "print(render.TEMPLATES, len(render.stylesheet())); "
            "print(env.get_template(render.MAIN_TEMPLATE).filename); "
            "print(env.get_template(render.COMPARISON_TEMPLATE).filename)",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    where_t, css_len, main, comparison = templates.stdout.split()
    assert Path(where_t).is_relative_to(site)
    assert int(css_len) > 1000
    assert Path(main).is_relative_to(site) and Path(comparison).is_relative_to(site)
