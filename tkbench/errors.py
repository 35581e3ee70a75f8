"""The one error hierarchy of tkbench.

Library code raises these; only the CLI turns them into a one-line message and
an exit code.  Each class carries the exit code that documents its kind.
"""

from __future__ import annotations

# Exit codes (docs/exit-codes.md keeps the table for users).
EXIT_OK = 0
EXIT_FAILED_CHECK = 1  # acceptance criteria or regression check failed
EXIT_BAD_INPUT = 2  # arguments, profile, run directory
EXIT_REFUSED = 3  # refused by a safety check
EXIT_DEVICE = 4  # device, fio or tool failure
EXIT_INTERNAL = 5  # a bug in tkbench (an unexpected exception)
EXIT_INTERRUPTED = 130


class TkbenchError(Exception):
    """Base class: ``str(err)`` is the one-line message shown to the user."""

    exit_code = EXIT_DEVICE


class InputError(TkbenchError):
    """Bad arguments, profile, target specification or run directory."""

    exit_code = EXIT_BAD_INPUT


class ProfileError(InputError):
    """A profile file or ``--set`` override is invalid."""


class RunDirError(InputError):
    """A run directory is missing, corrupt, foreign or from a newer schema."""


class SafetyError(TkbenchError):
    """A destructive action was refused by a safety check."""

    exit_code = EXIT_REFUSED


class DeviceError(TkbenchError):
    """The device, fio or an external tool failed."""

    exit_code = EXIT_DEVICE


class CommandError(DeviceError):
    """An external command failed; carries everything needed to diagnose it."""

    def __init__(
        self,
        argv: list[str],
        returncode: int | None,
        stdout: str = "",
        stderr: str = "",
        reason: str = "",
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.reason = reason
        super().__init__(self._message())

    def _message(self) -> str:
        cmd = " ".join(self.argv)
        if len(cmd) > 160:
            cmd = cmd[:157] + "..."
        what = self.reason or (
            f"exit code {self.returncode}" if self.returncode is not None else "did not finish"
        )
        tail = _last_line(self.stderr) or _last_line(self.stdout)
        msg = f"command failed ({what}): {cmd}"
        if tail:
            msg += f": {tail}"
        return msg


class ToolMissingError(DeviceError):
    """A required external program is not installed."""


class FioParseError(DeviceError):
    """fio's output could not be read as JSON results."""


class FioJobError(DeviceError):
    """fio ran but a job reported an error or did no I/O."""


class Interrupted(TkbenchError):
    """The run was stopped by a signal; completed work is kept."""

    exit_code = EXIT_INTERRUPTED


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line:
            return line[:200]
    return ""
