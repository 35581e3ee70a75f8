"""What today's tkbench computes from the kept run directories (tests/data/rundirs/).

Shared by tests/test_rundir_compat.py, which recomputes every output and compares
it with the golden copy, and tests/data/rundirs/make_rundirs.py --golden, which
wrote the golden copies.  Each output is plain JSON data:

* ``show-RUN``: ``tkbench show RUN --json``;
* ``compare-NAME``: ``tkbench compare RUN... --json``;
* ``history``: ``tkbench history --add RUN... --json`` into an empty history database;
* ``report-RUN``: the report model of RUN (``tkbench.report.analysis.analyze``), every
  number and text the PDF shows, with the report's time fixed at :data:`GENERATED`;
* ``comparison-NAME``: the model of the comparison PDF (``tkbench.report.comparison``).

Fields that legitimately differ from machine to machine or from moment to moment
are listed in :data:`IGNORED` (with the reason); :func:`normalise` replaces their
values by a placeholder, in the golden copies and in every recomputed output alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tkbench import cli
from tkbench.report import analysis, comparison, options
from tkbench.rundir.store import load_run

RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"
GOLDEN = RUNDIRS / "golden"
RUNS = ("file-a", "file-b", "emu", "resumed")
# compare: the two runs of one drive, and every kept run at once (other target kinds,
# tests one run lacks, a resumed run with two segments).  The comparison PDF's model
# only for the pair: for more runs it mostly repeats the report models.
COMPARISONS = {
    "file-a-file-b": ("file-a", "file-b"),
    "all": ("file-a", "emu", "resumed", "file-b"),
}
MODEL_COMPARISONS = ("file-a-file-b",)
GENERATED = 1_800_000_000.0  # "now" of the report and comparison models (2027-01-15)

# Ignored fields, as paths of keys ("*": any key or list index), per kind of output.
# Nothing else is ignored: every number, string and flag is compared.
IGNORED: dict[str, tuple[tuple[str, ...], ...]] = {
    # the run directory as named on the command line: where the checkout is
    "show": (("run_dir",),),
    # the run directories as named on the command line: where the checkout is
    "compare": (("runs", "*"),),
    # the history keys a run by its resolved absolute path: where the checkout is.
    # (The history has no row ids; started/ended come from the manifest, not the clock.)
    "history": (("*", "run_dir"),),
    # the run directory as given to load_run: where the checkout is.  The report's
    # own time ("generated", the "Report generated" row) is fixed at GENERATED.
    "report": (("run_dir",),),
    # each run's directory as given to load_run: where the checkout is (its last
    # component, the kept directory's name, is part of the compared run labels)
    "comparison": (("runs", "*", "directory"),),
}
PLACEHOLDER = "<ignored: varies by checkout location>"


def kind_of(name: str) -> str:
    """``"show-file-a"`` -> ``"show"``."""
    return name.split("-", 1)[0]


# --------------------------------------------------------------------------- outputs


def cli_json(argv: Sequence[str]) -> Any:
    """Run ``tkbench ARGV`` in this process; its stdout, parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    if code != 0:
        raise AssertionError(f"tkbench {' '.join(argv)} exited {code}")
    return json.loads(out.getvalue())


