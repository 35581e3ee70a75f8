"""Every output path the user names follows one rule (tkbench/outputs/files.py): a FIFO, a
character device or a link to one is written in place, never replaced by a regular
file; ``/dev/stderr`` is the process's own standard error; a run directory's records
are refused; a new file is created, an own regular file replaced atomically.

Device nodes are real ones made with mknod (null 1:3, full 1:7) in the test's
directory; FIFOs are real, read by a thread; the run directory is a real kept run
(tests/data/rundirs/file-a).  What is checked: the bytes that arrived, and by stat that
every file kept its type, device numbers and content."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._rundir_outputs import RUNDIRS
from tkbench import cli
from tkbench.outputs.checks import write_junit
from tkbench.rundir.store import load_run

ROOT = Path(__file__).resolve().parents[1]


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every entry below ``root``: its file type, device numbers and content."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(dirpath) / name
            st = os.lstat(p)
            body = p.read_bytes() if stat.S_ISREG(st.st_mode) else None
            out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_rdev, body)
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    shutil.copytree(RUNDIRS / "file-a", tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    d = tmp_path / "nodes"
    d.mkdir()
    os.mknod(d / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(d / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    return d


def export_text(run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["export", str(run)]) == 0
    return capsys.readouterr().out


class Reader:
    """A reader of a FIFO on a thread: what a consumer (``cat fifo``) would get."""

    def __init__(self, fifo: Path) -> None:
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(fifo,), daemon=True)
        self.thread.start()

    def _read(self, fifo: Path) -> None:
        with open(fifo, "rb") as fh:
            self.data = fh.read()

    def join(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()
        return self.data


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    p = tmp_path / "fifo"
    os.mkfifo(p)
    yield p


def test_export_to_a_fifo_is_written_in_place(
    run_dir: Path, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = export_text(run_dir, capsys)
    reader = Reader(fifo)
    assert cli.main(["export", str(run_dir), "--out", str(fifo)]) == 0
    assert reader.join().decode() == expected
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(fifo.parent)) == ["fifo", "run"]  # no temporary file left


def test_export_to_a_null_device_leaves_the_node(
    run_dir: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(nodes.parent)
    assert cli.main(["export", str(run_dir), "--out", str(nodes / "null")]) == 0
    assert snapshot(nodes.parent) == before  # still 1:3, no file beside it


def test_a_link_to_a_device_is_written_through_not_replaced(
    run_dir: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (nodes / "link").symlink_to(nodes / "null")
    before = snapshot(nodes.parent)
    assert cli.main(["export", str(run_dir), "--out", str(nodes / "link")]) == 0
    assert snapshot(nodes.parent) == before


def test_a_full_device_is_one_line_and_a_failure(
    run_dir: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(nodes.parent)
    code = cli.main(["export", str(run_dir), "--out", str(nodes / "full")])
    err = capsys.readouterr().err
    assert code == 4
    assert err.count("\n") == 1 and "No space left on device" in err
    assert snapshot(nodes.parent) == before


def test_junit_to_dev_stderr_goes_to_the_process_stderr(tmp_path: Path) -> None:
    """The CI idiom ``--junit /dev/stderr`` through a link like /dev/stderr's own
    (-> /proc/self/fd/2): the XML arrives on standard error, the link stays a link."""
    link = tmp_path / "stderr"
    link.symlink_to("/proc/self/fd/2")
    code = (
        "import sys; from pathlib import Path; from tkbench.outputs.checks import write_junit; "
        "from tkbench.rundir.store import load_run; "
        f"write_junit(Path({str(link)!r}), load_run({str(RUNDIRS / 'file-a')!r}), [])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("<?xml") and "<testsuites>" in done.stderr
    assert os.readlink(link) == "/proc/self/fd/2"


def test_a_link_like_dev_stderr_as_export_out_writes_standard_error(
    run_dir: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A link of its own like /dev/stderr, never the system's: before the fix a test of
    /dev/stderr itself replaced it by a regular file."""
    link = tmp_path / "stderr"
    link.symlink_to("/proc/self/fd/2")
    assert cli.main(["export", str(run_dir)]) == 0
    expected = capfd.readouterr().out
    assert cli.main(["-q", "export", str(run_dir), "--out", str(link)]) == 0
    got = capfd.readouterr()
    assert got.err == expected and got.out == ""
    assert os.readlink(link) == "/proc/self/fd/2"


