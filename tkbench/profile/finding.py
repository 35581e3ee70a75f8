"""Finding a profile by name on the search path, reading its TOML, merging what it
extends and applying ``--set`` overrides."""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tkbench.errors import ProfileError
from tkbench.profile import paths
from tkbench.profile.schema import SECTIONS, TEST_SCHEMA, TEST_SECTIONS, TOP_SCHEMA


def bundled_dir() -> Path:
    """The profiles shipped inside the package."""
    return paths.bundled("profiles")


@dataclass(frozen=True)
class ProfileEntry:
    """A profile found by name on the search path (:func:`paths.profile_dirs`)."""

    name: str
    path: Path
    origin: str  # "user" | "system" | "bundled"
    shadows: tuple[str, ...] = ()  # origins of same-named profiles it hides


def catalogue() -> list[ProfileEntry]:
    """Every profile name on the search path, with the file that name loads."""
    found: dict[str, ProfileEntry] = {}
    for d in paths.profile_dirs():
        try:
            files = sorted(d.path.glob("*.toml"))
        except OSError:
            continue
        for f in files:
            old = found.get(f.stem)
            if old is None:
                found[f.stem] = ProfileEntry(f.stem, f, d.origin)
            else:
                found[f.stem] = ProfileEntry(
                    old.name, old.path, old.origin, (*old.shadows, d.origin)
                )
    return [found[k] for k in sorted(found)]


def available() -> list[str]:
    """Names of the profiles on the search path."""
    return [e.name for e in catalogue()]


def find(name_or_path: str, relative_to: Path | None = None, skip: Iterable[Path] = ()) -> Path:
    """Resolve a profile name (``pts-e``) or a path to a TOML file.

    A name is looked up beside the profile that extends it (``relative_to``),
    then in the user, system and bundled profile directories; files in ``skip``
    (the profiles extending it) are passed over, so that a user's ``quick.toml``
    may extend the bundled ``quick``.
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path:
        if relative_to is not None and not p.is_absolute():
            cand = relative_to / p
            if cand.is_file():
                return cand
        if p.is_file():
            return p
        raise ProfileError(f"profile file not found: {name_or_path}")
    dirs = ([relative_to] if relative_to else []) + [d.path for d in paths.profile_dirs()]
    skipped = set(skip)
    for d in dirs:
        cand = d / f"{name_or_path}.toml"
        if cand.is_file() and cand.resolve() not in skipped:
            return cand
    raise ProfileError(
        f"unknown profile {name_or_path!r} (available: {', '.join(available()) or 'none'})"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: TOML syntax error: {exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a TOML file (not UTF-8 text)") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror}") from None


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_raw(name_or_path: str, _seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The merged TOML data of a profile and everything it extends."""
    path = find(name_or_path, _seen[-1].parent if _seen else None, _seen).resolve()
    if path in _seen:
        chain = " -> ".join(p.stem for p in (*_seen, path))
        raise ProfileError(f"{path}: 'extends' forms a cycle: {chain}")
    data = _read_toml(path)
    parent = data.pop("extends", None)
    if parent is not None:
        if not isinstance(parent, str):
            raise ProfileError(f"{path}: key 'extends': expected a string")
        base, _ = load_raw(parent, (*_seen, path))
        base.pop("name", None)
        base.pop("description", None)
        data = _merge(base, data)
    return data, path


def select(name_or_path: str, names: Iterable[str], overrides: Iterable[str] = ()) -> list[str]:
    """``--set`` overrides that switch off every test of a profile not in ``names``
    (``tkbench run --tests``); an unknown name is a ProfileError naming the tests."""
    data, _ = load_raw(name_or_path)
    data = apply_overrides(data, overrides)
    have = test_names(data)
    wanted = [n.strip() for n in names if n.strip()]
    unknown = [n for n in wanted if n not in have]
    if unknown or not wanted:
        raise ProfileError(
            f"--tests: no test {', '.join(repr(n) for n in unknown) or 'named'} in profile "
            f"{name_or_path} (its tests: {', '.join(have)})"
        )
    return [f"tests.{t}.enabled=false" for t in have if t not in wanted]


def test_names(data: Mapping[str, Any]) -> list[str]:
    """The names of a profile's tests, as its merged TOML defines them (none when its
    ``tests`` is no table: the loader refuses that)."""
    tests = data.get("tests", {})
    return list(tests) if isinstance(tests, dict) else []


def parse_override(text: str) -> tuple[str, Any]:
    """``rounds.max=30`` -> ("rounds.max", 30).  Values are TOML; bare words are strings."""
    if "=" not in text:
        raise ProfileError(f"--set {text!r}: expected KEY=VALUE")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*", key):
        raise ProfileError(f"--set {text!r}: bad key {key!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare string such as 4k, 60s or Lab 3; validation checks its type
    return key, value


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for text in overrides:
        key, value = parse_override(text)
        parts = key.split(".")
        _check_override_key(out, parts, key)
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ProfileError(f"--set {key}: {part!r} is not a table")
        node[parts[-1]] = value
    return out


def _check_override_key(data: dict[str, Any], parts: list[str], key: str) -> None:
    def unknown() -> ProfileError:
        return ProfileError(f"--set {key}: unknown key")

    head = parts[0]
    if len(parts) == 1:
        if head not in TOP_SCHEMA or head == "extends":
            raise unknown()
        return
    if head in SECTIONS:
        if len(parts) != 2 or parts[1] not in SECTIONS[head]:
            raise unknown()
        return
    if head == "tests":
        tests = test_names(data)
        if len(parts) < 3 or parts[1] not in tests:
            raise ProfileError(
                f"--set {key}: unknown test {parts[1] if len(parts) > 1 else ''!r} "
                f"(tests: {', '.join(tests)})"
            )
        rest = parts[2:]
        if rest[0] in TEST_SECTIONS:
            if len(rest) != 2 or rest[1] not in SECTIONS[rest[0]]:
                raise unknown()
        elif len(rest) != 1 or rest[0] not in TEST_SCHEMA:
            raise unknown()
        return
    raise unknown()
