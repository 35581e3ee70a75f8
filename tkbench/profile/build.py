"""Loading a profile: its merged TOML validated into a :class:`~.model.Profile`, every
bad key, type or value a :class:`ProfileError` naming the file (or the ``--set``
option) and the key.

Three steps: the TOML is parsed by its tables (:mod:`.schema`: the top-level keys,
each section, each test with the sections it overrides), each test's keys are
checked by every test type (:func:`tkbench.kinds.check_keys`) and become a
:class:`TestSpec`, and what spans the tests is checked last (acceptance criteria
name tests and figures the profile has)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tkbench import kinds
from tkbench.analysis.stoprules import KINDS, kind_named
from tkbench.errors import ProfileError
from tkbench.profile.convert import Conv
from tkbench.profile.finding import apply_overrides, load_raw, parse_override
from tkbench.profile.model import (
    Acceptance,
    Criterion,
    PreconditionSpec,
    Profile,
    PurgeSpec,
    ReportSpec,
    Rounds,
    TestSpec,
    Tracking,
    VolumeSpec,
    Workload,
)
from tkbench.profile.schema import (
    SECTIONS,
    TEST_SCHEMA,
    TEST_SECTIONS,
    TOP_SCHEMA,
    split,
)
from tkbench.units import format_size

Refusal = Callable[[str, str], ProfileError]  # (key, why) -> the one-line error

# each section's record, by the section's name (the Profile's field of the same name)
RECORDS: dict[str, type] = {
    "workload": Workload,
    "rounds": Rounds,
    "purge": PurgeSpec,
    "precondition": PreconditionSpec,
    "report": ReportSpec,
    "acceptance": Acceptance,
    "volume": VolumeSpec,
}
assert RECORDS.keys() == SECTIONS.keys()

# a test's keys that are TestSpec fields as they are (the rest: name, title, its
# sections, its sorted percentiles, its type's family)
_SPEC_KEYS = tuple(
    f.name
    for f in dataclasses.fields(TestSpec)
    if f.name in TEST_SCHEMA and f.name not in ("title", "percentiles")
)


def load(name_or_path: str, overrides: Iterable[str] = ()) -> Profile:
    """Load, merge, override and validate a profile."""
    overrides = list(overrides)
    try:
        keys = [parse_override(o)[0] for o in overrides]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # never "the last one wins"
            raise ProfileError(f"--set {twice[0]} given more than once")
        data, path = load_raw(name_or_path)
        data = apply_overrides(data, overrides)
        return build(data, str(path), set(keys))
    except RecursionError:
        raise ProfileError(
            f"profile {name_or_path}: nested or extended too deeply to be a profile"
        ) from None


def build(data: dict[str, Any], source: str, overridden: set[str] | None = None) -> Profile:
    """Validate merged profile data into a :class:`Profile`.

    Errors about keys in ``overridden`` name the ``--set`` option, others the file.
    """
    by_option = overridden or set()

    def err(key: str, why: str) -> ProfileError:
        if key in by_option:
            return ProfileError(f"--set {key}: {why}")
        return ProfileError(f"{source}: key '{key}': {why}")

    # the TOML by its tables
    rest, parts = split(data, (*SECTIONS, "tests"))
    top = _table("", rest, TOP_SCHEMA, err)
    sections = {name: _table(name, parts[name], schema, err) for name, schema in SECTIONS.items()}
    _pattern_defaults("workload", sections["workload"], parts["workload"], err)
    rounds = sections["rounds"]
    if rounds["window"] > rounds["max"]:
        raise err("rounds.window", f"window {rounds['window']} exceeds rounds.max {rounds['max']}")

    # the tests, each checked by every test type
    if not isinstance(parts["tests"], dict):
        raise err("tests", "expected tables [tests.NAME]")
    tests = [
        spec
        for tname, traw in parts["tests"].items()
        if (spec := _test(tname, traw, top["scope"], sections, err)) is not None
    ]
    if not tests:
        raise err("tests", "the profile defines no enabled test")

    # what spans the tests
    _check_criteria(sections["acceptance"]["criteria"], tests, err)
    # recorded even when inherited or left out, so that a stored run says which variant
    # it claimed (runs stored before the key existed lack it: tkbench.conformance.pts)
    variant = top["pts_variant"]
    return Profile(
        name=top["name"] or Path(source).stem,
        description=top["description"],
        source=source,
        tests=tuple(tests),
        resolved={**data, "pts_variant": variant},
        scope=top["scope"],
        pts_variant=None if variant == "none" else variant,
        **{name: record(**sections[name]) for name, record in RECORDS.items()},
    )


def _table(
    name: str,
    table: Any,
    schema: Mapping[str, tuple[Conv, Any]],
    err: Refusal,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A table's every key of ``schema``: converted where given, else its default (or
    the one in ``defaults``: a test's section over the profile's)."""
    if not isinstance(table, dict):
        raise err(name, "expected a table")
    out = dict(defaults) if defaults else {k: d for k, (_, d) in schema.items()}
    for key, value in table.items():
        where = f"{name}.{key}" if name else key
        if key not in schema:
            raise err(where, "unknown key")
        try:
            out[key] = schema[key][0](value)
        except ValueError as exc:
            raise err(where, str(exc)) from None
    return out


