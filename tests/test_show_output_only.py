"""``show --json`` is an output only (issue 23): ``tkbench show``'s text and the test
types' lines are read from the run's typed results, not from the document, so the
document's keys can change within a version without changing the text.  Real kept run
directories (tests/data/rundirs/), no fake."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tkbench.outputs.show import format_summary, shown
from tkbench.rundir.store import load_run

RUNDIRS = Path(__file__).resolve().parent / "data" / "rundirs"


@pytest.mark.parametrize("name", ["file-a", "emu", "resumed"])
def test_the_text_does_not_read_the_document(name: str) -> None:
    s = shown(load_run(RUNDIRS / name))
    text = format_summary(s)
    assert f"({s.run.tests[0].name}): " in text  # a test's line, with its verdict
    # the same text with the document emptied: nothing of it was read
    assert format_summary(dataclasses.replace(s, document={})) == text
