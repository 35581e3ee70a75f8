"""An emulated SSD served by nbdkit's Python plugin, for fio's NBD engine.

``python -m tkbench.emulator --socket PATH`` (or ``tkbench emulate``) serves it;
:func:`start_emulator` starts one from Python.  ``plugin.py`` and ``ssdmodel.py``
run inside nbdkit's embedded interpreter and use only the standard library.
docs/emulator.md describes the model.
"""

from tkbench.emulator.launcher import (
    INSTALL_HINT,
    PLUGIN_PATH,
    Emulator,
    check_nbdkit,
    socket_uri,
    start_emulator,
)
from tkbench.emulator.ssdmodel import EmulatorConfig, SsdModel

__all__ = [
    "INSTALL_HINT",
    "PLUGIN_PATH",
    "Emulator",
    "EmulatorConfig",
    "SsdModel",
    "check_nbdkit",
    "socket_uri",
    "start_emulator",
]
