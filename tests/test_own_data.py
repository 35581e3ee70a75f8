"""A signature that tkbench's own random data happens to form is not someone's data.

libblkid takes the two bytes ``JM`` at the start of a target's last sector for a
JMicron RAID member: random data written there forms one in one run of 65,536.  CI
met it (a test's reused file target refused by the next run).  These tests write
those two bytes themselves -- the stand-in for the random data that formed them --
on real files and a real loop device, and check wipefs as the product does.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import helpers
from fakes.helpers import LoopDevices

from tests._helpers import TWO_IOPS_ROUNDS, merged, sets
from tkbench import cli
from tkbench.device import check_target, owndata
from tkbench.device.safety import signature_pairs
from tkbench.errors import SafetyError

MiB = 1 << 20


def _random_file(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.write(os.urandom(size))
    return path


def _form_jmicron(path: str | Path, size: int) -> None:
    """``JM`` at the start of the last sector, as fio's random data sometimes writes."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"JM", size - 512)
        os.fsync(fd)
    finally:
        os.close(fd)


def _keep(
    path: str | Path, run: str, when: str, probe: Any = signature_pairs, *rest: Any, **kw: Any
) -> owndata.Mark | None:
    """A mark as a run keeps it when its last write ended now, having written all of
    the target."""
    try:
        ended, size = owndata.digest(str(path))
    except OSError:
        ended, size = "", 0
    return owndata.keep_mark(
        str(path), run, when, probe, *rest, ended=ended, extent=[(0, size)], **kw
    )


def test_random_data_forms_a_signature_the_check_refuses(tmp_path: Path) -> None:
    """The hazard itself: without a mark, two random-looking bytes make a 'RAID member'."""
    img = _random_file(tmp_path / "t.img", 16 * MiB)
    check_target(img)
    _form_jmicron(img, 16 * MiB)
    with pytest.raises(SafetyError, match="RAID member signature"):
        check_target(img)


def test_a_signature_in_marked_data_is_told_not_refused(tmp_path: Path) -> None:
    size = 32 * MiB  # beyond both spans: the middle is not in the digest
    img = _random_file(tmp_path / "t.img", size)
    _form_jmicron(img, size)
    mark = _keep(str(img), "/runs/night-1", "2026-11-23T01:30:00Z", signature_pairs)
    assert mark is not None and mark.size == size
    assert mark.signatures == (("jmicron_raid_member", size - 512),)
    guarded = check_target(img)
    assert len(guarded.notes) == 1 and not guarded.forced
    assert "jmicron_raid_member signature at 0x1fffe00" in guarded.notes[0]
    assert "/runs/night-1" in guarded.notes[0]

    # the middle is not covered: changing it keeps the mark valid
    fd = os.open(img, os.O_WRONLY)
    os.pwrite(fd, b"x" * 4096, 16 * MiB)
    os.close(fd)
    assert check_target(img).notes

    # one changed byte at either end and the data is no longer known to be tkbench's
    fd = os.open(img, os.O_WRONLY)
    os.pwrite(fd, b"\0", 100)
    os.close(fd)
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)


def test_a_filesystem_made_after_the_run_is_refused_again(tmp_path: Path) -> None:
    img = _random_file(tmp_path / "t.img", 16 * MiB)
    assert _keep(str(img), "/runs/a", "2026-11-23T01:30:00Z", signature_pairs) is not None
    check_target(img)  # marked, and no signature anyway
    helpers.run(["mkfs.ext4", "-q", "-F", str(img)])
    with pytest.raises(SafetyError, match=r"filesystem signature \(ext4\)"):
        check_target(img)


