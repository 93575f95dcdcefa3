"""What a kernel reads and writes: the columns of a template (masks, index
columns, expressions) read as lists, and detection's output schema."""

from __future__ import annotations

import pyarrow as pa

from cetql.kernels import spec as K


def detect_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    c = spec.columns
    fields = [input_schema.field(g) for g in c.group]
    fields += [pa.field("events", pa.list_(input_schema.field(c.id).type)), pa.field("length", pa.int32())]
    if c.row:
        fields.append(pa.field("rows", pa.list_(input_schema.field(c.row).type)))
    return pa.schema(fields)


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