def test_junit_to_a_fifo_is_written_in_place(fifo: Path) -> None:
    reader = Reader(fifo)
    write_junit(fifo, load_run(RUNDIRS / "file-a"), [])
    assert reader.join().startswith(b"<?xml")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize(
    "record", ["manifest.json", "checks.json", "events.log", "tests/iops/test.json", "new.json"]
)
def test_a_record_of_a_run_directory_is_refused(
    run_dir: Path, record: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(run_dir)
    for argv in (
        ["export", str(run_dir), "--out", str(run_dir / record)],
        ["compare", str(run_dir), "--out", str(run_dir / record)],
        ["run", "--target", str(run_dir / "t.img"), "--junit", str(run_dir / record)],
    ):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "record of the run directory" in err, err
    with pytest.raises(Exception, match="record of the run directory"):
        write_junit(run_dir / record, load_run(run_dir), [])
    assert snapshot(run_dir) == before


def test_a_dashboard_inside_a_run_directory_is_refused(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(run_dir)
    history = tmp_path / "h.sqlite"
    assert cli.main(["history", "--history", str(history), "--add", str(run_dir)]) == 0
    capsys.readouterr()
    for out in (run_dir, run_dir / "tests"):
        assert cli.main(["dashboard", "--history", str(history), "--out", str(out)]) == 2
        assert "inside the run directory" in capsys.readouterr().err
    assert snapshot(run_dir) == before


def test_files_beside_the_records_and_new_files_are_written(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = export_text(run_dir, capsys)
    for out in (run_dir / "values.csv", tmp_path / "sub" / "new.csv"):
        assert cli.main(["export", str(run_dir), "--out", str(out)]) == 0
        assert out.read_text() == expected
        assert cli.main(["export", str(run_dir), "--out", str(out)]) == 0  # own: replaced
        assert out.read_text() == expected


def test_an_own_file_is_replaced_keeping_its_mode(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "old.csv"
    out.write_text("old\n")
    out.chmod(0o600)
    old_inode = out.stat().st_ino
    assert cli.main(["export", str(run_dir), "--out", str(out)]) == 0
    assert out.read_text() == export_text(run_dir, capsys)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.stat().st_ino != old_inode  # a new file renamed over it: atomic


@pytest.mark.parametrize("kind", ["dangling", "file"])
def test_a_link_to_a_file_or_to_nothing_is_refused(
    run_dir: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    if kind == "file":
        victim.write_text("precious\n")
    link = tmp_path / "out.csv"
    link.symlink_to(victim)
    before = snapshot(tmp_path)
    assert cli.main(["export", str(run_dir), "--out", str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


def test_another_users_file_is_not_replaced(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "theirs.csv"
    out.write_text("theirs\n")
    os.chown(out, 12345, 12345)
    before = snapshot(tmp_path)
    assert cli.main(["export", str(run_dir), "--out", str(out)]) == 2
    assert "another user's file" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    assert out.stat().st_uid == 12345


def test_a_block_device_is_refused(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "blk"
    os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(7, 250))
    assert cli.main(["export", str(run_dir), "--out", str(node)]) == 2
    assert "block device" in capsys.readouterr().err
    assert stat.S_ISBLK(os.lstat(node).st_mode)


def test_a_report_to_a_null_device_leaves_the_node(
    run_dir: Path, nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdf = nodes / "r.pdf"
    os.mknod(pdf, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    assert cli.main(["report", str(run_dir), "--out", str(pdf)]) == 0
    assert stat.S_ISCHR(os.lstat(pdf).st_mode) and os.lstat(pdf).st_rdev == os.makedev(1, 3)
    assert (nodes / "r.html").read_text().startswith("<!")  # the HTML: a new file


@pytest.mark.parametrize(
    "argv", [["show", "RUN"], ["show", "RUN", "--json"], ["history", "--json"], ["export", "RUN"]]
)
def test_a_full_standard_output_is_one_line_not_an_internal_error(
    tmp_path: Path, argv: list[str]
) -> None:
    """``tkbench show RUN >/dev/full``: one line on stderr, exit 4 (was 5)."""
    run = RUNDIRS / "file-a"
    history = tmp_path / "h.sqlite"
    assert cli.main(["-q", "history", "--history", str(history), "--add", str(run)]) == 0
    argv = [str(run) if a == "RUN" else a for a in argv]
    if argv[0] == "history":
        argv += ["--history", str(history)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "tkbench", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode == 4, done.stderr
    assert done.stderr == "tkbench: error: standard output: cannot write: No space left on device\n"


@pytest.mark.parametrize("name", ["../escaped", "a/b", ".hidden"])
def test_a_profile_name_cannot_lead_the_default_run_directory_out_of_runs(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    profile = tmp_path / "p.toml"
    profile.write_text(f'name = "{name}"\nextends = "quick"\n')
    argv = ["run", "--profile", str(profile), "--target", str(tmp_path / "t.img")]
    assert cli.main([*argv, "--size", "16M", "--yes", "--no-report", "--no-history"]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["p.toml", "work"]
    assert os.listdir(work) == []
