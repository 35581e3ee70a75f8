"""The workload package's pure parts: blktrace records, the trace, its reduction, the
workload file and the fio options, with synthetic traces of known content."""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from tkbench.errors import InputError
from tkbench.workload import fiojobs, reduce, tkw
from tkbench.workload.trace import (
    ACT_COMPLETE,
    ACT_ISSUE,
    MAGIC,
    READ,
    RECORD,
    TC_DISCARD,
    TC_FLUSH,
    TC_NOTIFY,
    TC_READ,
    TC_WRITE,
    TRIM,
    VERSION,
    WRITE,
    Trace,
    events,
    from_events,
)

MIB = 1 << 20


def record(t: int, sector: int, nbytes: int, action: int, pdu: bytes = b"") -> bytes:
    return RECORD.pack(MAGIC | VERSION, 0, t, sector, nbytes, action, 42, 0, 0, 0, len(pdu)) + pdu


def io(t: int, offset: int, size: int, write: bool, latency: int = 1000) -> bytes:
    tc = TC_WRITE if write else TC_READ
    return record(t, offset // 512, size, ACT_ISSUE | tc, b"cgroupid") + record(
        t + latency, offset // 512, size, ACT_COMPLETE | tc
    )


def mixed_trace(n: int = 4000, seed: int = 7) -> tuple[Trace, dict[str, int]]:
    """Random 4 KiB reads and writes (70/30) and a sequential 64 KiB read stream, every
    I/O done before the next starts; with the count of each stream."""
    rng = random.Random(seed)
    rows, counts, seq = [], {"rr": 0, "rw": 0, "sr": 0}, 32 * MIB
    for i in range(n):
        t = 1_000_000 + i * 100_000
        if i % 5 == 0:
            rows.append((t, 20_000, seq, 65536, READ))
            seq += 65536
            counts["sr"] += 1
        else:
            write = rng.random() < 0.3
            offset = rng.randrange(0, 32 * MIB, 4096)
            rows.append((t, 50_000, offset, 4096, WRITE if write else READ))
            counts["rw" if write else "rr"] += 1
    return Trace.from_rows(rows), counts


# --------------------------------------------------------------------------- records


def test_records_are_read_with_their_payload_skipped_and_a_cut_record_dropped() -> None:
    data = io(100, 4096, 4096, False) + record(150, 0, 0, TC_NOTIFY, b"fio\0")
    data += io(200, 8192, 8192, True)
    recs = events(data + data[:30])  # blktrace stopped mid-record
    assert recs["time"].tolist() == [100, 1100, 150, 200, 1200]
    assert recs["sector"].tolist() == [8, 8, 0, 16, 16]
    assert recs["bytes"].tolist() == [4096, 4096, 0, 8192, 8192]


def test_anything_but_blktrace_records_is_one_input_error() -> None:
    with pytest.raises(InputError, match="not a blktrace record at byte 0"):
        events(b"x" * 96)
    with pytest.raises(InputError, match="version 6"):
        events(RECORD.pack(MAGIC | 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))


def test_issues_pair_with_their_completions_by_sector_and_direction() -> None:
    data = b"".join(
        [
            record(1000, 8, 4096, ACT_ISSUE | TC_READ),
            record(1500, 8, 4096, ACT_ISSUE | TC_WRITE),  # same sector, other direction
            record(1700, 0, 0, ACT_ISSUE | TC_READ | TC_FLUSH),  # an empty flush: no I/O
            record(1800, 0, 0, ACT_COMPLETE | TC_READ | TC_FLUSH),
            record(2000, 8, 4096, ACT_COMPLETE | TC_WRITE),
            record(2100, 8, 4096, ACT_ISSUE | TC_READ),  # a second read of sector 8
            record(3000, 8, 4096, ACT_COMPLETE | TC_READ),  # completes the first (FIFO)
            record(3500, 64, 8192, ACT_ISSUE | TC_WRITE | TC_DISCARD),
            record(4000, 16, 4096, ACT_ISSUE | TC_READ | TC_NOTIFY),
        ]
    )
    tr = from_events(events(data))
    assert tr.issue_ns.tolist() == [0, 500, 1100, 2500]
    assert tr.latency_ns.tolist() == [2000, 500, -1, -1]
    assert tr.op.tolist() == [READ, WRITE, READ, TRIM]
    assert tr.offset.tolist() == [4096, 4096, 4096, 32768]