def _test(
    tname: str, traw: Any, scope: str, sections: Mapping[str, Any], err: Refusal
) -> TestSpec | None:
    """One test of the profile (None: switched off)."""
    where = f"tests.{tname}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", tname):
        raise err(where, "test names use lower-case letters, digits, - and _")
    if not isinstance(traw, dict):
        raise err(where, "expected a table")
    plain, own = split(traw, TEST_SECTIONS)
    t = _table(where, plain, TEST_SCHEMA, err)
    if not t["enabled"]:
        return None
    merged = {
        name: _table(f"{where}.{name}", own[name], SECTIONS[name], err, sections[name])
        for name in TEST_SECTIONS
    }
    wl = merged["workload"]
    if wl["write_cache"] != sections["workload"]["write_cache"]:
        raise err(
            f"{where}.workload.write_cache",
            "the write cache is set once for the whole run: set workload.write_cache",
        )
    if merged["rounds"]["window"] > merged["rounds"]["max"]:
        raise err(f"{where}.rounds.window", "window exceeds rounds.max")
    _pattern_defaults(f"{where}.workload", wl, own["workload"], err)
    keys = kinds.TestKeys(scope, tname, t, wl, traw, err)
    typ = kinds.check_keys(keys)  # each test type's keys, checks and defaults
    _check_test(keys, typ)
    return TestSpec(
        name=tname,
        title=t["title"] or tname.replace("-", " ").replace("_", " ").title(),
        workload=Workload(**wl),
        rounds=Rounds(**merged["rounds"]),
        percentiles=tuple(sorted(t["percentiles"])),
        family=keys.family,
        **{k: t[k] for k in _SPEC_KEYS},
    )


def _check_test(k: kinds.TestKeys, typ: kinds.TestType) -> None:
    """The rules of every test, its type's keys filled in: its cache states, its
    points and tracking variables, its scope, its repetitions."""
    t = k.values
    _check_cache(k, typ)
    for req in ("mixes", "block_sizes"):
        if t[req] is None:
            raise k.refuse(req, "missing")
    tracking: tuple[Tracking, ...] = t["tracking"]
    for tr in tracking:
        if tr.bs not in t["block_sizes"] or tr.mix not in t["mixes"]:
            raise k.refuse(
                "tracking", f"{tr.label!r} is not a point of the test (block sizes x mixes)"
            )
    if t["kind"] == "steady" and not tracking and typ.needs_tracking:
        raise k.refuse("tracking", "a steady-state test needs tracking variables")
    _check_scope(k, typ)
    _check_repeat_until(k, typ)


def _check_criteria(criteria: Iterable[Criterion], tests: list[TestSpec], err: Refusal) -> None:
    """Each acceptance criterion names a test of the profile (or one of a test's
    block sizes, split), and a volume figure one its test will have."""
    names = {t.name for t in tests}
    for spec in tests:
        if spec.split_block_sizes:
            names.update(f"{spec.name}-{format_size(bs)}" for bs in spec.block_sizes)
    for c in criteria:
        if c.test not in names:
            raise err(
                "acceptance.criteria", f"no test {c.test!r} (tests: {', '.join(sorted(names))})"
            )
        if c.is_figure:
            _check_figure(c, next((t for t in tests if t.name == c.test), None), err)


