"""``RUN/write-cache.json``: the drive's volatile write cache as a run set, verified
and restored it (docs/run-directory.md).

The engine writes it through :class:`RunRecordSink` at every step of
:class:`tkbench.device.writecache.WriteCacheSession`; ``show`` and the report read
it with :func:`load`.  Its fields are those of
:class:`tkbench.device.writecache.WriteCacheRecord`, checked when it is read: a
hand-edited or foreign file is one line naming the file and the field (exit 2).
Runs made before tkbench set the write cache have no such file (``load`` gives None).
A reader of a whole run takes it from :attr:`tkbench.rundir.store.RunData.write_cache`,
read once however many parts of a report or summary ask for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from tkbench.device.cacherecord import FILE, WriteCacheRecord
from tkbench.rundir.jsonfile import read_json, write_json


def load(root: Path) -> WriteCacheRecord | None:
    """The write-cache record of the run in ``root``, or None when it has none."""
    path = Path(root) / FILE
    if not path.exists():
        return None
    return WriteCacheRecord.from_dict(read_json(path), path)


class _Store(Protocol):
    """What the sink needs of a :class:`tkbench.rundir.store.RunStore`."""

    @property
    def root(self) -> Path: ...

    def log(self, message: str) -> None: ...


class RunRecordSink:
    """Where a write-cache session of a run keeps its record: the run directory."""

    def __init__(self, store: _Store) -> None:
        self.store = store

    def previous(self) -> dict[str, Any] | None:
        record = load(self.store.root)
        return record.to_dict() if record is not None else None

    def save(self, record: dict[str, Any]) -> None:
        write_json(self.store.root / FILE, record)  # atomic: temp file, fsync, rename

    def log(self, message: str) -> None:
        self.store.log(message)