def test_a_partitions_ios_are_numbered_from_its_start_and_others_left_out() -> None:
    base = 1 * MIB
    data = io(0, base + 4096, 4096, False) + io(10, base - 4096, 4096, False)
    data += io(20, base + 2 * MIB - 4096, 8192, True)  # passes the partition's end
    tr = from_events(events(data), base=base, length=2 * MIB)
    assert tr.offset.tolist() == [4096]


# --------------------------------------------------------------------------- reduction


def test_interleaved_sequential_streams_are_sequential_and_scattered_ios_random() -> None:
    rows = []
    for i in range(50):  # two sequential readers interleaved, a random writer between
        rows.append((i * 30, 0, i * 8192, 8192, READ))
        rows.append((i * 30 + 10, 0, 512 * MIB + i * 4096, 4096, READ))
        rows.append((i * 30 + 20, 0, (i * 7919 % 1000) * 65536 + 40960, 4096, WRITE))
    seq = reduce.sequential(Trace.from_rows(rows))
    assert seq.reshape(50, 3)[1:].tolist() == [[True, True, False]] * 49
    assert not seq[:2].any()  # each stream's first I/O starts nowhere known


def test_the_reduction_of_a_known_mix_gives_its_streams_shares_and_rates() -> None:
    tr, counts = mixed_trace()
    red = reduce.reduce(tr, 128 * MIB, duration_s=0.4)
    n = len(tr)
    by = {(s["rw"], s["bs"], s["pattern"]): s for s in red["streams"]}
    assert by[("read", 65536, "seq")]["ios"] == counts["sr"] - 1  # the first starts it
    rand_reads = by[("read", 4096, "rand")]["ios"]
    # a random I/O may start where one of the last 32 ended: 32 of 8192 places
    assert 0 <= counts["rr"] - rand_reads <= 0.01 * counts["rr"]
    total_bytes = counts["sr"] * 65536 + (counts["rr"] + counts["rw"]) * 4096
    assert red["bytes"] == total_bytes
    assert red["read_pct"] == pytest.approx(100 * (counts["rr"] + counts["sr"]) / n, abs=1e-3)
    assert red["random_pct"] == pytest.approx(100 * (n - counts["sr"]) / n, abs=1.0)
    assert red["iops"] == pytest.approx(n / 0.4)
    assert sum(s["share_ios"] for s in red["streams"]) == pytest.approx(100, abs=0.01)
    assert sum(s["share_bytes"] for s in red["streams"]) == pytest.approx(100, abs=0.01)
    share = by[("read", 65536, "seq")]["share_bytes"]
    assert share == pytest.approx(100 * (counts["sr"] - 1) * 65536 / total_bytes, abs=1e-3)
    # the random I/Os in the first quarter of the capacity, the stream from there on
    heat = red["heat"]
    assert sum(heat[:25]) == n - counts["sr"] and sum(heat[25:65]) == counts["sr"]
    assert red["queue_depth"]["max"] == 1  # one at a time
    assert red["interarrival_us"]["p50"] == 100.0
    assert red["latency_us"]["write"]["p99"] == 50.0
    json.dumps(red)  # JSON types only


def test_the_typed_reduction_gives_back_the_json_it_was_read_from() -> None:
    """tkw.Reduction is read from the JSON a workload file and test.json hold and gives
    it back key for key, type for type (ints stay ints, an empty summary its samples
    alone), so files written from it read as before."""
    tr, _ = mixed_trace()
    empty = Trace.from_rows([])
    for red in (reduce.reduce(tr, 128 * MIB, 0.4), reduce.reduce(empty, MIB, 1.0)):
        typed = tkw.Reduction.parse(json.loads(json.dumps(red)))
        assert json.dumps(typed.to_json(), sort_keys=True) == json.dumps(red, sort_keys=True)
    full = tkw.Reduction.parse(reduce.reduce(tr, 128 * MIB, 0.4))
    assert full.streams[0].ios >= full.streams[-1].ios and full.queue_depth.max == 1
    assert full.read_latency_us.samples > 0 and typed.read_latency_us.mean is None
    assert tkw.Reduction.parse({}) == tkw.Reduction()  # a stage's capture holding none
    with pytest.raises(InputError, match=r"w\.tkw's reduction is not one"):
        tkw.Reduction.parse({"streams": [{"rw": "read"}]}, "w.tkw")


