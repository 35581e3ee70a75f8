"""A synthetic full-size PTS-E run directory, for the report's tests and benchmark.

:func:`make_synthetic_run` writes a *real* run directory through
:class:`tkbench.rundir.store.RunStore`: the plan is ``plan.build(load_profile("pts-e"),
...)``, the records have the exact shape the engine stores, and the stop rules
are the engine's (a steady-state test stops at its first steady round, write
saturation at its byte or time limit).  Only the numbers are made up, by a
simple model of an enterprise NVMe SSD with seeded noise.

It is marked as what it is, everywhere a reader could look: ``"synthetic": true``
in the manifest, the device model "Synthetic data — not a measurement", and
raw-output files that say no fio ran.  The report prints the warning on every
page.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tkbench import __version__
from tkbench import profile as profilemod
from tkbench.analysis import segment_verdicts, steady, test_result
from tkbench.analysis.window import window, window_records
from tkbench.fio import jobfile
from tkbench.fio.output import bucket_value, percentile_from_bins
from tkbench.kinds.staged import common as procedures
from tkbench.kinds.staged import results as stages
from tkbench.plan import build as planmod
from tkbench.profile.build import load as load_profile
from tkbench.rundir.records import KIND, SCHEMA, Manifest, Precondition, Purge, Round, TestPlan
from tkbench.rundir.store import RunStore, TestData

SYNTHETIC_MODEL = "Synthetic data — not a measurement"
CAPACITY = 15_362_991_415_296  # a 15.36 TB drive: 24 h of WSAT stay below 4x capacity
START = 1_740_988_800.0  # 2025-03-03 08:00:00 UTC
ROUND_GAP = 0.35  # seconds between rounds (fio start-up), as measured on real runs
SATURATION_GAP = 0.01
IOPS_LEFT = 0.95  # preconditioning leaves small random writes close to fresh performance
RAW_NOTE = "synthetic round: no fio ran (see manifest.json, 'synthetic': true)\n"


@dataclass(frozen=True)
class DriveModel:
    """A plausible enterprise NVMe SSD (PCIe 4, 15.36 TB), all rates in ops/s or bytes/s."""

    read_iops: float = 780_000.0  # small random reads, many outstanding I/Os
    write_iops_fresh: float = 420_000.0  # small random writes, fresh out of the box
    write_iops_steady: float = 92_000.0
    read_bw: float = 6.8e9
    write_bw_fresh: float = 4.0e9
    write_bw_steady: float = 2.3e9  # large random writes, steady state
    seq_read_bw: float = 6.9e9
    seq_write_bw: float = 3.6e9
    small_write_penalty: float = 0.42  # 512-byte writes: read-modify-write inside
    read_lat_qd1_ns: float = 78_000.0
    write_lat_qd1_ns: float = 14_000.0

    def iops(self, bs: int, read_pct: int, wear: float, sequential: bool = False) -> float:
        """IOPS of one workload point; ``wear`` 0 = fresh drive, 1 = steady state."""
        f = read_pct / 100.0
        rbw = self.seq_read_bw if sequential else self.read_bw
        wbw_fresh = self.seq_write_bw * 1.08 if sequential else self.write_bw_fresh
        wbw_steady = self.seq_write_bw if sequential else self.write_bw_steady
        w_small = self.write_iops_fresh + (self.write_iops_steady - self.write_iops_fresh) * wear
        w_bw = wbw_fresh + (wbw_steady - wbw_fresh) * wear
        r = 1.0 / (1.0 / self.read_iops + bs / rbw)
        w = 1.0 / (1.0 / w_small + bs / w_bw)
        if bs < 4096:
            w *= self.small_write_penalty
            r *= 1.04
        if f >= 1.0:
            return r
        if f <= 0.0:
            return w
        return 1.0 / (f / r + (1.0 - f) / w)


# --------------------------------------------------------------------------- records


def _percentiles(mean_ns: float, rng: np.random.Generator) -> dict[str, float]:
    factors = {"99": 2.6, "99.9": 4.1, "99.99": 7.5, "99.999": 14.0}
    out = {}
    prev = mean_ns
    for k, f in factors.items():
        prev = max(prev, mean_ns * f * float(rng.lognormal(0.0, 0.06)))
        out[k] = float(round(prev))
    return out


def dir_record(
    bs: int,
    runtime: float,
    iops: float,
    mean_ns: float,
    rng: np.random.Generator,
    bins: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """One direction of a point, as :func:`tkbench.fio.results.dir_summary` stores it."""
    if iops <= 0:
        return {
            "io_bytes": 0,
            "total_ios": 0,
            "iops": 0.0,
            "bw_bytes": 0.0,
            "runtime_ms": 0.0,
            "lat_mean_ns": 0.0,
            "lat_min_ns": 0.0,
            "lat_max_ns": 0.0,
            "lat_stddev_ns": 0.0,
            "clat_mean_ns": 0.0,
            "percentiles_of": "clat",
            "percentiles_ns": {},
        }
    ios = round(iops * runtime)
    if bins:
        ios = sum(bins.values())
        mean_ns = sum(v * c for v, c in bins.items()) / ios
        pct = {f"{p:g}": percentile_from_bins(bins, p) for p in (99.0, 99.9, 99.99, 99.999)}
        lo, hi = float(min(bins)), float(max(bins))
    else:
        pct = _percentiles(mean_ns, rng)
        lo, hi = mean_ns * 0.18, mean_ns * float(rng.uniform(15.0, 40.0))
    out: dict[str, Any] = {
        "io_bytes": ios * bs,
        "total_ios": ios,
        "iops": ios / runtime,
        "bw_bytes": ios * bs / runtime,
        "runtime_ms": runtime * 1000.0,
        "lat_mean_ns": mean_ns,
        "lat_min_ns": lo,
        "lat_max_ns": hi,
        "lat_stddev_ns": mean_ns * 0.45,
        "clat_mean_ns": mean_ns * 0.93,
        "percentiles_of": "lat",
        "percentiles_ns": pct,
    }
    if bins:
        out["bins_ns"] = {str(k): v for k, v in sorted(bins.items())}
    return out


def point_record(
    point: Mapping[str, Any], read: Mapping[str, Any], write: Mapping[str, Any]
) -> dict[str, Any]:
    """A point summary in the shape of :func:`tkbench.fio.results.point_summary`."""
    ios_r, ios_w = int(read["total_ios"]), int(write["total_ios"])
    ios = ios_r + ios_w
    lat = (read["lat_mean_ns"] * ios_r + write["lat_mean_ns"] * ios_w) / ios if ios else 0.0
    return {
        **point,
        "fio_job": point["job"],
        "error": 0,
        "iops": read["iops"] + write["iops"],
        "bw_bytes": read["bw_bytes"] + write["bw_bytes"],
        "lat_mean_ns": lat,
        "lat_max_ns": max(read["lat_max_ns"], write["lat_max_ns"]),
        "read": dict(read),
        "write": dict(write),
    }


def loaded_point(point: Mapping[str, Any], iops: float, rng: np.random.Generator) -> dict[str, Any]:
    """A point under load (many outstanding I/Os): latency by Little's law."""
    bs, runtime = int(point["bs"]), float(point["runtime"])
    f = int(point["read_pct"]) / 100.0
    oio = int(point["numjobs"]) * int(point["iodepth"])
    mean_ns = oio / iops * 1e9
    read = dir_record(bs, runtime, iops * f, mean_ns * 1.04, rng)
    write = dir_record(bs, runtime, iops * (1.0 - f), mean_ns * 0.93, rng)
    return point_record(point, read, write)


