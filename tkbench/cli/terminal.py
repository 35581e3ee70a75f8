"""Text for a terminal: every string that came from a file, a device or a profile
(a run directory's name, a drive's model or serial, a profile's title, a history
entry) is shown with its control characters escaped, so that it cannot clear the
screen, move the cursor, retitle the window or hide a line behind a carriage return
(docs/safety.md, "Terminal output").  JSON output needs none of this: ``json.dumps``
escapes control characters itself."""

from __future__ import annotations

__all__ = ["printable"]

# C0 controls, DEL and the C1 controls (U+0080..U+009F: U+009B is a CSI of its own)
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}
_IN_LINES = {c: e for c, e in _ESCAPES.items() if c not in (ord("\n"), ord("\t"))}


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with its control characters escaped (ESC as ``\\x1b``, CR as ``\\r``).
    ``lines``: newlines and tabs stay (a listing of several lines); otherwise they are
    escaped too and the text is one line (an error message, a log line)."""
    return text.translate(_IN_LINES if lines else _ESCAPES)