def test_queue_depth_counts_what_is_outstanding_when_each_io_is_issued() -> None:
    rows = [
        (0, 100, 0, 4096, READ),  # done at 100
        (10, 200, 4096, 4096, READ),  # done at 210: sees 2
        (20, 50, 8192, 4096, WRITE),  # done at 70: sees 3
        (150, 10, 12288, 4096, READ),  # sees 2 (the 2nd is still out)
        (300, -1, 16384, 4096, READ),  # no completion: left out
    ]
    qd = reduce.queue_depth(Trace.from_rows(rows))
    assert (qd["samples"], qd["max"], qd["share"]) == (4, 3, {"1": 25.0, "2": 50.0, "3": 25.0})


def test_the_time_series_counts_ios_per_second_and_direction() -> None:
    rows = [(int(t * 1e9), 0, 0, 4096, READ) for t in (0.1, 0.2, 1.5)]
    rows.append((int(2.5e9), 0, 0, 1_000_000, WRITE))
    tl = reduce.timeline(Trace.from_rows(rows), duration_s=3.0)
    assert tl["interval_s"] == 1.0
    assert tl["read_iops"] == [2.0, 1.0, 0.0]
    assert tl["write_mbps"] == [0.0, 0.0, 1.0]
    assert reduce.timeline(Trace.from_rows(rows), duration_s=3600.0)["interval_s"] == 8.0


# --------------------------------------------------------------------------- the file


def workload() -> tkw.Workload:
    tr, _ = mixed_trace(500)
    header = {
        "device": {"path": "/dev/x", "capacity_bytes": 64 * MIB},
        "reduction": reduce.reduce(tr, 64 * MIB, 0.05),
    }
    return tkw.Workload(header, tr)


def test_a_workload_file_reads_back_what_was_written(tmp_path: Path) -> None:
    w = workload()
    path = tmp_path / "w.tkw"
    tkw.write(path, w)
    back = tkw.load(path)
    for a, b in zip(w.trace.columns(), back.trace.columns(), strict=True):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    assert back.reduction == w.reduction and back.header["format"] == tkw.FORMAT
    assert gzip.decompress(path.read_bytes()).startswith(b"tkbench workload\n")


def _rewrite(data: bytes, change: dict[str, object]) -> bytes:
    raw = gzip.decompress(data)
    magic, header, body = raw.split(b"\n", 2)
    head = {**json.loads(header), **change}
    return gzip.compress(magic + b"\n" + json.dumps(head).encode() + b"\n" + body)


def test_too_new_too_old_and_damaged_files_are_one_clear_error() -> None:
    good = tkw.encode(workload())
    with pytest.raises(InputError, match=r"format 2, newer than this tkbench reads \(1 to 1\)"):
        tkw.decode(_rewrite(good, {"format": 2}), "w.tkw")
    with pytest.raises(InputError, match=r"format 0, older .* capture the workload again"):
        tkw.decode(_rewrite(good, {"format": 0}), "w.tkw")
    with pytest.raises(InputError, match="not the 499 rows"):
        tkw.decode(_rewrite(good, {"rows": 499}), "w.tkw")
    with pytest.raises(InputError, match="damaged"):
        tkw.decode(good[:-20], "w.tkw")  # cut short
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    with pytest.raises(InputError, match=r"damaged|not a tkbench"):
        tkw.decode(bytes(flipped), "w.tkw")
    with pytest.raises(InputError, match="not a tkbench workload file"):
        tkw.decode(gzip.compress(b"hello\n{}\n"), "w.tkw")
    bad = {**workload().header["reduction"], "streams": [{"rw": "read", "bs": "4k"}]}
    damaged = r"^w\.tkw is damaged: its header's field "
    with pytest.raises(InputError, match=damaged + r"reduction\.streams\[0\]\.bs is a string"):
        tkw.decode(_rewrite(good, {"reduction": bad}), "w.tkw")
    with pytest.raises(InputError, match=damaged + "device is null, expected object$"):
        tkw.decode(_rewrite(good, {"device": None}), "w.tkw")
    with pytest.raises(InputError, match=damaged + r"device\.capacity_bytes is -1, below 0$"):
        tkw.decode(_rewrite(good, {"device": {"capacity_bytes": -1}}), "w.tkw")
    with pytest.raises(InputError, match=damaged + "dropped_events is a string"):
        tkw.decode(_rewrite(good, {"dropped_events": "3"}), "w.tkw")


