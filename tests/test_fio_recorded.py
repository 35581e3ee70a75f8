"""Every fio output recorded under tests/data parses to the results stored beside them.

The recorded outputs are the fio JSON fixtures of several fio versions (2.1.4 to
3.38, client/server, json+; tests/data/fio-json) and the ``.out`` files of the
stored run directories (fio 3.33 through tkbench).  tests/data/fio-parsed/expected.jsonl
holds what :func:`tkbench.fio.output.parse` made of each (every field of the
results, ``raw`` aside), written once by the parser before its typed field reading
(see the README there); the parser must reproduce it exactly, to the type of each
number.  A damaged output is one line naming the field.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tkbench.errors import FioParseError
from tkbench.fio.output import parse

DATA = Path(__file__).resolve().parent / "data"
EXPECTED = DATA / "fio-parsed" / "expected.jsonl"


def recorded() -> list[Path]:
    """Every recorded fio output under tests/data, in a fixed order."""
    return sorted(DATA.glob("fio-json/*.json")) + sorted(DATA.glob("rundirs/**/*.out"))


def canon(value: Any) -> Any:
    """Parsed results as JSON: dataclasses by field (``raw`` aside), dicts with
    number keys as [key, value] pairs (JSON keys are text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: canon(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "raw"
        }
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: canon(v) for k, v in value.items()}
        return [[k, canon(v)] for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [canon(v) for v in value]
    return value


def line(path: Path) -> str:
    """One line of expected.jsonl: the file and what the parser makes of it."""
    text = path.read_bytes().decode("utf-8")  # bytes: keep fio's "\r" as they are
    name = path.relative_to(DATA).as_posix()
    return json.dumps({"file": name, "output": canon(parse(text))}, separators=(",", ":"))


def expected() -> dict[str, str]:
    lines = EXPECTED.read_text(encoding="utf-8").splitlines()
    return {json.loads(t)["file"]: t for t in lines}


def test_every_recorded_output_has_expected_results() -> None:
    names = [p.relative_to(DATA).as_posix() for p in recorded()]
    assert len(names) >= 50
    assert sorted(expected()) == sorted(names)


@pytest.mark.parametrize("path", recorded(), ids=lambda p: p.relative_to(DATA).as_posix())
def test_recorded_output_parses_to_the_stored_results(path: Path) -> None:
    want = expected()[path.relative_to(DATA).as_posix()]
    assert line(path) == want  # the JSON text: a 1 that became 1.0 fails too


# ------------------------------------------------------------------ damaged outputs

BASE: dict[str, Any] = {
    "fio version": "fio-3.33",
    "timestamp": 1,
    "global options": {"rw": "randread"},
    "jobs": [
        {
            "jobname": "x",
            "job options": {"bs": "4k"},
            "read": {
                "io_bytes": 4096,
                "iops": 1.0,
                "runtime": 10,
                "total_ios": 1,
                "clat_ns": {
                    "mean": 5.0,
                    "N": 1,
                    "percentile": {"99.000000": 7},
                    "bins": {"100": 1},
                },
                "lat_ns": {"mean": 6.0},
            },
            "usr_cpu": 1.0,
            "sys_cpu": 2.0,
        }
    ],
    "disk_util": [{"name": "sda"}],
}


def damaged(path: tuple[str | int, ...], value: object) -> str:
    doc = copy.deepcopy(BASE)
    here: Any = doc
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    return json.dumps(doc)


READ = ("jobs", 0, "read")
CLAT = (*READ, "clat_ns")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ((*READ, "iops"), "fast", "fio JSON job 'x' read.iops is not a number: 'fast'"),
        ((*READ, "iops"), True, "fio JSON job 'x' read.iops is not a number: True"),
        ((*READ, "iops"), None, "fio JSON job 'x' read.iops is not a number: None"),
        ((*READ, "io_bytes"), [1], "fio JSON job 'x' read.io_bytes is not a number: [1]"),
        ((*READ, "total_ios"), "1", "fio JSON job 'x' read.total_ios is not a number: '1'"),
        ((*READ, "runtime"), {}, "fio JSON job 'x' read.runtime is not a number: {}"),
        (READ, 5, "fio JSON job 'x' read is not an object"),
        (CLAT, [], "fio JSON job 'x' read.clat_ns is not an object"),
        ((*CLAT, "mean"), "x", "fio JSON job 'x' read.clat_ns.mean is not a number: 'x'"),
        ((*CLAT, "N"), "x", "fio JSON job 'x' read.clat_ns.N is not a number: 'x'"),
        ((*CLAT, "percentile"), {"abc": 1}, "fio JSON job 'x' read: bad percentile key 'abc'"),
        (
            (*CLAT, "percentile"),
            {"99.0": "x"},
            "fio JSON job 'x' read percentile 99.0 is not a number: 'x'",
        ),
        ((*CLAT, "bins"), {"1a": 1}, "fio JSON job 'x' read: bad histogram bin key '1a'"),
        ((*CLAT, "bins"), {"100": "x"}, "fio JSON job 'x' read bin 100 is not a number: 'x'"),
        (
            (*CLAT, "bins"),
            {"FIO_IO_U_PLAT_BITS": "x", "3": 1},
            "fio JSON job 'x' read FIO_IO_U_PLAT_BITS is not a number: 'x'",
        ),
        (("jobs", 0), 3, "fio JSON job entry #0 is not an object"),
        (("timestamp",), "x", "fio JSON document.timestamp is not a number: 'x'"),
        (("jobs", 0, "error"), "x", "fio JSON job 'x'.error is not a number: 'x'"),
        (("jobs", 0, "groupid"), None, "fio JSON job 'x'.groupid is not a number: None"),
        (("jobs", 0, "job_runtime"), "x", "fio JSON job 'x'.job_runtime is not a number: 'x'"),
        (("jobs", 0, "elapsed"), [1], "fio JSON job 'x'.elapsed is not a number: [1]"),
        (("jobs", 0, "port"), "x", "fio JSON job 'x'.port is not a number: 'x'"),
        (("jobs", 0, "job_start"), "x", "fio JSON job 'x'.job_start is not a number: 'x'"),
    ],
)
def test_a_damaged_field_is_one_line_naming_it(
    path: tuple[str | int, ...], value: object, message: str
) -> None:
    with pytest.raises(FioParseError) as err:
        parse(damaged(path, value))
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("path", "value", "seen"),
    [
        # what fio's versions differ in, or a reader can do without, is read leniently
        (("jobs", 0, "usr_cpu"), "x", ("x", None, {"bs": "4k"}, 0.0)),
        (("jobs", 0, "jobname"), 5, ("5", None, {"bs": "4k"}, 3.0)),
        (("jobs", 0, "hostname"), 5, ("x", "5", {"bs": "4k"}, 3.0)),
        (("jobs", 0, "job options"), [1], ("x", None, {}, 3.0)),
        (("jobs", 0, "job options"), {"a": 1}, ("x", None, {"a": "1"}, 3.0)),
    ],
)
def test_a_lenient_field(path: tuple[str | int, ...], value: object, seen: tuple[Any, ...]) -> None:
    job = parse(damaged(path, value)).jobs[0]
    assert (job.name, job.hostname, job.options, job.cpu_pct) == seen


