"""Errors a user sees: each names the problem, and a query error its place.

`QueryError.render()` gives the form the CLI prints:

    syntax error: 2:13: unexpected ')'; expected '(', '-', a name, …
      2 | WHERE c.x > )
        |             ^

Each message is written once, naming options as the command line spells
them (`--time-col`, `--param r=<value>`, `--trends maximal`), and the
surface that shows it says them in its own words (`spoken`): `str(e)` is
what a Python caller reads (`time_col=`, `params={"r": …}`,
`trends="maximal"`), `e.render()` what the command line prints,
`e.render(surface="repl")` what the shell prints (`:param r=<value>`).

Every class also derives from the standard exception a Python user would
catch for the case: `ValueError` (bad values, usage, query text),
`TypeError` (an argument of the wrong type, an unknown keyword),
`FileNotFoundError` (a missing input path), `KeyError` (an input bound to
a type the pattern does not have).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---------------------------------------------------------------- options in words

# Every run option a message may name: its command-line flag → (its Python
# keyword, how a value after the flag is read: a word of `values`, "int",
# "size", "bool" (the flag takes none) or "name" (a column: only quoted)).
# Flags of the command line alone (--output, --mode, --format, --limit,
# --show, --master, …) are not here: they never reach Python.
_ENUMS = {
    "trends": ("complete", "maximal", "all"),
    "strategy": ("local", "distributed"),
    "sharing": ("copy", "blocks"),
    "exact": ("decimal", "string"),
    "kernel": ("index", "scan"),
    "compiled": ("auto", "always", "never"),
    "time_unit": ("s", "ms", "us", "ns"),
    "engine": ("auto", "embedded", "spark"),
}
OPTION_FLAGS: dict[str, tuple[str, object]] = {
    **{"--" + k.replace("_", "-"): (k, v) for k, v in _ENUMS.items()},
    "--time-col": ("time_col", "name"),
    "--id-col": ("id_col", "name"),
    "--time-zone": ("time_zone", "name"),
    "--max-trends": ("max_trends", "int"),
    "--max-windows": ("max_windows", "int"),
    "--partitions": ("partitions", "int"),
    "--memory-budget": ("memory_budget", "size"),
    "--approx": ("approx", "bool"),
    "--with-rows": ("with_rows", "bool"),
    "--drop-invalid": ("drop_invalid", "bool"),
}

_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
_PARAM = re.compile(r"--param (?:'?)([A-Za-z_]\w*)=(<value>|[^\s,;)']+)'?")
_PARAM_NAME = re.compile(r"--param ([A-Za-z_]\w*):")  # a parameter given, named: `params["x"]:` in Python
_NUMBER = re.compile(r" (-?\d[\d,]*(?:\.\d+)?)(?![\w.])")
_SIZE = re.compile(r" (\d[\d.]*[A-Za-z]*)\b")
_QUOTED = re.compile(r" ('[^']*')")
_WORD = re.compile(r" ([A-Za-z]+)\b")


def flag(keyword: str) -> str:
    """The command-line flag of a run option (`time_col` → `--time-col`)."""
    return "--" + keyword.replace("_", "-")


def spoken(text: str, surface: str = "python") -> str:
    """`text`, written in the command line's words, as `surface` says it."""
    if surface == "cli" or "--" not in text:
        return text
    if surface == "repl":
        return re.sub(r"(?<![\w-])--(param|input|limit)\b", r":\1", text)
    text = _PARAM.sub(lambda m: f'params={{"{m.group(1)}": {"…" if m.group(2) == "<value>" else m.group(2)}}}', text)
    text = _PARAM_NAME.sub(lambda m: f'params["{m.group(1)}"]:', text)
    out, at = [], 0
    for m in _FLAG.finditer(text):
        if m.start() < at:
            continue
        word = m.group(1)
        out.append(text[at : m.start()])
        at = m.end()
        if word == "--explain":
            out.append("explain()")
            continue
        if word not in OPTION_FLAGS:
            out.append(word)
            continue
        keyword, kind = OPTION_FLAGS[word]
        rest = text[at:]
        value = None
        if kind == "bool":
            value = "True"
        elif (q := _QUOTED.match(rest)) is not None:
            value, at = q.group(1), at + q.end()
        elif kind == "int" and (n := _NUMBER.match(rest)) is not None:
            value, at = n.group(1).replace(",", ""), at + n.end()
        elif kind == "size" and (s := _SIZE.match(rest)) is not None:
            value, at = f'"{s.group(1)}"', at + s.end()
        elif isinstance(kind, tuple) and (w := _WORD.match(rest)) is not None and w.group(1).lower() in kind:
            value, at = f'"{w.group(1).lower()}"', at + w.end()
        if value is not None:
            out.append(f"{keyword}={value}")
        else:  # the option itself: its name as the subject of a sentence, else the keyword to give
            out.append(keyword if not "".join(out).strip() else f"{keyword}=")
    out.append(text[at:])
    return "".join(out)


# ---------------------------------------------------------------- the classes