# fio's json+ buckets (nanoseconds) from 1 us to 1 s, and the edges between them
_BUCKETS = np.array(
    [v for v in (bucket_value(i) for i in range(64 * 30)) if 1_000 <= v <= 1_000_000_000],
    dtype=float,
)
_EDGES = np.concatenate(
    ([_BUCKETS[0] * 0.99], (_BUCKETS[1:] + _BUCKETS[:-1]) / 2.0, [_BUCKETS[-1] * 1.01])
)


_erfc = np.vectorize(math.erfc, otypes=[float])


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, Φ(x) = erfc(-x/√2) / 2, elementwise."""
    out: np.ndarray = 0.5 * _erfc(-np.asarray(x, dtype=float) / math.sqrt(2.0))
    return out


def latency_bins(median_ns: float, n: int, rng: np.random.Generator) -> dict[int, int]:
    """A right-skewed response-time histogram on fio's buckets (main mode + two tails)."""
    log_edges = np.log(_EDGES)
    parts = (
        (0.9925, median_ns, 0.20),
        (0.0074, median_ns * 3.2, 0.45),
        (0.0001, median_ns * 24, 0.5),
    )
    cdf = sum(w * normal_cdf((log_edges - math.log(m)) / s) for w, m, s in parts)
    p = np.diff(cdf)
    p = p / p.sum()
    counts = rng.multinomial(n, p)
    return {int(_BUCKETS[i]): int(counts[i]) for i in np.nonzero(counts)[0]}