def test_lenient_document_fields() -> None:
    out = parse(damaged(("disk_util",), [1, {"a": 1}]))
    assert out.disk_util == [{"a": 1}]
    assert parse(damaged(("disk_util",), {})).disk_util == []
    assert parse(damaged(("fio version",), 3)).fio_version == "3"
    assert parse(damaged(("global options",), None)).global_options == {}
    assert parse(damaged(("timestamp_ms",), 1.5)).timestamp_ms == 1
    read = parse(damaged((*READ, "io_bytes"), 1.5)).jobs[0].read
    assert read.io_bytes == 1 and isinstance(read.io_bytes, int)
    clat = parse(damaged((*CLAT, "N"), 2.7)).jobs[0].read.clat
    assert clat.samples == 2
    assert parse(damaged((*CLAT, "percentile"), [1])).jobs[0].read.percentiles == {}
    absent = parse(damaged(CLAT, None)).jobs[0].read
    assert absent.clat == parse(damaged(CLAT, {})).jobs[0].read.clat


if __name__ == "__main__":  # write expected.jsonl (see tests/data/fio-parsed/README.md)
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_fio_recorded.py --write")
    EXPECTED.parent.mkdir(exist_ok=True)
    EXPECTED.write_text("".join(line(p) + "\n" for p in recorded()), encoding="utf-8")
