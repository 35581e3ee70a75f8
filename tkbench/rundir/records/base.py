"""What every record file of a run directory shares: its version and its checks.

A record class is a frozen dataclass, and its fields *are* the file's format, read
and written by the one typed-record mechanism of :mod:`tkbench.typed`
(:func:`build`, :func:`dump` and the field conventions ``minimum``,
``numeric_keys``, ``omit_none``, ``omit_default``, ...; re-exported here for the
run directory's readers): a wrong field is one line naming the file and the field,
exit 2, never a ``TypeError`` deep in a report.

Each top-level record (:class:`Record`) carries its format version in ``"schema"``.
A file without one is version 1 (tkbench wrote none before versions were kept per
file).  Reading applies the class's upgrade steps, one version at a time, so every
file tkbench ever wrote still loads; a file of a newer version is refused.  The
history of each format is in its class's docstring and in docs/run-directory.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tkbench.errors import RunDirError
from tkbench.typed import build, dump, hints

__all__ = ["Context", "Record", "Upgrade", "build", "dump", "hints"]

R = TypeVar("R")
Upgrade = Callable[[dict[str, Any], "Context"], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Context:
    """What an upgrade step may need from elsewhere in the run directory."""

    target_kind: str = ""  # the manifest's target kind: file | block | nbd


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