def plain(value: Any) -> Any:
    """Dataclasses, tuples and non-finite floats -> JSON data (NaN/inf as a marker)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"non-finite": repr(value)}  # "nan", "inf", "-inf"
    return value


def show(root: Path) -> Any:
    return cli_json(["show", str(root), "--json"])


def compare(roots: Sequence[Path]) -> Any:
    return cli_json(["compare", *map(str, roots), "--json"])


def history(roots: Sequence[Path]) -> Any:
    with tempfile.TemporaryDirectory(prefix="tkbench-history-") as tmp:
        db = str(Path(tmp) / "history.sqlite")
        return cli_json(["history", "--history", db, "--add", *map(str, roots), "--json"])


def report_model(root: Path) -> Any:
    run = load_run(root)
    opts = options.resolve_options(run.manifest)
    return plain(analysis.analyze(run, opts, generated=GENERATED))


def comparison_model(roots: Sequence[Path]) -> Any:
    return plain(comparison.comparison_model([load_run(r) for r in roots], generated=GENERATED))


def output(name: str, base: Path = RUNDIRS) -> Any:
    """The output ``name`` (see the module docstring), computed from the runs in ``base``."""
    kind, what = name.split("-", 1)
    if kind == "show":
        return normalise(kind, show(base / what))
    if kind == "report":
        return normalise(kind, report_model(base / what))
    if kind == "history":
        return normalise(kind, history([base / r for r in RUNS]))
    roots = [base / r for r in COMPARISONS[what]]
    if kind == "compare":
        return normalise(kind, compare(roots))
    if kind == "comparison":
        return normalise(kind, comparison_model(roots))
    raise KeyError(name)


def names() -> list[str]:
    """Every golden output."""
    out = [f"show-{r}" for r in RUNS] + [f"report-{r}" for r in RUNS] + ["history-all"]
    out += [f"compare-{c}" for c in COMPARISONS] + [f"comparison-{c}" for c in MODEL_COMPARISONS]
    return out


def all_outputs(base: Path = RUNDIRS) -> dict[str, Any]:
    return {name: output(name, base) for name in names()}


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def golden(name: str) -> Any:
    return json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- ignoring


def _matches(pattern: tuple[str, ...], data: Any) -> Iterator[tuple[Any, Any]]:
    """(container, key) of every value at ``pattern`` in ``data``."""
    head, rest = pattern[0], pattern[1:]
    if isinstance(data, dict):
        keys: list[Any] = list(data) if head == "*" else [head] if head in data else []
    elif isinstance(data, list):
        keys = list(range(len(data))) if head == "*" else []
    else:
        keys = []
    for k in keys:
        if rest:
            yield from _matches(rest, data[k])
        else:
            yield data, k


def normalise(kind: str, data: Any) -> Any:
    """``data`` with every ignored field's value replaced by :data:`PLACEHOLDER`.

    An ignored field that is missing altogether is an error: the list must not
    silently outlive the fields it names."""
    for pattern in IGNORED.get(kind, ()):
        found = list(_matches(pattern, data))
        if not found:
            raise AssertionError(f"{kind}: ignored field {'.'.join(pattern)} not found")
        for container, key in found:
            container[key] = PLACEHOLDER
    return data


# --------------------------------------------------------------------------- comparing

REL_TOL = 1e-9


def differences(
    golden: Any, actual: Any, *, strict_types: bool = True, path: str = "$"
) -> list[str]:
    """Every place where ``actual`` departs from ``golden``.

    Floats agree within :data:`REL_TOL` (relative); ints, strings, booleans and None
    must be equal.  With ``strict_types`` an int where the golden has a float (or
    the reverse) is a difference too: the JSON text scripts read would change.
    Dict keys are compared as sets, lists element by element.
    """
    out: list[str] = []
    num = (int, float)
    if isinstance(golden, bool) or isinstance(actual, bool):
        if type(golden) is not type(actual) or golden != actual:
            out.append(f"{path}: {golden!r} -> {actual!r}")
    elif isinstance(golden, num) and isinstance(actual, num):
        if strict_types and type(golden) is not type(actual):
            out.append(f"{path}: {type(golden).__name__} {golden!r} -> {actual!r}")
        elif isinstance(golden, int) and isinstance(actual, int):
            if golden != actual:
                out.append(f"{path}: {golden!r} -> {actual!r}")
        elif not math.isclose(golden, actual, rel_tol=REL_TOL, abs_tol=0.0):
            out.append(f"{path}: {golden!r} -> {actual!r}")
    elif isinstance(golden, dict) and isinstance(actual, dict):
        for k in sorted(set(golden) | set(actual), key=str):
            if k not in actual:
                out.append(f"{path}.{k}: missing")
            elif k not in golden:
                out.append(f"{path}.{k}: new field {actual[k]!r:.60}")
            else:
                out += differences(
                    golden[k], actual[k], strict_types=strict_types, path=f"{path}.{k}"
                )
    elif isinstance(golden, list) and isinstance(actual, list):
        if len(golden) != len(actual):
            out.append(f"{path}: {len(golden)} items -> {len(actual)}")
        for i, (g, a) in enumerate(zip(golden, actual, strict=False)):
            out += differences(g, a, strict_types=strict_types, path=f"{path}[{i}]")
    elif type(golden) is not type(actual) or golden != actual:
        out.append(f"{path}: {golden!r:.80} -> {actual!r:.80}")
    return out


def strict_types_for(name: str) -> bool:
    """CLI JSON is an interface (3 vs 3.0 matters); the report models are internal,
    read only through their rendering, so there an int may become a float."""
    return kind_of(name) in ("show", "compare", "history")
