"""The report's pure parts: formatting, window means, steady-state windows, histograms,
status of partial runs, options, and the HTML of odd runs (no PDF needed)."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest

import tkbench.analysis as core
from tkbench.analysis.window import merge_bins
from tkbench.errors import InputError
from tkbench.report import analysis, fmt, header, options, procedure, render, tables
from tkbench.report import rounds as round_parts
from tkbench.report.model import COMPLETE, FAILED, INCOMPLETE, INTERRUPTED
from tkbench.rundir import store
from tkbench.rundir.records import (
    Direction,
    Manifest,
    PlannedPoint,
    PointResult,
    Purge,
    Round,
    TestPlan,
)
from tkbench.rundir.store import RunData

# --------------------------------------------------------------------------- records

HERE = Path("test-data")  # the "file" the records below are read from


def typed(cls: Any, data: dict[str, Any]) -> Any:
    """A record as tkbench reads it from its JSON (``data``), checks included."""
    return cls.load(data, HERE)


def direction(
    iops: float, bs: int, lat_ms: float, pct: dict[str, float] | None = None
) -> dict[str, Any]:
    if iops == 0:
        return {
            "io_bytes": 0,
            "iops": 0.0,
            "bw_bytes": 0.0,
            "lat_mean_ns": 0.0,
            "lat_max_ns": 0.0,
            "percentiles_ns": {},
        }
    return {
        "io_bytes": int(iops * bs),
        "total_ios": int(iops),
        "iops": iops,
        "bw_bytes": iops * bs,
        "lat_mean_ns": lat_ms * 1e6,
        "lat_max_ns": lat_ms * 1e7,
        "percentiles_ns": {k: v * 1e6 for k, v in (pct or {}).items()},
    }


def point(bs: int, read_pct: int, iops: float, lat_ms: float = 1.0) -> dict[str, Any]:
    f = read_pct / 100
    r = direction(iops * f, bs, lat_ms, {"99.99": lat_ms * 5})
    w = direction(iops * (1 - f), bs, lat_ms * 2, {"99.99": lat_ms * 9})
    return {
        "bs": bs,
        "read_pct": read_pct,
        "iops": iops,
        "bw_bytes": iops * bs,
        "lat_mean_ns": lat_ms * 1e6,
        "lat_max_ns": lat_ms * 1e7,
        "read": r,
        "write": w,
    }


def record(n: int, iops: dict[tuple[int, int], float], segment: int = 1) -> Round:
    pts = [point(bs, rp, v) for (bs, rp), v in iops.items()]
    return typed(
        Round,
        {
            "round": n,
            "segment": segment,
            "started": 1_700_000_000.0 + 100 * n,
            "ended": 1_700_000_000.0 + 100 * n + 60,
            "points": pts,
            "tracking": {"iops 4k 0/100": iops[(4096, 0)]},
            "written_bytes": 1_000_000,
            "total_written_bytes": 1_000_000 * n,
        },
    )


def plan(kind: str = "steady", window: int = 3, max_rounds: int = 10) -> TestPlan:
    pts = [
        {"bs": bs, "read_pct": rp, "runtime": 1.0, "pattern": "random"}
        for bs in (65536, 4096)
        for rp in (100, 0)
    ]
    return typed(
        TestPlan,
        {
            "name": "iops",
            "title": "IOPS",
            "kind": kind,
            "purge": True,
            "precondition": {"total_bytes": 2_000_000, "bs": 131072, "numjobs": 1, "iodepth": 1},
            "points": pts,
            "tracking": ["iops 4k 0/100"],
            "active_bytes": 1_000_000,
            "active_range": 100,
            "workload": {
                "numjobs": 2,
                "iodepth": 8,
                "data_pattern": "random",
                "direct": True,
                "ioengine": "auto",
            },
            "rounds": {
                "max": max_rounds,
                "window": window,
                "max_excursion": 0.2,
                "max_slope_excursion": 0.1,
            },
            "percentiles": [99.99],
            "histogram": False,
            "notes": [],
        },
    )


def rounds_of(values: list[float], segments: list[int] | None = None) -> list[Round]:
    segments = segments or [1] * len(values)
    return [
        record(
            n,
            {(65536, 100): 1000.0, (65536, 0): 500.0, (4096, 100): 9000.0, (4096, 0): v},
            segment=s,
        )
        for n, (v, s) in enumerate(zip(values, segments, strict=True), 1)
    ]


def manifest(status: str = "complete", **extra: Any) -> Manifest:
    return Manifest.load_checked(manifest_json(status, **extra), HERE)


def manifest_json(status: str = "complete", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "tkbench-run",
        "schema": 1,
        "status": status,
        "started": 1_700_000_000.0,
        "ended": 1_700_003_600.0,
        "tests": ["iops", "wsat"],
        "profile": {
            "name": "p",
            "source": "/profiles/p.toml",
            "resolved": {"report": {"title": "From profile", "logo": "logo.png"}},
        },
        "target": {
            "spec": "/dev/x",
            "kind": "block",
            "capacity_bytes": 10**12,
            "identity": {"model": "M", "serial": "S", "firmware": "F"},
        },
        **extra,
    }


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (81978.4, "81,978"),
        (1701.6, "1,702"),
        (712.43, "712.4"),
        (0.0674419, "0.06744"),
        (999.96, "1,000"),
        (0.0, "0"),
        (None, "–"),
        (math.nan, "–"),
        (math.inf, "–"),
    ],
)
def test_sig(value: float | None, text: str) -> None:
    assert fmt.sig(value) == text


def test_other_formats() -> None:
    assert fmt.rounds([21, 22, 23, 24, 25]) == "21–25"
    assert fmt.rounds([3, 5]) == "3, 5"
    assert fmt.duration(60.0) == "60 s"
    assert fmt.size(25_276_502_016) == "23.54 GiB"
    assert fmt.size(131072) == "128 KiB"
    assert fmt.when(0) == "–"
    assert fmt.when(1_740_988_800) == "2025-03-03 08:00:00 UTC"
    assert fmt.capacity(10**12).startswith("1,000 GB (931.3 GiB")


# --------------------------------------------------------------------------- windows


def test_window_means_and_directions() -> None:
    recs = rounds_of([100.0, 200.0, 300.0])
    means = core.point_means(recs)
    pm = means[(4096, 0)]
    assert pm.iops == pytest.approx(200.0)
    assert pm.rounds == 3
    assert set(pm.directions) == {"write"}  # no reads in a 0/100 point
    # percentiles are never averaged over rounds: without histograms the largest
    # per-round value, and only with enough I/Os behind it
    write = pm.directions["write"]
    assert write.percentile_basis == "largest per-round value"
    ios = write.samples
    for key in ("99", "99.9", "99.99"):
        if ios >= core.samples_needed(float(key)):
            per_round = [r.points[3].write.percentiles_ns[key] / 1e6 for r in recs]
            assert write.percentiles_ms[key] == pytest.approx(max(per_round))
        else:
            assert key not in write.percentiles_ms
    assert means[(4096, 100)].bw_mbs == pytest.approx(9000 * 4096 / 1e6)


def test_pooled_percentiles_come_from_the_merged_histogram() -> None:
    # two rounds: 60,000 I/Os at 1 ms and 60,000 at 2 ms, then one slow outlier set
    r1 = Direction(io_bytes=1, total_ios=60_000, bins_ns={"1000000": 60_000})
    r2 = Direction(io_bytes=1, total_ios=60_020, bins_ns={"2000000": 60_000, "9000000": 20})
    pct, count, basis = core.pooled_percentiles([r1, r2], ["40", "99", "99.99", "99.999"])
    assert (count, basis) == (120_020, "histogram")
    assert pct["40"] == 1_000_000
    assert pct["99"] == 2_000_000
    assert pct["99.99"] == 9_000_000  # the 20 outliers are the top 0.017 %
    assert "99.999" not in pct  # needs 1,000,000 I/Os


def test_window_is_the_steady_rounds_or_the_last_rounds_of_the_last_segment() -> None:
    steady = store.TestData("iops", plan(window=3), rounds=rounds_of([500.0, 100.0, 101.0, 102.0]))
    assert core.window(steady) == (2, 3, 4)
    resumed = rounds_of([100.0, 100.0, 100.0, 100.0, 90.0], segments=[1, 1, 1, 2, 2])
    window = core.window(store.TestData("iops", plan(window=3), rounds=resumed))
    assert window == (4, 5)
    assert [r.round for r in core.window_records(resumed, window)] == [4, 5]
    fixed = store.TestData("f", plan(kind="fixed"), rounds=steady.rounds)
    assert core.window(fixed) == (1, 2, 3, 4)


def test_histogram_rebinning_keeps_every_io() -> None:
    bins = merge_bins(
        [
            Direction(bins_ns={"10000": 5, "20000": 7}),
            Direction(bins_ns={"10000": 1, "5000000": 2}),
        ]
    )
    assert bins == {10000: 6, 20000: 7, 5000000: 2}
    edges, counts = tables.log_histogram(bins)
    assert sum(counts) == 15
    assert len(edges) == len(counts) + 1
    assert all(b > a for a, b in itertools.pairwise(edges))
    assert edges[0] <= 0.01 <= edges[-1] and edges[0] <= 5.0 <= edges[-1]


# --------------------------------------------------------------------------- verification figure


def _determination(values: list[float]) -> Any:
    run = RunData(
        Path("/r"), manifest(), [store.TestData("iops", plan(), rounds=rounds_of(values))]
    )
    rep = analysis.analyze(run, options.resolve_options(run.manifest), 0.0)
    (t,) = rep.tests
    (d,) = t.determinations
    return rep, d


@pytest.mark.parametrize(
    "values",
    [
        [5000.0, 1000.0, 1050.0, 980.0],  # steady
        [5000.0, 1000.0, 1300.0, 900.0],  # data excursion too large, no trend
        [5000.0, 1000.0, 1080.0, 1160.0],  # values within 16 %, but a rising line
        [5000.0, 1000.0, 1050.0, 1300.0],  # both
    ],
)
def test_verification_figure_draws_the_criteria_as_they_are(values: list[float]) -> None:
    from tkbench.report import figures

    rep, d = _determination(values)
    lines = figures.verification_lines(d)
    lo, hi = lines.band
    # the band is as wide as the allowed data excursion (20 % of the mean), centred
    # on the values: every value lies in it exactly when max - min is within 20 %
    assert hi - lo == pytest.approx(0.2 * d.mean)
    assert (lo + hi) / 2 == pytest.approx((max(d.values) + min(d.values)) / 2)
    assert all(lo <= v <= hi for v in d.values) == d.excursion_ok
    # the dashed lines are the steepest least-squares lines allowed: the fitted line
    # is no steeper exactly when the slope criterion holds
    (fx0, fy0), (fx1, fy1) = lines.fit
    rising, falling = lines.steepest
    allowed = (rising[1][1] - rising[0][1]) / (rising[1][0] - rising[0][0])
    assert allowed == pytest.approx(0.1 * d.mean / (len(d.rounds) - 1))
    assert falling[0][1] - falling[1][1] == pytest.approx(rising[1][1] - rising[0][1])
    assert (abs(fy1 - fy0) / (fx1 - fx0) <= allowed + 1e-9) == d.slope_ok
    # the caption and the legend say what the lines are; nothing reads as "±20 %"
    caption = figures.verification_caption(d)
    assert "20 % of the mean" in caption and "max − min" in caption
    assert "10 % of the mean" in caption and "steepest" in caption
    svg = figures.verification(d, "v-")
    assert svg is not None and "allowed data excursion: 20 % of the mean wide" in svg
    for text in (caption, svg):
        assert "120 %" not in text and "80 %" not in text and "90 %" not in text
    assert caption in render.build_document(rep).html


def test_verification_criteria_cover_both_ways_of_failing() -> None:
    """The four cases above really are steady, excursion-only, slope-only and both."""
    verdicts = [
        (d.excursion_ok, d.slope_ok)
        for d in (
            _determination(v)[1]
            for v in (
                [5000.0, 1000.0, 1050.0, 980.0],
                [5000.0, 1000.0, 1300.0, 900.0],
                [5000.0, 1000.0, 1080.0, 1160.0],
                [5000.0, 1000.0, 1050.0, 1300.0],
            )
        )
    ]
    assert verdicts == [(True, True), (False, True), (True, False), (False, False)]


# --------------------------------------------------------------------------- percentiles in words

# "arithmetic mean(s)", "mean(s) of", "average(d/s)", "averaging", unless "never"/"not" precede
_AVERAGED = re.compile(
    r"(?<!never )(?<!not )\b(arithmetic means?|means? of|averag(e|ed|es|ing))\b", re.IGNORECASE
)


def _percentile_sentences(text: str) -> list[str]:
    plain = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))
    return [s for s in re.split(r"(?<=[.;:])\s", plain) if "percentile" in s.lower()]


def test_the_methods_chapter_says_percentiles_are_pooled_not_averaged() -> None:
    rep, _ = _determination([5000.0, 1000.0, 1050.0, 980.0])
    html = render.build_document(rep).html
    methods = html[html.index('<section class="chapter" id="methods">') :]
    methods = methods[: methods.index("</section>")]
    said = _percentile_sentences(methods)
    # what window.pooled_percentiles does: merged histograms, else the largest value
    assert any("never averaged" in s for s in said), said
    assert any("histograms are added up" in s for s in said), said
    assert "largest of the per-round values is shown, an upper bound" in " ".join(methods.split())
    for sentence in said:
        assert not _AVERAGED.search(sentence), sentence
    # and docs/report.md, which tells the same to readers of the documentation
    doc = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text()
    for sentence in _percentile_sentences(doc):
        assert not _AVERAGED.search(sentence), sentence


# --------------------------------------------------------------------------- status and text


def test_test_status_of_partial_runs() -> None:
    t = store.TestData("iops", plan(), rounds=rounds_of([1.0, 2.0]))
    assert analysis.test_status(t, "failed", "fio died")[0] == FAILED
    assert "fio died" in analysis.test_status(t, "failed", "fio died")[1]
    assert analysis.test_status(t, "interrupted", "")[0] == INTERRUPTED
    assert analysis.test_status(t, "running", "")[0] == INCOMPLETE
    t.result = {"status": "complete"}
    assert analysis.test_status(t, "failed", "x")[0] == COMPLETE


def test_not_steady_test_keeps_its_numbers_and_says_so() -> None:
    ramp = [1000.0 * (1 + 0.2 * i) for i in range(10)]
    run = RunData(Path("/r"), manifest(), [store.TestData("iops", plan(), rounds=rounds_of(ramp))])
    rep = analysis.analyze(run, options.resolve_options(run.manifest), 0.0)
    (t,) = rep.tests
    assert t.steady is False
    assert t.window == (8, 9, 10)
    assert "NOT reached after 10 of at most 10 rounds" in t.verdict
    assert "NOT steady state" in t.window_basis
    (h,) = rep.headlines
    assert h.write == pytest.approx(sum(ramp[-3:]) / 3)
    assert h.read == pytest.approx(9000.0)
    assert h.steady is False
    assert any("NOT reached" in w for w in rep.warnings)
    assert rep.not_run == ("wsat",)


def test_options_come_from_the_profile_unless_given() -> None:
    m = manifest()
    o = options.resolve_options(m)
    assert o.title == "From profile"
    assert o.logo == Path("/profiles/logo.png")
    assert o.paper == "A4"
    o = options.resolve_options(m, title="T", logo="x.svg", paper="letter")
    assert (o.title, o.logo, o.paper) == ("T", Path("x.svg"), "Letter")
    with pytest.raises(InputError):
        options.resolve_options(m, paper="A5")


def test_flags_for_synthetic_emulated_and_unfinished_runs() -> None:
    data = manifest_json(status="interrupted", synthetic=True)
    data["target"]["identity"]["emulated"] = True
    m = Manifest.load_checked(data, HERE)
    flag = header.flag(m)
    assert "SYNTHETIC DATA" in flag and "EMULATED DRIVE" in flag and "INTERRUPTED RUN" in flag
    assert len(header.alerts(m)) == 3
    assert header.flag(manifest()) == ""


def test_html_of_a_run_stopped_before_its_first_round() -> None:
    """A test with a plan and a purge record but no round yet still renders."""
    run = RunData(
        Path("/r"),
        manifest(status="interrupted"),
        [
            store.TestData(
                "iops",
                plan(),
                purge=Purge(method="nvme-format", pts_compliant=True, seconds=3.0),
            )
        ],
    )
    rep = analysis.analyze(run, options.resolve_options(run.manifest), 0.0)
    (t,) = rep.tests
    assert t.status == INTERRUPTED and not t.convergence and not t.rounds
    doc = render.build_document(rep)
    assert "No round was completed" in doc.html
    assert "nvme-format (PTS-compliant)" in doc.html
    assert "planned (2.000 MB), but not recorded" in doc.html
    assert "INTERRUPTED RUN" in doc.html


def test_health_rows_before_and_after() -> None:
    before = {
        "source": "nvme smart-log",
        "temperature_c": 35.0,
        "media_errors": 0,
        "bytes_written": 10**12,
        "percentage_used": 1,
    }
    after = {**before, "temperature_c": 51.0, "bytes_written": 3 * 10**12}
    rows = {r[0]: (r[1], r[2]) for r in procedure.health_rows(before, after)}
    assert rows["Temperature (°C)"] == ("35", "51")
    assert rows["Data written (GB)"] == ("1,000", "3,000")
    assert rows["Media and data integrity errors"] == ("0", "0")
    assert "Power-on hours" not in rows
    assert procedure.health_rows({"source": "none", "notes": ["no SMART data"]}, None) == ()


def _queue_plan(numjobs: int = 2, iodepth: int = 8) -> TestPlan:
    points = [
        PlannedPoint(bs=bs, read_pct=rp, numjobs=numjobs, iodepth=iodepth)
        for bs in (65536, 4096)
        for rp in (100, 0)
    ]
    return TestPlan(kind="steady", points=tuple(points))


def _queue_round(values: dict[tuple[int, int], tuple[float, float]]) -> Round:
    """A round record with (IOPS, mean response time in µs) per point."""
    points = [
        PointResult(bs=bs, read_pct=rp, iops=iops, lat_mean_ns=lat_us * 1000)
        for (bs, rp), (iops, lat_us) in values.items()
    ]
    return Round(round=1, points=tuple(points), tracking={})


def test_littles_law_uses_each_rounds_product() -> None:
    # 16 outstanding I/Os: 80,000 IOPS x 200 µs = 16 and 40,000 x 400 µs = 16; the
    # product of the means (60,000 x 300 µs = 18) would claim 112 %
    rounds = [
        _queue_round({(4096, 100): (80_000, 200), (4096, 0): (40_000, 380)}),
        _queue_round({(4096, 100): (40_000, 400), (4096, 0): (40_000, 380)}),
    ]
    text, warn = round_parts.queue_check(_queue_plan(), rounds)
    assert not warn
    assert "kept 95 % to 100 % of the 16 outstanding I/Os" in text


def test_littles_law_flags_a_starved_queue_and_impossible_numbers() -> None:
    low = [_queue_round({(4096, 100): (20_000, 400), (65536, 0): (30_000, 500)})]
    text, warn = round_parts.queue_check(_queue_plan(), low)
    assert warn
    assert "Below 80 %: 4k 100/0 (50 %)" in text and "host" in text
    high = [_queue_round({(4096, 100): (50_000, 400)})]  # 20 in flight of 16
    text, warn = round_parts.queue_check(_queue_plan(), high)
    assert warn
    assert "kept 125 % of the 16" in text and "disagree" in text and "4k 100/0" in text
    assert round_parts.queue_check(_queue_plan(), []) == ("", False)


def test_synthetic_normal_cdf_without_scipy() -> None:
    import numpy as np

    from tests.synthetic import latency_bins, normal_cdf

    x = np.array([-1.0, 0.0, 1.959963984540054, -8.0, -40.0])
    expected = [0.15865525393145707, 0.5, 0.975, 6.22096057427178e-16]
    got = normal_cdf(x)
    assert list(got[:4]) == pytest.approx(expected, rel=1e-14)
    assert got[4] == 0.0  # below the smallest double
    bins = latency_bins(80_000.0, 100_000, np.random.default_rng(0))
    assert sum(bins.values()) == 100_000
    assert 20_000 < min(bins) < 80_000 < max(bins) < 20_000_000
