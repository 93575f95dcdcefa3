"""Reading the command line's query files, parameters and inputs (shared by
`cetql compile/run` and the REPL)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from cetql.base.errors import ArgumentTypeError, ParameterError, UsageError
from cetql.planner.semantics.parameters import parse_param


class QueryTextError(ArgumentTypeError):
    """A query that is not text (`cetql.compile(None)`): a cetql error, and
    a TypeError as Python's own functions raise for an argument of the wrong type."""


def query_text(text) -> str:
    """The query text, or a `QueryTextError` saying what was given instead."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        raise QueryTextError("the query is bytes; give it as text (str), e.g. data.decode('utf-8')")
    raise QueryTextError(f"the query must be text (str), not {type(text).__name__}")


def read_query(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read()
        where = "standard input"
    else:
        p = Path(path)
        if not p.is_file():
            raise UsageError(f"query file '{path}' does not exist" if not p.exists() else f"'{path}' is not a file")
        data = p.read_bytes()
        where = f"query file '{path}'"
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(f"{where} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r}); save it as UTF-8") from None


def parse_params(items: list[str] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items or []:
        k, v = parse_param(item)
        if k in out:
            raise ParameterError(f"--param {k} is given twice")
        out[k] = v
    return out


def parse_inputs(items: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """`--input PATH` (one single-type stream) or `--input Type=PATH` (repeatable)."""
    untyped, typed = [], {}
    for item in items or []:
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", item)
        if m and not Path(item).exists():
            if m.group(1) in typed:
                raise UsageError(f"type '{m.group(1)}' is bound to two inputs")
            typed[m.group(1)] = m.group(2)
        else:
            untyped.append(item)
    if len(untyped) > 1:
        raise UsageError("give one untyped --input, or bind each input to a type with --input Type=PATH")
    if untyped and typed:
        raise UsageError("give either one untyped --input or inputs bound to types (Type=PATH), not both")
    return (untyped[0] if untyped else None), typed
