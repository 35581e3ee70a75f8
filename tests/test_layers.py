"""The package's layers (docs/architecture.md, "Layers"): every import points down,
no two modules import each other through any chain, and no module lies loose in
``tkbench/`` but the few base modules.

Imports are read from the source with :mod:`ast`, all of them: at module level, in
functions (a function-local import is an edge like any other: it only hides a cycle
until the function runs) and under ``TYPE_CHECKING``.  A module's import of its own
parent package is not an edge (Python imports a package before any of its modules).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import tkbench

ROOT = Path(tkbench.__file__).parent

# top to bottom; a module may import its own layer and the layers below it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("command line", ("tkbench.__main__", "tkbench.cli")),
    ("fleet", ("tkbench.fleet",)),
    ("engine", ("tkbench.engine",)),
    ("outputs", ("tkbench.outputs", "tkbench.report", "tkbench.history", "tkbench.dashboard")),
    ("workload capture", ("tkbench.workload",)),
    ("conformance", ("tkbench.conformance",)),
    ("planning", ("tkbench.plan.build", "tkbench.profile.build", "tkbench.profile")),
    ("test types", ("tkbench.kinds",)),
    # a captured workload as data: the file, its trace, its reduction, its fio options
    # (what the replay test type reads); capturing it stays in the layer above
    ("workload model", ("tkbench.workload.tkw", "tkbench.workload.trace",
                        "tkbench.workload.reduce", "tkbench.workload.fiojobs")),
    ("fio", ("tkbench.fio",)),
    ("planning model", ("tkbench.plan",)),
    ("analysis", ("tkbench.analysis",)),
    ("profile model", ("tkbench.profile.model", "tkbench.profile.schema", "tkbench.profile.convert",
                       "tkbench.profile.finding", "tkbench.profile.paths")),
    ("targets", ("tkbench.targets",)),
    ("fio's outputs read", ("tkbench.fio.output", "tkbench.fio.combine", "tkbench.fio.logs")),
    ("output files", ("tkbench.outputs.files",)),
    ("metrics", ("tkbench.vocab",)),
    ("run directory", ("tkbench.rundir",)),
    ("devices", ("tkbench.device", "tkbench.emulator")),
    ("atomic files", ("tkbench.rundir.jsonfile",)),
    ("base", ("tkbench.errors", "tkbench.units", "tkbench.proc", "tkbench.fiovalue",
              "tkbench.cache", "tkbench.typed", "tkbench")),
]  # fmt: skip
# the only modules outside a package (besides __init__ and __main__)
BASE = {"tkbench.errors", "tkbench.units", "tkbench.vocab", "tkbench.proc", "tkbench.fiovalue",
        "tkbench.cache"}  # fmt: skip


def modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: Mapping[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other tkbench modules (a name imported from a
    package is the package, unless it is a module of it)."""

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            for name in names:
                target = owner(name) if name.startswith("tkbench") else None
                if target and target != mod and not mod.startswith(target + "."):
                    out.add(target)
        edges[mod] = out
    return edges


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer_of(mod: str) -> int:
    best, depth = len(LAYERS), -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    return best


def upward(edges: Mapping[str, Iterable[str]]) -> list[str]:
    return sorted(
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, bs in edges.items()
        for b in bs
        if layer_of(b) < layer_of(a)
    )


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in modules() if layer_of(m) == len(LAYERS)]
    assert unplaced == []


def test_no_module_lies_loose_but_the_base() -> None:
    loose = {
        f"tkbench.{p.stem}" for p in ROOT.glob("*.py") if p.stem not in ("__init__", "__main__")
    }
    assert loose <= BASE, sorted(loose - BASE)
    assert len(BASE) <= 6


def test_no_import_cycle() -> None:
    assert cycles(imports(modules())) == []


def test_imports_point_down() -> None:
    assert upward(imports(modules())) == []


def test_the_check_sees_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """The checks above can fail: a cycle hidden in a function and an engine module
    imported by an analysis module are both found."""
    pkg = tmp_path / "tkbench"
    (pkg / "analysis").mkdir(parents=True)
    (pkg / "engine").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "analysis" / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("")
    (pkg / "analysis" / "a.py").write_text("def f():\n    from tkbench.analysis import b\n")
    (pkg / "analysis" / "b.py").write_text("from . import a\nfrom ..engine import loop\n")
    (pkg / "engine" / "loop.py").write_text("")
    edges = imports(modules(pkg))
    assert cycles(edges) == [["tkbench.analysis.a", "tkbench.analysis.b"]]
    assert upward(edges) == ["tkbench.analysis.b (analysis) imports tkbench.engine.loop (engine)"]
