"""The trends of a detection's negated sub-patterns, summarised per group as
the local kernel summarises them (`template.spans`): for each end node of a
negated template, (latest start, end) times.  The distributed strategy
reads them as a table and anti-joins paths on their time spans; this is the
part of a negation that is not one event (`NOT SEQ(…)`, a negated Kleene),
computed per group by one worker over the negated events only."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from cetql.kernels import spec as K
from cetql.kernels.batches import map_groups, segments
from cetql.kernels.columns import read_columns, template_columns
from cetql.kernels.template import GroupTemplate, spans

NEG, START, END = "__neg", "__ns", "__ne"


def spans_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    time = input_schema.field(spec.columns.time).type
    fields = [input_schema.field(g) for g in spec.columns.group]
    return pa.schema([*fields, pa.field(NEG, pa.int32()), pa.field(START, time), pa.field(END, time)])


def spans_table(spec: K.DetectSpec, which: tuple[int, ...], table: pa.Table) -> Iterator[pa.RecordBatch]:
    """(group, negation, latest start, end) of the negations `which` (indexes
    into the template's negations) in every group of a sorted table."""
    if table.num_rows == 0:
        return
    c = spec.columns
    negs = [spec.template.negations[i] for i in which]
    wanted = set().union(*(template_columns(n.template) for n in negs))
    cols, times = read_columns(table, wanted, c)
    schema = spans_schema(spec, table.schema)
    for start, end, _ in segments(table, list(c.group), c.block, c.window_lo, c.window_hi):
        local = {k: v[start:end] for k, v in cols.items()}
        rows: list[tuple] = []
        for i, neg in zip(which, negs):
            rows += [(i, s, e) for s, e in spans(GroupTemplate(neg.template, times[start:end], local))]
        if not rows:
            continue
        keys = [table.column(g).slice(start, 1).to_pylist()[0] for g in c.group]
        arrays = [pa.array([k] * len(rows), type=schema.field(j).type) for j, k in enumerate(keys)]
        arrays += [pa.array([r[j] for r in rows], type=schema.field(len(keys) + j).type) for j in range(3)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def spans_fn(spec: K.DetectSpec, which: tuple[int, ...]):
    """The function given to `mapInArrow` for `spans_table`."""
    return map_groups(list(spec.columns.group), lambda table: spans_table(spec, which, table))
