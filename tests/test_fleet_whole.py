"""A fleet checked as a whole before any of its runs starts: files that fit their
filesystem one by one but not together, and one file or device reached twice -- a
hard link, a bind mount, a new file named through a linked directory or a dangling
link, a loop device and its backing file, a partition and its whole disk.  Refused
with one line (exit 2), no child started, nothing written: every file and device is
compared byte for byte, and the directories by listing, type, owner and mode."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakes.helpers import LoopDevices, run, sha256_of

from tests._helpers import TWO_IOPS_ROUNDS, sets
from tests.test_workdir_guards import tree_state
from tkbench import cli
from tkbench import fleet as fleetmod

MiB = 1 << 20
FLEET = ["run", "--profile", "quick", "--yes", "--no-history", "--no-report"]
FLEET += sets(*TWO_IOPS_ROUNDS)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], match: str) -> str:
    rc = cli.main(argv)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2, lines
    assert len(lines) == 1 and lines[0].startswith("tkbench: error:"), lines
    assert match in lines[0], lines[0]
    return lines[0]


def _image(path: Path, size: int = 16 * MiB) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
        fh.write(os.urandom(4096))
    return path


def _partitioned(loops: LoopDevices, tmp_path: Path) -> tuple[Path, str, str, str]:
    """A file with a partition table of two partitions (sfdisk on the file), attached
    with ``losetup -P``: (file, disk, first partition, second partition)."""
    img = tmp_path / "disk.img"
    with open(img, "wb") as fh:
        fh.truncate(64 * MiB)
    run(["sfdisk", "-q", str(img)], input="label: dos\n,20M,L\n,20M,L\n")
    dev = run(["losetup", "--find", "--show", "--partscan", str(img)]).stdout.strip()
    loops.devices.append(dev)
    if not os.path.exists(f"/sys/class/block/{os.path.basename(dev)}p1"):
        run(["partx", "--add", dev])  # kernels whose loop driver did not scan it
    for p in (f"{dev}p1", f"{dev}p2"):
        for _ in range(50):
            if os.path.exists(p):
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert os.path.exists(p), p
    return img, dev, f"{dev}p1", f"{dev}p2"


@pytest.fixture
def binds() -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for p in reversed(made):
        subprocess.run(["umount", str(p)], check=False)


Case = Callable[[Path, LoopDevices, list[Path]], tuple[str, str, list[str]]]


def _hard_link(tmp: Path, loops: LoopDevices, binds: list[Path]) -> tuple[str, str, list[str]]:
    a = _image(tmp / "a.img")
    os.link(a, tmp / "b.img")
    return str(a), str(tmp / "b.img"), [str(a)]


def _bind_mounted_file(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    a = _image(tmp / "a.img")
    b = _image(tmp / "b.img", MiB)
    run(["mount", "--bind", str(a), str(b)])
    binds.append(b)
    return str(a), str(b), [str(a)]


def _new_file_through_a_linked_directory(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    (tmp / "d").mkdir()
    (tmp / "link").symlink_to(tmp / "d")
    return str(tmp / "d" / "new.img"), str(tmp / "link" / "new.img"), []


def _new_file_through_a_bind_mounted_directory(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    (tmp / "d").mkdir()
    (tmp / "e").mkdir()
    run(["mount", "--bind", str(tmp / "d"), str(tmp / "e")])
    binds.append(tmp / "e")
    return str(tmp / "d" / "new.img"), str(tmp / "e" / "new.img"), []


def _a_new_file_on_a_filesystem_and_its_device(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    img = str(loops.tmp / f"loop{len(loops.devices)}.img")
    dev = loops.create(32)
    loops.mkfs(dev)
    mnt = loops.mount(dev)
    return str(mnt / "new.img"), dev, [img]


def _new_file_and_a_dangling_link_to_it(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    (tmp / "link.img").symlink_to("new.img")
    return str(tmp / "new.img"), str(tmp / "link.img"), []


def _loop_and_its_backing_file(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    img = str(loops.tmp / f"loop{len(loops.devices)}.img")
    dev = loops.create(16)
    return dev, img, [dev, img]


def _two_loops_over_one_file(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    img = str(loops.tmp / f"loop{len(loops.devices)}.img")
    dev = loops.create(16)
    again = run(["losetup", "--find", "--show", img]).stdout.strip()
    loops.devices.append(again)
    return dev, again, [dev, again]


def _partition_and_its_disk(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    img, dev, p1, _ = _partitioned(loops, tmp)
    return p1, dev, [str(img), dev, p1]


def _partition_and_the_disks_backing_file(
    tmp: Path, loops: LoopDevices, binds: list[Path]
) -> tuple[str, str, list[str]]:
    img, _, _, p2 = _partitioned(loops, tmp)
    return str(img), p2, [str(img), p2]


@pytest.mark.root
@pytest.mark.parametrize(
    "case",
    [
        _hard_link,
        _bind_mounted_file,
        _new_file_through_a_linked_directory,
        _new_file_through_a_bind_mounted_directory,
        _new_file_and_a_dangling_link_to_it,
        _a_new_file_on_a_filesystem_and_its_device,
        _loop_and_its_backing_file,
        _two_loops_over_one_file,
        _partition_and_its_disk,
        _partition_and_the_disks_backing_file,
    ],
)
def test_one_file_or_device_reached_twice_is_refused_before_any_run(
    tmp_path: Path,
    loops: LoopDevices,
    binds: list[Path],
    capsys: pytest.CaptureFixture[str],
    case: Case,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    a, b, data = case(work, loops, binds)
    before = tree_state(work)
    sums = {p: sha256_of(p) for p in data}
    out = tmp_path / "fleet"
    argv = [*FLEET, "--target", a, "--target", b, "--size", "16M", "--out", str(out)]
    _refused(argv, capsys, "are the same target")
    assert not out.exists()
    assert tree_state(work) == before
    assert {p: sha256_of(p) for p in data} == sums
    # and `plan` with the same targets
    _refused(["plan", "--profile", "quick", "--target", a, "--target", b], capsys, "same target")


@pytest.mark.root
def test_two_partitions_of_one_disk_are_two_targets(tmp_path: Path, loops: LoopDevices) -> None:
    _, dev, p1, p2 = _partitioned(loops, tmp_path)
    fleetmod.check_together([p1, p2], None)
    with pytest.raises(Exception, match="is a partition of"):
        fleetmod.check_together([p2, dev], None)


@pytest.mark.root
def test_new_files_that_fit_one_by_one_but_not_together_are_refused(
    tmp_path: Path, loops: LoopDevices, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = loops.create(64)
    loops.mkfs(dev)
    mnt = loops.mount(dev)
    (mnt / "theirs.txt").write_text("keep me\n")
    free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
    size = (free * 3 // 4) // MiB * MiB  # each fits, two do not
    assert size < free < 2 * size
    before = tree_state(mnt)
    out = tmp_path / "fleet"
    argv = [*FLEET, "--target", str(mnt / "a.img"), "--target", str(mnt / "b.img")]
    argv += ["--size", str(size), "--out", str(out)]
    line = _refused(argv, capsys, f"the fleet's files on the filesystem at {mnt}")
    st = os.stat(mnt)
    assert f"({os.major(st.st_dev)}:{os.minor(st.st_dev)})" in line
    assert "free" in line and str(mnt / "a.img") in line and str(mnt / "b.img") in line
    assert tree_state(mnt) == before and not out.exists()
    # `plan` says so too
    plan = ["plan", "--profile", "quick", "--size", str(size)]
    plan += ["--target", str(mnt / "a.img"), "--target", str(mnt / "b.img")]
    _refused(plan, capsys, "need")
    assert tree_state(mnt) == before
