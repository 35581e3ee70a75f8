"""Every promise of docs/safety.md, end to end through ``tkbench``: a refused command
exits 2 or 3 with one line, leaves its target byte-for-byte as it was, and creates
no file or directory.  Real files, loop devices, mounts, sockets and processes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import LoopDevices, sha256_of

from tests._helpers import STAGED_OFF
from tkbench import cli
from tkbench.errors import InputError
from tkbench.targets import open_target
from tkbench.targets.file import _resize

RUN = ["run", "--no-report", "--no-history"]


def refused(
    argv: list[str], capsys: pytest.CaptureFixture[str], code: int, *, match: str = ""
) -> str:
    """Run tkbench in-process; assert the exit code and a single error line."""
    rc = cli.main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == code, f"exit {rc}, wanted {code}: {err}"
    assert len(lines) == 1 and lines[0].startswith("tkbench: error:"), err
    assert match in lines[0], lines[0]
    return lines[0]


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def image(path: Path, size: int = 16 << 20, data: bytes = b"") -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)
        fh.write(data or os.urandom(4096))
    return path


# ------------------------------------------------------------------ regular-file targets


@pytest.mark.root
def test_backing_file_of_a_loop_device_is_refused_even_with_force(
    loops: LoopDevices, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = loops.create(16)
    backing = tmp_path / "loop0.img"
    before, files = sha256_of(str(backing)), listing(tmp_path)
    line = refused(
        [*RUN, "--target", str(backing), "--yes", "--force", "--out", str(tmp_path / "r")],
        capsys,
        3,
        match=f"backs {dev}",
    )
    assert "--force overrides" not in line
    assert sha256_of(str(backing)) == before and listing(tmp_path) == files


def test_file_holding_a_filesystem_needs_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 not installed")
    fs = image(tmp_path / "fs.img", 8 << 20)
    helpers.run(["mkfs.ext4", "-q", "-F", str(fs)])
    before, files = sha256_of(str(fs)), listing(tmp_path)
    refused(
        [*RUN, "--target", str(fs), "--yes", "--out", str(tmp_path / "r")],
        capsys,
        3,
        match="filesystem signature (ext4) (--force overrides this)",
    )
    assert sha256_of(str(fs)) == before and listing(tmp_path) == files


def test_file_open_in_another_process_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img = image(tmp_path / "vm.img")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'rb'); time.sleep(60)", img],
    )
    try:
        pid = str(holder.pid)
        for _ in range(100):  # until the child has the file open
            fds = [os.path.realpath(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            if str(img) in fds:
                break
            time.sleep(0.05)
        before, files = sha256_of(str(img)), listing(tmp_path)
        refused(
            [*RUN, "--target", str(img), "--yes", "--force", "--out", str(tmp_path / "r")],
            capsys,
            3,
            match=f"(pid {pid})",
        )
        assert sha256_of(str(img)) == before and listing(tmp_path) == files
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.root
def test_immutable_file_is_refused_before_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img = image(tmp_path / "frozen.img")
    if subprocess.run(["chattr", "+i", str(img)], capture_output=True).returncode:
        pytest.skip("chattr +i not supported on this filesystem")
    try:
        before, files = sha256_of(str(img)), listing(tmp_path)
        refused(
            [*RUN, "--target", str(img), "--yes", "--force", "--out", str(tmp_path / "r")],
            capsys,
            3,
            match="cannot be written: Operation not permitted",
        )
        assert sha256_of(str(img)) == before and listing(tmp_path) == files
    finally:
        subprocess.run(["chattr", "-i", str(img)], check=True)


@pytest.mark.root
def test_swap_file_is_refused_even_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swap = tmp_path / "swapfile"
    with open(swap, "wb") as fh:  # swapon wants allocated blocks, not a sparse file
        fh.write(b"\0" * (16 << 20))
    swap.chmod(0o600)
    helpers.run(["mkswap", "-q", str(swap)])
    if subprocess.run(["swapon", str(swap)], capture_output=True).returncode:
        pytest.skip("swapon of a file is not allowed here")
    try:
        before = sha256_of(str(swap))
        refused(
            [*RUN, "--target", str(swap), "--yes", "--force", "--out", str(tmp_path / "r")],
            capsys,
            3,
            match="in use as a swap file",
        )
        assert sha256_of(str(swap)) == before and not (tmp_path / "r").exists()
    finally:
        subprocess.run(["swapoff", str(swap)], check=False)


@pytest.mark.root
def test_size_beyond_the_free_space_is_refused_and_creates_nothing(
    loops: LoopDevices, capsys: pytest.CaptureFixture[str]
) -> None:
    # on a small filesystem of its own: were the check broken, preconditioning would
    # fill only this one
    dev = loops.create(32)
    loops.mkfs(dev)
    mnt = loops.mount(dev)
    fs = os.statvfs(mnt)
    too_big = fs.f_bavail * fs.f_frsize + (1 << 20)
    files = listing(mnt)
    refused(
        [*RUN, "--target", str(mnt / "t.img"), "--size", str(too_big), "--yes"],
        capsys,
        2,
        match="does not fit: its filesystem has",
    )
    assert listing(mnt) == files
    existing = image(mnt / "sparse.img", too_big, b"x")  # sparse: holds 4 KiB of it
    refused(
        [*RUN, "--target", str(existing), "--yes", "--out", str(mnt / "r")],
        capsys,
        2,
        match="and the file holds",
    )
    assert listing(mnt) == {*files, "sparse.img"}


def test_size_beyond_what_linux_addresses_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(
        [*RUN, "--target", str(tmp_path / "t.img"), "--size", "9E", "--yes"],
        capsys,
        2,
        match="beyond what Linux can address",
    )
    assert listing(tmp_path) == set()


def test_a_file_that_cannot_be_created_leaves_nothing_behind(tmp_path: Path) -> None:
    # ext4 and most filesystems cap a file's size below 2^62 bytes: EFBIG
    path = tmp_path / "huge.img"
    with pytest.raises(InputError, match="cannot create"):
        _resize(path, 2**62, new=True)
    assert not path.exists()


def test_a_run_that_cannot_start_removes_the_file_it_created(tmp_path: Path) -> None:
    # what fails between creating the file and storing the run (a filesystem without
    # O_DIRECT, a run directory taken meanwhile) cannot be staged portably: this kernel's
    # tmpfs does O_DIRECT.  So the mechanism itself is driven here.
    target = open_target(str(tmp_path / "t.img"), size=16 << 20, create=True)
    with pytest.raises(RuntimeError), target.materialized():
        assert (tmp_path / "t.img").stat().st_size == 16 << 20
        raise RuntimeError("the run could not start")
    assert listing(tmp_path) == set()
    with target.materialized():  # a run that starts keeps its file
        pass
    assert (tmp_path / "t.img").stat().st_size == 16 << 20


# ------------------------------------------------------------------ block devices


@pytest.mark.root
def test_two_different_confirm_ids_are_refused(
    loops: LoopDevices, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = loops.create(16)
    name = os.path.basename(dev)
    before = sha256_of(dev)
    refused(
        [
            *RUN,
            "--target",
            dev,
            "--confirm",
            "wrong",
            "--confirm",
            name,
            "--out",
            str(tmp_path / "r"),
        ],
        capsys,
        2,
        match="--confirm given twice with different values",
    )
    assert sha256_of(dev) == before and not (tmp_path / "r").exists()


@pytest.mark.root
def test_mounted_device_is_refused_even_with_force(
    loops: LoopDevices, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = loops.create(16)
    loops.mkfs(dev)
    mnt = loops.mount(dev)
    before = sha256_of(dev)
    name = os.path.basename(dev)
    refused(
        [*RUN, "--target", dev, "--confirm", name, "--force", "--out", str(tmp_path / "r")],
        capsys,
        3,
        match=f"is mounted at {mnt}",
    )
    assert sha256_of(dev) == before and not (tmp_path / "r").exists()


# ------------------------------------------------------------------ outputs


def test_empty_out_is_refused_and_the_current_directory_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    refused(
        [*RUN, "--target", str(tmp_path / "t.img"), "--size", "16M", "--yes", "--out", ""],
        capsys,
        2,
        match="empty path",
    )
    assert listing(tmp_path) == {"cwd"}


def test_report_out_naming_a_directory_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "reports.pdf").mkdir()
    refused(
        ["report", str(tmp_path / "run"), "--out", str(tmp_path / "reports.pdf")],
        capsys,
        2,
        match="is a directory",
    )
    assert listing(tmp_path) == {"reports.pdf"}


def test_listing_a_history_never_creates_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "no" / "such" / "history.sqlite"
    refused(["history", "--history", str(db)], capsys, 2, match="does not exist")
    monkeypatch.setenv("TKBENCH_HISTORY", str(db))  # the default location, not there yet
    assert cli.main(["history"]) == 0
    assert "no runs in the history" in capsys.readouterr().out
    assert listing(tmp_path) == set()


@pytest.mark.fio
def test_checks_that_could_only_fail_after_the_run_fail_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [*RUN[:2], "--target", str(tmp_path / "t.img"), "--size", "16M", "--yes"]
    out = ["--out", str(tmp_path / "r")]
    refused([*base, *out, "--baseline", str(tmp_path / "nope")], capsys, 2, match="--baseline")
    refused([*base, *out, "--junit", str(tmp_path)], capsys, 2, match="is a directory")
    (tmp_path / "h.sqlite").write_text("not a database")
    refused([*base, *out, "--history", str(tmp_path / "h.sqlite")], capsys, 2, match="history")
    refused([*base, *out, "--regression-threshold", "-5"], capsys, 2, match="out of range")
    refused([*base, *out, "--resume-gap", "-5"], capsys, 2, match="out of range")
    refused([*base, *out, "--fio-server", "localhost,70000"], capsys, 2, match="port")
    refused([*base, *out, "--resume", str(tmp_path / "r"), "--set", "rounds.max=3"], capsys, 2)
    refused([*base, *out, "--resume", str(tmp_path / "other")], capsys, 2, match="differs")
    assert listing(tmp_path) == {"h.sqlite"}


@pytest.mark.fio
def test_unreachable_fio_server_is_refused_before_the_target_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused(
        [
            *RUN,
            "--target",
            str(tmp_path / "t.img"),
            "--size",
            "16M",
            "--yes",
            "--fio-server",
            f"127.0.0.1,{port}",
            "--out",
            str(tmp_path / "r"),
        ],
        capsys,
        2,
        match="cannot connect",
    )
    assert listing(tmp_path) == set()


# ------------------------------------------------------------------ the emulator's socket


def _serve(path: Path) -> socket.socket:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(4)
    return srv


@pytest.mark.parametrize("kind", ["another emulator", "an unrelated service"])
def test_emulate_never_removes_a_live_socket(tmp_path: Path, kind: str) -> None:
    if shutil.which("nbdkit") is None:
        pytest.skip("nbdkit not installed")
    sock = tmp_path / "s.sock"
    first: subprocess.Popen[bytes] | None = None
    srv: socket.socket | None = None
    emulate = [sys.executable, "-m", "tkbench", "emulate", "--capacity", "16M"]
    try:
        if kind == "another emulator":
            first = subprocess.Popen([*emulate, "--socket", str(sock)], stderr=subprocess.DEVNULL)
            for _ in range(200):
                if sock.exists():
                    break
                time.sleep(0.05)
        else:
            srv = _serve(sock)
        inode = sock.stat().st_ino
        second = subprocess.run(
            [*emulate, "--socket", str(sock)], capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1 and "in use by a running server" in second.stderr
        assert sock.exists() and sock.stat().st_ino == inode
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(str(sock))  # the first server is still reachable
    finally:
        if first is not None:
            first.terminate()
            first.wait(30)
        if srv is not None:
            srv.close()


def test_emulate_refuses_a_socket_path_too_long_in_one_line(tmp_path: Path) -> None:
    long_dir = tmp_path / ("d" * 120)
    long_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tkbench", "emulate", "--socket", str(long_dir / "s.sock")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "too long for a Unix socket" in done.stderr
    assert list(long_dir.iterdir()) == []


def test_emulate_refuses_a_drive_the_machine_cannot_hold() -> None:
    from tkbench.emulator.launcher import check_memory, memory_needed
    from tkbench.emulator.ssdmodel import EmulatorConfig

    cfg = EmulatorConfig.create(capacity="1T")
    maps, data = memory_needed(cfg)
    pages = 2**40 // 4096  # 4 bytes per logical page, and per physical page (12 % spare)
    assert maps == 4 * pages + 4 * int(pages * 1.12)
    assert data == 2**40  # written data is kept in memory unless --no-data
    with pytest.raises(InputError, match="pass --no-data"):
        check_memory(cfg, available=8 * 2**30 + maps)
    check_memory(EmulatorConfig.create(capacity="1T", store_data="0"), available=8 * 2**30)
    with pytest.raises(InputError, match="page maps"):
        check_memory(EmulatorConfig.create(capacity="1T", store_data="0"), available=2**30)
    check_memory(EmulatorConfig.create(capacity="256M"), available=2**30)  # the demo's drive


# ------------------------------------------------------------------ found by a hostile review


def test_a_file_needs_yes_not_a_confirm_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img = image(tmp_path / "data.img")
    before = sha256_of(str(img))
    refused(
        [*RUN, "--target", str(img), "--confirm", "whatever", "--out", str(tmp_path / "r")],
        capsys,
        3,
        match="pass --yes",
    )
    assert sha256_of(str(img)) == before and not (tmp_path / "r").exists()


@pytest.mark.root
def test_backing_file_named_with_a_trailing_space_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if helpers.can_use_loop_devices():
        pytest.skip(str(helpers.can_use_loop_devices()))
    odd = image(tmp_path / "sp.img ")
    dev = helpers.run(["losetup", "--find", "--show", str(odd)]).stdout.strip()
    try:
        link = tmp_path / "h.img"
        os.link(odd, link)
        before = sha256_of(str(link))
        refused([*RUN, "--target", str(link), "--yes", "--force"], capsys, 3, match="backs")
        assert sha256_of(str(link)) == before
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.mark.root
def test_a_block_device_open_in_another_process_is_refused(
    loops: LoopDevices, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = loops.create(16)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'rb'); time.sleep(60)", dev]
    )
    try:
        for _ in range(100):
            if any(
                os.path.realpath(f"/proc/{holder.pid}/fd/{fd}") == dev
                for fd in os.listdir(f"/proc/{holder.pid}/fd")
            ):
                break
            time.sleep(0.05)
        before = sha256_of(dev)
        name = os.path.basename(dev)
        refused(
            [*RUN, "--target", dev, "--confirm", name, "--out", str(tmp_path / "r")],
            capsys,
            3,
            match=f"(pid {holder.pid})",
        )
        assert sha256_of(dev) == before
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.root
def test_a_bind_mounted_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = image(tmp_path / "src.img"), image(tmp_path / "dst.img")
    if subprocess.run(["mount", "--bind", str(src), str(dst)], capture_output=True).returncode:
        pytest.skip("bind mounts not allowed here")
    try:
        before = sha256_of(str(src))
        for target in (dst, src):
            refused([*RUN, "--target", str(target), "--yes", "--force"], capsys, 3, match="mounted")
        assert sha256_of(str(src)) == before
    finally:
        subprocess.run(["umount", str(dst)], check=False)


def test_two_names_of_one_file_share_one_lock(tmp_path: Path) -> None:
    from tkbench.device.lock import lock_name

    img = image(tmp_path / "r.img")
    os.link(img, tmp_path / "r-hard.img")
    assert lock_name(img) == lock_name(tmp_path / "r-hard.img")
    assert lock_name(img) != lock_name(image(tmp_path / "other.img"))


def test_junit_may_not_overwrite_the_target_or_a_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    img = image(tmp_path / "t.img")
    base = [*RUN[:2], "--target", str(img), "--yes", "--out", str(tmp_path / "r")]
    refused([*base, "--junit", str(img)], capsys, 2, match="is the target")
    refused([*base, "--junit", str(tmp_path / "r" / "manifest.json")], capsys, 2, match="run dir")
    assert listing(tmp_path) == {"t.img"}


def test_a_new_file_is_never_made_under_dev(capsys: pytest.CaptureFixture[str]) -> None:
    target = Path(f"/dev/tkbench-test-{os.getpid()}")
    refused([*RUN, "--target", str(target), "--size", "16M", "--yes"], capsys, 2, match="no such")
    assert not target.exists()


def test_resume_stops_only_the_run_s_own_leftovers(tmp_path: Path) -> None:
    from tkbench.engine.runs import stop_leftovers

    scratch = tmp_path / "run" / ".scratch" / "fio-1"
    scratch.mkdir(parents=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours = subprocess.Popen([*sleeper, str(scratch / "job.fio")], cwd=scratch)  # like fio
    bystander = subprocess.Popen(sleeper, cwd=scratch)  # merely standing there
    try:
        assert stop_leftovers(tmp_path / "run") == [ours.pid]
        assert ours.wait(10) != 0 and bystander.poll() is None
        # a .scratch that is a link elsewhere is not the run's: nothing is stopped
        (tmp_path / "run2").mkdir()
        (tmp_path / "run2" / ".scratch").symlink_to(scratch.parent)
        assert stop_leftovers(tmp_path / "run2") == []
    finally:
        for p in (ours, bystander):
            p.kill()
            p.wait()


def _run_processes(scratch: Path) -> dict[int, list[str]]:
    """pid -> argv of every process standing in ``scratch`` (or below it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if (cwd + os.sep).startswith(str(scratch) + os.sep):
            found[int(entry.name)] = argv
    return found


@pytest.mark.fio
def test_resume_stops_the_fio_of_a_round_started_ahead_after_a_kill_9(tmp_path: Path) -> None:
    """kill -9 of tkbench while the next round's fio waits at its start for the
    current round: both fio processes and the waiting hand-off are orphans that
    would go on writing the target; stop_leftovers (run by --resume) stops them all."""
    from tests._helpers import sets
    from tkbench.engine.runs import stop_leftovers

    out = tmp_path / "run"
    args = [sys.executable, "-m", "tkbench", *RUN, "--profile", "quick", "--yes"]
    args += ["--target", str(image(tmp_path / "t.img")), "--out", str(out)]
    # write saturation, 4-second rounds: round 2's fio starts with round 1 and its
    # first point comes up a second before round 1 ends, to wait in the hand-off
    args += sets(
        "tests.iops.enabled=false",
        "tests.throughput.enabled=false",
        "tests.latency.enabled=false",
        *STAGED_OFF,
        "tests.wsat.point_runtime=4s",
        "tests.wsat.stop_written_multiple=1000",
    )
    err = tmp_path / "stderr"
    with err.open("w") as fh:
        tk = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=fh)
    scratch = out / ".scratch"
    try:
        limit = time.monotonic() + 300  # a bound, not a timing
        while True:
            assert tk.poll() is None, err.read_text()
            assert time.monotonic() < limit, "no round started ahead"
            procs = _run_processes(scratch.resolve()) if scratch.exists() else {}
            fios = {p for p, a in procs.items() if Path(a[0]).name == "fio"}
            waiting = {p for p, a in procs.items() if any(x.endswith("handoff.py") for x in a)}
            if len(fios) == 2 and waiting:
                break
            time.sleep(0.02)
        os.kill(tk.pid, signal.SIGKILL)
        tk.wait()
        stopped = stop_leftovers(out)
    finally:
        tk.kill()
        tk.wait()
    assert fios | waiting <= set(stopped)
    assert _run_processes(scratch.resolve()) == {}


def test_emulate_leaves_a_socket_that_is_bound_but_not_listening(tmp_path: Path) -> None:
    sock = tmp_path / "bound.sock"
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.bind(str(sock))  # no listen() yet: connections are refused
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tkbench", "emulate", "--socket", str(sock)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and "bound by a running program" in done.stderr
        assert sock.exists()
    finally:
        holder.close()
