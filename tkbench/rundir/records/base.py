"""What every record file of a run directory shares: its JSON, its version, its checks.

A record class is a frozen dataclass, and its fields *are* the file's format: their
type hints say what a reader can rely on, their defaults what a file that lacks a
field means.  :func:`build` turns a JSON object into the class, checking every field
against its hint on the way (a run directory can be edited by hand, copied half or
written by another tool: a wrong field is one line naming the file and the field,
exit 2, never a ``TypeError`` deep in a report); :func:`dump` turns it back.

Each top-level record (:class:`Record`) carries its format version in ``"schema"``.
A file without one is version 1 (tkbench wrote none before versions were kept per
file).  Reading applies the class's upgrade steps, one version at a time, so every
file tkbench ever wrote still loads; a file of a newer version is refused.  The
history of each format is in its class's docstring and in docs/run-directory.md.

Field metadata (``dataclasses.field(metadata=...)``): ``minimum`` (a number's
lower bound), ``numeric_keys`` (an object whose keys are numbers: percentiles
``"99.99"``, histogram bins in ns), ``omit_none`` (not written while None),
``omit_default`` (not written while it has its default: fields that only some
tests use, so that other tests' files stay as before).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, get_args, get_origin, get_type_hints

from tkbench.errors import RunDirError

R = TypeVar("R")
Upgrade = Callable[[dict[str, Any], "Context"], dict[str, Any]]

# numbers a record can hold: finite, and within what a date, a size or a count can be
LIMIT = 2.0**63

_HINTS: dict[type, dict[str, Any]] = {}
# per record class, what build reads of each field: name, hint, metadata, required
_PLANS: dict[type, list[tuple[str, Any, Mapping[str, Any], bool]]] = {}
_ORIGINS: dict[Any, Any] = {}  # get_origin of each hint, asked once
_UNIONS: dict[Any, tuple[bool, tuple[Any, ...]]] = {}  # a union: takes None, its other members


@dataclasses.dataclass(frozen=True)
class Context:
    """What an upgrade step may need from elsewhere in the run directory."""

    target_kind: str = ""  # the manifest's target kind: file | block | nbd


def hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _expected(hint: Any) -> list[str]:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return [k for a in get_args(hint) for k in _expected(a)]
    if hint is type(None):
        return ["null"]
    if hint is bool:
        return ["boolean"]
    if hint is int:
        return ["integer"]
    if hint is float:
        return ["number"]
    if hint is str:
        return ["string"]
    if hint is Any:
        return ["any"]
    if origin in (tuple, list) or hint in (tuple, list):
        return ["list"]
    return ["object"]  # a Mapping or a record


def _fail(path: Path, where: str, value: Any, hint: Any) -> RunDirError:
    kind = _kind(value)
    return RunDirError(
        f"{path}: field {where} is {'null' if kind == 'null' else f'a {kind}'}, "
        f"expected {' or '.join(_expected(hint))}"
    )


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _plan(cls: type) -> list[tuple[str, Any, Mapping[str, Any], bool]]:
    if cls not in _PLANS:
        types_ = hints(cls)
        _PLANS[cls] = [
            (
                f.name,
                types_[f.name],
                f.metadata,
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        ]
    return _PLANS[cls]


def _origin(hint: Any) -> Any:
    try:
        return _ORIGINS[hint]
    except KeyError:
        _ORIGINS[hint] = found = get_origin(hint)
        return found
    except TypeError:  # a hint that cannot be a key
        return get_origin(hint)


def _convert(value: Any, hint: Any, where: str, path: Path, meta: Mapping[str, Any]) -> Any:
    if hint is str or hint is bool:  # the commonest fields, checked first
        if not isinstance(value, hint):
            raise _fail(path, where, value, hint)
        return value
    origin = _origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if hint not in _UNIONS:
            args = get_args(hint)
            _UNIONS[hint] = (type(None) in args, tuple(a for a in args if a is not type(None)))
        optional, inner = _UNIONS[hint]
        if value is None:
            if optional:
                return None
            raise _fail(path, where, value, hint)
        if len(inner) == 1:
            return _convert(value, inner[0], where, path, meta)
        for a in inner:  # int | str and the like: the first that takes it
            try:
                return _convert(value, a, where, path, meta)
            except RunDirError:
                continue
        raise _fail(path, where, value, hint)
    if hint is int or hint is float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (hint is int and not isinstance(value, int))
        ):
            raise _fail(path, where, value, hint)
        if not (math.isfinite(value) and abs(value) < LIMIT):
            raise RunDirError(f"{path}: field {where} is {value!r}, not a usable number")
        minimum = meta.get("minimum")
        if minimum is not None and value < minimum:
            raise RunDirError(f"{path}: field {where} is {value!r}, below {minimum}")
        return hint(value)
    kind = _kind(value)
    if origin in (tuple, list):  # a record's sequence; a list in a mutable one (fleet.json)
        if kind != "list":
            raise _fail(path, where, value, hint)
        item = get_args(hint)[0]
        return origin(_convert(v, item, f"{where}[{i}]", path, {}) for i, v in enumerate(value))
    if dataclasses.is_dataclass(hint):
        if kind != "object":
            raise _fail(path, where, value, hint)
        return build(hint, value, path, f"{where}.")  # type: ignore[arg-type]
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        if kind != "object":
            raise _fail(path, where, value, hint)
        args = get_args(hint)
        item = args[1] if len(args) == 2 else Any
        out = {}
        for key, v in value.items():
            if meta.get("numeric_keys") and not _is_number(key):
                raise RunDirError(f"{path}: field {where} has the key {key!r}, not a number")
            out[key] = _convert(v, item, f"{where}.{key}", path, {})
        return out
    raise TypeError(f"no conversion for {hint!r}")  # a record class of tkbench is wrong


def build(cls: type[R], data: Any, path: Path, prefix: str = "") -> R:
    """``data`` (a JSON object) as an instance of the record class ``cls``."""
    if not isinstance(data, dict):
        what = prefix.rstrip(".") or "the file"
        raise RunDirError(f"{path}: {what} is not a JSON object")
    kwargs: dict[str, Any] = {}
    for name, hint, meta, required in _plan(cls):
        if name not in data:
            if required:
                raise RunDirError(f"{path}: field {prefix}{name} is missing")
            continue
        kwargs[name] = _convert(data[name], hint, prefix + name, path, meta)
    return cls(**kwargs)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dump(record: Any) -> dict[str, Any]:
    """A record (or a part of one) as a JSON object, fields in their declared order
    (a field with ``omit_none`` metadata is left out while it is None)."""
    return {
        f.name: _plain(value)
        for f in dataclasses.fields(record)
        if not _omitted(f, value := getattr(record, f.name))
    }


def _omitted(f: dataclasses.Field[Any], value: Any) -> bool:
    if value is None and f.metadata.get("omit_none"):
        return True
    # fields newer than the format's first readers, written only when they say something
    return bool(f.metadata.get("omit_default")) and value == (
        f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    )


class Record:
    """A file of the run directory: its version, its upgrade steps, its JSON.

    Subclasses are frozen dataclasses and set :attr:`VERSION` (the version written)
    and :attr:`UPGRADES` (``{n: step}``: a function turning a version-``n`` object
    into a version ``n+1`` one)."""

    VERSION: ClassVar[int] = 1
    UPGRADES: ClassVar[Mapping[int, Upgrade]] = {}

    @classmethod
    def load(cls: type[R], data: Any, path: Path, context: Context | None = None) -> R:
        """Read a record file's JSON: refuse a newer version, upgrade an older one,
        check every field."""
        if not isinstance(data, dict):
            raise RunDirError(f"{path}: the file is not a JSON object")
        version = data.get("schema", 1)
        latest: int = cls.VERSION  # type: ignore[attr-defined]
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise RunDirError(f"{path}: field schema is {version!r}, not a format version")
        if version > latest:
            raise RunDirError(
                f"{path}: written by a newer tkbench (format {version}, this one reads up "
                f"to {latest}); upgrade tkbench to read it"
            )
        data = dict(data)
        steps: Mapping[int, Upgrade] = cls.UPGRADES  # type: ignore[attr-defined]
        for v in range(version, latest):
            data = steps[v](data, context or Context())
        data.pop("schema", None)
        return build(cls, data, path)

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.VERSION, **dump(self)}
