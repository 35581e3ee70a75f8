"""fio's own client/server mode: tkbench drives a real `fio --server` on loopback."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._helpers import FAST, TWO_IOPS_ROUNDS
from tkbench.cli import main
from tkbench.device import owndata
from tkbench.engine.runs import RunRequest, start
from tkbench.report import build_report
from tkbench.rundir.records import Manifest
from tkbench.rundir.store import load_run

pytestmark = pytest.mark.fio


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connect(spec: str) -> None:
    if spec.startswith("sock:"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            s.connect(spec[5:])
    else:
        host, port = spec.split(",")
        socket.create_connection((host, int(port)), timeout=0.2).close()


@contextlib.contextmanager
def _server(spec: str, cwd: Path) -> Iterator[str]:
    """A real ``fio --server`` listening at ``spec`` (fio's --client form)."""
    listen = spec if spec.startswith("sock:") else f"ip:{spec}"
    proc = subprocess.Popen(
        ["fio", f"--server={listen}"], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        limit = time.monotonic() + 10
        while True:
            try:
                _connect(spec)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < limit, (
                    "fio --server did not start"
                )
                time.sleep(0.05)
        yield spec
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _served(tmp_path: Path, server: str, overrides: list[str]) -> tuple[Path, Manifest]:
    """A run of the quick profile (FAST and ``overrides``) on a 16 MiB file through
    the fio server ``server``."""
    return start(
        RunRequest(
            profile="quick",
            target=str(tmp_path / "t.img"),
            size=16 << 20,
            out=tmp_path / "run",
            assume_yes=True,
            fio_servers=[server],
            overrides=[*FAST, *overrides],
        )
    )


@pytest.fixture
def fio_server(tmp_path: Path) -> Iterator[str]:
    with _server(f"127.0.0.1,{_free_port()}", tmp_path) as spec:
        yield spec


def test_run_through_a_fio_server(tmp_path: Path, fio_server: str) -> None:
    out, manifest = _served(tmp_path, fio_server, TWO_IOPS_ROUNDS)
    assert manifest.fio_servers == (fio_server,)
    t = load_run(out).test("iops")
    assert len(t.rounds) == 2
    argv = t.rounds[0].fio.argv
    assert f"--client={fio_server}" in argv
    assert all(p.iops > 0 for p in t.rounds[0].points)
    # the client output carries the host banner: proof the server ran the jobs
    assert "<" in (out / "tests/iops/rounds/0001.out").read_text().splitlines()[0]
    # fio wrote the server's file, not (necessarily) this host's: no mark of own data
    assert owndata.left_by_tkbench(str(tmp_path / "t.img")) is None


def test_two_fio_servers_keep_each_hosts_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two servers on this host (one on a TCP port, one on a unix socket) drive the
    one target, as two hosts drive one network target: the rounds keep each host's
    numbers beside their sum, and show --json and the report list them."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    tcp = f"127.0.0.1,{_free_port()}"
    unix = f"sock:{tmp_path / 'b' / 'fio.sock'}"
    with _server(tcp, tmp_path / "a"), _server(unix, tmp_path / "b"):
        out, _ = start(
            RunRequest(
                profile="quick",
                target=str(tmp_path / "t.img"),
                size=16 << 20,
                out=tmp_path / "run",
                assume_yes=True,
                fio_servers=[tcp, unix],
                overrides=[*FAST, *TWO_IOPS_ROUNDS],
            )
        )
    rounds = load_run(out).test("iops").rounds
    for r in rounds:
        for p in r.points:
            assert [h.host for h in p.hosts] == sorted([tcp, unix])
            assert all(h.iops > 0 and h.error == 0 for h in p.hosts)
            # the point's numbers are the hosts' together, as fio's "All clients" sums them
            assert p.iops == pytest.approx(sum(h.iops for h in p.hosts), rel=1e-9)
            assert p.bw_bytes == pytest.approx(sum(h.bw_bytes for h in p.hosts), rel=1e-9)
            ios = [h.read.total_ios or 0 for h in p.hosts]
            assert p.read.total_ios == sum(ios)
    raw = json.loads((out / "tests/iops/rounds/0001.json").read_text())
    assert {h["host"] for h in raw["points"][0]["hosts"]} == {tcp, unix}

    assert main(["show", str(out), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (test,) = [t for t in shown["tests"] if t["name"] == "iops"]
    hosts = test["hosts"]
    npoints = len(rounds[0].points)
    assert len(hosts) == 2 * npoints
    first = rounds[0].points[0]
    mine = [h for h in hosts if (h["bs"], h["read_pct"]) == first.key]
    assert [h["host"] for h in mine] == sorted([tcp, unix])
    for h in mine:
        per_round = [p.hosts[[x.host for x in p.hosts].index(h["host"])] for p in (
            r.point(*first.key) for r in rounds)]  # fmt: skip
        assert h["rounds"] == 2
        assert h["iops"] == pytest.approx(sum(x.iops for x in per_round) / 2)
    assert sum(h["iops_share"] for h in mine) == pytest.approx(1.0)
    assert main(["show", str(out)]) == 0
    assert f"host {unix}, {first.label}: IOPS" in capsys.readouterr().out

    pdf = build_report(out, tmp_path / "report.pdf")
    html = pdf.with_suffix(".html").read_text()
    assert "Per host" in html and html.count(f"<td>{tcp}</td>") == npoints


def test_the_histogram_phase_sends_no_hooks_to_a_fio_server(
    tmp_path: Path, fio_server: str
) -> None:
    """A fio server's host runs no tkbench: the response-time histogram phase, like the
    rounds, sends it a job file without tkbench's hand-off hooks."""
    only_latency = [
        "tests.iops.enabled=false",
        "tests.throughput.enabled=false",
        "tests.wsat.enabled=false",
        "tests.hir.enabled=false",
        "tests.xsr.enabled=false",
        "tests.cbw.enabled=false",
        "tests.dirth.enabled=false",
        "tests.latency.rounds.max=2",
        "tests.latency.rounds.window=2",
        "tests.latency.response_histogram=0.5s",
    ]
    out, manifest = _served(tmp_path, fio_server, only_latency)
    assert manifest.status == "complete"
    phase = (out / "tests/latency/histogram.fio").read_text()
    assert "exec_prerun" not in phase and "exec_postrun" not in phase
    rec = load_run(out).test("latency").response_histogram
    assert rec is not None and rec.point.write.bins_ns


def test_a_long_stage_runs_as_one_fio_run_on_fio_servers(tmp_path: Path, fio_server: str) -> None:
    """Parts follow each other closely only by tkbench's hand-off, which a fio server's
    host does not run: there the stage is one fio run, as before parts existed."""
    only_xsr = [f"tests.{t}.enabled=false" for t in ("iops", "throughput", "latency", "wsat")]
    only_xsr += [f"tests.{t}.enabled=false" for t in ("hir", "cbw", "dirth")]
    out, manifest = _served(tmp_path, fio_server, only_xsr)
    assert manifest.status == "complete"
    xsr = load_run(out).test("xsr")
    assert xsr.parts == 0 and not (out / "tests/xsr/rounds/0001.parts").exists()
    assert len(xsr.rounds) == 1 and len(xsr.rounds[0].points) == 3