def test_a_workload_file_is_never_written_over_another_users_file(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.tkw"
    theirs.write_bytes(b"their data")
    os.chown(theirs, 65534, 65534)
    with pytest.raises(InputError, match="another user's file"):
        tkw.write(theirs, workload())
    assert theirs.read_bytes() == b"their data"


# --------------------------------------------------------------------------- fio options


def test_percentages_are_whole_and_add_up_to_100() -> None:
    assert fiojobs.percentages([1, 1, 1]) == [34, 33, 33]
    assert fiojobs.percentages([700, 299, 1]) == [70, 30, 0]
    assert sum(fiojobs.percentages([random.random() for _ in range(100)])) == 100


def test_offsets_are_kept_scaled_or_wrapped_aligned_and_inside_the_target() -> None:
    off = np.array([0, 4096, 60 * MIB, 64 * MIB - 8192], dtype=np.uint64)
    size = np.array([4096, 4096, 4096, 8192], dtype=np.uint32)
    src, dst = 64 * MIB, 16 * MIB
    assert fiojobs.map_offsets(off, size, src, dst, "scale", 4096).tolist() == [
        0, 0, 15 * MIB, 16 * MIB - 8192
    ]  # fmt: skip
    wrapped = fiojobs.map_offsets(off, size, src, dst, "wrap", 4096).tolist()
    assert wrapped == [0, 4096, 12 * MIB, 16 * MIB - 8192]
    assert fiojobs.map_offsets(off, size, src, src, "keep", 512).tolist() == off.tolist()
    with pytest.raises(InputError, match="past the target's"):
        fiojobs.map_offsets(off, size, src, dst, "keep", 512)
    odd = np.array([1000], dtype=np.uint64)
    assert fiojobs.map_offsets(odd, size[:1], src, src, "keep", 512).tolist() == [512]


def test_the_streams_kept_cover_the_asked_share_of_the_ios() -> None:
    streams = [
        tkw.Stream("read", 4096 * (i + 1), "rand", 0, 0, s, 0.0)
        for i, s in enumerate([5.0, 60.0, 30.0, 3.0, 2.0])
    ]
    assert [s.bs // 4096 - 1 for s in fiojobs.select_streams(streams, 0.9)] == [1, 2]
    assert [s.bs // 4096 - 1 for s in fiojobs.select_streams(streams, 0.95)] == [1, 2, 0]
    assert len(fiojobs.select_streams(streams, 1.0)) == 5
    with pytest.raises(InputError):
        fiojobs.select_streams(streams, 0)


def test_lba_heat_becomes_random_or_zones_of_whole_percentages() -> None:
    rng = np.random.default_rng(3)
    uniform = np.bincount(rng.integers(0, 100, 20000), minlength=100).tolist()
    assert fiojobs.zoned(uniform) == "random"
    hot = [10] * 100
    hot[20:30] = [360] * 10  # 10 % of the capacity takes 80 % of the accesses
    assert fiojobs.zoned(hot) == "zoned:4/20:80/10:16/70"


def test_the_applied_workload_is_one_job_of_the_main_streams() -> None:
    red = {
        "streams": [
            {
                "rw": "read",
                "bs": 4096,
                "pattern": "rand",
                "ios": 600,
                "share_ios": 60.0,
                "bytes": 0,
                "share_bytes": 0.0,
            },
            {
                "rw": "write",
                "bs": 4096,
                "pattern": "rand",
                "ios": 200,
                "share_ios": 20.0,
                "bytes": 0,
                "share_bytes": 0.0,
            },
            {
                "rw": "read",
                "bs": 65536,
                "pattern": "seq",
                "ios": 100,
                "share_ios": 10.0,
                "bytes": 0,
                "share_bytes": 0.0,
            },
            {
                "rw": "write",
                "bs": 131072,
                "pattern": "seq",
                "ios": 50,
                "share_ios": 5.0,
                "bytes": 0,
                "share_bytes": 0.0,
            },
            {
                "rw": "write",
                "bs": 8192,
                "pattern": "rand",
                "ios": 50,
                "share_ios": 5.0,
                "bytes": 0,
                "share_bytes": 0.0,
            },
        ],
        "heat": [1] * 100,
    }
    w = tkw.Workload({"device": {"capacity_bytes": MIB}, "reduction": red}, mixed_trace(1)[0])
    applied = fiojobs.applied_options(w)  # 90 %: the first three
    assert applied.coverage_pct == 90.0
    assert applied.options == {
        "rw": "randrw",
        "norandommap": True,
        "rwmixread": 78,  # 700 of 900
        "bssplit": "4096/86:65536/14,4096/100",
        "percentage_random": "86,100",
        "random_distribution": "random",
    }
    everything = fiojobs.applied_options(w, 1.0).options
    assert everything["bssplit"] == "4096/86:65536/14,4096/67:8192/17:131072/16"
    assert everything["percentage_random"] == "86,83"
