"""What the planner is told of path inputs, learnt without an engine: each
input's schema, time kind, label, whether it is read as text, and (for
Parquet) its files' rows, size and Arrow types — described by the one
reader (`sources.describe`), so `compile --input` and every engine plan
with the same facts."""

from __future__ import annotations

from pathlib import Path

from cetql.backends.inputs import sources
from cetql.base.errors import SchemaError
from cetql.planner.logical.plan import InputFacts, Inputs, LocalFiles
from cetql.planner.semantics.schema import NUMERIC, OTHER, STRING, TIMESTAMP, Schema


def summarize(described: dict[str | None, tuple], time_col: str) -> Inputs:
    """Inputs from each input's (schema, nanosecond time?, label, read as
    text?[, local Parquet files[, its files' stamps]])."""
    cols: dict[str, tuple] = {}
    kinds = set()
    each = []
    for name, (schema, nanos, label, text, *more) in described.items():
        kinds.add(time_kind(schema, time_col, nanos, name))
        found = schema.lookup(time_col)
        written = None if found is None or found[0] == OTHER else found[1]
        files, stamps = (more + [None, ()])[:2]
        each.append(InputFacts(name, label, text, written, nanos, files=files, stamps=stamps))
        for c in schema.columns:
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


def describe_paths(specs: dict[str | None, str], time_col: str) -> Inputs | None:
    """What can be learnt of inputs without Spark: paths are described by the
    reader; a table name needs Spark (None)."""
    if not specs or not all(Path(str(v)).exists() for v in specs.values()):
        return None
    described = {}
    for name, spec in specs.items():
        source = sources.describe(spec)
        nanos = any(c.nanos and c.name == time_col for c in source.columns)
        described[name] = (source.schema, nanos, source.name, source.text, local_files(source), source.stamps)
    return summarize(described, time_col)


def local_files(source) -> LocalFiles | None:
    """What the in-process engine needs to know of Parquet files: rows, size
    and Arrow types, from their footers (None for other formats)."""
    if source.format != "parquet":
        return None
    import pyarrow.parquet as pq

    rows = size = 0
    arrow = None
    for f in source.files:
        meta = pq.ParquetFile(f).metadata
        rows += meta.num_rows
        size += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if arrow is None:
            arrow = tuple((field.name, str(field.type)) for field in meta.schema.to_arrow_schema())
    return LocalFiles(tuple(source.files), rows, size, arrow or ())


def time_kind(schema: Schema, time_col: str, nanos: bool, name=None) -> str | None:
    found = schema.lookup(time_col)
    where = f"input {name}" if name else "the input"
    if found is None:
        raise SchemaError(
            f"time column '{time_col}' is not in {where} (columns: {', '.join(schema.names())}); "
            "name it with --time-col"
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
