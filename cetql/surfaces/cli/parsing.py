"""One way to read a `cetql` command line, for every command: argparse
underneath, and every refusal one line (exit status 2, as every usage
error): an option the command does not have is answered with the nearest
one it has (`base.words`), or with the commands that have it.

    error: unknown option --id_col; did you mean --id-col?
    error: unknown option --stream; --stream is an option of cetql compile and cetql run, not of cetql repl
    error: --format: invalid choice 'parqet' (did you mean 'parquet'?); choose from parquet, csv, json, table

The top-level parser is a `Parser`; the commands' parsers (each surface's
`add_parser`) are made by its subparsers, so they are `Parser`s too.
"""

from __future__ import annotations

import argparse
import re

from cetql.base.errors import UsageError
from cetql.base.words import closest, did_you_mean, fold

_VALUE = re.compile(r"-[\d.].*")  # a value (-1, -.5, -05:00), never an option's name: argparse says what is wrong


class Parser(argparse.ArgumentParser):
    """argparse's parser, refusing with a `UsageError` (one line) where
    argparse would print its usage and exit."""

    commands: argparse._SubParsersAction | None = None

    def error(self, message: str):
        raise UsageError(message)

    def add_subparsers(self, **kwargs):
        self.commands = super().add_subparsers(**kwargs)
        return self.commands

    def _check_value(self, action, value):  # argparse's check of a value against `choices`
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(None, _not_a_choice(action, value))


def parse(parser: Parser, argv: list[str]) -> argparse.Namespace:
    """The command line read by `parser`, or the `UsageError` that says
    what is wrong with it: first an option its command does not have."""
    try:
        args, extra = parser.parse_known_args(argv)
    except UsageError as refused:
        raise _unknown_option(parser, argv) or _no_command(parser, argv) or refused from None
    if extra and getattr(args, "more_queries", None) is not None and not any(e.startswith("-") for e in extra):
        args.more_queries = [*args.more_queries, *extra]  # query files after options: a workload's too
        extra = []
    if extra:
        raise _unknown_option(parser, argv) or UsageError(f"unexpected argument '{extra[0]}'")
    return args


def options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string `parser` takes (`-o`, `--output`, …)."""
    return [s for action in parser._actions for s in action.option_strings]  # argparse keeps them there


def _unknown_option(parser: Parser, argv: list[str]) -> UsageError | None:
    """The first option on the command line that its command does not take."""
    commands = dict(parser.commands.choices) if parser.commands is not None else {}
    command, own = None, parser
    for token in argv:
        if token == "--":
            break
        if command is None and not token.startswith("-"):
            if token not in commands:
                return None  # argparse's refusal names the commands
            command, own = token, commands[token]
        elif token.startswith("-") and token != "-" and not _VALUE.fullmatch(token):
            name = token.split("=", 1)[0]
            if not _takes(own, name):
                return UsageError(_unknown_message(name, command, own, commands))
    return None


def _no_command(parser: Parser, argv: list[str]) -> UsageError | None:
    if parser.commands is None or any(not a.startswith("-") for a in argv):
        return None
    return UsageError(f"give a command: {_listed(list(parser.commands.choices), 'or')} (cetql -h says what each does)")


def _takes(parser: argparse.ArgumentParser, name: str) -> bool:
    """Whether `parser` reads `name`: one of its options, a prefix argparse
    completes (`--expl`), or a short option with its value (`-oFILE`)."""
    known = options(parser)
    if name in known or (not name.startswith("--") and name[:2] in known):
        return True
    return name.startswith("--") and len(name) > 2 and any(o.startswith(name) for o in known)


def _unknown_message(name: str, command: str | None, own, commands: dict) -> str:
    longs = {o[2:]: o for o in options(own) if o.startswith("--")}
    near = closest(name.lstrip("-"), longs)
    meant = f"; did you mean {longs[near]}?" if near is not None else ""
    theirs = [(c, o) for c, p in commands.items() if c != command for o in options(p) if fold(o) == fold(name)]
    if not theirs or (near is not None and fold(near) == fold(name.lstrip("-"))):  # --id_col: this command's --id-col
        return f"unknown option {name}" + (meant or f" ({_program(command)} -h lists its options)")
    spelled = theirs[0][1]
    where = _listed([f"cetql {c}" for c, _ in theirs])
    if command is None:
        return f"unknown option {name}; {spelled} is an option of {where}: give it after the command"
    if meant:
        return f"unknown option {name}{meant} ({spelled} is an option of {where})"
    return f"unknown option {name}; {spelled} is an option of {where}, not of cetql {command}"


def _not_a_choice(action, value) -> str:
    choices = [str(c) for c in action.choices]
    if isinstance(action, argparse._SubParsersAction):  # the command itself
        return f"unknown command '{value}'{did_you_mean(value, choices)}; the commands: {', '.join(choices)}"
    near = did_you_mean(str(value), choices)
    if not action.option_strings:  # a positional argument: gen's SCENARIO
        return f"unknown {(action.metavar or action.dest).lower()} '{value}'{near}; choose from {', '.join(choices)}"
    return f"{action.option_strings[-1]}: invalid choice '{value}'{near}; choose from {', '.join(choices)}"


def _program(command: str | None) -> str:
    return f"cetql {command}" if command else "cetql"


def _listed(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"
