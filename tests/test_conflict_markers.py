"""No file of the repository holds a merge's conflict markers (one reached main in
docs/architecture.md once, and no other test reads the docs' table)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<{7}|>{7})( |$)|^={7}$", re.M)
SKIP = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}
SUFFIXES = {".py", ".md", ".toml", ".j2", ".html", ".css", ".cfg", ".txt", ".sh", ".yml"}


def text_files(root: Path) -> list[Path]:
    out = []
    for p in root.rglob("*"):
        if SKIP & set(p.relative_to(root).parts) or not p.is_file():
            continue
        if p.suffix in SUFFIXES or p.name in ("Makefile", "run"):
            out.append(p)
    return out


def test_no_file_holds_merge_conflict_markers() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for p in text_files(ROOT)
        for text in [p.read_text(encoding="utf-8", errors="replace")]
        for m in MARKER.finditer(text)
    ]
    assert found == []


def test_the_check_sees_a_marker(tmp_path: Path) -> None:
    (tmp_path / "doc.md").write_text("a\n" + "<" * 7 + " HEAD\nb\n" + "=" * 7 + "\nc\n")
    (tmp_path / "ok.md").write_text("a table\n|=|\n")
    assert [p.name for p in text_files(tmp_path) if MARKER.search(p.read_text())] == ["doc.md"]
