"""The man page and the bash and zsh completions, generated from tkbench's own
argparse parser, so that they cannot drift from ``--help``.

``python -m tkbench.cli.docgen man|bash|zsh`` prints one of them (``make man`` and
``make install`` use it).  Pure: functions return text.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator

from tkbench import __version__

EXIT_STATUS = (
    ("0", "done"),
    ("1", "an acceptance or regression check failed"),
    ("2", "bad input: arguments, profile, run directory"),
    ("3", "refused by a safety check"),
    ("4", "device, fio or tool failure; a missing program"),
    ("5", "internal error (a bug in tkbench)"),
    ("130", "interrupted; completed rounds are kept, continue with run --resume"),
)
FILES = (
    ("~/.config/tkbench/profiles/", "your profiles ($XDG_CONFIG_HOME/tkbench/profiles)"),
    ("/etc/tkbench/profiles/", "profiles for every user of the machine"),
    ("~/.local/share/tkbench/history.sqlite", "your run history ($XDG_DATA_HOME)"),
    ("/var/lib/tkbench/history.sqlite", "root's run history, readable by every user"),
    (
        "/var/lib/tkbench/written/",
        "marks of the data root's runs left on their targets (~/.local/state/tkbench/written "
        "for others): a signature inside that data is not refused",
    ),
)
ENVIRONMENT = (
    ("XDG_CONFIG_HOME", "where your profiles are looked up (default ~/.config)"),
    ("XDG_DATA_HOME", "where your history database is kept (default ~/.local/share)"),
    ("TKBENCH_HISTORY", "the history to use: an SQLite file or a postgresql:// URL"),
    ("TKBENCH_STATE", "where the marks of data runs left are kept (its written/ directory)"),
    ("XDG_STATE_HOME", "the same for a user other than root (default ~/.local/state)"),
    ("TKBENCH_RIG", "the rig name runs are indexed under in the history (run --rig)"),
    ("TKBENCH_DEBUG", "show the traceback of an internal error, as -v does"),
)


def _parser() -> argparse.ArgumentParser:
    from tkbench.cli.parser import build_parser

    return build_parser()


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, in the order of --help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, _plain(helps.get(name, "")), sub


def _actions(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """A command's own subcommands (``history import``): (name, help, parser)."""
    for name, summary, sub in _subcommands(parser):
        yield f"{parser.prog.split(' ', 1)[1]} {name}", summary, sub


