"""Errors a user sees: each names the problem, and a query error its place.

`QueryError.render()` gives the form the CLI prints:

    syntax error: 2:13: unexpected ')'; expected '(', '-', a name, …
      2 | WHERE c.x > )
        |             ^
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    """A place in the query text: line and column, 1-based."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


class CetqlError(Exception):
    """Base of every error cetql raises on purpose."""

    exit_code = 1

    def render(self) -> str:
        return f"error: {self}"


class QueryError(CetqlError):
    """The query text is wrong: a syntax error or a semantic one."""

    exit_code = 2
    kind = "error"

    def __init__(self, message: str, pos: Pos | None = None, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.source = source

    def with_source(self, source: str) -> QueryError:
        if self.source is None:
            self.source = source
        return self

    def __str__(self) -> str:
        return f"{self.pos}: {self.message}" if self.pos else self.message

    def render(self, filename: str | None = None) -> str:
        where = f"{self.pos}: " if self.pos else ""
        head = f"{filename}:{where}{self.kind}: {self.message}" if filename else f"{self.kind}: {where}{self.message}"
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


class SchemaError(CetqlError):
    """The data does not fit the query: a missing column, a wrong type."""

    exit_code = 2


class UsageError(CetqlError):
    """The command line is wrong: a missing file, conflicting options."""

    exit_code = 2


class ParameterError(CetqlError):
    """A query parameter is missing or malformed."""

    exit_code = 2
