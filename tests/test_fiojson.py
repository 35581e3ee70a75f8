"""Tests for tkbench.fio.output against real fio outputs (see PROVENANCE.md of the fixtures)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tkbench import proc
from tkbench.errors import FioJobError, FioParseError
from tkbench.fio.combine import combine
from tkbench.fio.output import (
    DirStats,
    FioOutput,
    JobStats,
    LatStats,
    bucket_value,
    check_jobs,
    parse,
    percentile_from_bins,
)
from tkbench.fio.results import host_label, summarize_round
from tkbench.plan.build import Point
from tkbench.profile import Mix

F214 = "fio-2.1.4_multijob_seq-rand-rw_from_GoogleCloudPlatform-PerfKitBenchmarker.json"
F29 = "fio-2.9-3-gf1c4_jsonplus-bins_randrw70_from_msterin-play.json"
F217 = (
    "fio-2.17_randread-randwrite_numjobs2_group-reporting_from_GoogleCloudPlatform-"
    "PerfKitBenchmarker.json"
)
F37 = "fio-3.7_client-server_all-clients_text-prefix_from_distributed-system-analysis-pbench.json"
F316 = "fio-3.16_randrw_numjobs8_group-reporting_fsync_mdraid_from_louwrentius-fio-plot.json"
F319 = "fio-3.19_rw_numjobs8_eight-job-entries_from_distributed-system-analysis-pbench.json"
F333_ERR = "fio-3.33_job-error22_warning-text-prefix_from_louwrentius-fio-plot.json"
F338 = "fio-3.38_seqread_numjobs8_from_intel-lkp-tests.json"
G1 = "fio-3.33_jsonplus-bins_randwrite_file_generated.json"
G2 = "fio-3.33_steadystate-iops-slope_loop_generated.json"
G3 = "fio-3.33_client-server_jsonplus_2jobs_generated.json"
G4 = "fio-3.33_refused-mounted_text-prefix_zero-io_generated.json"
ALL_FIXTURES = [F214, F29, F217, F37, F316, F319, F333_ERR, F338, G1, G2, G3, G4]


FIXTURES = Path(__file__).resolve().parent / "data" / "fio-json"


def fixture_dir() -> Path:
    return FIXTURES


def fixture_text(name: str) -> str:
    path = fixture_dir() / name
    assert path.is_file(), f"fio JSON fixture {path} is missing from the checkout"
    return path.read_bytes().decode("utf-8")  # bytes: keep fio's "\r" as they are


def load(name: str) -> FioOutput:
    return parse(fixture_text(name))


def one_line(message: str) -> bool:
    return "\n" not in message and "\r" not in message


# ------------------------------------------------------------------ every fixture


def test_fixture_directory_exists() -> None:
    directory = fixture_dir()
    assert directory.is_dir(), f"fixture directory {directory} not found"
    present = {p.name for p in directory.glob("*.json")}
    assert set(ALL_FIXTURES) <= present


def test_fixtures_are_byte_for_byte_as_provenance_says() -> None:
    """Each upstream fixture's sha256 is the one PROVENANCE.md records."""
    text = (fixture_dir() / "PROVENANCE.md").read_text(encoding="utf-8")
    recorded = dict(
        re.findall(r"^## \d+\. (\S+\.json)\n(?:.*\n)*?.*sha256 `([0-9a-f]{64})`", text, re.M)
    )
    assert len(recorded) >= 8
    for name, digest in recorded.items():
        assert hashlib.sha256((fixture_dir() / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_fixture_parses(name: str) -> None:
    out = load(name)
    assert out.fio_version.startswith("fio-")
    assert out.jobs
    assert out.trailer == ""
    for job in out.jobs:
        for d in job.directions.values():
            assert d.io_bytes >= 0
            assert all(p > 0 for p in d.percentiles)
            assert all(v >= 0 for v in d.percentiles.values())
            if d.bins:
                assert all(c > 0 for c in d.bins.values())


def test_any_other_fixture_in_directory_parses() -> None:
    for path in sorted(fixture_dir().glob("*.json")):
        assert parse(path.read_bytes().decode("utf-8")).jobs, path.name


# ------------------------------------------------------------------ fio 2.x


def test_fio_2_1_4_units_converted() -> None:
    out = load(F214)
    assert out.fio_version == "fio-2.1.4"
    assert [j.name for j in out.jobs] == [
        "sequential_write",
        "sequential_read",
        "random_write_test",
        "random_read_test",
        "random_read_test_parallel",
    ]
    assert out.timestamp is None and out.global_options == {} and out.preamble == ""
    assert len(out.disk_util) == 1
    w = out.jobs[0].write
    assert w.io_bytes == 361984 * 1024  # KiB in 2.x
    assert w.total_ios is None
    assert w.iops == 133.0
    assert w.runtime_ms == 5314.0
    assert w.bw_bytes == pytest.approx(361984 * 1024 * 1000 / 5314)
    assert w.bw_bytes == pytest.approx(68118 * 1024, rel=1e-3)  # "bw" is KiB/s
    assert w.clat.mean == pytest.approx(477734.84 * 1000)  # usec -> ns
    assert w.clat.min == 189263 * 1000
    assert w.clat.samples is None
    assert len(w.percentiles) == 17  # the "0.00" filler is dropped
    assert w.percentiles[99.99] == 872448 * 1000
    assert w.percentiles[1.0] == 387072 * 1000
    # a direction without I/O: fio 2.x printed an all-zero list, we keep none
    assert out.jobs[0].read.percentiles == {}
    assert not out.jobs[0].read.did_io
    check_jobs(out)


def test_fio_2_17_group_reporting() -> None:
    out = load(F217)
    assert out.timestamp_ms == 1506559552257
    assert out.global_options["group_reporting"] == "1"
    assert out.global_options["filename"] == "/dev/disk/by-id/google-pkb-7fb0c9d8-0-data-0-0"
    read = out.jobs[0].read
    assert read.io_bytes == 1294256 * 1024
    assert read.total_ios == 80891
    assert read.io_bytes == read.total_ios * 16 * 1024  # bs=16k: KiB conversion is right
    assert read.iops == pytest.approx(8086.673998)
    assert read.percentiles[50.0] == 96000.0
    assert out.jobs[1].write.clat.mean == pytest.approx(800193.694)


def test_fio_2_9_jsonplus_bins_by_index() -> None:
    out = load(F29)
    job = out.jobs[0]
    assert job.name == "job 1" and job.elapsed_s == 901.0
    assert out.global_options["rw"] == "randrw"
    read, write = job.read, job.write
    assert read.total_ios == 5788311
    assert read.io_bytes == 23153244 * 1024 == read.total_ios * 4096
    # 1216 index buckets (zeros included) -> 525 non-empty ones keyed by ns
    assert len(read.bins) == 525
    assert sum(read.bins.values()) == read.total_ios
    assert sum(write.bins.values()) == write.total_ios == 2480077
    # bucket 147 (167 usec, midpoint of [166, 168)) holds the fastest read
    assert min(read.bins) == 167_000 and read.bins[167_000] == 1
    assert read.clat.min == 167_000
    # fio's own percentiles come out of these very bins
    for pct, value in read.percentiles.items():
        assert percentile_from_bins(read.bins, pct) == value
    for pct, value in write.percentiles.items():
        assert percentile_from_bins(write.bins, pct) == value
    assert read.percentiles[99.99] == 9_408_000.0
    assert job.trim.bins == {}


# ------------------------------------------------------------------ fio 3.x


def test_fio_3_16_merged_entry() -> None:
    out = load(F316)
    job = out.jobs[0]
    assert job.job_runtime_ms == 480910.0
    assert job.options["numjobs"] == "8" and job.options["fsync"] == "10000"
    assert out.global_options == {}
    assert job.read.iops == pytest.approx(317.511513)
    assert job.read.bw_bytes == 1300527.0
    assert job.read.clat.samples is None  # no "N" before 3.19
    assert job.read.percentiles[50.0] == 47972352.0
    assert job.trim.percentiles == {}  # all-zero list of an idle direction
    assert len(out.disk_util) == 9


def test_fio_3_19_eight_entries_same_name() -> None:
    out = load(F319)
    assert len(out.jobs) == 8
    assert {j.name for j in out.jobs} == {"job-/dev/nvme8n1"}
    first = out.jobs[0].read
    assert first.io_bytes == 34249953280
    assert first.clat.samples == 8361805
    assert first.runtime_ms == 86400289.0


def test_fio_3_38_job_start() -> None:
    out = load(F338)
    job = out.jobs[0]
    assert job.job_start_ms == 1741879865455
    assert job.job_runtime_ms == 480026.0
    assert job.read.io_bytes == 207205302272
    assert job.read.clat.samples == 1580851
    assert job.read.percentiles[99.0] == 5144576.0
    assert out.global_options["ramp_time"] == "5"


def test_g1_jsonplus_bins_by_ns() -> None:
    out = load(G1)
    write = out.jobs[0].write
    assert write.total_ios == 368925
    assert len(write.bins) == 380
    assert sum(write.bins.values()) == 368925
    assert min(write.bins) == 964  # bucket value, just below clat min 965
    assert write.clat.min == 965.0
    assert write.percentiles[99.0] == 444416.0
    for pct, value in write.percentiles.items():
        assert percentile_from_bins(write.bins, pct) == value
    assert out.jobs[0].read.bins == {} and out.jobs[0].read.percentiles == {}


def test_g2_steadystate_kept_in_raw() -> None:
    job = load(G2).jobs[0]
    assert job.raw["steadystate"]["attained"] == 1
    assert job.elapsed_s == 18.0
    assert job.write.iops == pytest.approx(178246.774766)


# ------------------------------------------------------------------ client/server


def test_fio_3_7_client_server_with_text_prefix() -> None:
    text = fixture_text(F37)
    assert "\r" in text[:1670]
    out = parse(text)
    assert out.client_server
    assert len(out.jobs) == 10
    assert out.aggregate is not None and out.aggregate.name == "All clients"
    assert [j.hostname for j in out.jobs] == ["perf36"] * 5 + ["perf84"] * 5
    assert {j.port for j in out.jobs} == {8765}
    assert out.preamble.startswith("hostname=perf84, be=0, 64-bit")
    assert "Disk stats (read/write):" in out.preamble
    assert "\r" in out.preamble
    assert out.timestamp_ms is None
    assert out.jobs[0].job_runtime_ms is None
    merged = combine(out.jobs, "all")
    assert merged.read.io_bytes == out.aggregate.read.io_bytes == 5740351488
    assert merged.read.total_ios == out.aggregate.read.total_ios == 1401141
    assert merged.read.clat.min == out.aggregate.read.clat.min
    assert merged.read.clat.max == out.aggregate.read.clat.max
    assert merged.read.clat.mean == pytest.approx(out.aggregate.read.clat.mean, rel=1e-4)
    check_jobs(out)


def test_g3_combine_reproduces_fio_all_clients() -> None:
    out = parse(fixture_text(G3))
    assert out.client_server and [j.name for j in out.jobs] == ["j1", "j2"]
    agg = out.aggregate
    assert agg is not None and agg.write.bins == {}
    merged = combine(out.jobs, "All clients")
    w, a = merged.write, agg.write
    assert w.io_bytes == a.io_bytes == 9766440960
    assert w.total_ios == a.total_ios == 2384385
    assert w.iops == pytest.approx(a.iops)
    assert w.runtime_ms == a.runtime_ms == 12001.0
    assert merged.job_runtime_ms == agg.job_runtime_ms == 24000.0
    assert merged.hostname == "127.0.0.1" and merged.port == 8765
    for kind in ("slat", "clat", "lat"):
        mine, fios = getattr(w, kind), getattr(a, kind)
        assert mine.samples == fios.samples
        assert (mine.min, mine.max) == (fios.min, fios.max)
        assert mine.mean == pytest.approx(fios.mean, rel=1e-9)
        assert mine.stddev == pytest.approx(fios.stddev, rel=1e-8)
    # merged histogram, and percentiles recomputed from it
    assert sum(w.bins.values()) == 2384385
    j1, j2 = out.jobs[0].write, out.jobs[1].write
    for pct, value in w.percentiles.items():
        assert value == percentile_from_bins(w.bins, pct)
        assert min(j1.percentiles[pct], j2.percentiles[pct]) <= value
        assert value <= max(j1.percentiles[pct], j2.percentiles[pct])
    assert w.percentiles[99.0] == 518144.0


# ------------------------------------------------------------------ check_jobs


def test_error_22_detected() -> None:
    out = load(F333_ERR)
    job = out.jobs[0]
    assert job.error == 22 and job.elapsed_s == 0.0
    assert job.options["size"] == "100%%"
    assert job.write.percentiles == {}  # no "percentile" key without I/O
    assert out.preamble.splitlines()[0] == "fio: time_based requires a runtime/timeout setting"
    with pytest.raises(FioJobError) as err:
        check_jobs(out)
    msg = str(err.value)
    assert msg.startswith("job '1m' failed with error 22 (Invalid argument)")
    assert "err=22/file:filesetup.c:1155" in msg
    assert one_line(msg)
    with pytest.raises(FioJobError):
        check_jobs(out, expect_io=False)  # an error is an error


def test_g4_zero_io_with_exit_0_detected() -> None:
    out = load(G4)
    job = out.jobs[0]
    assert job.error == 0 and job.job_runtime_ms == 0.0 and not job.did_io
    with pytest.raises(FioJobError) as err:
        check_jobs(out)
    msg = str(err.value)
    assert msg.startswith("job 'x' did no I/O")
    assert "fio: /dev/loop1 appears mounted, and 'allow_mounted_write' isn't set." in msg
    assert one_line(msg)
    check_jobs(out, expect_io=False)


def test_check_jobs_names_host_and_counts_others() -> None:
    idle = JobStats(name="a", hostname="h1")
    out = FioOutput(fio_version="fio-3.33", jobs=[idle, JobStats(name="b"), JobStats(name="c")])
    with pytest.raises(FioJobError, match=r"^job 'a' on h1 did no I/O .*\(and 2 more jobs\)$"):
        check_jobs(out)
    with pytest.raises(FioJobError, match="no jobs"):
        check_jobs(FioOutput(fio_version="fio-3.33", jobs=[]))


# ------------------------------------------------------------------ robustness


def test_progress_prefix_with_carriage_returns() -> None:
    progress = "".join(f"Jobs: 1 (f=1): [w(1)][{p}.0%][eta 00m:0{9 - p}s]\r" for p in range(9))
    out = parse(progress + "\n" + fixture_text(G1))
    assert out.jobs[0].write.total_ios == 368925
    assert out.preamble == progress.strip()


def test_concatenated_documents_take_the_last() -> None:
    first, second = fixture_text(G1), fixture_text(G2)
    out = parse("fio: warning\n" + first + "Jobs: 1 (f=1)\r" + second)
    assert out.timestamp_ms == 1795318971641  # G2's
    assert out.jobs[0].name == "ss"
    assert out.preamble == "fio: warning\nJobs: 1 (f=1)"  # earlier documents are not text


def test_truncated_last_document_falls_back_to_complete_one() -> None:
    first, second = fixture_text(G1), fixture_text(G2)
    out = parse(first + second[: len(second) // 2])
    assert out.jobs[0].name == "file_rw"
    assert out.trailer.startswith('{\n  "fio version" : "fio-3.33"')


@pytest.mark.parametrize("keep", [1, 100, 3000, -3])
def test_truncated_json_is_a_parse_error(keep: int) -> None:
    text = fixture_text(G4)
    start = text.index("{")
    cut = text[: start + keep] if keep > 0 else text[: len(text.rstrip()) + keep]
    with pytest.raises(FioParseError, match="truncated or malformed") as err:
        parse(cut)
    assert one_line(str(err.value))


@pytest.mark.parametrize("text", ["", "  \n\r\n"])
def test_empty_output_is_a_parse_error(text: str) -> None:
    with pytest.raises(FioParseError, match="no output"):
        parse(text)


def test_text_without_json_is_a_parse_error_with_excerpt() -> None:
    text = "fio: engine libaio not loadable\nfio: failed to load engine\n"
    with pytest.raises(FioParseError, match="no JSON document") as err:
        parse(text)
    assert "failed to load engine" in str(err.value)
    assert one_line(str(err.value))


def test_json_that_is_not_fio_results() -> None:
    with pytest.raises(FioParseError, match="no fio results document"):
        parse('{"hello": [1, 2]}')


def test_pathological_nesting_does_not_escape() -> None:
    with pytest.raises(FioParseError):
        parse('{"a": ' * 3000)


def test_bad_field_type_is_a_parse_error() -> None:
    doc = {"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"iops": "fast"}}]}
    with pytest.raises(FioParseError, match=r"job 'x' read\.iops is not a number"):
        parse(json.dumps(doc))


def test_unified_rw_reporting_mixed_direction() -> None:
    doc = json.loads(fixture_text(G1))
    job = doc["jobs"][0]
    job["mixed"] = job.pop("write")
    del job["read"], job["trim"]
    out = parse(json.dumps(doc))
    assert out.jobs[0].mixed.total_ios == 368925
    check_jobs(out)


# ------------------------------------------------------------------ histogram maths


def _reference_index(value: int, bits: int = 6) -> int:
    """Bucket index of ``value``, written independently of fiojson for cross-checking."""
    if value < (2 << bits):
        return value
    top = value.bit_length() - 1
    dropped = top - bits
    return (dropped + 1) * (1 << bits) + ((value >> dropped) - (1 << bits))


def test_bucket_value_inverts_bucket_index() -> None:
    assert [bucket_value(i) for i in (0, 1, 127)] == [0, 1, 127]
    assert bucket_value(128) == 129  # [128, 130): width 2
    assert bucket_value(147) == 167
    assert bucket_value(1215) == (1 << 23) + 127 * (1 << 16)  # last fio 2.x bucket
    for value in (0, 5, 127, 128, 129, 1000, 965, 123_456, 10**9, 2**33 + 12345):
        index = _reference_index(value)
        width = 1 if index < 128 else 1 << ((index >> 6) - 1)
        assert abs(bucket_value(index) - value) <= width / 2
        assert _reference_index(bucket_value(index)) == index


def test_percentile_from_bins_definition() -> None:
    bins = {100: 50, 200: 40, 300: 10}
    assert percentile_from_bins(bins, 50.0) == 100.0  # 50 of 100 samples at or below 100
    assert percentile_from_bins(bins, 50.01) == 200.0
    assert percentile_from_bins(bins, 90.0) == 200.0
    assert percentile_from_bins(bins, 99.99) == 300.0
    assert percentile_from_bins(bins, 100.0) == 300.0
    with pytest.raises(ValueError):
        percentile_from_bins({}, 50.0)
    with pytest.raises(ValueError):
        percentile_from_bins(bins, 101.0)


# ------------------------------------------------------------------ combine rules


def _dir(n: int, mean: float, sd: float, lo: float, hi: float) -> DirStats:
    lat = LatStats(mean=mean, min=lo, max=hi, stddev=sd, samples=n)
    return DirStats(io_bytes=4096 * n, total_ios=n, iops=n / 10, clat=lat, lat=lat)


def test_combine_pools_variance_exactly() -> None:
    a = [1.0, 2.0, 3.0, 4.0]
    b = [10.0, 20.0]

    def stats(xs: list[float]) -> tuple[float, float]:
        m = sum(xs) / len(xs)
        return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))

    (ma, sa), (mb, sb), (mall, sall) = stats(a), stats(b), stats(a + b)
    ja = JobStats(name="a", read=_dir(4, ma, sa, 1, 4), job_runtime_ms=100.0, error=0)
    jb = JobStats(name="b", read=_dir(2, mb, sb, 10, 20), job_runtime_ms=50.0, error=5)
    merged = combine([ja, jb], "ab")
    assert merged.name == "ab" and merged.error == 5
    assert merged.job_runtime_ms == 150.0
    r = merged.read
    assert r.total_ios == 6 and r.io_bytes == 6 * 4096 and r.iops == pytest.approx(0.6)
    assert r.clat.mean == pytest.approx(mall)
    assert r.clat.stddev == pytest.approx(sall)
    assert (r.clat.min, r.clat.max, r.clat.samples) == (1, 20, 6)


def test_combine_weights_by_io_bytes_without_counts() -> None:
    lat1 = LatStats(mean=100.0, min=50.0, max=150.0, stddev=0.0)
    lat2 = LatStats(mean=400.0, min=300.0, max=500.0, stddev=0.0)
    d1 = DirStats(io_bytes=3000, clat=lat1)
    d2 = DirStats(io_bytes=1000, clat=lat2)
    merged = combine([JobStats("a", write=d1), JobStats("b", write=d2)], "ab").write
    assert merged.clat.mean == pytest.approx(175.0)
    assert merged.clat.stddev == pytest.approx(math.sqrt(0.75 * 75**2 + 0.25 * 225**2))
    assert merged.total_ios is None


def test_combine_percentiles_without_bins_is_max() -> None:
    out = load(F319)
    merged = combine(out.jobs, "nvme8n1")
    for pct in merged.read.percentiles:
        assert merged.read.percentiles[pct] == max(j.read.percentiles[pct] for j in out.jobs)
    assert merged.read.percentiles[99.99] == 5603590144.0
    assert merged.read.bins == {}
    assert merged.read.io_bytes == sum(j.read.io_bytes for j in out.jobs)
    assert merged.read.clat.samples == sum(j.read.clat.samples or 0 for j in out.jobs)


def test_combine_single_and_idle_entries() -> None:
    busy = load(F316).jobs[0]
    idle = JobStats(name="idle")
    merged = combine([busy, idle], "both")
    assert merged.read.percentiles == busy.read.percentiles
    assert merged.read.clat.mean == pytest.approx(busy.read.clat.mean)
    assert merged.read.clat.min == busy.read.clat.min  # idle zeros do not count as a min
    assert combine([busy], "x").read.percentiles == busy.read.percentiles
    with pytest.raises(ValueError):
        combine([], "none")


# ------------------------------------------------------------------ real fio


@pytest.fixture
def fio_binary() -> str:
    # the fio marker fails these tests (never skips them) when fio is missing
    return shutil.which("fio") or "fio"


@pytest.mark.fio
def test_real_fio_jsonplus(fio_binary: str, tmp_path: Path) -> None:
    argv = [
        fio_binary,
        "--name=t",
        f"--filename={tmp_path / 'f'}",
        "--size=4M",
        "--rw=randrw",
        "--bs=4k",
        "--runtime=300ms",
        "--time_based",
        "--numjobs=2",
        "--ioengine=psync",
        "--output-format=json+",
    ]
    out = parse(proc.run(argv, timeout=60).stdout)
    check_jobs(out)
    assert len(out.jobs) == 2
    for job in out.jobs:
        for d in (job.read, job.write):
            assert d.total_ios and sum(d.bins.values()) == d.total_ios == d.clat.samples
            for pct, value in d.percentiles.items():
                assert _same_bucket(percentile_from_bins(d.bins, pct), value)
    merged = combine(out.jobs, "t")
    for name in ("read", "write"):
        m = getattr(merged, name)
        parts = [getattr(j, name) for j in out.jobs]
        assert sum(m.bins.values()) == sum(p.total_ios or 0 for p in parts)
        assert m.clat.min == min(p.clat.min for p in parts)
        for pct, value in m.percentiles.items():
            low = min(p.percentiles[pct] for p in parts)
            high = max(p.percentiles[pct] for p in parts)
            assert _same_bucket(low, value) or low <= value
            assert _same_bucket(high, value) or value <= high


def _same_bucket(a: float, b: float) -> bool:
    """Equal, or neighbouring histogram buckets (fio rounds in extended precision)."""
    return abs(_reference_index(int(a)) - _reference_index(int(b))) <= 1


@pytest.mark.fio
def test_real_fio_status_interval_documents(fio_binary: str, tmp_path: Path) -> None:
    argv = [
        fio_binary,
        "--name=s",
        f"--filename={tmp_path / 'f'}",
        "--size=4M",
        "--rw=randwrite",
        "--bs=4k",
        "--runtime=1200ms",
        "--time_based",
        "--ioengine=psync",
        "--status-interval=400ms",
        "--output-format=json",
    ]
    text = proc.run(argv, timeout=60).stdout
    assert text.count('"fio version"') >= 2
    out = parse(text)
    decoder = json.JSONDecoder()
    ends, pos = [], 0
    while (start := text.find("{", pos)) >= 0:  # here fio printed nothing but documents
        doc, pos = decoder.raw_decode(text, start)
        ends.append(doc["jobs"][0]["write"]["total_ios"])
    assert out.jobs[0].write.total_ios == ends[-1] == max(ends)
    check_jobs(out)


def test_f37_per_host_results_of_two_hosts_five_jobs_each() -> None:
    """pbench's real two-host output (perf36 and perf84, five job entries each): the
    point is all hosts together, each host's five entries are combined into its share."""
    out = parse(fixture_text(F37))
    point = Point(index=1, bs=4096, mix=Mix(100), pattern="random", numjobs=5, iodepth=1,
                  runtime=60.0)  # fmt: skip
    named = replace(out, jobs=[replace(j, name=point.job_name) for j in out.jobs])
    (p,) = summarize_round([point], named)
    assert [h.host for h in p.hosts] == ["perf36,8765", "perf84,8765"]
    for h, host in zip(p.hosts, ("perf36", "perf84"), strict=True):
        mine = [j for j in out.jobs if j.hostname == host]
        assert h.read.total_ios == sum(j.read.total_ios or 0 for j in mine)
        assert h.iops == pytest.approx(sum(j.read.iops for j in mine))
    assert p.iops == pytest.approx(p.hosts[0].iops + p.hosts[1].iops)
    assert out.aggregate is not None
    assert p.read.total_ios == out.aggregate.read.total_ios
    # a local run's output keeps no hosts
    local = parse(fixture_text(G1))
    named = replace(local, jobs=[replace(local.jobs[0], name=point.job_name)])
    assert summarize_round([point], named)[0].hosts == ()


def test_host_labels_in_fios_client_form() -> None:
    job = JobStats(name="j", hostname="10.1.1.2", port=8765)
    assert host_label(job) == "10.1.1.2,8765"
    assert host_label(replace(job, hostname="/run/fio.sock")) == "sock:/run/fio.sock"
    assert host_label(replace(job, hostname="fd00::2", port=9000)) == "ip6:fd00::2,9000"


def test_the_cpu_fio_used_is_read_with_the_job() -> None:
    """usr_cpu + sys_cpu is a field of the parsed job (the round's cpu_pct), not a key
    the summary looks up in the raw entry; a value that is no number counts as 0."""
    out = load("fio-3.33_jsonplus-bins_randwrite_file_generated.json")
    (job,) = out.jobs
    assert job.cpu_pct == round(7.86 + 42.24, 3)
    text = json.dumps({"jobs": [{"jobname": "x", "usr_cpu": "busy", "sys_cpu": 1.5}]})
    assert parse(text).jobs[0].cpu_pct == 0.0
