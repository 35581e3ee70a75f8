"""Shared fixtures.  fio runs for real everywhere; tests need the Debian fio package."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session", autouse=True)
def _need_fio() -> None:
    if shutil.which("fio") is None:
        pytest.fail("fio is not installed: run 'make deps' (apt-get install fio)")


@pytest.fixture(autouse=True)
def _private_history(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs made by tests are indexed in a throw-away history, never the user's."""
    monkeypatch.setenv("TKBENCH_HISTORY", str(tmp_path_factory.getbasetemp() / "history.sqlite"))


@pytest.fixture(autouse=True)
def _private_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's own profiles (~/.config/tkbench/profiles) never shadow the bundled ones."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "config"))