def _check_figure(c: Criterion, spec: TestSpec | None, err: Refusal) -> None:
    """A volume figure's criterion names a figure its test will have."""
    known = kinds.of_spec(spec).figure_names(spec) if spec is not None else None
    if known is None:
        raise err(
            "acceptance.criteria",
            f"{c.label}: test {c.test!r} has no volume figures (only a bulk-I/O sweep, a "
            "copy test and a virtual-file test have; give a point: TEST METRIC BS R/W OP VALUE)",
        )
    if c.metric not in known:
        raise err(
            "acceptance.criteria",
            f"{c.label}: test {c.test!r} has no figure {c.metric!r} "
            f"(it has: {', '.join(sorted(known))})",
        )


def _check_repeat_until(k: kinds.TestKeys, typ: kinds.TestType) -> None:
    """``repeat_until`` repeats a fixed test's runs (not a sweep's or a stage's) between
    ``max(repeat, 2)`` and ``repeat_max`` times."""
    t = k.values
    if not t["repeat_until"]:
        return
    if t["kind"] != "fixed":
        raise k.refuse("repeat_until", "applies to tests of kind fixed only")
    if not typ.repeats_until:
        raise k.refuse(
            "repeat_until", "applies to plain fixed tests, not to a procedure or a bulk-I/O sweep"
        )
    least = max(t["repeat"], 2)
    if t["repeat_max"] < least:
        raise k.refuse(
            "repeat_max",
            f"{t['repeat_max']} is less than the least number of runs, {least} "
            "(repeat, and at least 2 to have a deviation)",
        )


def _check_scope(k: kinds.TestKeys, typ: kinds.TestType) -> None:
    """A volume profile touches only its own files (no purge, no preconditioning, a
    test file per job); a device profile has no test files.  Mixing is refused."""
    t = k.values
    if k.scope == "volume":
        for key in ("purge", "precondition"):
            if t[key]:
                raise k.refuse(
                    key, f"a volume benchmark never purges or preconditions: set {key} = false"
                )
        if not kind_named(t["kind"]).on_volume:
            kinds_ok = " or ".join(k.name for k in KINDS.values() if k.on_volume)
            raise k.refuse("kind", f"a volume benchmark's tests are of kind {kinds_ok}")
        if not t["file_size"] and typ.runs_fio:  # not fio: it lays out its own
            raise k.refuse("file_size", "a volume benchmark's test needs a file_size")
    elif t["file_size"]:
        raise k.refuse(
            "file_size",
            'test files belong to volume profiles (scope = "volume"); a device test '
            "addresses the ActiveRange",
        )


def _pattern_defaults(where: str, wl: dict[str, Any], own: Mapping[str, Any], err: Refusal) -> None:
    """``compress_percentage`` belongs to the compressible pattern (50 when not given);
    a test that chooses another pattern drops the percentage it inherited."""
    given = "compress_percentage" in own
    if wl["data_pattern"] == "compressible":
        wl["compress_percentage"] = wl["compress_percentage"] or 50
    elif given:
        raise err(f"{where}.compress_percentage", 'applies only to data_pattern = "compressible"')
    else:
        wl["compress_percentage"] = 0


def _check_cache(k: kinds.TestKeys, typ: kinds.TestType) -> None:
    """A warm cache needs the page cache (buffered I/O); ``drop_caches`` makes a cold
    cache colder and means nothing otherwise."""
    t = k.values
    states = t["caches"] or (t["cache"],)
    key = "caches" if t["caches"] else "cache"
    if t["cache"] != "as-is" and not typ.takes_cache:
        raise k.refuse("cache", typ.no_cache_why)
    if not typ.runs_fio:
        return  # its page cache and drop_caches are its executor's (a copy test's)
    if "warm" in states and k.workload["direct"]:
        raise k.refuse(
            key,
            "a warm cache needs buffered I/O: set workload.direct = false (O_DIRECT bypasses "
            "the page cache)",
        )
    if t["drop_caches"] and "cold" not in states:
        raise k.refuse("drop_caches", 'applies only to a cold cache (cache = "cold")')
