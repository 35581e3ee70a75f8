"""A new file target (``--size``): created with ``O_CREAT|O_EXCL|O_NOFOLLOW``, never
through a link, and removed on the error path only while the path still holds the
very file tkbench created.  What is there instead -- a dangling link, a file another
user made meanwhile, a file that replaced tkbench's -- is left byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_workdir_guards import NOBODY, needs_root, shared, tree_state
from tkbench import cli
from tkbench.errors import InputError
from tkbench.targets import open_target
from tkbench.targets.file import FileTarget

__all__ = ["shared"]  # a sticky world-writable directory, a fixture

RUN = ["run", "--profile", "quick", "--no-report", "--no-history", "--yes"]


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tkbench: error:"), err
    return lines[0]


@pytest.mark.parametrize("pointing", ["missing.img", "/etc/tkbench-never-made.img"])
def test_a_dangling_link_given_as_a_new_file_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pointing: str
) -> None:
    link = tmp_path / "new.img"
    link.symlink_to(pointing)
    before = tree_state(tmp_path)
    out = tmp_path / "run"
    rc = cli.main([*RUN, "--target", str(link), "--size", "16m", "--out", str(out)])
    line = _one_line(capsys.readouterr().err)
    assert rc == 3 and "symbolic link" in line, line
    assert tree_state(tmp_path) == before  # the link is still there, as it was
    assert not os.path.lexists(link.parent / pointing) and not out.exists()


@needs_root
def test_a_file_made_between_the_check_and_the_create_is_left(shared: Path) -> None:
    """Another user makes the file in a sticky shared directory after tkbench looked."""
    path = shared / "t.img"
    target = open_target(str(path), size=16 << 20, create=True)
    assert isinstance(target, FileTarget) and target.missing
    subprocess.run(
        [*NOBODY, sys.executable, "-c", f"open({str(path)!r}, 'wb').write(b'theirs' * 99)"],
        check=True,
    )
    before = tree_state(shared)
    appeared = "appeared before tkbench could create it"
    with pytest.raises(InputError, match=appeared), target.materialized():
        pytest.fail("the run went on with another user's file")
    assert tree_state(shared) == before
    assert path.read_bytes() == b"theirs" * 99


@pytest.mark.parametrize("replacement", ["file", "link"])
def test_the_error_path_removes_only_the_file_tkbench_created(
    tmp_path: Path, replacement: str
) -> None:
    path = tmp_path / "t.img"
    keep = tmp_path / "keep"
    keep.write_bytes(b"keep me\n")
    target = open_target(str(path), size=16 << 20, create=True)
    with pytest.raises(RuntimeError), target.materialized():
        assert path.stat().st_size == 16 << 20
        path.unlink()  # replaced while the run prepared
        if replacement == "file":
            path.write_bytes(b"someone else's file\n")
        else:
            path.symlink_to(keep)
        before = tree_state(tmp_path)
        raise RuntimeError("the run could not start")
    assert tree_state(tmp_path) == before


def test_the_error_path_still_removes_the_file_it_created(tmp_path: Path) -> None:
    path = tmp_path / "t.img"
    target = open_target(str(path), size=16 << 20, create=True)
    with pytest.raises(RuntimeError), target.materialized():
        raise RuntimeError("the run could not start")
    assert not os.path.lexists(path)
