"""fio's own client/server mode: tkbench drives a real `fio --server` on loopback."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import FAST, TWO_IOPS_ROUNDS
from tkbench.runs import RunRequest, start
from tkbench.store import load_run

pytestmark = pytest.mark.fio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fio_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        ["fio", f"--server=ip:127.0.0.1,{port}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        limit = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < limit, "fio --server did not start"
                time.sleep(0.05)
        yield f"127.0.0.1,{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_run_through_a_fio_server(tmp_path: Path, fio_server: str) -> None:
    out, manifest = start(
        RunRequest(
            profile="quick",
            target=str(tmp_path / "t.img"),
            size=16 << 20,
            out=tmp_path / "run",
            assume_yes=True,
            fio_servers=[fio_server],
            overrides=[*FAST, *TWO_IOPS_ROUNDS],
        )
    )
    assert manifest.fio_servers == (fio_server,)
    t = load_run(out).test("iops")
    assert len(t.rounds) == 2
    argv = t.rounds[0].fio.argv
    assert f"--client={fio_server}" in argv
    assert all(p.iops > 0 for p in t.rounds[0].points)
    # the client output carries the host banner: proof the server ran the jobs
    assert "<" in (out / "tests/iops/rounds/0001.out").read_text().splitlines()[0]
