"""The bundled SSD emulator: pure model tests, then real nbdkit + real fio.

The integration tests need the Debian packages nbdkit, nbdkit-plugin-python and
fio; when they are missing the tests fail (never skip) and say what to install.
Each fio run lasts at most about a second.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tkbench import proc
from tkbench.emulator import INSTALL_HINT, Emulator, check_nbdkit, start_emulator
from tkbench.emulator import cli as emu_cli
from tkbench.emulator.ssdmodel import (
    MIB,
    PAGE,
    DataStore,
    EmulatorConfig,
    FaultInjector,
    SsdModel,
    format_size,
    parse_size,
)
from tkbench.errors import DeviceError, InputError, ToolMissingError
from tkbench.targets import nbd, open_target

REPO = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------
# helpers


def model(**kw: Any) -> SsdModel:
    kw.setdefault("noise", 0.0)
    kw.setdefault("capacity", 16 * MIB)
    return SsdModel(EmulatorConfig.create(**kw))


def random_writes(m: SsdModel, pages: int, rng: random.Random, now: float = 0.0) -> float:
    """Saturated 4 KiB random writes; returns modelled IOPS."""
    start = m.busy_until
    for _ in range(pages):
        m.write(rng.randrange(m.n_lpages) * PAGE, PAGE, now)
    return pages / (m.busy_until - start)


def window_wa(m: SsdModel, fn: Any) -> float:
    h0, g0 = m.host_pages, m.gc_pages + m.bg_gc_pages
    fn()
    return 1.0 + (m.gc_pages + m.bg_gc_pages - g0) / (m.host_pages - h0)


@pytest.fixture(scope="session")
def nbdkit_ok() -> None:
    try:
        check_nbdkit()
    except ToolMissingError as exc:
        pytest.fail(f"{exc} (the emulator tests need them)")


@pytest.fixture
def sockdir() -> Iterator[str]:
    # Unix socket paths are limited to 107 bytes: keep them short.
    d = tempfile.mkdtemp(prefix="tkbemu-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def emu(nbdkit_ok: None, sockdir: str) -> Iterator[Any]:
    """Factory: emu(capacity="16M", **params) -> running Emulator (stopped at teardown)."""
    started: list[Emulator] = []

    def factory(capacity: str = "16M", **params: Any) -> Emulator:
        path = os.path.join(sockdir, f"e{len(started)}.sock")
        e = start_emulator(path, capacity, seed=params.pop("seed", 1), **params)
        started.append(e)
        return e

    yield factory
    for e in started:
        e.stop()


def fio(
    uri: str,
    rw: str,
    bs: str = "4k",
    *,
    runtime: str | None = "1s",
    io_size: str | None = None,
    iodepth: int = 8,
    numjobs: int = 2,
    extra: tuple[str, ...] = (),
    check: bool = True,
) -> dict[str, Any]:
    """Run real fio against ``uri``; the job's JSON entry (group reporting)."""
    fd, out = tempfile.mkstemp(prefix="tkbfio-", suffix=".json")
    os.close(fd)
    argv = [
        "fio",
        "--name=t",
        "--ioengine=nbd",
        f"--uri={uri}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--iodepth={iodepth}",
        f"--numjobs={numjobs}",
        "--thread",
        "--group_reporting",
        "--randrepeat=0",
        "--norandommap",
        "--random_generator=tausworthe64",
        "--output-format=json",
        f"--output={out}",
        *extra,
    ]
    if io_size is not None:
        argv.append(f"--io_size={io_size}")
    elif runtime is not None:
        argv += ["--time_based", f"--runtime={runtime}"]
    try:
        done = proc.run(argv, timeout=120, check=False)
        text = Path(out).read_text()
    finally:
        os.unlink(out)
    # fio's nbd engine prints "fio: connected to NBD server" into the output
    start = text.find("{")
    assert start >= 0, f"no JSON from fio: {done.stderr[-500:]}"
    job: dict[str, Any] = json.loads(text[start:])["jobs"][0]
    if check:
        assert done.returncode == 0 and job["error"] == 0, done.stderr[-500:]
    return job


