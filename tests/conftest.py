"""Shared fixtures, the ``fio`` and the ``postgres`` markers.

Tests that run fio (directly, or through ``tkbench run``/``demo``, the emulator,
``fio --server``...) carry ``@pytest.mark.fio`` (``pytestmark = pytest.mark.fio``
where every test of a module does).  Without fio on PATH such a test FAILS with
the install hint -- it is never skipped, so CI cannot pass by silently leaving
out the real-fio tests.  Every other test runs without fio:
``pytest -m "not fio"`` with fio absent from PATH is how that is checked (a test
that needs fio but lacks the marker fails there).

Tests that use the real PostgreSQL server (the ``pg_server`` and ``pg_url``
fixtures, tests/_postgres.py) carry ``@pytest.mark.postgres``; without the server
binaries they fail with the install hint, never skip.

``loops`` makes real loop devices over sparse files in the test's directory and
undoes everything (swapoff, umount, losetup -d) however the test ends.

Tests that load pages in the real headless Chromium (the ``browser`` fixture,
tests/_chromium.py: one browser per test module) carry ``@pytest.mark.chromium``;
without Debian's ``chromium`` they fail with the install hint, never skip.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import LoopDevices

from tests._chromium import CHROMIUM, INSTALL_HINT, Browser, BrowserError, running_browser
from tests._postgres import Server, running_server

FIO_HINT = "fio is not installed: run 'make deps' (apt-get install fio)"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # a hook, not a fixture: it runs before any fixture of the test, including
    # module-scoped ones that start real runs (which would fail less clearly)
    if item.get_closest_marker("fio") is not None and shutil.which("fio") is None:
        pytest.fail(FIO_HINT, pytrace=False)
    uses_server = {"pg_server", "pg_url"} & set(getattr(item, "fixturenames", ()))
    if uses_server and item.get_closest_marker("postgres") is None:
        pytest.fail("a test that uses the PostgreSQL server needs @pytest.mark.postgres")
    uses_browser = "browser" in getattr(item, "fixturenames", ())
    if uses_browser and item.get_closest_marker("chromium") is None:
        pytest.fail("a test that uses the browser needs @pytest.mark.chromium")
    if item.get_closest_marker("chromium") is not None and shutil.which(CHROMIUM) is None:
        pytest.fail(INSTALL_HINT, pytrace=False)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """One real PostgreSQL server for the session (tests/_postgres.py)."""
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(contextlib.contextmanager(running_server)())
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A real headless Chromium, one per test module (tests/_chromium.py)."""
    with contextlib.ExitStack() as stack:
        try:
            found = stack.enter_context(contextlib.contextmanager(running_browser)())
        except BrowserError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield found


_databases = itertools.count(1)


@pytest.fixture
def pg_url(pg_server: Server) -> str:
    """The URL of a new, empty database on the test server, one per test."""
    return pg_server.new_database(f"t{next(_databases)}")


@pytest.fixture(autouse=True)
def _private_history(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs made by tests are indexed in a throw-away history, never the user's, and
    under no rig name of the machine's."""
    monkeypatch.setenv("TKBENCH_HISTORY", str(tmp_path_factory.getbasetemp() / "history.sqlite"))
    # the marks of data runs left on their targets (tkbench.device.owndata): the
    # tests', never root's /var/lib/tkbench
    monkeypatch.setenv("TKBENCH_STATE", str(tmp_path_factory.getbasetemp() / "state"))
    monkeypatch.delenv("TKBENCH_RIG", raising=False)


@pytest.fixture(autouse=True)
def _private_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's own profiles (~/.config/tkbench/profiles) never shadow the bundled ones."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "config"))


@pytest.fixture
def loops(tmp_path: Path) -> Iterator[LoopDevices]:
    """Real loop devices for one test (tests/fakes/helpers.py: LoopDevices)."""
    with helpers.loop_devices(tmp_path) as mgr:
        yield mgr
