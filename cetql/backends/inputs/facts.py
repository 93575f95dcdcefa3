"""What the planner is told of path inputs, learnt without an engine: each
input's schema, time kind, label, whether it is read as text, and (for
Parquet) its files' rows, size and Arrow types — described by the one
reader (`sources.describe`), so `compile --input` and every engine plan
with the same facts."""

from __future__ import annotations

from pathlib import Path

from cetql.backends.inputs import sources
from cetql.base.errors import SchemaError
from cetql.base.words import did_you_mean
from cetql.planner.logical.plan import InputFacts, Inputs
from cetql.planner.semantics.schema import NUMERIC, OTHER, STRING, TIMESTAMP, Schema, column_key


def summarize(described: dict[str | None, tuple], time_col: str) -> Inputs:
    """Inputs from each input's (schema, nanosecond time?, label, read as
    text?[, its Source: local files as the reader described them])."""
    cols: dict[str, tuple] = {}
    spelled: dict[str, tuple[str, str | None]] = {}  # a column's key → (its name, the input that named it first)
    kinds = set()
    each = []
    for name, (schema, nanos, label, text, *more) in described.items():
        kinds.add(time_kind(schema, time_col, nanos, name))
        found = schema.lookup(time_col)
        written = None if found is None or found[0] == OTHER else found[1]
        source = more[0] if more else None
        each.append(InputFacts(name, label, text, written, nanos, source=source,
                               stamps=source.stamps if source is not None else ()))  # fmt: skip
        for c in schema.columns:
            first, where = spelled.setdefault(column_key(c[0]), (c[0], name))
            if first != c[0]:  # one column to a query, named two ways: each input's rules would key it apart
                raise SchemaError(
                    f"column '{first}' of {_input(where)} and '{c[0]}' of {_input(name)} are one column to a query "
                    "(it finds columns without case); name it alike in every input"
                )
            prev = cols.get(c[0])
            if prev is not None and OTHER not in (prev[1], c[1]) and prev[1] != c[1]:
                raise SchemaError(
                    f"column '{c[0]}' is {prev[2]} in one input and {c[2]} in another; give it one type"
                )
            if prev is None or prev[1] == OTHER:
                cols[c[0]] = c
    kinds.discard(None)
    if kinds == {"timestamp", "timestamp_ns"}:  # the same kind at two precisions: nanoseconds hold both
        kinds = {"timestamp_ns"}
    if len(kinds) > 1:
        raise SchemaError(f"time column '{time_col}' is a timestamp in one input and a number in another")
    return Inputs(
        typed=None not in described,
        types=tuple(sorted(k for k in described if k is not None)),
        schema=Schema(tuple(cols.values())),
        time_kind=next(iter(kinds)) if kinds else "numeric",
        names=tuple(d[2] for d in described.values()),
        each=tuple(each),
    )


def _input(name: str | None) -> str:
    return f"input {name}" if name else "the input"


def time_in_nanos(source, time_col: str) -> bool:
    """Whether an input's time column (found as a query finds columns) holds
    nanoseconds."""
    col = source.schema.spelled(time_col)
    return any(c.nanos and c.name == col for c in source.columns)


def describe_paths(specs: dict[str | None, str], time_col: str, time_zone: str = "UTC") -> Inputs | None:
    """What can be learnt of inputs without Spark: paths are described by the
    reader; a table name needs Spark (None)."""
    if not specs or not all(Path(str(v)).exists() for v in specs.values()):
        return None
    described = {}
    for name, spec in specs.items():
        source = sources.describe(spec, time_zone)
        described[name] = (source.schema, time_in_nanos(source, time_col), source.name, source.text, source)
    return summarize(described, time_col)


def time_kind(schema: Schema, time_col: str, nanos: bool, name=None) -> str | None:
    found = schema.lookup(time_col)
    where = f"input {name}" if name else "the input"
    if found is None:
        raise SchemaError(
            f"time column '{time_col}' is not in {where}{did_you_mean(time_col, schema.names())}; "
            f"name it with --time-col (columns: {', '.join(schema.names())})"
        )
    cls, written = found
    if nanos:
        return "timestamp_ns"
    if cls == TIMESTAMP:
        return "timestamp"
    if cls == NUMERIC:
        return "numeric"
    if cls == OTHER:
        return None  # no value seen (an empty input): any kind fits
    what = "text" if cls == STRING else written
    raise SchemaError(f"time column '{time_col}' is {what}; it must be a timestamp or a number")
