"""What tests/conftest.py promises every test: a history of its own that a test's
``monkeypatch.undo()`` cannot take away and its subprocesses inherit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.test_pipes import _env


def _private(tmp_path_factory: pytest.TempPathFactory) -> Path:
    history = Path(os.environ["TKBENCH_HISTORY"])
    assert history.is_relative_to(tmp_path_factory.getbasetemp())
    return history


def test_each_test_has_a_history_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    history = _private(tmp_path_factory)
    # made for this test alone: nothing else was indexed in it
    assert history.parent.name.startswith("history") and not history.exists()
    assert history.parent != tmp_path_factory.getbasetemp()


def test_a_tests_undo_keeps_its_private_history(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """test_interrupt_moments undoes its monkeypatches before resuming a run: that
    run's history entry went to root's /var/lib/tkbench when the private history was
    one of the undone patches."""
    before = _private(tmp_path_factory)
    monkeypatch.setenv("TKBENCH_RIG", "somewhere")
    monkeypatch.undo()
    assert _private(tmp_path_factory) == before
    assert os.environ["TKBENCH_STATE"].startswith(str(tmp_path_factory.getbasetemp()))


def test_subprocesses_get_the_tests_history_not_the_one_at_import(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """test_pipes' children once had the environment of its import, before any test's
    private history was set."""
    assert _env()["TKBENCH_HISTORY"] == str(_private(tmp_path_factory))
