"""Parse fio's JSON / json+ output, robustly across fio versions.

Pure functions, no I/O.  See docs/fio-json.md for the version differences handled.

A result field that is one key of fio's JSON names that key in its metadata
(``fio``); :func:`_read` fills every such field of a class from its key, read as the
field's type says with the rules fio's versions need (:data:`_TYPED`): a key fio did
not write leaves the field's default, a count may come as a float (fio 2.x), text
and option values are taken as text.  What needs more than one key or fio's version
(units, the bandwidth without ``bw_bytes``, percentiles, histogram bins, the CPU) is
worked out by the functions below it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Any, TypeVar, get_type_hints

from tkbench.errors import FioJobError, FioParseError

# fio's default completion-latency percentile list (used when recomputing from bins
# and no entry carried an explicit list).
DEFAULT_PERCENTILES: tuple[float, ...] = (
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0,
    90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
)  # fmt: skip

ALL_CLIENTS = "All clients"  # jobname of the aggregate entry in client/server output

_NS_PER_US = 1000
_LEGACY_PLAT_KEYS = ("FIO_IO_U_PLAT_BITS", "FIO_IO_U_PLAT_VAL", "FIO_IO_U_PLAT_NR")
_NS_STYLE_KEYS = ("io_kbytes", "bw_bytes", "slat_ns", "clat_ns", "lat_ns")
_US_STYLE_KEYS = ("slat", "clat", "lat")
_EXCERPT_CHARS = 80

_T = TypeVar("_T")
_R = TypeVar("_R")


def _fio(key: str) -> dict[str, str]:
    """A field's metadata: the field is fio's key ``key`` (see :func:`_read`)."""
    return {"fio": key}


@dataclass(frozen=True)
class LatStats:
    """Latency summary in nanoseconds (fio 2.x microseconds are converted)."""

    mean: float = field(default=0.0, metadata=_fio("mean"))
    min: float = field(default=0.0, metadata=_fio("min"))
    max: float = field(default=0.0, metadata=_fio("max"))
    stddev: float = field(default=0.0, metadata=_fio("stddev"))
    samples: int | None = field(default=None, metadata=_fio("N"))


@dataclass(frozen=True)
class DirStats:
    """One I/O direction (read, write or trim) of one job entry."""

    io_bytes: int = field(default=0, metadata=_fio("io_bytes"))  # fio 2.x: KiB, converted
    total_ios: int | None = field(default=None, metadata=_fio("total_ios"))
    iops: float = field(default=0.0, metadata=_fio("iops"))
    # bytes per second (fio 2.x has only "bw" in KiB/s: converted)
    bw_bytes: float = field(default=0.0, metadata=_fio("bw_bytes"))
    runtime_ms: float = field(default=0.0, metadata=_fio("runtime"))
    lat: LatStats = field(default_factory=LatStats)  # total latency (submission + completion)
    clat: LatStats = field(default_factory=LatStats)
    slat: LatStats = field(default_factory=LatStats)
    # completion-latency percentiles: percent (e.g. 99.99) -> nanoseconds
    percentiles: dict[float, float] = field(default_factory=dict)
    # json+ completion-latency histogram: bucket latency in ns -> count (non-zero buckets)
    bins: dict[int, int] = field(default_factory=dict)
    # total-latency percentiles and json+ histogram; fio only reports these when the job
    # ran with lat_percentiles=1 (fio 3.x)
    lat_percentiles: dict[float, float] = field(default_factory=dict)
    lat_bins: dict[int, int] = field(default_factory=dict)

    @property
    def did_io(self) -> bool:
        """True if this direction moved any data or completed any I/O."""
        return self.io_bytes > 0 or (self.total_ios or 0) > 0


@dataclass(frozen=True)
class JobStats:
    """One entry of ``jobs`` (or ``client_stats``)."""

    name: str  # "jobname"; "#0"... where fio gave none
    groupid: int = field(default=0, metadata=_fio("groupid"))
    error: int = field(default=0, metadata=_fio("error"))
    read: DirStats = field(default_factory=DirStats)
    write: DirStats = field(default_factory=DirStats)
    trim: DirStats = field(default_factory=DirStats)
    job_runtime_ms: float | None = field(default=None, metadata=_fio("job_runtime"))
    elapsed_s: float | None = field(default=None, metadata=_fio("elapsed"))
    hostname: str | None = field(default=None, metadata=_fio("hostname"))
    port: int | None = field(default=None, metadata=_fio("port"))
    options: dict[str, str] = field(default_factory=dict, metadata=_fio("job options"))
    job_start_ms: int | None = field(default=None, metadata=_fio("job_start"))  # fio >= 3.35
    # unified_rw_reporting: fio reports reads, writes and trims together as "mixed"
    mixed: DirStats = field(default_factory=DirStats)
    # the host CPU fio's threads used, percent of one CPU (usr_cpu + sys_cpu; with group
    # reporting fio sums its jobs); 0 where fio said no number (and for combine()'s)
    cpu_pct: float = 0.0
    # the job entry exactly as decoded, for fields not modelled here (steadystate, cpu...)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def directions(self) -> dict[str, DirStats]:
        """The per-direction statistics keyed by fio's direction name."""
        return {"read": self.read, "write": self.write, "trim": self.trim, "mixed": self.mixed}

    @property
    def did_io(self) -> bool:
        """True if any direction moved data."""
        return any(d.did_io for d in self.directions.values())