def iops(job: dict[str, Any]) -> float:
    return float(job["read"]["iops"] + job["write"]["iops"])


def stop_and_stats(e: Emulator) -> dict[str, Any]:
    e.stop()
    stats = e.stats()
    assert stats is not None, e.log_tail()
    return stats


# ---------------------------------------------------------------------------
# configuration


def test_sizes_parse_and_format() -> None:
    assert parse_size("256M") == 256 * MIB
    assert parse_size("1G") == 1 << 30
    assert parse_size("64MiB") == 64 * MIB
    assert parse_size("123456") == 123456
    assert parse_size(4096) == 4096
    for bad in ("12Q", "-1", "", "1.5k3"):
        with pytest.raises(ValueError):
            parse_size(bad)
    assert format_size(256 * MIB) == "256 MiB"
    assert format_size(1536 * MIB) == "1.5 GiB"


def test_config_defaults_are_valid_and_round_trip() -> None:
    cfg = EmulatorConfig()
    cfg.validate()
    assert cfg.to_strings() == {}
    odd = EmulatorConfig.create(
        capacity="32M",
        over_provisioning="25%",
        noise=0.0,
        seed=7,
        store_data=False,
        error_range="1M:4k",
        error_after="2.5",
        spike_every_ms=100,
    )
    assert odd.over_provisioning == 0.25
    assert odd.error_range == (MIB, 4096)
    assert EmulatorConfig.from_strings(odd.to_strings()) == odd


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"capacity": "10000001"}, "multiple of 4 KiB"),
        ({"capacity": "12Q"}, "--capacity"),
        ({"capacity": "1M"}, "8 erase blocks"),
        ({"over_provisioning": "-0.1"}, "--over-provisioning must be at least"),
        ({"noise": "nan"}, "--noise"),
        ({"block_pages": "1.5"}, "--block-pages"),
        ({"store_data": "maybe"}, "boolean"),
        ({"error_range": "16M"}, "OFFSET:LENGTH"),
        ({"error_range": "1G:1M"}, "beyond the capacity"),
        ({"flux_capacitor": "1"}, "unknown emulator parameter"),
    ],
)
def test_config_rejects_bad_values(values: dict[str, str], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment) as info:
        EmulatorConfig.from_strings(values)
    assert "\n" not in str(info.value)


def test_every_parameter_is_documented() -> None:
    doc = (REPO / "docs" / "emulator.md").read_text()
    for f in EmulatorConfig.option_fields():
        flag = "--no-data" if f.name == "store_data" else "--" + f.name.replace("_", "-")
        assert flag in doc, f"{flag} missing from docs/emulator.md"


# ---------------------------------------------------------------------------
# the flash model (pure, seeded)


def test_fresh_drive_needs_no_gc_until_the_spare_is_used() -> None:
    m = model()
    rng = random.Random(1)
    wa = window_wa(m, lambda: random_writes(m, m.n_lpages, rng))
    assert wa == 1.0
    assert m.erases == 0


