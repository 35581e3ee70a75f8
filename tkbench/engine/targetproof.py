"""What proves, on ``run --resume``, that the target is the one the run wrote
(docs/resume.md, "The resume proves its target").

Capacity alone proves nothing: a relative file target resumed from another
directory, a copy of the file in its place or an edited manifest would each have
the resume write a file the run never wrote.  The manifest keeps the target's
resolved path and a file's device, inode and inode generation
(:func:`tkbench.engine.target_record`); ``target.json`` the file's digest when the
run's writes ended (:class:`tkbench.rundir.records.TargetState`).  Each check raises
:class:`SafetyError` naming what differs, or returns the run log's lines saying
what proved the target (or that it could not be proven).
"""

from __future__ import annotations

import os
from pathlib import Path

from tkbench.device import owndata
from tkbench.device.owndata import identify_node
from tkbench.errors import SafetyError
from tkbench.rundir.records import TargetRecord
from tkbench.rundir.store import RunStore
from tkbench.targets.base import Target


def prove_node(stored: TargetRecord, target: Target) -> list[str]:
    """Refuse (SafetyError) a target that is not the file or device the run wrote: its
    resolved path, and a regular file's device and inode, as the manifest recorded
    them.  Returns what the run log says about the proof."""
    if target.kind not in ("file", "block"):
        return []
    if stored.resolved is None:
        return [
            f"{target.spec} could not be proven to be the target the run wrote (a run "
            "made before tkbench recorded its path and inode): resumed on its capacity"
            + (" and serial" if target.kind == "block" else "")
            + " as before"
        ]
    name = target.spec
    resolved = os.path.realpath(target.path)
    if target.kind == "block":
        serial = target.facts.serial or ""
        known = serial not in ("", "unknown", Path(resolved).name)
        if resolved != stored.resolved and not (known and serial == stored.ident("serial")):
            raise SafetyError(
                f"{name} is not the device this run wrote: {resolved} ≠ {stored.resolved}"
            )
        return [f"{name} is {resolved}, the device the run wrote (serial {serial or '?'})"]
    if resolved != stored.resolved:
        raise SafetyError(f"{name} is not the file this run wrote: {resolved} ≠ {stored.resolved}")
    _, (dev, ino, gen), _ = identify_node(resolved)
    for what, now, then in (
        ("device", dev, stored.st_dev),
        ("inode", ino, stored.st_ino),
        ("inode generation", gen, stored.st_gen),
    ):
        if then is not None and now != then:
            raise SafetyError(f"{name} is not the file this run wrote: {what} {now} ≠ {then}")
    return [f"{name} is {resolved}, device {dev} inode {ino}: the file the run wrote"]


def prove_data(store: RunStore, stored: TargetRecord, target: Target) -> list[str]:
    """Refuse (SafetyError) a file target whose data changed since the run's writes
    ended (``target.json``'s digest).  A run killed while writing has no digest of
    what fio left: its data cannot be compared, and the log says so."""
    if target.kind != "file" or stored.resolved is None:
        return []
    state = store.target_state()
    if state is None or state.writing or not state.digest:
        return [
            f"the data on {target.spec} could not be compared: the run ended while it "
            "was writing (killed), so no digest of what it left was taken"
        ]
    found = owndata.digest_within(target.path)
    if found is None:
        raise SafetyError(f"{target.spec} could not be read to prove it is the run's target")
    digest, size = found
    if (digest, size) != (state.digest, state.size):
        raise SafetyError(
            f"{target.spec} is not as this run left it: the digest of its first and last "
            f"8 MiB is {digest[:12]} ≠ {state.digest[:12]} (written by something else since)"
        )
    return [f"{target.spec} holds the data the run left (digest {digest[:12]})"]
