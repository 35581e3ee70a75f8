"""A fleet's runs by their exit codes: what each one's means, and the worst of them,
which is the fleet's (docs/exit-codes.md)."""

from __future__ import annotations

from collections.abc import Sequence

from tkbench.errors import (
    EXIT_BAD_INPUT,
    EXIT_DEVICE,
    EXIT_FAILED_CHECK,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
)

# worst first: the fleet's exit code is the worst of its runs' (docs/exit-codes.md)
SEVERITY = {
    EXIT_INTERRUPTED: 7,
    EXIT_INTERNAL: 6,
    EXIT_DEVICE: 5,
    EXIT_REFUSED: 4,
    EXIT_BAD_INPUT: 3,
    EXIT_FAILED_CHECK: 2,
    EXIT_OK: 0,
}
OUTCOMES = {
    EXIT_OK: "complete",
    EXIT_FAILED_CHECK: "checks failed",
    EXIT_BAD_INPUT: "bad input",
    EXIT_REFUSED: "refused",
    EXIT_DEVICE: "device or fio failure",
    EXIT_INTERNAL: "internal error",
    EXIT_INTERRUPTED: "interrupted",
}


def exit_code_of(returncode: int) -> int:
    """A child's exit status as a tkbench exit code: a child killed by a signal (the
    OOM killer, kill -9) never said what happened, which counts as an internal error."""
    return returncode if returncode in SEVERITY else EXIT_INTERNAL


def worst(codes: Sequence[int]) -> int:
    """The fleet's exit code: 130 > 5 > 4 > 3 > 2 > 1 > 0 (0 for no runs)."""
    return max((exit_code_of(c) for c in codes), key=lambda c: SEVERITY[c], default=EXIT_OK)


def outcome(code: int | None) -> str:
    if code is None:
        return "not finished"
    if code not in SEVERITY:
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return OUTCOMES[code]
