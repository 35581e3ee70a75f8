"""The shape of every record file of a run directory, checked when it is read (pure).

A run directory can be edited by hand, copied half, or written by a tool that is not
tkbench.  Every reader relies on certain fields having certain types; checking them
here, once, when a file is loaded turns "internal error: TypeError" deep in a report
into one line naming the file and the field (exit 2).  Fields not listed are free;
listed fields that are missing are an error only where ``required``.

The field lists are also the written description of the schema-1 record formats
(docs/run-directory.md describes their meaning).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RunDirError

NUMBER = "number"
INT = "integer"
STR = "string"
BOOL = "boolean"
OBJECT = "object"
LIST = "list"
NULL = "null"


@dataclass(frozen=True)
class Field:
    kinds: tuple[str, ...]
    required: bool = False
    shape: Mapping[str, Field] | None = None  # an object's own fields
    items: Field | None = None  # a list's items, or an object's values (no ``shape``)
    minimum: float | None = None
    numeric_keys: bool = False  # an object whose keys are numbers ("99.99", bins in ns)


def f(
    *kinds: str,
    required: bool = False,
    shape: Any = None,
    items: Field | None = None,
    minimum: float | None = None,
    numeric_keys: bool = False,
) -> Field:
    return Field(tuple(kinds), required, shape, items, minimum, numeric_keys)


def _kind(value: Any) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, str):
        return STR
    if isinstance(value, dict):
        return OBJECT
    if isinstance(value, list):
        return LIST
    return type(value).__name__


def _accepts(kinds: tuple[str, ...], kind: str) -> bool:
    return kind in kinds or (kind == INT and NUMBER in kinds)


# numbers a record can hold: finite, and within what a date, a size or a count can be
LIMIT = 2.0**63


def _check(value: Any, spec: Field, where: str, path: Path) -> None:
    kind = _kind(value)
    if not _accepts(spec.kinds, kind):
        raise RunDirError(
            f"{path}: field {where} is {'null' if kind == NULL else f'a {kind}'}, "
            f"expected {' or '.join(spec.kinds)}"
        )
    if kind in (INT, NUMBER) and not (math.isfinite(value) and abs(value) < LIMIT):
        raise RunDirError(f"{path}: field {where} is {value!r}, not a usable number")
    if spec.minimum is not None and kind in (INT, NUMBER) and value < spec.minimum:
        raise RunDirError(f"{path}: field {where} is {value!r}, below {spec.minimum}")
    if kind == OBJECT and spec.shape is not None:
        check_object(value, spec.shape, path, f"{where}.")
    elif kind == OBJECT and spec.items is not None:
        for key, item in value.items():
            if spec.numeric_keys and not _is_number(key):
                raise RunDirError(f"{path}: field {where} has the key {key!r}, not a number")
            _check(item, spec.items, f"{where}.{key}", path)
    elif kind == LIST and spec.items is not None:
        for i, item in enumerate(value):
            _check(item, spec.items, f"{where}[{i}]", path)


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def check_object(
    data: Any, shape: Mapping[str, Field], path: Path, prefix: str = ""
) -> dict[str, Any]:
    """``data`` as a dict whose listed fields have their types, or RunDirError."""
    if not isinstance(data, dict):
        what = prefix.rstrip(".") or "the file"
        raise RunDirError(f"{path}: {what} is not a JSON object")
    for name, spec in shape.items():
        if name not in data:
            if spec.required:
                raise RunDirError(f"{path}: field {prefix}{name} is missing")
            continue
        _check(data[name], spec, f"{prefix}{name}", path)
    return data


NUM = f(NUMBER)
OPT_NUM = f(NUMBER, NULL)

DIRECTION: dict[str, Field] = {
    "io_bytes": NUM,
    "total_ios": OPT_NUM,
    "iops": NUM,
    "bw_bytes": NUM,
    "lat_mean_ns": NUM,
    "lat_max_ns": NUM,
    "percentiles_ns": f(OBJECT, items=NUM, numeric_keys=True),
    "bins_ns": f(OBJECT, items=NUM, numeric_keys=True),
}
POINT: dict[str, Field] = {
    "bs": f(INT, required=True),
    "read_pct": f(INT, required=True),
    "iops": NUM,
    "bw_bytes": NUM,
    "lat_mean_ns": NUM,
    "lat_max_ns": NUM,
    "numjobs": f(INT),
    "iodepth": f(INT),
    "read": f(OBJECT, shape=DIRECTION),
    "write": f(OBJECT, shape=DIRECTION),
}
ROUND: dict[str, Field] = {
    "round": f(INT, required=True),
    "segment": f(INT),
    "started": NUM,
    "ended": NUM,
    "points": f(LIST, required=True, items=f(OBJECT, shape=POINT)),
    "tracking": f(OBJECT, required=True, items=NUM),
    "written_bytes": NUM,
    "total_written_bytes": NUM,
}
PLANNED_POINT: dict[str, Field] = {
    "bs": f(INT, required=True),
    "read_pct": f(INT, required=True),
    "label": f(STR),
    "numjobs": f(INT),
    "iodepth": f(INT),
    "runtime": NUM,
}
TEST_PLAN: dict[str, Field] = {
    "name": f(STR),
    "title": f(STR),
    "kind": f(STR, required=True),
    "points": f(LIST, required=True, items=f(OBJECT, shape=PLANNED_POINT)),
    "tracking": f(LIST, items=f(STR)),
    "rounds": f(
        OBJECT,
        shape={
            "max": f(INT, minimum=1),
            "window": f(INT, minimum=1),
            "max_excursion": f(NUMBER, minimum=0),
            "max_slope_excursion": f(NUMBER, minimum=0),
        },
    ),
    "workload": f(OBJECT, shape={"numjobs": f(INT, minimum=1), "iodepth": f(INT, minimum=1)}),
    "percentiles": f(LIST, items=NUM),
    "histogram": f(BOOL),
    "notes": f(LIST, items=f(STR)),
    "precondition": f(OBJECT, NULL, shape={"total_bytes": NUM, "bs": f(INT, minimum=1)}),
}
RESULT: dict[str, Field] = {
    "steady_state": f(BOOL, NULL),
    "rounds": f(INT),
    "window": f(LIST, items=f(INT)),
    "total_written_bytes": NUM,
    "ended": NUM,
    "summary": f(STR),
}
PHASE: dict[str, Field] = {
    "notes": f(LIST, items=f(STR)),
    "started": NUM,
    "ended": NUM,
    "seconds": NUM,
    "written_bytes": NUM,
}
CHECKS: dict[str, Field] = {
    "passed": f(BOOL),
    "checks": f(LIST, items=f(OBJECT)),
    "baseline": f(STR, NULL),
}
TARGET: dict[str, Field] = {
    "spec": f(STR),
    "kind": f(STR),
    "path": f(STR),
    "capacity_bytes": f(INT, minimum=0),
    "logical_sector": f(INT),
    "identity": f(OBJECT, shape={"capacity_bytes": f(INT, minimum=0)}),
}
MANIFEST: dict[str, Field] = {
    "tkbench_version": f(STR),
    "fio_version": f(STR),
    "host": f(OBJECT),
    "fio_servers": f(LIST, items=f(STR)),
    "command_line": f(LIST, items=f(STR)),
    "profile": f(OBJECT, shape={"name": f(STR), "source": f(STR), "resolved": f(OBJECT)}),
    "target": f(OBJECT, shape=TARGET),
    "active_bytes": f(INT),
    "tests": f(LIST, items=f(STR)),
    "plan_notes": f(LIST, items=f(STR)),
    "status": f(STR),
    "started": OPT_NUM,
    "ended": OPT_NUM,
    "resumes": f(LIST, items=f(OBJECT, shape={"at": NUM, "rounds_kept": f(INT)})),
    "error": f(STR, NULL),
}
