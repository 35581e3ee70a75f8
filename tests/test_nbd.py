"""tkbench.targets.nbd against real servers: the bundled emulator and ``nbdkit memory``.

Needs the Debian packages nbdkit and nbdkit-plugin-python (the tests fail,
never skip, when they are missing).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator

import pytest

from tkbench.emulator import check_nbdkit, start_emulator
from tkbench.errors import DeviceError, InputError, ToolMissingError
from tkbench.targets import nbd, open_target

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def sockdir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="tkbnbd-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def nbdkit() -> str:
    try:
        return check_nbdkit()
    except ToolMissingError as exc:
        pytest.fail(f"{exc} (the NBD client tests need them)")


@pytest.fixture(scope="module")
def memory_uri(nbdkit: str, sockdir: str) -> Iterator[str]:
    """``nbdkit memory 100M``: a server that advertises no block-size constraints."""
    path = os.path.join(sockdir, "mem.sock")
    pidfile = os.path.join(sockdir, "mem.pid")
    server = subprocess.Popen(
        [nbdkit, "-f", "--exit-with-parent", "-U", path, "-P", pidfile, "memory", "100M"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(pidfile) or os.path.getsize(pidfile) == 0:
            assert server.poll() is None, "nbdkit memory exited"
            assert time.monotonic() < deadline, "nbdkit memory did not start"
            time.sleep(0.02)
        yield f"nbd+unix:///?socket={path}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def emulator(nbdkit: str, sockdir: str) -> Iterator[str]:
    with start_emulator(os.path.join(sockdir, "emu.sock"), "64M", seed=3) as emu:
        yield emu.uri


def test_a_servers_export_keeps_its_identity(memory_uri: str) -> None:
    """Only the bundled emulator's exports are named by the drive (tests/test_emulator.py):
    another server's default export stays its server's socket, a named one its name on
    the socket, as run directories and histories have them."""
    sock = nbd.parse_uri(memory_uri).socket
    assert open_target(memory_uri).identity["serial"] == f"default export on {sock}"
    named = f"nbd+unix:///disk1?socket={sock}"
    assert open_target(named).identity["serial"] == f"export 'disk1' on {sock}"


# ---------------------------------------------------------------------------
# URIs


def test_parse_uri_forms() -> None:
    a = nbd.parse_uri("nbd+unix:///?socket=/run/x.sock")
    assert a == nbd.NbdAddress(socket="/run/x.sock", export="")
    b = nbd.parse_uri("nbd+unix:///disk%201?socket=/tmp/a%20b.sock")
    assert b.export == "disk 1" and b.socket == "/tmp/a b.sock"
    assert nbd.parse_uri(b.uri) == b


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("nbd://localhost:10809/", r"only nbd\+unix"),
        ("nbds+unix:///?socket=/x", r"only nbd\+unix"),
        ("/dev/nbd0", "not an NBD URI"),
        ("nbd+unix:///", "socket=PATH"),
        ("nbd+unix:///?socket=/a&socket=/b", "exactly one"),
        ("nbd+unix://host/?socket=/a", "must not name a host"),
        ("nbd+unix:///?socket=/a&tls-certificates=/c", "unsupported parameter"),
        ("", "empty"),
    ],
)
def test_parse_uri_rejects(uri: str, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment) as info:
        nbd.parse_uri(uri)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------
# against the emulator


def test_export_info_of_the_emulator(emulator: str) -> None:
    info = nbd.export_info(emulator)
    assert info.size == 64 * MIB
    assert (info.min_block, info.preferred_block, info.max_block) == (512, 4096, 32 * MIB)
    assert info.block_size_advertised
    assert info.can_trim and info.can_flush and info.can_multi_conn
    assert not info.read_only and not info.rotational


def test_trim_whole_export_is_chunked_and_purges(nbdkit: str, sockdir: str) -> None:
    with start_emulator(os.path.join(sockdir, "purge.sock"), "64M", seed=1) as emu:
        with nbd.NbdClient(emu.uri) as c:
            c.pwrite(b"\xaa" * MIB, 10 * MIB)
            c.pwrite(b"\xbb" * 4096, 60 * MIB)
        assert nbd.trim(emu.uri) == 64 * MIB
        with nbd.NbdClient(emu.uri) as c:
            assert c.pread(10 * MIB, MIB) == bytes(MIB)
            assert c.pread(60 * MIB, 4096) == bytes(4096)
    stats = emu.stats()
    assert stats is not None
    assert stats["trim_cmds"] == 2  # 64 MiB in chunks of the advertised 32 MiB maximum
    assert stats["purges"] == 1 and stats["valid_pages"] == 0


def test_partial_trim(emulator: str) -> None:
    with nbd.NbdClient(emulator) as c:
        c.pwrite(b"\x11" * (256 * 1024), 0)
    assert nbd.trim(emulator, 64 * 1024, 64 * 1024) == 64 * 1024
    with nbd.NbdClient(emulator) as c:
        data = c.pread(0, 256 * 1024)
    assert data[: 64 * 1024] == b"\x11" * (64 * 1024)
    assert data[64 * 1024 : 128 * 1024] == bytes(64 * 1024)
    assert data[128 * 1024 :] == b"\x11" * (128 * 1024)


def test_trim_outside_the_export_is_refused(emulator: str) -> None:
    with pytest.raises(InputError, match="outside the NBD export"):
        nbd.trim(emulator, 60 * MIB, 8 * MIB)


def test_io_error_is_one_line(nbdkit: str, sockdir: str) -> None:
    path = os.path.join(sockdir, "err.sock")
    with (
        start_emulator(path, "16M", error_range="1M:4k") as emu,
        nbd.NbdClient(emu.uri) as c,
        pytest.raises(DeviceError) as info,
    ):
        c.pread(MIB, 4096)
    message = str(info.value)
    assert "read of 4096 bytes at offset 1048576 failed" in message
    assert "EIO" in message and "\n" not in message


# ---------------------------------------------------------------------------
# against nbdkit memory (no block-size constraints advertised)


def test_export_info_and_trim_on_nbdkit_memory(memory_uri: str) -> None:
    info = nbd.export_info(memory_uri)
    assert info.size == 100 * MIB
    assert info.can_trim
    with nbd.NbdClient(memory_uri) as c:
        c.pwrite(b"z" * 5000, 12345)
        assert c.pread(12340, 10) == bytes(5) + b"zzzzz"
    assert nbd.trim(memory_uri) == 100 * MIB
    with nbd.NbdClient(memory_uri) as c:
        assert c.pread(12340, 10) == bytes(10)


def test_export_name_is_sent(memory_uri: str) -> None:
    # nbdkit memory serves the same disk under any name
    named = memory_uri.replace(":///?", ":///some%20name?")
    assert nbd.parse_uri(named).export == "some name"
    assert nbd.export_info(named).size == 100 * MIB


# ---------------------------------------------------------------------------
# failures


def test_no_server_at_the_socket(sockdir: str) -> None:
    with pytest.raises(DeviceError, match="cannot connect to NBD server") as info:
        nbd.export_info(f"nbd+unix:///?socket={sockdir}/nobody.sock")
    assert "\n" not in str(info.value)


def test_not_an_nbd_server(sockdir: str) -> None:
    path = os.path.join(sockdir, "http.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + bytes(64))
            time.sleep(0.2)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with pytest.raises(DeviceError, match="not an NBD server"):
            nbd.export_info(f"nbd+unix:///?socket={path}", timeout=5)
    finally:
        t.join(5)
        srv.close()
        os.unlink(path)