def qd1_point(
    point: Mapping[str, Any], drive: DriveModel, wear: float, rng: np.random.Generator
) -> dict[str, Any]:
    """A point at queue depth 1 with response-time histograms: IOPS = 1 / mean latency."""
    bs, runtime = int(point["bs"]), float(point["runtime"])
    f = int(point["read_pct"]) / 100.0
    size = max(bs / 4096.0, 1.0)
    r_ns = drive.read_lat_qd1_ns * (0.92 + 0.08 * size) * float(rng.lognormal(0, 0.01))
    w_ns = drive.write_lat_qd1_ns * (1.0 + 0.25 * wear) * (0.85 + 0.15 * size)
    w_ns *= float(rng.lognormal(0, 0.012)) * (1.6 if bs < 4096 else 1.0)
    mean_ns = f * r_ns + (1 - f) * w_ns
    total = round(runtime * 1e9 / mean_ns)
    n_read = round(total * f)
    read_bins = latency_bins(r_ns * 0.97, n_read, rng) if n_read else None
    write_bins = latency_bins(w_ns * 0.97, total - n_read, rng) if total - n_read else None
    read = dir_record(bs, runtime, n_read / runtime, r_ns, rng, read_bins)
    write = dir_record(bs, runtime, (total - n_read) / runtime, w_ns, rng, write_bins)
    return point_record(point, read, write)


# --------------------------------------------------------------------------- rounds