def test_sustained_random_writes_raise_wa_and_slow_down() -> None:
    m = model()
    rng = random.Random(2)
    fresh = random_writes(m, m.n_lpages // 4, rng)
    random_writes(m, 3 * m.n_lpages, rng)
    wa = window_wa(m, lambda: random_writes(m, m.n_lpages, rng))
    steady = random_writes(m, m.n_lpages // 4, rng)
    assert wa > 2.5
    assert fresh > 1.8 * steady


def test_over_provisioning_shapes_write_amplification() -> None:
    was = []
    for op in (0.07, 0.12, 0.28):
        m = model(over_provisioning=op)
        rng = random.Random(3)
        random_writes(m, 4 * m.n_lpages, rng)
        was.append(window_wa(m, lambda m=m, rng=rng: random_writes(m, m.n_lpages, rng)))
    assert was[0] > was[1] > was[2] > 1.5


def test_sequential_overwrites_keep_wa_near_one() -> None:
    m = model()
    n = m.n_lpages * PAGE

    def seq_pass() -> None:
        for off in range(0, n, 128 * 1024):
            m.write(off, 128 * 1024, 0.0)

    for _ in range(3):
        seq_pass()
    assert window_wa(m, seq_pass) < 1.02


def test_whole_trim_is_a_purge_and_partial_trim_frees_pages() -> None:
    m = model()
    rng = random.Random(4)
    fresh = random_writes(m, 1000, rng)
    random_writes(m, 4 * m.n_lpages, rng)
    assert random_writes(m, 1000, rng) < 0.7 * fresh
    # a partial trim unmaps what it covers and makes GC cheaper
    valid = m.valid_pages
    m.trim(0, m.n_lpages * PAGE // 2, 0.0)
    assert m.valid_pages < valid * 0.6
    wa_after_trim = window_wa(m, lambda: random_writes(m, m.n_lpages // 8, rng, 0.0))
    m2 = model()
    random_writes(m2, 5 * m2.n_lpages, random.Random(4))
    wa_untrimmed = window_wa(m2, lambda: random_writes(m2, m2.n_lpages // 8, rng))
    assert wa_after_trim < wa_untrimmed
    # the whole range: fresh again
    m.trim(0, m.n_lpages * PAGE, 0.0)
    assert m.valid_pages == 0
    assert m.free_blocks() == m.n_blocks - 2
    assert random_writes(m, 1000, rng) == pytest.approx(fresh, rel=0.01)


def test_chunked_whole_trim_also_purges() -> None:
    m = model()
    random_writes(m, 2 * m.n_lpages, random.Random(5))
    step = 4 * MIB
    for off in range(0, m.n_lpages * PAGE, step):
        m.trim(off, step, 0.0)
    assert m.free_blocks() == m.n_blocks - 2
    assert m.purges == 1


def test_idle_time_lets_background_gc_recover() -> None:
    m = model(over_provisioning=0.25, bg_gc_target=1.0)
    rng = random.Random(6)
    random_writes(m, 5 * m.n_lpages, rng)
    free_before = m.free_blocks()
    now = m.busy_until
    busy = random_writes(m, 300, rng, now)
    # two seconds later the next burst runs into blocks GC freed meanwhile
    later = m.busy_until + 2.0
    m.write(0, PAGE, later)  # the first request after idle triggers the lazy GC
    assert m.free_blocks() > free_before + 5
    assert m.bg_gc_pages > 0
    start = m.busy_until
    for _ in range(300):
        m.write(rng.randrange(m.n_lpages) * PAGE, PAGE, start)
    recovered = 300 / (m.busy_until - start)
    assert recovered > 1.3 * busy


def test_same_seed_same_latencies() -> None:
    def trace(seed: int) -> list[float]:
        m = model(noise=0.2, seed=seed)
        rng = random.Random(99)  # the request sequence
        out = []
        t = 0.0
        for _ in range(3000):
            op = rng.random()
            off = rng.randrange(m.n_lpages) * PAGE
            t += rng.expovariate(5000.0)
            if op < 0.6:
                out.append(m.write(off, PAGE, t) - t)
            elif op < 0.98:
                out.append(m.read(off, 2 * PAGE, t) - t)
            else:
                out.append(m.trim(off, PAGE, t) - t)
        return out

    assert trace(1) == trace(1)
    assert trace(1) != trace(2)


def test_timing_model() -> None:
    m = model(noise=0.0)
    cfg = m.cfg
    # QD1: a read is faster than a write; latencies are the configured ones
    rd = m.read(0, PAGE, 10.0) - 10.0
    wr = m.write(0, PAGE, 20.0) - 20.0
    xfer = PAGE / (cfg.max_mbps * MIB)
    assert rd == pytest.approx(cfg.read_latency_us * 1e-6 + xfer)
    assert wr == pytest.approx(cfg.write_latency_us * 1e-6 + xfer)
    assert rd < wr

    # latency grows with the number of requests in flight
    def burst(depth: int, at: float) -> float:
        lat = [m.read(i * PAGE, PAGE, at) - at for i in range(depth)]
        return sum(lat) / depth

    assert burst(1, 30.0) < burst(4, 31.0) < burst(16, 32.0) < burst(64, 33.0)

    # small blocks cost more per byte; the interface ceiling caps large ones
    def bandwidth(bs: int, at: float) -> float:
        start = max(at, m.busy_until)
        for i in range(200):
            m.read((i * bs) % (8 * MIB), bs, start)
        return 200 * bs / (m.busy_until - start) / MIB

    assert bandwidth(4096, 40.0) < bandwidth(65536, 41.0) < bandwidth(1 << 20, 42.0)
    assert bandwidth(1 << 20, 43.0) == pytest.approx(cfg.max_mbps, rel=0.01)


def test_fault_injector() -> None:
    cfg = EmulatorConfig.create(
        error_after=1.0, error_range="1M:4k", spike_every_ms=100, spike_ms=20
    )
    f = FaultInjector(cfg)
    assert f.error(0, 4096, 5.0) is None  # not armed before the first connection
    assert f.arm(5.0) and not f.arm(6.0)
    assert f.error(0, 4096, 5.5) is None
    assert f.error(MIB - 512, 512, 5.5) is None
    assert "error-range" in (f.error(MIB - 512, 1024, 5.5) or "")
    assert "error-after" in (f.error(0, 4096, 6.0) or "")
    assert f.stall(5.05) is None
    assert f.stall(5.11) == pytest.approx(5.12)
    assert f.stall(5.115) is None  # same period: one stall only
    assert f.stall(5.13) is None  # the stall of this period already ended
    assert f.spikes == 1


def test_data_store() -> None:
    store = DataStore(4 * MIB)
    data = bytes(range(256)) * 48
    store.write(data, 4000)
    buf = bytearray(len(data) + 200)
    store.read(buf, 3900)
    assert buf[:100] == bytes(100) and buf[100 : 100 + len(data)] == data
    store.zero(4096, 8192)  # whole pages: dropped
    store.zero(4000, 10)  # partial page: zeroed
    store.read(buf, 3900)
    assert buf[100:110] == bytes(10) and buf[110:196] == data[10:96]
    assert buf[196 : 196 + 8192] == bytes(8192)
    assert buf[196 + 8192 : 100 + len(data)] == data[96 + 8192 :]
    store.close()
    off = DataStore(4 * MIB, enabled=False)
    off.write(data, 0)
    small = bytearray(b"x" * 10)
    off.read(small, 0)
    assert small == bytes(10)


# ---------------------------------------------------------------------------
# real nbdkit, real fio


@pytest.mark.fio
def test_fio_verify_and_nbd_readback(emu: Any) -> None:
    e = emu("16M")
    job = fio(
        e.uri,
        "randwrite",
        "8k",
        runtime=None,
        numjobs=1,
        extra=(
            "--size=4M",
            # each block written once (fio's random map): two writes in flight to one
            # block may complete in either order, on this emulator as on a real drive
            "--norandommap=0",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_fatal=1",
            "--verify_state_save=0",  # no *-verify.state file in the working directory
        ),
    )
    assert job["error"] == 0 and job["write"]["total_ios"] == 512
    # the verify pass read back every block written
    assert job["read"]["total_ios"] == 512
    with nbd.NbdClient(e.uri) as c:
        payload = os.urandom(3 * PAGE + 100)
        c.pwrite(payload, 8 * MIB + 7)
        assert c.pread(8 * MIB + 7, len(payload)) == payload
        assert c.pread(12 * MIB, PAGE) == bytes(PAGE)  # never written
        c.trim(8 * MIB, 2 * PAGE)
        back = c.pread(8 * MIB, 3 * PAGE)
        assert back[: 2 * PAGE] == bytes(2 * PAGE)
        assert back[2 * PAGE :] == payload[2 * PAGE - 7 : 3 * PAGE - 7]


def fresh_steady_purged(uri: str) -> tuple[float, float, float]:
    """Random-write IOPS of a new 16 MiB emulator: fresh, after 4x its capacity of
    random writes, and after a purge (whole trim).  Also benchmarks/emulator_recovery.py's."""
    fresh = iops(fio(uri, "randwrite", runtime="700ms"))
    fio(uri, "randwrite", runtime=None, io_size="32M", iodepth=16)  # 2 x 32M = 4x capacity
    steady = iops(fio(uri, "randwrite", runtime="700ms"))
    nbd.trim(uri)  # purge
    purged = iops(fio(uri, "randwrite", runtime="700ms"))
    return fresh, steady, purged


@pytest.mark.fio
def test_sustained_random_writes_cost_gc_and_a_purge_is_seen(emu: Any) -> None:
    """Sustained random writes make the emulator collect garbage and the whole trim
    purges it.  How much slower the steady state is and how much a purge restores
    are speed ratios a busy CPU shrinks: benchmarks/emulator_recovery.py measures
    them; the flash model asserts both in its own time
    (test_sustained_random_writes_raise_wa_and_slow_down,
    test_whole_trim_is_a_purge_and_partial_trim_frees_pages)."""
    e = emu("16M")
    measured = fresh_steady_purged(e.uri)
    stats = stop_and_stats(e)
    assert all(v > 0 for v in measured), measured
    assert stats["purges"] >= 1
    assert stats["write_amplification"] > 1.5


@pytest.mark.fio
def test_sequential_writes_degrade_far_less_than_random(emu: Any) -> None:
    e = emu("16M")
    fresh = iops(fio(e.uri, "write", runtime="500ms", numjobs=1, iodepth=16))
    fio(e.uri, "write", runtime=None, io_size="64M", numjobs=1, iodepth=16)  # 4x capacity
    later = iops(fio(e.uri, "write", runtime="500ms", numjobs=1, iodepth=16))
    stats = stop_and_stats(e)
    assert fresh > 0 and later > 0
    # sequential overwrites free whole blocks: no garbage collection to slow them (how
    # their IOPS compare is a speed ratio a busy CPU breaks: 7,300 then 3,000 at a
    # load of 25)
    assert stats["write_amplification"] < 1.05, stats


# Much spare flash and costly erases make the recovered pool (and the difference GC
# makes) large against a 0.4 s measurement; idle_ms=500 keeps the gaps between fio
# runs from counting as idle time.  Also benchmarks/emulator_recovery.py's.
IDLE_RECOVERY = {
    "over_provisioning": 1.0,
    "erase_us": 3000,
    "bg_gc_target": 1.0,
    "bg_gc_duty": 0.4,
    "idle_ms": 500,
}


@pytest.mark.fio
def test_idle_time_recovers_part_of_the_performance(emu: Any) -> None:
    """Idle time between two write bursts lets background garbage collection run.
    How much faster the second burst is, is a speed ratio a busy CPU shrinks (the
    emulator's own overhead then limits both): benchmarks/emulator_recovery.py
    measures it; the flash model's recovery in its own time is asserted by
    test_idle_time_lets_background_gc_recover."""
    e = emu("16M", **IDLE_RECOVERY)
    fio(e.uri, "randwrite", runtime=None, io_size="20M", iodepth=16)  # 2.5x capacity
    busy = fio(e.uri, "randwrite", runtime="400ms")
    time.sleep(1.5)
    rested = fio(e.uri, "randwrite", runtime="400ms")
    stats = stop_and_stats(e)
    assert iops(busy) > 0 and iops(rested) > 0
    assert stats["bg_gc_pages_relocated"] > 0


def queue_depths(uri: str) -> tuple[dict[str, Any], ...]:
    """4 KiB random reads at T1/QD1 and T2/QD8, random writes at QD1 and 128 KiB
    sequential reads, on a drive written once (benchmarks/emulator_recovery.py
    compares the first two)."""
    fio(uri, "write", "128k", runtime=None, numjobs=1, io_size="16M")
    qd1 = fio(uri, "randread", runtime="500ms", numjobs=1, iodepth=1)
    qd16 = fio(uri, "randread", runtime="500ms", numjobs=2, iodepth=8)
    wr1 = fio(uri, "randwrite", runtime="500ms", numjobs=1, iodepth=1)
    big = fio(uri, "read", "128k", runtime="500ms", numjobs=1, iodepth=8)
    return qd1, qd16, wr1, big


@pytest.mark.fio
def test_queue_depth_block_size_and_direction(emu: Any) -> None:
    """How much more IOPS and latency a deeper queue gets are speed ratios a busy CPU
    narrows (the emulator's overhead adds to every request): benchmarks/
    emulator_recovery.py measures them."""
    e = emu("16M", max_mbps=80)
    qd1, qd16, wr1, big = queue_depths(e.uri)
    lat1 = qd1["read"]["clat_ns"]["mean"]
    assert iops(qd1) > 0 and iops(qd16) > 0
    assert lat1 < wr1["write"]["clat_ns"]["mean"]  # reads faster than writes
    small_bw = qd16["read"]["bw_bytes"] / MIB
    big_bw = big["read"]["bw_bytes"] / MIB
    assert small_bw < big_bw <= 80 * 1.05  # small blocks cost more; ceiling holds


@pytest.mark.fio
def test_injected_error_after(emu: Any) -> None:
    e = emu("16M", error_after=0.3)
    job = fio(e.uri, "randwrite", runtime="1s", check=False)
    assert job["error"] == 5  # EIO
    assert job["write"]["total_ios"] > 100  # it worked before the fault
    assert "injected I/O error" in e.log_tail()


@pytest.mark.fio
def test_injected_error_on_a_range(emu: Any) -> None:
    e = emu("16M", error_range="8M:64k")
    ok = fio(e.uri, "write", "64k", runtime=None, numjobs=1, extra=("--size=8M",))
    assert ok["error"] == 0
    job = fio(e.uri, "write", "64k", runtime=None, numjobs=1, check=False, extra=("--offset=8M",))
    assert job["error"] == 5
    with nbd.NbdClient(e.uri) as c, pytest.raises(DeviceError, match="Input/output error"):
        c.pread(8 * MIB + 4096, 512)


@pytest.mark.fio
def test_injected_latency_spikes(emu: Any) -> None:
    e = emu("16M", spike_every_ms=200, spike_ms=60)
    job = fio(e.uri, "randread", runtime="1s")
    assert job["read"]["clat_ns"]["max"] > 50e6
    # a calm drive's slowest read is no bound to assert: on a busy CPU the emulator's
    # own scheduling delays reach the spikes' 60 ms; its count of spikes is one
    plain = emu("16M")
    fio(plain.uri, "randread", runtime="500ms")
    assert stop_and_stats(e)["injected_spikes"] >= 3
    assert stop_and_stats(plain)["injected_spikes"] == 0


@pytest.mark.fio
def test_injected_disconnect(emu: Any) -> None:
    e = emu("16M", disconnect_after=0.4)
    job = fio(e.uri, "randwrite", runtime="2s", check=False)
    assert job["error"] != 0  # cut short by the disconnect (how soon: CPU load decides)
    assert e.wait(timeout=5) == 0  # the server exited by itself
    with pytest.raises(DeviceError, match="cannot connect"):
        nbd.export_info(e.uri)


# ---------------------------------------------------------------------------
# launcher and command line


def test_an_emulated_drive_is_named_by_its_parameters_not_by_its_socket(emu: Any) -> None:
    """The demo starts its emulator on a new socket each time: the drive a run records
    (its serial, what the history files runs under) is the emulated drive's capacity,
    seed and model, so two runs of the same drive are one drive and another drive is
    another."""

    def serial(e: Emulator, export: str = "") -> str:
        uri = f"nbd+unix:///{export}?socket={e.socket_path}"
        return str(open_target(uri).identity["serial"])

    first, again = emu("16M", seed=1), emu("16M", seed=1)
    assert first.socket_path != again.socket_path
    assert serial(first) == serial(again) == "tkbench-emu-16MiB-s1"
    # asked for by its name, it is the same drive; a name of another drive is refused
    assert serial(first, "tkbench-emu-16MiB-s1") == serial(first)
    with pytest.raises(InputError, match="refused the export 'tkbench-emu-16MiB-s2'"):
        serial(first, "tkbench-emu-16MiB-s2")
    # injected faults and data keeping are not the drive
    assert serial(emu("16M", seed=1, error_after=600.0, store_data=False)) == serial(first)
    others = [emu("16M", seed=2), emu("32M", seed=1), emu("16M", seed=1, over_provisioning=0.2)]
    names = {serial(e) for e in [first, *others]}
    assert len(names) == 4, names
    # the name nbdkit's side serves is the one tkbench's side computes (0 there is 0.0)
    assert (
        serial(emu("16M", seed=1, idle_ms=0))
        == EmulatorConfig.create(capacity="16M", seed=1, idle_ms=0).export_name()
    )


def test_missing_nbdkit_says_what_to_install() -> None:
    with pytest.raises(ToolMissingError, match=INSTALL_HINT):
        check_nbdkit("nbdkit-not-installed-here")


def test_start_refuses_bad_parameters(sockdir: str) -> None:
    with pytest.raises(InputError, match="--over-provisioning"):
        start_emulator(os.path.join(sockdir, "x.sock"), "16M", over_provisioning=9)


def test_socket_in_use_is_refused_and_stale_socket_replaced(emu: Any, sockdir: str) -> None:
    e = emu("16M")
    with pytest.raises(InputError, match="in use"):
        start_emulator(e.socket_path, "16M")
    stale = os.path.join(sockdir, "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(stale)
    s.close()  # leaves the socket file with nobody listening
    with start_emulator(stale, "16M") as again:
        assert nbd.export_info(again.uri).size == 16 * MIB
    assert not os.path.exists(stale)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tkbench.emulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--socket", "/tmp/x.sock", "--capacity", "12Q"],
        ["--socket", "/tmp/x.sock", "--noise", "-1"],
        ["--socket", "/tmp/x.sock", "--error-range", "nonsense"],
        ["--socket", "/tmp/x.sock", "--threads", "0"],
        ["--socket", "/tmp/x.sock", "--bogus"],
        ["--capacity", "16M"],
        ["--socket", "/nonexistent-dir/x.sock"],
    ],
)
def test_cli_bad_options_one_line_exit_2(args: list[str]) -> None:
    done = _cli(*args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and "error:" in done.stderr


def test_cli_serves_until_sigterm_and_cleans_up(nbdkit_ok: None, sockdir: str) -> None:
    path = os.path.join(sockdir, "cli.sock")
    with subprocess.Popen(
        [sys.executable, "-m", "tkbench.emulator", "--socket", path, "--capacity", "16M"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    ) as child:
        try:
            assert child.stderr is not None
            line = child.stderr.readline()
            assert line.startswith("tkbench emulator: serving 16 MiB on nbd+unix:///?socket=")
            # ready means ready: the socket answers at once
            assert nbd.export_info(f"nbd+unix:///?socket={path}").size == 16 * MIB
            child.send_signal(signal.SIGTERM)
            _, rest = child.communicate(timeout=15)
        finally:
            if child.poll() is None:
                child.kill()
    assert child.returncode == 0
    assert rest.strip() == "tkbench emulator: stopped"
    assert not os.path.exists(path)


def test_register_adds_the_emulate_subcommand() -> None:
    parser = argparse.ArgumentParser(prog="tkbench")
    subs = parser.add_subparsers(dest="command")
    emu_cli.register(subs)
    args = parser.parse_args(
        ["emulate", "--socket", "/tmp/s.sock", "--capacity", "1G", "--error-range", "0:4k"]
    )
    assert args.func is emu_cli.run_emulator
    cfg = emu_cli.config_from_args(args)
    assert cfg.capacity == 1 << 30 and cfg.error_range == (0, 4096)
    help_text = subs.choices["emulate"].format_help()
    assert "--over-provisioning" in help_text and "--disconnect-after" in help_text
