"""Loading a profile: its merged TOML validated into a :class:`~.model.Profile`, every
bad key, type or value a :class:`ProfileError` naming the file (or the ``--set``
option) and the key."""

from __future__ import annotations

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
    ACCEPTANCE_SCHEMA,
    PRECONDITION_SCHEMA,
    PURGE_SCHEMA,
    REPORT_SCHEMA,
    ROUNDS_SCHEMA,
    SECTIONS,
    TEST_SCHEMA,
    TOP_KEYS,
    VOLUME_SCHEMA,
    WORKLOAD_SCHEMA,
)
from tkbench.units import format_size


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
    overridden = overridden or set()

    def err(key: str, why: str) -> ProfileError:
        if key in overridden:
            return ProfileError(f"--set {key}: {why}")
        return ProfileError(f"{source}: key '{key}': {why}")

    for key in data:
        if key not in TOP_KEYS and key not in SECTIONS and key != "tests":
            raise err(key, "unknown key")
    for key, conv in TOP_KEYS.items():
        if key in data:
            try:
                conv(data[key])
            except ValueError as exc:
                raise err(key, str(exc)) from None

    def section(
        name: str,
        table: Any,
        schema: dict[str, tuple[Conv, Any]],
        defaults: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise err(name, "expected a table")
        out = dict(defaults) if defaults else {k: d for k, (_, d) in schema.items()}
        for key, value in table.items():
            if key not in schema:
                raise err(f"{name}.{key}", "unknown key")
            try:
                out[key] = schema[key][0](value)
            except ValueError as exc:
                raise err(f"{name}.{key}", str(exc)) from None
        return out

    wl = section("workload", data.get("workload"), WORKLOAD_SCHEMA)
    _pattern_defaults("workload", wl, data.get("workload") or {}, err)
    rd = section("rounds", data.get("rounds"), ROUNDS_SCHEMA)
    pg = section("purge", data.get("purge"), PURGE_SCHEMA)
    pc = section("precondition", data.get("precondition"), PRECONDITION_SCHEMA)
    rp = section("report", data.get("report"), REPORT_SCHEMA)
    ac = section("acceptance", data.get("acceptance"), ACCEPTANCE_SCHEMA)
    vol = section("volume", data.get("volume"), VOLUME_SCHEMA)
    scope = data.get("scope", "device")
    if rd["window"] > rd["max"]:
        raise err("rounds.window", f"window {rd['window']} exceeds rounds.max {rd['max']}")

    tests_raw = data.get("tests", {})
    if not isinstance(tests_raw, dict):
        raise err("tests", "expected tables [tests.NAME]")
    tests: list[TestSpec] = []
    for tname, traw in tests_raw.items():
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", tname):
            raise err(f"tests.{tname}", "test names use lower-case letters, digits, - and _")
        if not isinstance(traw, dict):
            raise err(f"tests.{tname}", "expected a table")
        plain = {k: v for k, v in traw.items() if k not in ("workload", "rounds")}
        t = section(f"tests.{tname}", plain, TEST_SCHEMA)
        if not t["enabled"]:
            continue
        twl = section(f"tests.{tname}.workload", traw.get("workload"), WORKLOAD_SCHEMA, wl)
        if twl["write_cache"] != wl["write_cache"]:
            raise err(
                f"tests.{tname}.workload.write_cache",
                "the write cache is set once for the whole run: set workload.write_cache",
            )
        trd = section(f"tests.{tname}.rounds", traw.get("rounds"), ROUNDS_SCHEMA, rd)
        own = traw.get("workload")
        _pattern_defaults(f"tests.{tname}.workload", twl, own if isinstance(own, dict) else {}, err)
        for check in kinds.CHECKS:  # each test type's keys, checks and defaults
            check(scope, tname, t, twl, traw, err)
        _cache_defaults(tname, t, twl, err)
        for req in ("mixes", "block_sizes"):
            if t[req] is None:
                raise err(f"tests.{tname}.{req}", "missing")
        if trd["window"] > trd["max"]:
            raise err(f"tests.{tname}.rounds.window", "window exceeds rounds.max")
        tracking: tuple[Tracking, ...] = t["tracking"]
        for tr in tracking:
            if tr.bs not in t["block_sizes"] or tr.mix not in t["mixes"]:
                raise err(
                    f"tests.{tname}.tracking",
                    f"{tr.label!r} is not a point of the test (block sizes x mixes)",
                )
        if t["kind"] == "steady" and not tracking and kinds.of_keys(t).needs_tracking:
            raise err(f"tests.{tname}.tracking", "a steady-state test needs tracking variables")
        _check_scope(scope, tname, t, err)
        _check_repeat_until(tname, t, err)
        tests.append(
            TestSpec(
                name=tname,
                title=t["title"] or tname.replace("-", " ").replace("_", " ").title(),
                kind=t["kind"],
                pattern=t["pattern"],
                mixes=t["mixes"],
                block_sizes=t["block_sizes"],
                point_runtime=t["point_runtime"],
                purge=t["purge"],
                precondition=t["precondition"],
                precondition_bs=t["precondition_bs"],
                split_block_sizes=t["split_block_sizes"],
                tracking=tracking,
                workload=Workload(**twl),
                rounds=Rounds(**trd),
                percentiles=tuple(sorted(t["percentiles"])),
                histogram=t["histogram"],
                repeat=t["repeat"],
                stop_written_multiple=t["stop_written_multiple"],
                max_duration=t["max_duration"],
                description=t["description"],
                file_size=t["file_size"],
                fsync=t["fsync"],
                end_fsync=t["end_fsync"],
                response_histogram=t["response_histogram"],
                bssplit=t["bssplit"],
                zones=t["zones"],
                family=t.pop("family", None),
                repeat_until=t["repeat_until"],
                repeat_max=t["repeat_max"],
                **{k: t[k] for k in CACHE_KEYS},
            )
        )
    if not tests:
        raise err("tests", "the profile defines no enabled test")
    names = {t.name for t in tests}
    for spec in tests:
        if spec.split_block_sizes:
            names.update(f"{spec.name}-{format_size(bs)}" for bs in spec.block_sizes)
    for c in ac["criteria"]:
        if c.test not in names:
            raise err(
                "acceptance.criteria", f"no test {c.test!r} (tests: {', '.join(sorted(names))})"
            )
        if c.is_figure:
            _check_figure(c, next((t for t in tests if t.name == c.test), None), err)
    name = data.get("name") or Path(source).stem
    # recorded even when inherited or left out, so that a stored run says which variant
    # it claimed (runs stored before the key existed lack it: tkbench.conformance.pts)
    variant = data.get("pts_variant", "none")
    data = {**data, "pts_variant": variant}
    return Profile(
        name=name,
        description=data.get("description", ""),
        source=source,
        workload=Workload(**wl),
        rounds=Rounds(**rd),
        purge=PurgeSpec(**pg),
        precondition=PreconditionSpec(**pc),
        report=ReportSpec(**rp),
        tests=tuple(tests),
        acceptance=Acceptance(**ac),
        resolved=data,
        scope=scope,
        volume=VolumeSpec(**vol),
        pts_variant=None if variant == "none" else variant,
    )


def _check_figure(
    c: Criterion, spec: TestSpec | None, err: Callable[[str, str], ProfileError]
) -> None:
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


# drop_caches: a cold test's (tkbench.cache) and a copy test's (tkbench.kinds.copy)
CACHE_KEYS = ("cache", "drop_caches", "sync")


def _check_repeat_until(
    tname: str, t: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """``repeat_until`` repeats a fixed test's runs (not a sweep's or a stage's) between
    ``max(repeat, 2)`` and ``repeat_max`` times."""
    if not t["repeat_until"]:
        return
    key = f"tests.{tname}.repeat_until"
    if t["kind"] != "fixed":
        raise err(key, "applies to tests of kind fixed only")
    if not kinds.of_keys(t).repeats_until:
        raise err(key, "applies to plain fixed tests, not to a procedure or a bulk-I/O sweep")
    least = max(t["repeat"], 2)
    if t["repeat_max"] < least:
        raise err(
            f"tests.{tname}.repeat_max",
            f"{t['repeat_max']} is less than the least number of runs, {least} "
            "(repeat, and at least 2 to have a deviation)",
        )


def _check_scope(
    scope: str, tname: str, t: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """A volume profile touches only its own files (no purge, no preconditioning, a
    test file per job); a device profile has no test files.  Mixing is refused."""
    if scope == "volume":
        for key in ("purge", "precondition"):
            if t[key]:
                raise err(
                    f"tests.{tname}.{key}",
                    f"a volume benchmark never purges or preconditions: set {key} = false",
                )
        if not kind_named(t["kind"]).on_volume:
            kinds_ok = " or ".join(k.name for k in KINDS.values() if k.on_volume)
            raise err(f"tests.{tname}.kind", f"a volume benchmark's tests are of kind {kinds_ok}")
        if not t["file_size"] and kinds.of_keys(t).runs_fio:  # not fio: it lays out its own
            raise err(f"tests.{tname}.file_size", "a volume benchmark's test needs a file_size")
    elif t["file_size"]:
        raise err(
            f"tests.{tname}.file_size",
            'test files belong to volume profiles (scope = "volume"); a device test '
            "addresses the ActiveRange",
        )


def _pattern_defaults(
    where: str,
    wl: dict[str, Any],
    own: Mapping[str, Any],
    err: Callable[[str, str], ProfileError],
) -> None:
    """``compress_percentage`` belongs to the compressible pattern (50 when not given);
    a test that chooses another pattern drops the percentage it inherited."""
    given = "compress_percentage" in own
    if wl["data_pattern"] == "compressible":
        wl["compress_percentage"] = wl["compress_percentage"] or 50
    elif given:
        raise err(f"{where}.compress_percentage", 'applies only to data_pattern = "compressible"')
    else:
        wl["compress_percentage"] = 0


def _cache_defaults(
    tname: str, t: dict[str, Any], wl: Mapping[str, Any], err: Callable[[str, str], ProfileError]
) -> None:
    """A warm cache needs the page cache (buffered I/O); ``drop_caches`` makes a cold
    cache colder and means nothing otherwise."""
    states = t["caches"] or (t["cache"],)
    key = "caches" if t["caches"] else "cache"
    typ = kinds.of_keys(t)
    if t["cache"] != "as-is" and not typ.takes_cache:
        raise err(f"tests.{tname}.cache", typ.no_cache_why)
    if not typ.runs_fio:
        return  # its page cache and drop_caches are its executor's (a copy test's)
    if "warm" in states and wl["direct"]:
        raise err(
            f"tests.{tname}.{key}",
            "a warm cache needs buffered I/O: set workload.direct = false (O_DIRECT bypasses "
            "the page cache)",
        )
    if t["drop_caches"] and "cold" not in states:
        raise err(f"tests.{tname}.drop_caches", 'applies only to a cold cache (cache = "cold")')
