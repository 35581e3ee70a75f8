"""Where tkbench finds its files: the data shipped inside the package, and the
profile directories searched by name (pure lookups: nothing is created).

Profiles named on the command line are looked up, first match wins, in

1. ``$XDG_CONFIG_HOME/tkbench/profiles`` (default ``~/.config/tkbench/profiles``): ``user``
2. ``/etc/tkbench/profiles``: ``system``
3. the profiles bundled inside the package: ``bundled``
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

SYSTEM_PROFILES = Path("/etc/tkbench/profiles")


def bundled(name: str) -> Path:
    """A data directory shipped inside the package (``profiles`` or ``templates``).

    Read through :mod:`importlib.resources`, so it is found wherever the package is
    installed (a virtualenv, ``--user``, ``--prefix``, ``--target``, a distro path).
    tkbench is not zip-safe: the package must be unpacked on a filesystem.
    """
    return Path(str(resources.files("tkbench").joinpath(name)))


def config_home() -> Path | None:
    """``$XDG_CONFIG_HOME``, or ``~/.config`` (None when there is no home directory).

    A relative ``$XDG_CONFIG_HOME`` is ignored, as the XDG base-directory
    specification asks.
    """
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    try:
        return Path.home() / ".config"
    except RuntimeError:  # no $HOME and no passwd entry
        return None


@dataclass(frozen=True)
class ProfileDir:
    path: Path
    origin: str  # "user" | "system" | "bundled"


def profile_dirs() -> list[ProfileDir]:
    """The profile search path, first match wins (see the module docstring)."""
    out = []
    home = config_home()
    if home is not None:
        out.append(ProfileDir(home / "tkbench" / "profiles", "user"))
    out.append(ProfileDir(SYSTEM_PROFILES, "system"))
    out.append(ProfileDir(bundled("profiles"), "bundled"))
    return out
