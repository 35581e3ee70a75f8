"""Command-line interface: parses arguments, calls the library, maps errors to exit codes.

:mod:`.parser` builds the parser, :mod:`.commands` and :mod:`.tools` are the commands
(thin: they call library functions and format for people), :mod:`.report` the report
command, :mod:`.support` what every command shares at the edge of the process (-v/-q,
closed pipes, internal errors) and :mod:`.docgen` the man page and completions.

Exit codes (docs/exit-codes.md): 0 done, 1 acceptance or regression check
failed, 2 bad input, 3 refused by a safety check, 4 device/fio/tool failure,
5 internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from tkbench import profile as profilemod
from tkbench.cli import support
from tkbench.cli.options import path_arg
from tkbench.cli.parser import build_parser
from tkbench.cli.support import SESSION
from tkbench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, TkbenchError

__all__ = ["build_parser", "main", "path_arg"]


def main(argv: Sequence[str] | None = None) -> int:
    SESSION.verbose, SESSION.quiet, SESSION.run_dir = False, False, None
    stdout = sys.stdout
    sys.stdout = support.GuardedOutput(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        SESSION.verbose, SESSION.quiet = bool(args.verbose), bool(args.quiet)
        if getattr(args, "tests", None):  # a choice of tests: the others switched off
            args.overrides = [
                *profilemod.select(args.profile, args.tests.split(","), args.overrides),
                *args.overrides,
            ]
        func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
        if func is None:
            sys.stderr.write("tkbench: error: no command given (see tkbench --help)\n")
            return EXIT_BAD_INPUT
        code = func(args)
        sys.stdout.flush()  # here, where a closed pipe can still be told apart
        return code
    except TkbenchError as exc:
        sys.stderr.write(f"tkbench: error: {support.one_line(str(exc))}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("tkbench: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:
        if support.closed_output():
            return 0  # whoever read our output has all they wanted (tkbench ... | head)
        return support.internal_error(exc)
    except Exception as exc:  # a bug in tkbench: one line, its own exit code
        return support.internal_error(exc)