def test_coverage_of_a_mark() -> None:
    whole = ((0, 1 << 40),)
    big = owndata.Mark("d", 1 << 40, "/dev/x", "/runs/r", "t", (("gpt", 0x200),), extent=whole)
    assert big.vouches("gpt", 0x200) and not big.vouches("gpt", 0x400)
    assert not big.vouches("ext4", 0x200) and not big.vouches("gpt", None)
    assert big.covers(0x438)  # ext4's magic
    assert big.covers((1 << 40) - 512)  # the last sector (JMicron, GPT backup)
    assert not big.covers(1 << 39)  # the middle is not in the digest
    assert not big.covers(owndata.SPAN - 100)  # too near the head span's edge
    assert not big.covers(1 << 40)  # beyond the end
    small = owndata.Mark("d", 12 * MiB, "/x", "/r", "t", extent=((0, 12 * MiB),))
    assert small.covers(6 * MiB)  # all of a small target is in the digest
    # bytes the run never wrote are not vouched for, digested or not
    part = owndata.Mark("d", 12 * MiB, "/x", "/r", "t", extent=((0, 8 * MiB),))
    assert part.covers(6 * MiB) and not part.covers(12 * MiB - 512)
    assert not owndata.Mark("d", 12 * MiB, "/x", "/r", "t").covers(0)  # wrote nothing


def test_a_copy_of_marked_data_on_another_file_is_refused(tmp_path: Path) -> None:
    """A mark is found by the digest of the bytes; the same bytes on another file (a
    copy: same digest, another inode) holding a real ext4 are no licence to write."""
    size = 16 * MiB
    img = tmp_path / "t.img"
    with open(img, "wb") as fh:
        fh.truncate(size)
    helpers.run(["mkfs.ext4", "-q", "-F", str(img)])
    # the stand-in for a run that wrote all of t.img and left an ext4 signature in it
    assert _keep(img, "/runs/r", "t") is not None
    assert "ext4 signature" in check_target(img).notes[0]  # its own target: told
    copy = tmp_path / "u.img"
    helpers.run(["cp", "--sparse=never", str(img), str(copy)])
    assert owndata.digest(str(copy)) == owndata.digest(str(img))
    with pytest.raises(SafetyError, match=r"filesystem signature \(ext4\)"):
        check_target(copy)
    # and the same bytes at the same path, but a new file (removed and copied back)
    img.unlink()
    helpers.run(["cp", "--sparse=never", str(copy), str(img)])
    with pytest.raises(SafetyError, match=r"filesystem signature \(ext4\)"):
        check_target(img)


def test_a_signature_written_after_the_last_write_is_not_vouched(tmp_path: Path) -> None:
    """Another process makes a filesystem between tkbench's last write and the mark:
    the mark would list it; it is kept only over the data the last write left."""
    size = 16 * MiB
    img = _random_file(tmp_path / "t.img", size)
    ended, _ = owndata.digest(str(img))  # the run's last write ended here
    helpers.run(["mkfs.ext4", "-q", "-F", str(img)])
    mark = owndata.keep_mark(
        str(img), "/runs/r", "t", signature_pairs, ended=ended, extent=[(0, size)]
    )
    assert mark is None
    with pytest.raises(SafetyError, match=r"filesystem signature \(ext4\)"):
        check_target(img)


def test_a_signature_outside_what_the_run_wrote_is_not_vouched(tmp_path: Path) -> None:
    """A run that wrote only the first 8 MiB of a 16 MiB file vouches for nothing in
    its last sector, though the digest covers it."""
    size = 16 * MiB
    img = _random_file(tmp_path / "t.img", size)
    _form_jmicron(img, size)
    ended, _ = owndata.digest(str(img))
    mark = owndata.keep_mark(
        str(img), "/runs/r", "t", signature_pairs, ended=ended, extent=[(0, 8 * MiB)]
    )
    assert mark is not None and mark.signatures == ()
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)


def test_a_new_mark_replaces_the_old_one_of_the_same_target(tmp_path: Path) -> None:
    where = tmp_path / "marks"
    img = _random_file(tmp_path / "t.img", 4 * MiB)
    other = _random_file(tmp_path / "u.img", 4 * MiB)
    first = _keep(str(img), "/runs/1", "t1", signature_pairs, where)
    _keep(str(other), "/runs/x", "t1", signature_pairs, where)
    _random_file(img, 4 * MiB)
    second = _keep(str(img), "/runs/2", "t2", signature_pairs, where)
    assert first is not None and second is not None and first.digest != second.digest
    kept = sorted(json.loads(p.read_text())["run"] for p in where.glob("*.json"))
    assert kept == ["/runs/2", "/runs/x"]
    found = owndata.left_by_tkbench(str(img), where)
    assert found is not None and found.run == "/runs/2"


