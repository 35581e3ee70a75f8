"""Typed JSON records: a frozen dataclass whose fields *are* a JSON format.

A record's type hints say what a reader can rely on, its defaults what an object
that lacks a field means.  :func:`build` turns a JSON object into the class,
checking every field against its hint on the way (a file can be edited by hand,
copied half or written by another tool: a wrong field is one line naming the file
and the field, never a ``TypeError`` deep in a report); :func:`dump` turns it back,
fields in their declared order.  Every JSON object tkbench writes from a record
goes through these two: the run directory's files (:mod:`tkbench.rundir.records`,
which adds versions and upgrade steps), ``write-cache.json``, ``fleet.json``, a
drive's identity and health, a purge's account, and what ``--json`` prints.

Field conventions, as ``dataclasses.field(metadata=...)`` (:class:`Conventions`):

* ``minimum``: a number's lower bound;
* ``numeric_keys``: an object whose keys are numbers (percentiles ``"99.99"``,
  histogram bins in ns);
* ``choices``: the only words a text field may hold;
* ``omit_none``: not written while None;
* ``omit_default``: not written while it has its default (fields that only some
  tests use, so that other tests' files stay as before);
* ``digits``: a number written rounded to that many decimals;
* ``internal``: never written (a field the program keeps beside the format);
* ``key``: the field's name in the JSON where that is no Python name (``"p99.9"``).

A class may name properties in ``DERIVED``: they are written after the fields, for
readers of the JSON that want them computed, and never read back.

The error raised is a parameter (``error``, a :class:`~tkbench.errors.TkbenchError`
class; :class:`~tkbench.errors.RunDirError` unless said otherwise, exit 2).  This
package sits in the base layer (docs/architecture.md) so that the devices, the
analysis and :mod:`tkbench.proc` can use it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar, get_args, get_origin, get_type_hints

from tkbench.errors import RunDirError, TkbenchError

R = TypeVar("R")
T = TypeVar("T", bound="Typed")
Where = Path | str
Error = type[TkbenchError]

# numbers a record can hold: finite, and within what a date, a size or a count can be
LIMIT = 2.0**63

_HINTS: dict[type, dict[str, Any]] = {}


@dataclasses.dataclass(frozen=True)
class Conventions:
    """A field's conventions, read once from its metadata (other keys there are not
    this module's: the emulator's options keep their help text in it)."""

    minimum: float | None = None
    numeric_keys: bool = False
    choices: tuple[str, ...] = ()
    omit_none: bool = False
    omit_default: bool = False
    digits: int | None = None
    internal: bool = False
    key: str = ""  # the JSON's name of the field, when not the field's own


_PLAIN = Conventions()
_KEYS = tuple(f.name for f in dataclasses.fields(Conventions))
_CONVENTIONS: dict[dataclasses.Field[Any], Conventions] = {}


def conventions(f: dataclasses.Field[Any]) -> Conventions:
    if f not in _CONVENTIONS:
        said = {k: f.metadata[k] for k in _KEYS if k in f.metadata}
        _CONVENTIONS[f] = Conventions(**said) if said else _PLAIN
    return _CONVENTIONS[f]


def hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


# JSON's kinds of value by Python type, in the order a value is tried (a bool is an int)
_KINDS: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (dict, "object"),
    (list, "list"),
)


def _kind(value: Any) -> str:
    return next((k for t, k in _KINDS if isinstance(value, t)), type(value).__name__)


def _expected(hint: Any) -> list[str]:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return [k for a in get_args(hint) for k in _expected(a)]
    named = [k for t, k in _KINDS[:5] if hint is t]  # a scalar's name
    if named:
        return named
    if hint is Any:
        return ["any"]
    if origin in (tuple, list) or hint in (tuple, list):
        return ["list"]
    return ["object"]  # a Mapping or a record


class _Reader:
    """One :func:`build`: where the data came from and the error to raise."""

    def __init__(self, path: Where, error: Error) -> None:
        self.path = path
        self.error = error

    def fail(self, where: str, value: Any, hint: Any) -> TkbenchError:
        kind = _kind(value)
        return self.error(
            f"{self.path}: field {where} is {'null' if kind == 'null' else f'a {kind}'}, "
            f"expected {' or '.join(_expected(hint))}"
        )

    def record(self, cls: type[R], data: Any, prefix: str) -> R:
        if not isinstance(data, dict):
            what = prefix.rstrip(".") or "the file"
            raise self.error(f"{self.path}: {what} is not a JSON object")
        kwargs: dict[str, Any] = {}
        for f in _plan(cls):
            if f.key not in data:
                if f.required:
                    raise self.error(f"{self.path}: field {prefix}{f.key} is missing")
                continue
            kwargs[f.name] = self.value(data[f.key], f.hint, prefix + f.key, f.meta)
        return cls(**kwargs)

    def value(self, value: Any, hint: Any, where: str, meta: Conventions) -> Any:
        if (hint is str or hint is bool) and not meta.choices:  # the commonest, first
            if not isinstance(value, hint):
                raise self.fail(where, value, hint)
            return value
        if hint is Any:
            return value
        origin = _origin(hint)
        if origin in (typing.Union, types.UnionType):
            optional, inner = _union(hint)
            if value is None:
                if optional:
                    return None
                raise self.fail(where, value, hint)
            if len(inner) == 1:
                return self.value(value, inner[0], where, meta)
            for a in inner:  # int | str and the like: the first that takes it
                try:
                    return self.value(value, a, where, meta)
                except self.error:
                    continue
            raise self.fail(where, value, hint)
        if hint is int or hint is float:
            takes = int if hint is int else int | float
            if isinstance(value, bool) or not isinstance(value, takes):
                raise self.fail(where, value, hint)
            if not (math.isfinite(value) and abs(value) < LIMIT):
                raise self.error(f"{self.path}: field {where} is {value!r}, not a usable number")
            if meta.minimum is not None and value < meta.minimum:
                raise self.error(f"{self.path}: field {where} is {value!r}, below {meta.minimum}")
            return hint(value)
        kind = _kind(value)
        if hint in (str, bool):
            if kind != _expected(hint)[0]:
                raise self.fail(where, value, hint)
            if meta.choices and value not in meta.choices:
                raise self.error(
                    f"{self.path}: field {where} is {value!r:.40}, not one of "
                    f"{', '.join(meta.choices)}"
                )
            return value
        if origin in (tuple, list):  # a record's sequence; a list in a mutable one
            if kind != "list":
                raise self.fail(where, value, hint)
            item = get_args(hint)[0]
            return origin(self.value(v, item, f"{where}[{i}]", _PLAIN) for i, v in enumerate(value))
        if dataclasses.is_dataclass(hint):
            if kind != "object":
                raise self.fail(where, value, hint)
            return self.record(hint, value, f"{where}.")  # type: ignore[arg-type]
        if origin in (Mapping, dict) or hint in (Mapping, dict):
            if kind != "object":
                raise self.fail(where, value, hint)
            args = get_args(hint)
            item = args[1] if len(args) == 2 else Any
            out = {}
            for key, v in value.items():
                if meta.numeric_keys and not _is_number(key):
                    raise self.error(
                        f"{self.path}: field {where} has the key {key!r}, not a number"
                    )
                out[key] = self.value(v, item, f"{where}.{key}", _PLAIN)
            return out
        raise TypeError(f"no conversion for {hint!r}")  # a record class of tkbench is wrong


@dataclasses.dataclass(frozen=True)
class _Field:
    """What :meth:`_Reader.record` reads of one field, worked out once per class."""

    name: str
    key: str
    hint: Any
    meta: Conventions
    required: bool


_PLANS: dict[type, tuple[_Field, ...]] = {}
_ORIGINS: dict[Any, Any] = {}
_UNIONS: dict[Any, tuple[bool, tuple[Any, ...]]] = {}  # takes None; its other members


def _plan(cls: type) -> tuple[_Field, ...]:
    if cls not in _PLANS:
        types_ = hints(cls)
        _PLANS[cls] = tuple(
            _Field(
                f.name,
                conventions(f).key or f.name,
                types_[f.name],
                conventions(f),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
    return _PLANS[cls]


def _origin(hint: Any) -> Any:
    try:
        if hint not in _ORIGINS:
            _ORIGINS[hint] = get_origin(hint)
        return _ORIGINS[hint]
    except TypeError:  # a hint that cannot be a key
        return get_origin(hint)


def _union(hint: Any) -> tuple[bool, tuple[Any, ...]]:
    if hint not in _UNIONS:
        args = get_args(hint)
        _UNIONS[hint] = (type(None) in args, tuple(a for a in args if a is not type(None)))
    return _UNIONS[hint]


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def build(
    cls: type[R], data: Any, path: Where, prefix: str = "", *, error: Error = RunDirError
) -> R:
    """``data`` (a JSON object) as an instance of the record class ``cls``; ``error``
    (one line naming ``path`` and the field) when a field is wrong."""
    return _Reader(path, error).record(cls, data, prefix)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dump(record: Any) -> dict[str, Any]:
    """A record (or a part of one) as a JSON object: its fields in their declared
    order (as their conventions say), then its ``DERIVED`` properties."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        meta = conventions(f)
        value = getattr(record, f.name)
        if not _omitted(f, meta, value):
            out[meta.key or f.name] = (
                round(value, meta.digits) if meta.digits is not None else _plain(value)
            )
    for name in getattr(type(record), "DERIVED", ()):
        out[name] = _plain(getattr(record, name))
    return out


def _omitted(f: dataclasses.Field[Any], meta: Conventions, value: Any) -> bool:
    if meta.internal or (value is None and meta.omit_none):
        return True
    # fields newer than the format's first readers, written only when they say something
    return meta.omit_default and value == (
        f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    )


class Typed:
    """A record class's JSON by the conventions above: ``to_dict`` is :func:`dump`,
    ``from_dict`` is :func:`build` (for subclasses that are dataclasses)."""

    DERIVED: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return dump(self)

    @classmethod
    def from_dict(
        cls: type[T], data: Any, path: Where | None = None, *, error: Error = RunDirError
    ) -> T:
        return build(cls, data, cls.__name__ if path is None else path, error=error)