def tracking_values(points: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> dict[str, float]:
    out = {}
    for label in labels:
        t = profilemod.Tracking.parse(label)
        for p in points:
            if p["bs"] == t.bs and p["read_pct"] == t.mix.read and not p.get("role"):
                if t.metric == "iops":
                    out[label] = float(p["iops"])
                elif t.metric == "bw":
                    out[label] = float(p["bw_bytes"]) / 1e6
                else:
                    out[label] = float(p["lat_mean_ns"]) / 1e6
    return out


def round_record(
    test: str,
    number: int,
    started: float,
    seconds: float,
    points: list[dict[str, Any]],
    tracking: Sequence[str],
    total_before: int,
) -> dict[str, Any]:
    written = int(sum(p["write"]["io_bytes"] for p in points))
    return {
        "test": test,
        "round": number,
        "segment": 1,
        "started": started,
        "ended": started + seconds,
        "fio": {
            "argv": ["fio", "--output-format=json", "job.fio"],
            "returncode": 0,
            "seconds": seconds,
            "started": started,
            "stderr": "",
            "synthetic": True,
        },
        "points": points,
        "tracking": tracking_values(points, tracking),
        "written_bytes": written,
        "total_written_bytes": total_before + written,
    }


def steady_reached(plan: Mapping[str, Any], rounds: Sequence[Mapping[str, Any]]) -> bool:
    verdicts = segment_verdicts(typed(TestPlan, plan), [typed(Round, r) for r in rounds])
    return bool(verdicts) and all(v.reached for v in verdicts.values())


def run_rounds(
    plan: Mapping[str, Any],
    start: float,
    make_points: Callable[[int], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """Rounds until the engine would stop: steady state, or the round limit."""
    limit = int(plan["rounds"]["max"])
    round_s = math.fsum(float(p["runtime"]) for p in plan["points"])
    rounds: list[dict[str, Any]] = []
    total = 0
    while not rounds or not (len(rounds) >= limit or steady_reached(plan, rounds)):
        n = len(rounds) + 1
        rec = round_record(
            plan["name"],
            n,
            start + (n - 1) * (round_s + ROUND_GAP),
            round_s,
            make_points(n),
            plan["tracking"],
            total,
        )
        total = rec["total_written_bytes"]
        rounds.append(rec)
    return rounds


def wear_curve(n: int, tau: float, left: float = 0.55, shape: float = 1.0) -> float:
    """How far toward steady state a drive is after ``n`` rounds (0 = fresh, 1 = steady)."""
    return 1.0 - left * math.exp(-(((n - 1) / tau) ** shape))


def first_steady_round(
    series: Mapping[str, Sequence[float]], window: int, limit: int
) -> int | None:
    """The round at which every series is steady, as the engine checks after each round."""
    for end in range(window, limit + 1):
        if all(steady.evaluate(list(v[:end]), window).reached for v in series.values()):
            return end
    return None


@dataclass(frozen=True)
class Decay:
    """The shape of the IOPS test's decline, with the noise that goes with it."""

    tau: float
    shape: float
    noise: np.ndarray  # (rounds, points) multiplicative noise


def iops_decay(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, want: int
) -> Decay:
    """A decline (and noise) with which the IOPS test first holds steady state at round
    ``want``, as a drive that needs the whole round budget does; the engine's rule decides."""
    pts = plan["points"]
    window = int(plan["rounds"]["window"])
    index = {}
    for label in plan["tracking"]:
        t = profilemod.Tracking.parse(label)
        index[label] = next(
            i for i, p in enumerate(pts) if p["bs"] == t.bs and p["read_pct"] == t.mix.read
        )
    noise = _noise(rng, want, pts)
    for _attempt in range(40):
        for shape in (1.5, 2.0):
            for tau in np.arange(6.0, 20.0, 0.1):
                series = {
                    label: [
                        drive.iops(
                            pts[i]["bs"],
                            pts[i]["read_pct"],
                            wear_curve(n, float(tau), IOPS_LEFT, shape),
                        )
                        * noise[n - 1, i]
                        for n in range(1, want + 1)
                    ]
                    for label, i in index.items()
                }
                if first_steady_round(series, window, want) == want:
                    return Decay(float(tau), shape, noise)
        noise = _noise(rng, want, pts)
    return Decay(11.0, 2.0, noise)  # not reached within the budget: also a plausible result


# --------------------------------------------------------------------------- stages


def _with_series(
    rec: dict[str, Any], interval: float, iops: Sequence[float], lat_ns: float
) -> dict[str, Any]:
    """``rec`` with per-interval samples (Series) of ``iops`` and its I/O totals made
    to agree with them."""
    bs = int(rec["bs"]) or 8192  # a block-size mix: about 8 KiB per I/O
    t = [round(interval * (i + 1), 3) for i in range(len(iops))]
    rec["series"] = {
        "interval": interval,
        "t_s": t,
        "iops": [float(v) for v in iops],
        "bw_bytes": [float(v) * bs for v in iops],
        "lat_mean_ns": [lat_ns * (1.0 + 0.3 * float(v == 0)) if v else 0.0 for v in iops],
    }
    return rec


def recovery_round(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    """Host idle recovery's round: bursts recover more after longer idle."""
    dt = float(plan["sample"]) or 1.0
    ss = drive.write_iops_steady
    points = []
    for p in plan["points"]:
        idle, busy = float(p.get("idle", 0.0)), float(p.get("busy", 0.0))
        n = round(float(p["runtime"]) / dt)
        if idle > 0:
            gain = 1.0 + 1.6 * (1.0 - math.exp(-idle / 20.0))  # more idle, more recovery
            period = round((busy + idle) / dt)
            on = round(busy / dt)
            iops = [ss * gain * float(rng.lognormal(0, 0.04)) if i % period < on else 0.0
                    for i in range(n)]  # fmt: skip
        else:
            iops = list(ss * rng.lognormal(0, 0.04, n))
        rec = loaded_point(p, float(np.mean([v for v in iops if v])), rng)
        points.append(_with_series(rec, dt, iops, float(rec["lat_mean_ns"])))
    seconds = math.fsum(float(p["runtime"]) for p in plan["points"])
    return [round_record(plan["name"], 1, start, seconds, points, (), 0)]


def groups_round(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    """Cross-stimulus recovery: each group dips after the change, then settles."""
    dt = float(plan["sample"]) or 60.0
    points = []
    for k, p in enumerate(plan["points"]):
        seq = p["pattern"] == "sequential"
        level = drive.iops(p["bs"], p["read_pct"], 1.0, sequential=seq)
        n = max(round(float(p["runtime"]) / dt), 1)
        dip = 0.45 if k else 0.0
        x = np.arange(n)
        iops = level * (1.0 - dip * np.exp(-x / (n / 12.0))) * rng.lognormal(0, 0.02, n)
        rec = loaded_point(p, float(iops.mean()), rng)
        points.append(_with_series(rec, dt, list(iops), float(rec["lat_mean_ns"])))
    seconds = math.fsum(float(p["runtime"]) for p in plan["points"])
    return [round_record(plan["name"], 1, start, seconds, points, (), 0)]


def intensity_rounds(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    """The demand-intensity grid: IOPS saturating with the outstanding I/Os."""

    def make(n: int) -> list[dict[str, Any]]:
        out = []
        for p in plan["points"]:
            oio = int(p["numjobs"]) * int(p["iodepth"])
            top = drive.iops(8192, p["read_pct"], 1.0)
            rec = loaded_point(p, top * (1 - math.exp(-oio / 48.0)) * rng.lognormal(0, 0.01), rng)
            rec["cpu_pct"] = round(min(4.0 + 0.8 * int(p["numjobs"]) + 0.05 * oio, 99.0), 3)
            out.append(rec)
        return out

    return run_rounds(plan, start, make)


def operating_test(t: planmod.PlannedTest, done: Mapping[str, TestData]) -> planmod.PlannedTest:
    """The operating-point stage with its loads chosen as the engine chooses them."""
    source = done[t.derive_from]
    rounds = window_records(source.rounds, window(source))
    chosen = stages.choose(stages.grid(rounds), t.response_ceiling * 1e9)
    return procedures.resolve(t, chosen)


def operating_round(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    """The operating points, measured with full histograms of reads and writes."""
    points = []
    for p in plan["points"]:
        oio = int(p["numjobs"]) * int(p["iodepth"])
        iops = drive.iops(8192, p["read_pct"], 1.0) * (1 - math.exp(-oio / 48.0))
        if p.get("role") == "prewrite":
            points.append(loaded_point(p, iops, rng))
            continue
        runtime, f = float(p["runtime"]), int(p["read_pct"]) / 100.0
        mean_ns = oio / iops * 1e9
        total = round(iops * runtime)
        n_read = round(total * f)
        bs = int(p["bs"]) or 8192
        rb = latency_bins(mean_ns * 1.05, n_read, rng)
        wb = latency_bins(mean_ns * 0.9, total - n_read, rng)
        rec = point_record(
            p,
            dir_record(bs, runtime, n_read / runtime, mean_ns, rng, rb),
            dir_record(bs, runtime, (total - n_read) / runtime, mean_ns, rng, wb),
        )
        rec["cpu_pct"] = round(min(4.0 + 0.8 * int(p["numjobs"]) + 0.05 * oio, 99.0), 3)
        points.append(rec)
    seconds = math.fsum(float(p["runtime"]) for p in plan["points"])
    return [round_record(plan["name"], 1, start, seconds, points, (), 0)]


STAGE_ROUNDS = {
    "recovery": recovery_round,
    "groups": groups_round,
    "intensity": intensity_rounds,
    "operating": operating_round,
}


# --------------------------------------------------------------------------- tests


@dataclass
class Clock:
    now: float


def _noise(
    rng: np.random.Generator, rounds: int, points: Sequence[Mapping[str, Any]]
) -> np.ndarray:
    sigma = np.array([0.012 + 0.02 * (1 - p["read_pct"] / 100.0) for p in points])
    return np.exp(rng.normal(0.0, 1.0, (rounds, len(points))) * sigma)


def iops_rounds(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    decay = iops_decay(plan, drive, rng, int(plan["rounds"]["max"]))

    def make(n: int) -> list[dict[str, Any]]:
        wear = wear_curve(n, decay.tau, IOPS_LEFT, decay.shape)
        return [
            loaded_point(p, drive.iops(p["bs"], p["read_pct"], wear) * decay.noise[n - 1, i], rng)
            for i, p in enumerate(plan["points"])
        ]

    return run_rounds(plan, start, make)


def throughput_rounds(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    limit = int(plan["rounds"]["max"])
    noise = _noise(rng, limit, plan["points"])

    def make(n: int) -> list[dict[str, Any]]:
        wear = wear_curve(n, 1.3, left=0.5)
        return [
            loaded_point(
                p, drive.iops(p["bs"], p["read_pct"], wear, sequential=True) * noise[n - 1, i], rng
            )
            for i, p in enumerate(plan["points"])
        ]

    return run_rounds(plan, start, make)


def latency_rounds(
    plan: Mapping[str, Any], drive: DriveModel, rng: np.random.Generator, start: float
) -> list[dict[str, Any]]:
    def make(n: int) -> list[dict[str, Any]]:
        wear = wear_curve(n, 1.2)
        return [qd1_point(p, drive, wear, rng) for p in plan["points"]]

    return run_rounds(plan, start, make)


def saturation_iops(written: float, capacity: float, drive: DriveModel) -> float:
    """4k random-write IOPS after ``written`` bytes: fresh, a cliff, a dip, then steady."""
    x = written / capacity
    fresh, ss = drive.write_iops_fresh, drive.write_iops_steady
    if x < 0.82:
        return fresh * (1.0 - 0.04 * x)
    d = x - 0.82
    base = ss + (fresh * 0.967 - ss) * math.exp(-d / 0.09)
    return base - 0.16 * ss * math.exp(-(((d - 0.45) / 0.25) ** 2))


def saturation_rounds(
    plan: Mapping[str, Any],
    drive: DriveModel,
    rng: np.random.Generator,
    start: float,
    capacity: int,
    rounds: int,
) -> list[dict[str, Any]]:
    point = plan["points"][0]
    runtime = float(point["runtime"])
    limit = float(plan["stop_written_multiple"]) * capacity
    out: list[dict[str, Any]] = []
    total = 0
    n = 0
    while n < rounds and (n == 0 or total < limit):
        n += 1
        iops = saturation_iops(total, capacity, drive) * float(rng.lognormal(0.0, 0.035))
        if rng.random() < 0.02:  # garbage collection stalls now and then
            iops *= float(rng.uniform(0.6, 0.85))
        pts = [loaded_point(point, iops, rng)]
        rec = round_record(
            plan["name"],
            n,
            start + (n - 1) * (runtime + SATURATION_GAP),
            runtime,
            pts,
            plan["tracking"],
            total,
        )
        total = rec["total_written_bytes"]
        out.append(rec)
    return out


def purge_record(start: float) -> dict[str, Any]:
    return {
        "method": "none (synthetic)",
        "pts_compliant": False,
        "commands": [],
        "seconds": 0.0,
        "notes": ["synthetic run: nothing was purged"],
        "started": start,
        "ended": start,
        "segment": 1,
    }


def precondition_record(plan: Mapping[str, Any], start: float, rate: float) -> dict[str, Any]:
    pre = dict(plan["precondition"])
    seconds = pre["total_bytes"] / rate
    return {
        **pre,
        "written_bytes": pre["total_bytes"],
        "started": start,
        "ended": start + seconds,
        "seconds": round(seconds, 3),
        "segment": 1,
        "fio": {
            "argv": [],
            "returncode": 0,
            "seconds": seconds,
            "started": start,
            "stderr": "",
            "synthetic": True,
        },
    }


def typed(cls: Any, data: Mapping[str, Any]) -> Any:
    """A record of the run directory from the JSON this generator makes, read as tkbench
    reads every record file (so a generator that strays from the format fails here)."""
    return cls.load(dict(data), Path("synthetic"))


# --------------------------------------------------------------------------- the run


def manifest(plan: planmod.Plan, capacity: int, seed: int, root: Path) -> dict[str, Any]:
    cmd = ["python", "tests/synthetic.py", str(root), f"--seed={seed}"]
    return {
        "synthetic": True,
        "tkbench_version": __version__,
        "fio_version": "none (synthetic data)",
        "host": {
            "hostname": "synthetic",
            "kernel": "n/a",
            "os": "n/a (synthetic data)",
            "machine": "n/a",
            "cpu": "n/a (synthetic data)",
            "cpus": 0,
            "memory_bytes": 0,
            "python": "n/a",
        },
        "fio_servers": [],
        "command_line": cmd,
        "profile": {
            "name": plan.profile.name,
            "source": plan.profile.source,
            "resolved": plan.profile.resolved,
        },
        "target": {
            "spec": "synthetic",
            "kind": "synthetic",
            "path": "synthetic",
            "capacity_bytes": capacity,
            "logical_sector": 512,
            "identity": {
                "kind": "synthetic",
                "model": SYNTHETIC_MODEL,
                "serial": "SYNTHETIC-0000",
                "firmware": "n/a",
                "capacity_bytes": capacity,
                "logical_sector": 512,
                "physical_sector": 4096,
                "interface": "none (synthetic data)",
                "write_cache": "n/a",
                "synthetic": True,
                "notes": [f"synthetic run generated by {shlex.join(cmd)}: no device, no fio"],
            },
        },
        "active_bytes": plan.active_bytes,
        "tests": [t.name for t in plan.tests],
        "plan_notes": list(plan.notes),
        "status": "running",
        "started": START,
        "ended": None,
        "resumes": [],
        "error": None,
    }


def _job_text(t: planmod.PlannedTest) -> str:
    wl = t.spec.workload
    return jobfile.render_round(
        t.points,
        {"ioengine": "libaio", "filename": "/dev/synthetic"},
        active_bytes=t.active_bytes,
        data_pattern=wl.data_pattern,
        direct=wl.direct,
        percentiles=t.spec.percentiles,
        extra_global={"lat_percentiles": True},
    )


def make_synthetic_run(
    root: Path,
    seed: int = 0,
    *,
    capacity: int = CAPACITY,
    wsat_rounds: int = 1440,
    drive: DriveModel | None = None,
    workers: int = 8,
) -> Path:
    """Write a complete synthetic PTS-E run (IOPS, both throughput tests, latency,
    write saturation of ``wsat_rounds`` one-minute rounds, and the stages of HIR,
    XSR, CBW and DIRTH) into ``root``."""
    root = Path(root)
    drive = drive or DriveModel()
    rng = np.random.default_rng(seed)
    plan = planmod.build(
        load_profile("pts-e"), planmod.TargetInfo("synthetic", "block", capacity, 512)
    )
    data = {"kind": KIND, "schema": SCHEMA, **manifest(plan, capacity, seed, root)}
    store = RunStore.create(root, Manifest.load_checked(data, root / "manifest.json"))
    clock = Clock(START + 5.0)
    done: dict[str, TestData] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for t in plan.tests:
            if t.derive_from:
                t = operating_test(t, done)
            done[t.name] = _write_test(store, t, drive, rng, clock, capacity, wsat_rounds, pool)
    store.update_manifest(status="complete", ended=clock.now + 2.0)
    store.log("synthetic run complete")
    return root


def _write_test(
    store: RunStore,
    t: planmod.PlannedTest,
    drive: DriveModel,
    rng: np.random.Generator,
    clock: Clock,
    capacity: int,
    wsat_rounds: int,
    pool: ThreadPoolExecutor,
) -> TestData:
    record = t.record(ioengine_used="libaio")
    plan = record.to_json()
    store.save_test_plan(t.name, record)
    if t.purge:
        store.save_phase(t.name, "purge", typed(Purge, purge_record(clock.now)))
        clock.now += 1.0
    if t.precondition is not None:
        rec = precondition_record(plan, clock.now, drive.seq_write_bw)
        store.save_phase(t.name, "precondition", typed(Precondition, rec), raw=RAW_NOTE)
        clock.now = rec["ended"] + 0.5
    kind, metric = t.spec.kind, (t.tracking[0].metric if t.tracking else "iops")
    if t.stage in STAGE_ROUNDS:
        rounds = STAGE_ROUNDS[t.stage](plan, drive, rng, clock.now)
    elif kind == "saturation":
        rounds = saturation_rounds(plan, drive, rng, clock.now, capacity, wsat_rounds)
    elif metric == "bw":
        rounds = throughput_rounds(plan, drive, rng, clock.now)
    elif metric == "lat_mean":
        rounds = latency_rounds(plan, drive, rng, clock.now)
    else:
        rounds = iops_rounds(plan, drive, rng, clock.now)
    text = _job_text(t)
    stored = list(pool.map(lambda r: typed(Round, r), rounds))
    list(pool.map(lambda r: store.save_round(t.name, r, RAW_NOTE, text), stored))
    result = test_result(record, stored, capacity)
    store.save_result(t.name, result)
    clock.now = float(rounds[-1]["ended"]) + 1.0
    return TestData(name=t.name, plan=record, rounds=list(stored), result=result)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="write a synthetic full-size PTS-E run directory")
    ap.add_argument("root", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wsat-rounds", type=int, default=1440)
    args = ap.parse_args(argv)
    make_synthetic_run(args.root, args.seed, wsat_rounds=args.wsat_rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
