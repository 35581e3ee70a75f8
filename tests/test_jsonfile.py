"""The one atomic writer (tkbench.rundir.jsonfile): never through a link, never a
half file, and the exclusive form never over anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tkbench.rundir.jsonfile import replace_file


def test_a_link_at_the_destination_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.json").symlink_to(victim)
    replace_file(tmp_path / "d" / "f.json", "{}\n")
    assert victim.read_text() == "keep\n"
    assert not (tmp_path / "d" / "f.json").is_symlink()
    assert (tmp_path / "d" / "f.json").read_text() == "{}\n"
    assert os.listdir(tmp_path / "d") == ["f.json"]  # no temporary file left


def test_in_an_open_directory_and_exclusive(tmp_path: Path) -> None:
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        replace_file("m.json", "1\n", mode=0o600, dir_fd=dfd, exclusive=True)
        assert (tmp_path / "m.json").read_text() == "1\n"
        assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o600
        with pytest.raises(FileExistsError):  # a marker that must be new is never replaced
            replace_file("m.json", "2\n", dir_fd=dfd, exclusive=True)
        (tmp_path / "l.json").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(FileExistsError):  # nor written through a link
            replace_file("l.json", "3\n", dir_fd=dfd, exclusive=True)
        assert not (tmp_path / "elsewhere").exists()
        replace_file("m.json", "2\n", dir_fd=dfd)
        assert (tmp_path / "m.json").read_text() == "2\n"
    finally:
        os.close(dfd)
    assert sorted(os.listdir(tmp_path)) == ["l.json", "m.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "f.json").write_text("old\n")
    (tmp_path / "f.json.d").mkdir()
    with pytest.raises(IsADirectoryError):
        replace_file(tmp_path / "f.json.d", "new\n")  # rename over a directory fails
    assert (tmp_path / "f.json").read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["f.json", "f.json.d"]