@pytest.mark.root
def test_a_marked_block_device(loops: LoopDevices) -> None:
    dev = loops.create(24)
    size = 24 * MiB
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        import mmap

        buf = mmap.mmap(-1, MiB)
        for off in range(0, size, MiB):
            buf[:] = os.urandom(MiB)
            os.pwrite(fd, buf, off)
    finally:
        os.close(fd)
    _form_jmicron(dev, size)
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(dev)
    assert _keep(dev, "/runs/loop", "t", signature_pairs) is not None
    assert "jmicron_raid_member" in check_target(dev).notes[0]
    # the same bytes on another drive (a clone): no licence there
    other = loops.create(24)
    helpers.run(["dd", f"if={dev}", f"of={other}", "bs=1M", "oflag=direct", "status=none"])
    assert owndata.digest(other) == owndata.digest(dev)
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(other)


# --------------------------------------------------------------------------- runs


def _run(tmp: Path, name: str, *extra: str) -> int:
    args = ["run", "--profile", "quick", "--target", str(tmp / "t.img"), "--yes"]
    args += ["--out", str(tmp / name), "--no-report", *extra]
    if not (tmp / "t.img").exists():
        args += ["--size", "16M"]
    return cli.main(args + sets(*TWO_IOPS_ROUNDS))


def _log(run: Path) -> str:
    return (run / "events.log").read_text()


@pytest.mark.fio
def test_the_next_run_goes_on_over_a_signature_its_own_data_formed(tmp_path: Path) -> None:
    img = tmp_path / "t.img"
    assert _run(tmp_path, "first") == 0
    mark = owndata.left_by_tkbench(str(img))
    assert mark is not None and mark.run == str((tmp_path / "first").absolute())
    # the run's random data formed the two bytes (written here: fio's data cannot be
    # chosen), and the mark is what the run would have kept over that data
    _form_jmicron(img, 16 * MiB)
    assert _keep(str(img), mark.run, mark.written, signature_pairs) is not None
    assert _run(tmp_path, "second") == 0
    assert "jmicron_raid_member signature at 0xfffe00" in _log(tmp_path / "second")
    assert "not refused" in _log(tmp_path / "second")
    # the second run's data is now the marked one; the first run's mark is gone
    marks = list(Path(os.environ["TKBENCH_STATE"], "written").glob("*.json"))
    runs = [json.loads(p.read_text())["run"] for p in marks]
    assert str((tmp_path / "second").absolute()) in runs
    assert mark.run not in runs