@dataclass(frozen=True)
class Pos:
    """A place in the query text: line and column, 1-based."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


# What a 64-bit overflow means to a user, whichever engine met it (`failures`, `planner.local`).
OVERFLOW_MESSAGE = ("a number went past what its type holds while the query ran (overflow): times or values near "
                    "the 64-bit limit (about ±9.2e18; a window's bounds must lie within it) or a huge parameter; "
                    "move the times nearer to zero or drop those rows")  # fmt: skip


class CetqlError(Exception):
    """Base of every error cetql raises on purpose."""

    exit_code = 1

    def text(self, surface: str = "python") -> str:
        """The message as `surface` says it (see `spoken`)."""
        return spoken(Exception.__str__(self), surface)

    def __str__(self) -> str:
        return self.text("cli" if type(self).__module__.endswith(_WORKER_MODULE) else "python")

    def render(self, surface: str = "cli") -> str:
        return f"error: {self.text(surface)}"


# Errors the kernels raise inside a Spark worker cross to the driver as the
# text of a traceback, which `cetql.failures` hands to the command line as it
# is: they keep the words messages are written in (`--max-trends`).  (Python
# callers meet them inside PySpark's own PythonException.)
_WORKER_MODULE = "kernels.errors"


class QueryError(CetqlError, ValueError):
    """The query text is wrong: a syntax error or a semantic one."""

    exit_code = 2
    kind = "error"
    query: str | None = None  # a workload's query it is in (its name)

    def __init__(self, message: str, pos: Pos | None = None, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.source = source

    def with_source(self, source: str) -> QueryError:
        if self.source is None:
            self.source = source
        return self

    def text(self, surface: str = "python") -> str:
        message = spoken(self.message, surface)
        return f"{self.pos}: {message}" if self.pos else message

    def render(self, filename: str | None = None, surface: str = "cli") -> str:
        where = f"{self.pos}: " if self.pos else ""
        message = spoken(self.message, surface)
        head = f"{filename}:{where}{self.kind}: {message}" if filename else f"{self.kind}: {where}{message}"
        out = [head]
        if self.pos and self.source is not None:
            lines = self.source.splitlines() or [""]
            if 1 <= self.pos.line <= len(lines):
                text = lines[self.pos.line - 1].expandtabs(1)
                gutter = f"{self.pos.line:>4} | "
                out.append(gutter + text)
                out.append(" " * (len(gutter) - 2) + "| " + " " * (self.pos.column - 1) + "^")
        return "\n".join(out)


class QuerySyntaxError(QueryError):
    """The text is not a cetql query."""

    kind = "syntax error"


class QuerySemanticError(QueryError):
    """The query parses but means nothing: unknown variable, bad index, …"""


class SchemaError(CetqlError, ValueError):
    """The data does not fit the query: a missing column, a wrong type."""

    exit_code = 2
    pos: Pos | None = None  # the place in the query its message names, as `line:column` (a column read there)
    query: str | None = None  # a workload's query it is in (its name)

    def placed(self, pos: Pos, where: str) -> None:
        """Name the place as `where` says it (a file and the place there),
        not as `line:column` of its query."""
        if self.pos is not None and len(self.args) == 1 and isinstance(self.args[0], str):
            self.args = (self.args[0].replace(f", {self.pos})", f", {where} {pos})", 1),)
            self.pos = pos


class UsageError(CetqlError, ValueError):
    """The command line (or a Python call) is wrong: conflicting options, a
    bad value."""

    exit_code = 2


class ArgumentTypeError(UsageError, TypeError):
    """A Python argument of the wrong type, or a keyword nothing takes."""


class InputNotFoundError(UsageError, FileNotFoundError):
    """An input path that does not exist."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.filename = path


class UnknownTypeError(UsageError, KeyError):
    """An input bound to an event type the pattern does not have."""


class ParameterError(CetqlError, ValueError):
    """A query parameter is missing or malformed."""

    exit_code = 2


def shared_keyed_event(v: str, other: str) -> str:
    """The one message for an equivalence of one variable (`[v.k]`, split
    into parts) where an event may be `v` and `other`: the planner's refusal
    and the kernel's assertion (`planner.kernels.parts`) say the same."""
    return (
        f"an equivalence on the events of {v} alone needs events that can be nothing but {v}, and an event "
        f"here may be {v} or {other}: bind the inputs to types that tell them apart, or write the "
        "equivalence over every variable"
    )


def said_of(e: CetqlError, name: str | tuple[str, ...]) -> None:
    """`e`'s message names query `name` (`query NAME: …`), or the queries
    whose shared work failed (`queries A, B (work they share): …`), once,
    in place: its class, exit code and other fields kept (an error built
    with other arguments than its message is left as it is).  `e.query`
    holds the one query's name (its place in a workload file)."""
    named = getattr(e, "query", None) is not None or getattr(e, "queries", None) is not None
    if not name or named or len(e.args) != 1 or not isinstance(e.args[0], str):
        return
    if isinstance(name, tuple):
        e.args = (f"queries {', '.join(name)} (work they share): {e.args[0]}",)
        e.queries = name
    else:
        e.args = (f"query {name}: {e.args[0]}",)
        e.query = name
