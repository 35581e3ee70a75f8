"""Shared fixtures and the ``fio`` marker.

Tests that run fio (directly, or through ``tkbench run``/``demo``, the emulator,
``fio --server``...) carry ``@pytest.mark.fio`` (``pytestmark = pytest.mark.fio``
where every test of a module does).  Without fio on PATH such a test FAILS with
the install hint -- it is never skipped, so CI cannot pass by silently leaving
out the real-fio tests.  Every other test runs without fio:
``pytest -m "not fio"`` with fio absent from PATH is how that is checked (a test
that needs fio but lacks the marker fails there).
"""

from __future__ import annotations

import shutil

import pytest

FIO_HINT = "fio is not installed: run 'make deps' (apt-get install fio)"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # a hook, not a fixture: it runs before any fixture of the test, including
    # module-scoped ones that start real runs (which would fail less clearly)
    if item.get_closest_marker("fio") is not None and shutil.which("fio") is None:
        pytest.fail(FIO_HINT, pytrace=False)


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
