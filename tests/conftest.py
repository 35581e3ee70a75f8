"""Shared fixtures.  fio runs for real everywhere; tests need the Debian fio package."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session", autouse=True)
def _need_fio() -> None:
    if shutil.which("fio") is None:
        pytest.fail("fio is not installed: run 'make deps' (apt-get install fio)")