@dataclass(frozen=True)
class FioOutput:
    """A whole fio JSON document."""

    fio_version: str = field(default="", metadata=_fio("fio version"))
    # per-job entries; in client/server mode the per-client entries
    jobs: list[JobStats] = field(default_factory=list)
    timestamp: int | None = field(default=None, metadata=_fio("timestamp"))
    timestamp_ms: int | None = field(default=None, metadata=_fio("timestamp_ms"))
    global_options: dict[str, str] = field(default_factory=dict, metadata=_fio("global options"))
    aggregate: JobStats | None = None  # the "All clients" entry in client/server mode
    client_server: bool = False
    preamble: str = ""  # any text fio printed before the JSON document
    # the block devices' statistics as fio wrote them (tkbench reads none of them)
    disk_util: list[dict[str, object]] = field(default_factory=list, metadata=_fio("disk_util"))
    trailer: str = ""  # any text after the document (e.g. an unfinished later document)


# --------------------------------------------------------------------------- parse


def parse(text: str) -> FioOutput:
    """Parse fio output text (JSON or json+, possibly with text before it).

    The last complete fio results document in ``text`` is used.  Non-JSON text
    before it (and between earlier documents) is kept, stripped, in ``preamble``;
    text after it in ``trailer``.
    """
    if not text.strip():
        raise FioParseError("fio produced no output (expected JSON results)")
    docs = _find_documents(text)
    if not docs:
        raise FioParseError(_no_document_message(text))
    _, end, doc = docs[-1]
    gaps, prev_end = [], 0
    for doc_start, doc_end, _ in docs:
        gaps.append(text[prev_end:doc_start].strip())
        prev_end = doc_end
    preamble = "\n".join(g for g in gaps if g)
    return _output_from_doc(doc, preamble, text[end:].strip())


