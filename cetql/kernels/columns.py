"""What a kernel reads and writes: the columns of a template (masks, index
columns, expressions) read as lists, and detection's output schema."""

from __future__ import annotations

import pyarrow as pa

from cetql.kernels import spec as K


def detect_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    c = spec.columns
    fields = group_fields(c.group, input_schema)
    fields += [pa.field("events", pa.list_(input_schema.field(c.id).type)), pa.field("length", pa.int32())]
    if c.row:
        fields.append(pa.field("rows", pa.list_(input_schema.field(c.row).type)))
    return pa.schema(fields)


def group_fields(group, input_schema: pa.Schema) -> list[pa.Field]:
    """The group columns of a kernel's output: the window never null, the
    keys nullable — one rule, so a result's schema is the same whichever
    engine read the input (Spark's nullability or DuckDB's)."""
    first, *keys = group
    return [input_schema.field(first).with_nullable(False), *(input_schema.field(k).with_nullable(True) for k in keys)]


def read_columns(table: pa.Table, names: set[str], columns: K.Columns) -> tuple[dict, list]:
    cols = {name: table.column(name).to_pylist() for name in names if name in table.column_names}
    return cols, table.column(columns.time).to_pylist()


def _transitions(t: K.TemplateSpec):
    yield from t.transitions
    for neg in t.negations:
        yield from _transitions(neg.template)


def _crosses(t: K.TemplateSpec):
    yield from t.cross
    for neg in t.negations:
        yield from _crosses(neg.template)


def _template_columns(t: K.TemplateSpec) -> list[str]:
    """The mask and index columns of a template and its negations."""
    names = [s.mask for s in t.states]
    for tr in t.transitions:
        names += [c for pair in tr.equal for c in pair] + [c for lc, _, hc in tr.ranges for c in (lc, hc)]
    for neg in t.negations:
        names += _template_columns(neg.template)
    return names


def template_columns(t: K.TemplateSpec) -> set[str]:
    """Every column a template reads (masks, index columns, expressions)."""
    exprs = [e for tr in _transitions(t) for e in tr.others] + [c.expr for c in _crosses(t)]
    return set(_template_columns(t)) | set(K.columns(*exprs))
