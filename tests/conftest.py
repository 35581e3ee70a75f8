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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fakes import helpers
from fakes.helpers import LoopDevices

from tests._chromium import CHROMIUM, INSTALL_HINT, Browser, BrowserError, running_browser
from tests._postgres import Server, running_server
from tests._vm import Guest, SharedGuest

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


def _module_fixtures(item: pytest.Item) -> bool:
    """Whether the test uses a fixture made once per module (a real run, a browser)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d[-1].scope == "module" for d in defs if d)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for ``pytest -n N --dist loadgroup`` (``make test``): each group runs in
    one worker.  The QEMU guest's tests share one guest (one per worker would not fit
    the machine); a module whose tests share a module-scoped fixture (a real run, a
    browser) is made once, not once per worker.  Everything else a test touches is
    its own (tmp_path, its loop devices, its history: ``_private_history``), so the
    other tests go to whichever worker is free.  Runs before xdist's own hook, which
    reads the marks."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker("vm") is not None:
            item.add_marker(pytest.mark.xdist_group("qemu-guest"))
        elif _module_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    # the guest's tests, the longest group, first: started last, the suite would wait
    # on them alone (the order within each module stays as written).  xdist's own
    # reordering (--loadscope-reorder, its default) then hands out the groups with the
    # most tests first, singles last: the guest's group (11 tests) is among the first
    # four, so it starts at once in one of make test's four workers
    items.sort(key=lambda item: item.get_closest_marker("vm") is None)


_GUESTS = SharedGuest()


def _vm(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("vm") is not None


@pytest.fixture(scope="session")
def vm_guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Guest]]:
    """The QEMU guest of the ``vm`` tests (tests/_vm.py), one boot for all of them: a
    module's ``guest`` fixture calls it.  Powered off after the last ``vm`` test (they
    run one after another: one xdist group, sorted first) or at the session's end."""
    try:
        yield lambda: _GUESTS.get(lambda: tmp_path_factory.mktemp("vm"))
    finally:
        _GUESTS.stop()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # a guest left running beside the other tests would take a CPU's share (TCG)
    if _vm(item) and not _vm(nextitem):
        _GUESTS.stop()


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


def _private_settings(mp: pytest.MonkeyPatch, base: Path, history: Path) -> None:
    mp.setenv("TKBENCH_HISTORY", str(history))
    # the marks of data runs left on their targets (tkbench.device.owndata): the
    # tests', never root's /var/lib/tkbench
    mp.setenv("TKBENCH_STATE", str(base / "state"))
    mp.delenv("TKBENCH_RIG", raising=False)
    # the user's own profiles (~/.config/tkbench/profiles) never shadow the bundled ones
    mp.setenv("XDG_CONFIG_HOME", str(base / "config"))


@pytest.fixture(scope="session", autouse=True)
def _private_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What module- and session-scoped fixtures run (before any test's own settings
    exist) is indexed in the session's throw-away history, never root's
    /var/lib/tkbench nor the user's."""
    base = tmp_path_factory.getbasetemp()
    with pytest.MonkeyPatch.context() as mp:
        _private_settings(mp, base, base / "history.sqlite")
        yield


@pytest.fixture(autouse=True)
def _private_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each test's runs are indexed in a history of its own (so no test sees another's
    entries, whatever worker or order runs them), under no rig name of the machine's.
    Its own MonkeyPatch, not the test's: a test's ``monkeypatch.undo()`` cannot send
    the rest of its runs to the system history."""
    base = tmp_path_factory.getbasetemp()
    with pytest.MonkeyPatch.context() as mp:
        _private_settings(mp, base, tmp_path_factory.mktemp("history") / "history.sqlite")
        yield


@pytest.fixture
def loops(tmp_path: Path) -> Iterator[LoopDevices]:
    """Real loop devices for one test (tests/fakes/helpers.py: LoopDevices)."""
    with helpers.loop_devices(tmp_path) as mgr:
        yield mgr