def _all_commands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every command, each followed by its own subcommands."""
    for name, summary, sub in _subcommands(parser):
        yield name, summary, sub
        yield from _actions(sub)


def _plain(text: str | None) -> str:
    return (text or "").replace("%%", "%")


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
    ]


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest.upper()


# --------------------------------------------------------------------------- man page


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def _man_option(action: argparse.Action) -> list[str]:
    if action.option_strings:
        names = ", ".join(f"\\fB{_roff(o)}\\fR" for o in action.option_strings)
        if _takes_value(action):
            names += f" \\fI{_roff(_metavar(action))}\\fR"
    else:
        names = f"\\fI{_roff(_metavar(action))}\\fR"
        if action.nargs in ("+", "*"):
            names += " ..."
    return [".TP", names, _roff(_plain(action.help))]


def manpage(parser: argparse.ArgumentParser | None = None) -> str:
    """The tkbench(1) man page, in roff (man macros)."""
    parser = parser or _parser()
    out = [
        f'.TH TKBENCH 1 "" "tkbench {__version__}" "User Commands"',
        ".SH NAME",
        "tkbench \\- " + _roff(_plain(parser.description)).rstrip("."),
        ".SH SYNOPSIS",
        ".B tkbench",
        "[\\fB\\-v\\fR | \\fB\\-q\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        _roff(
            "Runs the SNIA Solid State Storage Performance Test Specification (PTS) tests "
            "with fio: purge, precondition, rounds to steady state, and a PDF report.  "
            "Each command is described below; 'tkbench COMMAND --help' says the same."
        ),
        ".SH GLOBAL OPTIONS",
    ]
    for action in _options(parser):
        out += _man_option(action)
    out.append(".SH COMMANDS")
    for name, summary, sub in _all_commands(parser):
        out += [f'.SS "tkbench {name}"', _roff(_plain(sub.description) or summary)]
        for action in _options(sub):
            if action.dest == "help" or (
                action.dest in ("verbose", "quiet") and action.default == argparse.SUPPRESS
            ):
                continue  # the global options, described once above
            out += _man_option(action)
    out.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        out += [".TP", f"\\fB{code}\\fR", _roff(meaning)]
    out.append(".SH FILES")
    for path, meaning in FILES:
        out += [".TP", f"\\fI{_roff(path)}\\fR", _roff(meaning)]
    out.append(".SH ENVIRONMENT")
    for var, meaning in ENVIRONMENT:
        out += [".TP", f"\\fB{var}\\fR", _roff(meaning)]
    out += [".SH SEE ALSO", "\\fBfio\\fR(1), \\fBnbdkit\\fR(1)"]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- bash


def _words(items: list[str]) -> str:
    return " ".join(items)


def bash_completion(parser: argparse.ArgumentParser | None = None) -> str:
    """A bash completion function for tkbench (profile names asked of tkbench itself)."""
    parser = parser or _parser()
    commands = [name for name, _, _ in _subcommands(parser)]
    top = [o for a in _options(parser) for o in a.option_strings]
    cases = []
    for name, _, sub in _subcommands(parser):
        opts = [o for a in _options(sub) for o in a.option_strings]
        actions = [n.split(" ", 1)[1] for n, _, _ in _actions(sub)]  # history import, prune
        words = f'$(compgen -W "{_words(actions)}" -- "$cur") ' if actions else ""
        values = []
        for a in _options(sub):
            if not a.option_strings or not _takes_value(a):
                continue
            pattern = "|".join(a.option_strings)
            if a.dest == "profile":
                action = 'COMPREPLY=($(compgen -W "$(_tkbench_profiles)" -- "$cur"))'
            elif a.choices is not None:
                action = (
                    f'COMPREPLY=($(compgen -W "{_words([str(c) for c in a.choices])}" -- "$cur"))'
                )
            else:
                action = 'COMPREPLY=($(compgen -f -- "$cur"))'
            values.append(f"                {pattern}) {action}; return ;;")
        cases.append(
            f"        {name})\n"
            f'            case "$prev" in\n'
            + ("\n".join(values) + "\n" if values else "")
            + "            esac\n"
            f'            if [[ "$cur" == -* ]]; then\n'
            f'                COMPREPLY=($(compgen -W "{_words(opts)}" -- "$cur"))\n'
            "            else\n"
            f'                COMPREPLY=({words}$(compgen -f -- "$cur"))\n'
            "            fi ;;"
        )
    return (
        "# bash completion for tkbench (generated by 'python -m tkbench.cli.docgen bash')\n"
        "_tkbench_profiles() {\n"
        '    "${COMP_WORDS[0]}" profiles 2>/dev/null | while read -r name _; do\n'
        '        printf "%s\\n" "$name"\n'
        "    done\n"
        "}\n\n"
        "_tkbench() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"\n'
        '    local cmd="" i\n'
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '        case "${COMP_WORDS[i]}" in\n'
        "            -*) ;;\n"
        '            *) cmd="${COMP_WORDS[i]}"; break ;;\n'
        "        esac\n"
        "    done\n"
        '    case "$cmd" in\n'
        '        "")\n'
        f'            COMPREPLY=($(compgen -W "{_words(commands + top)}" -- "$cur")) ;;\n'
        + "\n".join(cases)
        + "\n    esac\n"
        "}\n"
        "complete -o filenames -F _tkbench tkbench\n"
    )


# --------------------------------------------------------------------------- zsh


def _zsh_text(text: str) -> str:
    """Text inside a single-quoted _arguments spec: no ', [, ], : unescaped."""
    text = _plain(text).replace("'", "'\\''")
    return text.replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def _zsh_spec(a: argparse.Action) -> list[str]:
    help_text = _zsh_text(_plain(a.help).split(";")[0][:100])
    if not a.option_strings:
        rest = "*" if a.nargs in ("+", "*") else ""
        return [f"'{rest}:{_zsh_text(_metavar(a))}:_files'"]
    out = []
    for o in a.option_strings:
        if not _takes_value(a):
            out.append(f"'{o}[{help_text}]'")
            continue
        if a.dest == "profile":
            what = "_tkbench_profiles"
        elif a.choices is not None:
            what = "(" + " ".join(str(c) for c in a.choices) + ")"
        else:
            what = "_files"
        repeat = "*" if isinstance(a, argparse._AppendAction) else ""
        out.append(f"'{repeat}{o}[{help_text}]:{_zsh_text(_metavar(a))}:{what}'")
    return out


def zsh_completion(parser: argparse.ArgumentParser | None = None) -> str:
    """A native zsh completion function (_tkbench) for tkbench."""
    parser = parser or _parser()
    commands = "\n".join(
        f"        '{name}:{_zsh_text(summary)}'" for name, summary, _ in _subcommands(parser)
    )
    top = " ".join(s for a in _options(parser) for s in _zsh_spec(a))
    cases = []
    for name, _, sub in _subcommands(parser):
        specs = " \\\n                ".join(s for a in _options(sub) for s in _zsh_spec(a))
        cases.append(f"            {name})\n                _arguments {specs} ;;")
    return (
        "#compdef tkbench\n"
        "# zsh completion for tkbench (generated by 'python -m tkbench.cli.docgen zsh')\n\n"
        "_tkbench_profiles() {\n"
        "    local -a names\n"
        "    names=(${(f)\"$(tkbench profiles 2>/dev/null | cut -d' ' -f1)\"})\n"
        "    _describe -t profiles 'profile' names\n"
        "}\n\n"
        "_tkbench() {\n"
        "    local curcontext=$curcontext state line\n"
        "    local -a commands\n"
        f"    commands=(\n{commands}\n    )\n"
        f"    _arguments -C {top} '1: :->command' '*:: :->args'\n"
        "    case $state in\n"
        "        command) _describe -t commands 'tkbench command' commands ;;\n"
        "        args)\n"
        "            case $line[1] in\n" + "\n".join(cases) + "\n            esac ;;\n"
        "    esac\n"
        "}\n\n"
        '_tkbench "$@"\n'
    )


GENERATORS = {"man": manpage, "bash": bash_completion, "zsh": zsh_completion}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in GENERATORS:
        sys.stderr.write(f"usage: python -m tkbench.cli.docgen {{{'|'.join(GENERATORS)}}}\n")
        return 2
    sys.stdout.write(GENERATORS[args[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main())
