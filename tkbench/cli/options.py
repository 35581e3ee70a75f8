"""Option types of the command line: one value per option, checked while parsing."""

from __future__ import annotations

import argparse
import datetime
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tkbench.errors import InputError
from tkbench.units import parse_size

_GIVEN = "_given"  # the namespace's record of the options Once saw: dest -> value


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether the option of ``dest`` was on the command line (rather than its default)."""
    return dest in vars(args).get(_GIVEN, {})


class Once(argparse.Action):
    """A single-valued option given twice with different values is an error, never
    "the last one wins": two ``--confirm`` IDs, two ``--out`` directories or two
    ``--target`` paths mean the command line is not what its author thinks."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        seen: dict[str, Any] = namespace.__dict__.setdefault(_GIVEN, {})
        if self.dest in seen and seen[self.dest] != values:
            raise InputError(
                f"{option_string or self.dest} given twice with different values "
                f"({seen[self.dest]} and {values})"
            )
        seen[self.dest] = values
        setattr(namespace, self.dest, values)


class Many(argparse.Action):
    """A repeatable option (``run --target A --target B``): the values in order, the
    same value given again once only."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        got = list(getattr(namespace, self.dest, None) or [])
        if values not in got:
            got.append(values)
        setattr(namespace, self.dest, got)


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so errors share one path, and whose
    plain options may be given once only (:class:`Once`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)
        self.register("action", "store", Once)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


def size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def text_arg(text: str) -> str:
    """A name tkbench writes into job files, manifests and JSON: it must be UTF-8
    (a path of other bytes failed only at the first round, after the purge)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid UTF-8") from None
    return text


def path_arg(text: str) -> Path:
    """A path option: an empty value is refused (``Path("")`` would mean the current
    directory, and a run directory or report would land there); so is one that is not
    UTF-8."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path")
    return Path(text_arg(text))


def number(
    low: float, high: float, *, low_open: bool = False, unit: str = ""
) -> Callable[[str], float]:
    """A float option within [low, high] (or (low, high]): finite, no NaN."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or value > high:
            bound = f"greater than {low:g}" if low_open else f"at least {low:g}"
            raise argparse.ArgumentTypeError(
                f"{text!r} is out of range: give a number {bound} and at most {high:g}{unit}"
            )
        return value

    return parse


def history_arg(text: str) -> str:
    """``--history``: a file path (SQLite) or a ``postgresql://`` URL libpq can parse."""
    from tkbench.history import check_location

    try:
        return check_location(text_arg(text))
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def rig_name(text: str, what: str = "--rig") -> str:
    """A rig name (``--rig``, ``TKBENCH_RIG``): printable, at most 100 characters."""
    name = text_arg(text).strip()
    if not name or len(name) > 100 or not name.isprintable():
        raise InputError(f"{what} {text!r}: give a printable name of 1 to 100 characters")
    return name


def rig_arg(text: str) -> str:
    try:
        return rig_name(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def date_arg(text: str) -> float:
    """``--since``: a date or date and time (ISO 8601, local time unless it has an
    offset), as a Unix time."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a date: {text!r} (give YYYY-MM-DD or YYYY-MM-DDTHH:MM)"
        ) from None
    return when.timestamp()  # naive: local time