@pytest.mark.fio
def test_a_filesystem_made_while_the_run_ends_gets_no_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process makes a filesystem on the target after the run's last write and
    before its mark: the run keeps no mark (it says why), and the next run is refused."""
    from tkbench.targets.file import FileTarget

    real = FileTarget.keep_mark

    def mkfs_first(self: FileTarget, *args: Any, **kw: Any) -> str | None:
        helpers.run(["mkfs.ext4", "-q", "-F", self.path])
        return real(self, *args, **kw)

    monkeypatch.setattr(FileTarget, "keep_mark", mkfs_first)
    assert _run(tmp_path, "first") == 0
    assert owndata.left_by_tkbench(str(tmp_path / "t.img")) is None
    assert "no mark of the data left on the target: the target changed" in _log(tmp_path / "first")
    monkeypatch.undo()
    assert _run(tmp_path, "second") == 3


@pytest.mark.fio
def test_a_run_forced_over_a_filesystem_keeps_no_mark(tmp_path: Path) -> None:
    img = tmp_path / "t.img"
    with open(img, "wb") as fh:
        fh.truncate(16 * MiB)
    helpers.run(["mkfs.ext4", "-q", "-F", str(img)])
    assert _run(tmp_path, "refused") == 3
    assert not (tmp_path / "refused").exists()
    assert _run(tmp_path, "forced", "--force") == 0
    assert owndata.left_by_tkbench(str(img)) is None
    assert "overridden by --force: t.img holds a filesystem signature (ext4)" in _log(
        tmp_path / "forced"
    )


# --------------------------------------------------------------------------- what a mark is not


def test_a_signature_the_mark_did_not_list_is_refused(tmp_path: Path) -> None:
    """A newer libblkid may find a signature in bytes an older one passed: the mark
    vouches only for what the probe saw when the run ended (here the probe saw none)."""
    img = _random_file(tmp_path / "t.img", 16 * MiB)
    _form_jmicron(img, 16 * MiB)
    assert _keep(str(img), "/runs/old", "t", lambda _p: []) is not None
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)


def _marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("TKBENCH_STATE", str(tmp_path / "state"))  # this test's marks only
    img = _random_file(tmp_path / "t.img", 16 * MiB)
    _form_jmicron(img, 16 * MiB)
    assert _keep(str(img), "/runs/r", "t", signature_pairs) is not None
    assert check_target(img).notes
    return img, owndata.state_dir()


def test_marks_others_may_write_are_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    img, where = _marked(tmp_path, monkeypatch)
    where.chmod(0o777)  # anyone could have planted a mark there
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)
    where.chmod(0o755)
    (mark,) = where.glob("*.json")
    mark.chmod(0o666)
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)


@pytest.mark.parametrize(
    "content",
    [
        '{"digest": "D", "size": "x", "target": "t", "run": "r", "written": "w", "signatures": []}',
        "[" * 100_000 + "]" * 100_000,
        "not json",
        "fifo",
    ],
    # short ids: pytest 9.1 names a test by a string parameter whole, and its
    # PYTEST_CURRENT_TEST (200 kB here) is longer than one environment string may be
    # (128 KiB): no program the test starts (blkid) could be executed
    ids=["wrong-types", "nested-100k", "not-json", "fifo"],
)
def test_a_corrupt_mark_is_no_mark_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    img, where = _marked(tmp_path, monkeypatch)
    (mark,) = where.glob("*.json")
    text = mark.read_text()
    mark.unlink()
    if content == "fifo":
        os.mkfifo(mark)  # would block a plain read for ever
    else:
        mark.write_text(content.replace('"D"', json.dumps(json.loads(text)["digest"])))
    with pytest.raises(SafetyError, match="jmicron_raid_member"):
        check_target(img)


def test_keeping_a_mark_never_raises_or_hangs(tmp_path: Path) -> None:
    img = _random_file(tmp_path / "t.img", 4 * MiB)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # a state directory that cannot be made: no mark, no exception
    assert _keep(str(img), "/r", "t", signature_pairs, blocker / "written") is None
    # a target that does not answer in time (a hung drive): no mark after the timeout

    def stuck(_path: str) -> list[tuple[str, int | None]]:
        time.sleep(5)
        return []

    began = time.monotonic()
    assert _keep(str(img), "/r", "t", stuck, tmp_path / "m", timeout=0.2) is None
    assert time.monotonic() - began < 4  # a bound, not a timing: it did not wait for it
    assert _keep(str(tmp_path / "missing.img"), "/r", "t", signature_pairs) is None


@pytest.mark.fio
def test_a_run_that_wrote_nothing_keeps_no_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tkbench.engine.runs import RunRequest, start
    from tkbench.errors import Interrupted

    monkeypatch.setenv("TKBENCH_STATE", str(tmp_path / "state"))
    img = _random_file(tmp_path / "t.img", 16 * MiB)
    request = RunRequest(
        profile="quick",
        target=str(img),
        out=tmp_path / "run",
        assume_yes=True,
        overrides=merged(*TWO_IOPS_ROUNDS),
        stop=lambda: True,  # stopped before its first purge
    )
    with pytest.raises(Interrupted):
        start(request)
    assert owndata.left_by_tkbench(str(img)) is None
    assert not list(owndata.state_dir().glob("*.json"))