def _find_documents(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """All complete top-level fio result objects in ``text``: (start, end, object)."""
    decoder = json.JSONDecoder(strict=False)
    found: list[tuple[int, int, dict[str, Any]]] = []
    pos = 0
    while (start := text.find("{", pos)) >= 0:
        if not _may_start_object(text, start):
            pos = start + 1
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            pos = start + 1  # an unfinished object: look for one starting inside it
            continue
        if isinstance(value, dict) and _is_results(value):
            found.append((start, end, value))
        pos = end  # a complete object (results or not): nothing inside it can be a document
    return found


def _may_start_object(text: str, start: int) -> bool:
    """Cheap pre-check: a JSON object's "{" is followed by a key or by "}"."""
    after = text[start + 1 : start + 65].lstrip()
    return not after or after[0] in '"}'


def _is_results(value: dict[str, Any]) -> bool:
    return isinstance(value.get("jobs"), list) or isinstance(value.get("client_stats"), list)


def _no_document_message(text: str) -> str:
    start = text.find("{")
    if start < 0:
        return f"fio output contains no JSON document: {_excerpt(text, tail=True)}"
    try:
        json.JSONDecoder(strict=False).raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return (
            f"fio JSON output is truncated or malformed ({exc.msg} at line {exc.lineno}); "
            f"it ends with: {_excerpt(text, tail=True)}"
        )
    except RecursionError:
        return "fio JSON output is nested too deeply to read"
    return f"fio output has no fio results document (no 'jobs'): {_excerpt(text[start:])}"


def _excerpt(text: str, tail: bool = False) -> str:
    flat = " ".join(text.split())
    if len(flat) > _EXCERPT_CHARS:
        flat = "..." + flat[-_EXCERPT_CHARS:] if tail else flat[:_EXCERPT_CHARS] + "..."
    return repr(flat)


def _output_from_doc(doc: dict[str, Any], preamble: str, trailer: str) -> FioOutput:
    head = _read(FioOutput, doc, "document", preamble=preamble, trailer=trailer)
    vtuple = _version_tuple(head.fio_version)
    client_server = not isinstance(doc.get("jobs"), list)
    entries = doc["client_stats"] if client_server else doc["jobs"]
    jobs: list[JobStats] = []
    aggregate: JobStats | None = None
    for index, entry in enumerate(entries):
        job = _job_from_entry(entry, index, vtuple)
        if client_server and job.name == ALL_CLIENTS:
            aggregate = job
        else:
            jobs.append(job)
    return replace(head, jobs=jobs, aggregate=aggregate, client_server=client_server)


def _version_tuple(version: str) -> tuple[int, int] | None:
    """``"fio-2.9-3-gf1c4"`` -> (2, 9); None if unrecognisable."""
    core = version.removeprefix("fio-").split("-", 1)[0]
    parts = core.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def _job_from_entry(entry: object, index: int, vtuple: tuple[int, int] | None) -> JobStats:
    if not isinstance(entry, dict):
        raise FioParseError(f"fio JSON job entry #{index} is not an object")
    name = str(entry.get("jobname", f"#{index}"))
    where = f"job {name!r}"
    dirs = {
        d: _dir_from_obj(entry.get(d), vtuple, f"{where} {d}")
        for d in ("read", "write", "trim", "mixed")
    }
    return _read(JobStats, entry, where, name=name, **dirs, cpu_pct=_cpu_pct(entry), raw=entry)


def _cpu_pct(entry: Mapping[str, Any]) -> float:
    try:
        return round(float(entry.get("usr_cpu", 0.0)) + float(entry.get("sys_cpu", 0.0)), 3)
    except (TypeError, ValueError):
        return 0.0


def _dir_from_obj(obj: object, vtuple: tuple[int, int] | None, where: str) -> DirStats:
    if obj is None:
        return DirStats()
    if not isinstance(obj, dict):
        raise FioParseError(f"fio JSON {where} is not an object")
    counted = _read(DirStats, obj, where)  # as fio wrote them, in its version's units
    io_bytes = counted.io_bytes * 1024 if _io_bytes_in_kib(obj, vtuple) else counted.io_bytes
    did_io = io_bytes > 0 or (counted.total_ios or 0) > 0
    bw_bytes = counted.bw_bytes
    if "bw_bytes" not in obj:  # fio 2.x
        bw_bytes = _bw_bytes(obj, io_bytes, counted.runtime_ms, where)
    clat_obj, clat_scale, clat_at = _lat_object(obj, "clat", where)
    lat_obj, lat_scale, lat_at = _lat_object(obj, "lat", where)
    slat_obj, slat_scale, slat_at = _lat_object(obj, "slat", where)
    return replace(
        counted,
        io_bytes=io_bytes,
        bw_bytes=bw_bytes,
        lat=_lat_stats(lat_obj, lat_scale, lat_at),
        clat=_lat_stats(clat_obj, clat_scale, clat_at),
        slat=_lat_stats(slat_obj, slat_scale, slat_at),
        percentiles=_percentiles(clat_obj, clat_scale, did_io, where),
        bins=_bins(clat_obj, clat_scale, where),
        lat_percentiles=_percentiles(lat_obj, lat_scale, did_io, where),
        lat_bins=_bins(lat_obj, lat_scale, where),
    )


def _io_bytes_in_kib(obj: Mapping[str, Any], vtuple: tuple[int, int] | None) -> bool:
    """fio before 2.99 printed KiB under "io_bytes"; the key names tell the era apart."""
    if any(k in obj for k in _NS_STYLE_KEYS):
        return False
    if any(k in obj for k in _US_STYLE_KEYS):
        return True
    return vtuple is not None and vtuple < (2, 99)


def _bw_bytes(obj: Mapping[str, Any], io_bytes: int, runtime_ms: float, where: str) -> float:
    """The bandwidth in bytes/s where fio wrote no "bw_bytes"."""
    if io_bytes > 0 and runtime_ms > 0:
        return io_bytes * 1000.0 / runtime_ms  # what fio 3.x computes for bw_bytes
    return _float(obj, "bw", where) * 1024.0  # "bw" is KiB/s in every version


def _lat_object(obj: Mapping[str, Any], kind: str, where: str) -> tuple[dict[str, Any], int, str]:
    """The latency object ``kind`` ("clat"...), the factor that turns it into ns and
    where it is (for messages).  fio before 2.99 wrote "clat" in microseconds."""
    for key, scale in ((f"{kind}_ns", 1), (kind, _NS_PER_US)):
        value = obj.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise FioParseError(f"fio JSON {where}.{key} is not an object")
        return value, scale, f"{where}.{key}"
    return {}, 1, where


def _lat_stats(obj: Mapping[str, Any], scale: int, where: str) -> LatStats:
    if not obj:
        return LatStats()
    got = _read(LatStats, obj, where)  # in fio's unit
    if scale == 1:
        return got
    return replace(
        got,
        mean=got.mean * scale,
        min=got.min * scale,
        max=got.max * scale,
        stddev=got.stddev * scale,
    )


def _percentiles(
    obj: Mapping[str, Any], scale: int, did_io: bool, where: str
) -> dict[float, float]:
    """``{"99.990000": v}`` -> ``{99.99: v_ns}``; fio 2.x "0.00" fillers dropped.

    A direction that did no I/O gets an empty dict: older fio prints all-zero lists there.
    """
    raw = obj.get("percentile")
    if not did_io or not isinstance(raw, dict):
        return {}
    result: dict[float, float] = {}
    for key, value in raw.items():
        try:
            pct = float(key)
        except ValueError:
            raise FioParseError(f"fio JSON {where}: bad percentile key {key!r}") from None
        if pct <= 0.0:
            continue  # "0.00": padding after the real list (fio up to 3.3)
        result[pct] = _as_number(value, f"{where} percentile {key}") * scale
    return dict(sorted(result.items()))


def _bins(obj: Mapping[str, Any], scale: int, where: str) -> dict[int, int]:
    raw = obj.get("bins")
    if not isinstance(raw, dict):
        return {}
    if any(k in raw for k in _LEGACY_PLAT_KEYS):
        return _bins_by_index(raw, scale, where)
    result: dict[int, int] = {}
    for key, count in raw.items():
        n = int(_as_number(count, f"{where} bin {key}"))
        if n > 0:
            result[_bin_key(key, where) * scale] = n
    return dict(sorted(result.items()))


def _bins_by_index(raw: Mapping[str, Any], scale: int, where: str) -> dict[int, int]:
    """fio 2.x json+: keys are bucket indices 0..PLAT_NR-1, plus the PLAT_* constants."""
    bits = int(_as_number(raw.get("FIO_IO_U_PLAT_BITS", 6), f"{where} FIO_IO_U_PLAT_BITS"))
    result: Counter[int] = Counter()
    for key, count in raw.items():
        if key in _LEGACY_PLAT_KEYS:
            continue
        n = int(_as_number(count, f"{where} bin {key}"))
        if n > 0:
            result[bucket_value(_bin_key(key, where), bits) * scale] += n
    return dict(sorted(result.items()))


def _bin_key(key: str, where: str) -> int:
    if not key.isdigit():
        raise FioParseError(f"fio JSON {where}: bad histogram bin key {key!r}")
    return int(key)


def bucket_value(index: int, bits: int = 6) -> int:
    """Latency represented by histogram bucket ``index`` (fio's ``plat_idx_to_val``).

    fio's latency histogram keeps the first ``2 * 2**bits`` values exactly, one bucket
    each.  After that, bucket ``index`` belongs to group ``g = index >> bits`` (g >= 2),
    which covers ``[2**(g-1+bits), 2**(g+bits))`` in ``2**bits`` equal slices of width
    ``2**(g-1)``; the reported value of a slice is its midpoint.  The unit is whatever
    fio recorded in (microseconds before fio 2.99, nanoseconds after).
    """
    per_group = 1 << bits
    if index < 2 * per_group:
        return index
    width_log2 = (index >> bits) - 1  # low-order bits discarded in this group
    group_start = 1 << (width_log2 + bits)
    slot = index & (per_group - 1)
    return group_start + ((2 * slot + 1) << (width_log2 - 1))


# ---------------------------------------------------------------- typed field access


def _as_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FioParseError(f"fio JSON {what} is not a number: {value!r:.40}")
    return float(value)


def _float(obj: Mapping[str, Any], key: str, where: str) -> float:
    """A number of fio's that is no result field (0 where fio wrote none)."""
    return _as_number(obj.get(key, 0), f"{where}.{key}")


def _count(value: object, what: str) -> int:
    return int(_as_number(value, what))  # fio 2.x wrote some counts as floats


def _text(value: object, _what: str) -> str:
    return str(value)


def _options(value: object, _what: str) -> dict[str, str]:
    """Options as fio printed them (its versions disagree on numbers and text): text."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _objects(value: object, _what: str) -> list[dict[str, object]]:
    return [dict(i) for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def _or_none(read: Callable[[Any, str], _T]) -> Callable[[Any, str], _T | None]:
    return lambda value, what: None if value is None else read(value, what)


# How a value fio wrote becomes a field of each type (a null is an error where the
# type has no None, as a number fio left out is not).
_TYPED: dict[object, Callable[[Any, str], Any]] = {
    float: _as_number,
    int: _count,
    str: _text,
    float | None: _or_none(_as_number),
    int | None: _or_none(_count),
    str | None: _or_none(_text),
    dict[str, str]: _options,
    list[dict[str, object]]: _objects,
}
_ABSENT = object()
_FIELDS: dict[type, tuple[tuple[str, str, Callable[[Any, str], Any]], ...]] = {}


def _fio_fields(cls: type) -> tuple[tuple[str, str, Callable[[Any, str], Any]], ...]:
    """The fields of a result class that are one of fio's keys: (field, key, reader)."""
    if cls not in _FIELDS:
        types_ = get_type_hints(cls)
        _FIELDS[cls] = tuple(
            (f.name, f.metadata["fio"], _TYPED[types_[f.name]])
            for f in fields(cls)
            if "fio" in f.metadata
        )
    return _FIELDS[cls]


def _read(cls: type[_R], obj: Mapping[str, Any], where: str, **given: Any) -> _R:
    """``cls`` from fio's object ``obj``: every field that is one of fio's keys read
    from it (a key fio did not write leaves the field's default), ``given`` the others.
    A value of the wrong type is one line naming the object and the key."""
    for name, key, read in _fio_fields(cls):
        if name in given:
            continue
        value = obj.get(key, _ABSENT)
        if value is not _ABSENT:
            given[name] = read(value, f"{where}.{key}")
    return cls(**given)


# ---------------------------------------------------------------------- check_jobs


def check_jobs(output: FioOutput, expect_io: bool = True) -> None:
    """Raise FioJobError if a job reported an error or (with expect_io) did no I/O."""
    failed = [j for j in output.jobs if j.error != 0]
    if failed:
        job = failed[0]
        msg = f"{_job_label(job)} failed with error {job.error} ({_strerror(job.error)})"
        raise FioJobError(_with_context(msg, output, len(failed) - 1))
    if not expect_io:
        return
    if not output.jobs:
        raise FioJobError(_with_context("fio reported no jobs", output, 0))
    idle = [j for j in output.jobs if not j.did_io]
    if idle:
        msg = f"{_job_label(idle[0])} did no I/O (0 bytes read, written or trimmed)"
        raise FioJobError(_with_context(msg, output, len(idle) - 1))


def _job_label(job: JobStats) -> str:
    host = f" on {job.hostname}" if job.hostname else ""
    return f"job {job.name!r}{host}"


def _strerror(errno: int) -> str:
    try:
        return os.strerror(errno)
    except (ValueError, OverflowError):
        return "unknown error"


def _with_context(msg: str, output: FioOutput, others: int) -> str:
    if others > 0:
        msg += f" (and {others} more job{'s' if others > 1 else ''})"
    hint = _explaining_line(output.preamble)
    return f"{msg}: {hint}" if hint else msg


def _explaining_line(text: str) -> str:
    """The last line fio printed that looks like a diagnostic, or ""."""
    lines = text.replace("\r", "\n").split("\n")
    for line in reversed(lines):
        line = line.strip()
        lowered = line.lower()
        if line.startswith("Jobs:"):
            continue  # a progress line
        if "fio:" in lowered or "error" in lowered or "err=" in lowered:
            return line[:200]
    return ""


def percentile_from_bins(bins: Mapping[int, int], pct: float) -> float:
    """The ``pct``-th percentile (0 < pct <= 100) of a json+ histogram, in its unit.

    Same definition as fio: walking the buckets from the lowest latency up, the value
    of the first bucket at which the running count reaches ``pct`` % of all samples,
    i.e. the smallest bucket value with at least ``pct`` % of the samples at or below
    it.  The comparison is done exactly (fio uses extended precision for it).
    """
    if not 0.0 <= pct <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {pct}")
    total = sum(c for c in bins.values() if c > 0)
    if total == 0:
        raise ValueError("cannot take a percentile of an empty histogram")
    threshold = Fraction(pct) / 100 * total
    running = 0
    for value in sorted(v for v, c in bins.items() if c > 0):
        running += bins[value]
        if running >= threshold:
            return float(value)
    return float(max(bins))  # not reached: the running count ends at total >= threshold
