"""A fleet's drives: every target checked as ``tkbench plan`` checks it, its run
directory named, and the ``--confirm`` ID of each block device matched to it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tkbench.errors import InputError, SafetyError
from tkbench.fleet.together import check_together, sized
from tkbench.rundir.records.run import DeviceFacts


@dataclass(frozen=True)
class Drive:
    """One target of a fleet: its ``--target``, the run directory's name below the
    fleet directory, and the ``--confirm`` ID handed to its run (block devices)."""

    spec: str
    name: str
    kind: str  # file, block, nbd; "unknown" when it could not be opened (the run says why)
    confirm: str | None = None
    confirm_id: str | None = None  # the ID the device is confirmed with (serial or name)


@dataclass(frozen=True)
class _Found:
    """A target as planning found it: its kind, what its device says of itself, and
    the ID a ``--confirm`` names it by (block devices)."""

    spec: str
    kind: str
    device: DeviceFacts
    confirm_id: str | None = None


def _safe(text: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip("._")
    return safe or "target"


def run_name(spec: str, kind: str, device: DeviceFacts) -> str:
    """``MODEL-SERIAL`` for a block device (its kernel name when it reports neither),
    the file's name for a file, the socket's name for an NBD URI."""
    if kind == "block":
        said = ((device.model or "").strip(), (device.serial or "").strip())
        parts = [p for p in said if p and p != "unknown"]
        if parts:
            return _safe("-".join(parts))
        return _safe(Path(os.path.realpath(spec)).name)
    return _safe(Path(spec.split("socket=")[-1].split("&")[0]).name)


def unique(names: list[str]) -> list[str]:
    """The names, a later one of the same name suffixed ``-2``, ``-3``...: one run
    directory per drive."""
    out: list[str] = []
    for n in names:
        cand, k = n, 1
        while cand in out:
            k += 1
            cand = f"{n}-{k}"
        out.append(cand)
    return out


def plan_drives(
    targets: Sequence[str],
    confirms: Sequence[str],
    *,
    profile: str,
    size: int | None,
    overrides: Sequence[str],
) -> list[Drive]:
    """Check every target as ``tkbench plan`` does (the profile, ``--set``, each
    target's spec: bad input ends the whole command, nothing written), name the run
    directories and match each ``--confirm`` ID to the one block device it names.
    A target that is refused here (neither file nor device) is still a drive: its
    run refuses it with its own message and exit code, the others go on."""
    from tkbench.engine.runs import RunRequest, prepare

    if len(targets) < 2:
        raise InputError("a fleet needs two or more --target")
    check_together(targets, size)
    found: list[_Found] = []
    for spec in targets:
        try:
            _, target = prepare(
                RunRequest(
                    profile=profile,
                    target=spec,
                    size=size if sized(spec) else None,
                    overrides=list(overrides),
                )
            )
        except SafetyError:
            found.append(_Found(spec, "unknown", DeviceFacts()))
            continue
        cid = getattr(getattr(target, "device", None), "confirm_id", None)
        found.append(_Found(spec, target.kind, DeviceFacts.of(target.identity), cid))
    blocks = [f for f in found if f.kind == "block"]
    by_id: dict[str, str] = {}
    for c in confirms:
        c = c.strip()
        named = [f.spec for f in blocks if f.confirm_id == c]
        if not named:
            ids = ", ".join(f.confirm_id for f in blocks if f.confirm_id) or "none"
            raise InputError(
                f"--confirm {c} names none of the block devices among the targets "
                f"(their IDs: {ids}; see 'tkbench devices')"
            )
        by_id[named[0]] = c
    names = unique([run_name(f.spec, f.kind, f.device) for f in found])
    return [
        Drive(f.spec, name, f.kind, confirm=by_id.get(f.spec), confirm_id=f.confirm_id)
        for f, name in zip(found, names, strict=True)
    ]
