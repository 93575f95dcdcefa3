"""A workload's kernels over one shared kernel input (one exchange): each
query's own kernel on its own rows, A-Seq's prefix trees (`pretree`)
for the queries whose counters the plan shares, and shared GRETA
propagations (`graphlets`) for those whose templates share states — what Spark's
`mapInArrow`, the embedded engine and a stream's operator call for several
queries at once.

The shared input holds every column the members read, one column per
definition (`Member.columns` maps a query's own names to it), and one
selection column per query (the events it takes).  A member's kernel sees
exactly the table it sees alone — the rows its selection holds, under its
own column names — so it gives the rows it gives alone.

`member_batches` gives each member's output batches, in its own schema
(the embedded engine keeps them apart as they come).  For Spark's
`mapInArrow` and a stream's operator, one schema holds them all
(`combined_schema`): the query's index, the group columns the members
share, then each member's own result columns, prefixed `__r<index>_`
(null in the other members' rows); `backends.spark.workload` selects one
query's rows back out of it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from cetql.kernels import spec as K
from cetql.kernels.aggregate import aggregate_schema, aggregate_table
from cetql.kernels.batches import map_groups
from cetql.kernels.detect import detect_schema, detect_table
from cetql.kernels.errors import of_query
from cetql.kernels.graphlets import graph_batches
from cetql.kernels.pretree import tree_batches
from cetql.kernels.workload_spec import Member, WorkloadSpec


def base_columns(c: K.Columns) -> list[str]:
    """The columns every member reads under the same name."""
    out = [*c.group, c.time, c.id]
    return out + [x for x in (c.row, c.window_lo, c.window_hi) if x is not None]


def view(table: pa.Table, m: Member) -> pa.Table:
    """The member's kernel input: its rows, its own column names."""
    names = [c for c in base_columns(m.spec.columns) if c in table.column_names]
    names += [shared for _, shared in m.columns]
    mine = table.select(names).rename_columns([*names[: len(names) - len(m.columns)], *(own for own, _ in m.columns)])
    return mine.filter(pc.fill_null(table.column(m.select), False))  # its columns only: a copy of what it reads


def view_schema(input_schema: pa.Schema, m: Member) -> pa.Schema:
    base = [input_schema.field(c) for c in base_columns(m.spec.columns) if c in input_schema.names]
    return pa.schema(base + [input_schema.field(shared).with_name(own) for own, shared in m.columns])


def member_schema(m: Member, input_schema: pa.Schema) -> pa.Schema:
    """The member's kernel output schema, as alone."""
    v = view_schema(input_schema, m)
    return detect_schema(m.spec, v) if isinstance(m.spec, K.DetectSpec) else aggregate_schema(m.spec, v)


def result_name(query: int, name: str) -> str:
    return f"__r{query}_{name}"


def combined_schema(spec: WorkloadSpec, input_schema: pa.Schema) -> pa.Schema:
    group = list(spec.columns.group)
    fields = [pa.field(spec.query, pa.int32(), nullable=False), input_schema.field(group[0]).with_nullable(False)]
    fields += [input_schema.field(g).with_nullable(True) for g in group[1:]]
    for m in spec.members:
        own = member_schema(m, input_schema)
        fields += [f.with_name(result_name(m.query, f.name)).with_nullable(True) for f in own if f.name not in group]
    return pa.schema(fields)


def pack(spec: WorkloadSpec, m: Member, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A member's output batch as rows of the combined schema."""
    n, group = batch.num_rows, set(spec.columns.group)
    arrays = []
    for f in schema:
        if f.name == spec.query:
            arrays.append(pa.array([m.query] * n, type=pa.int32()))
        elif f.name in group and f.name in batch.schema.names:
            arrays.append(batch.column(f.name).cast(f.type))
        else:
            own = f.name.removeprefix(f"__r{m.query}_") if f.name.startswith(f"__r{m.query}_") else None
            found = own is not None and own in batch.schema.names and own not in group
            arrays.append(batch.column(own) if found else pa.nulls(n, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def member_batches(spec: WorkloadSpec, table: pa.Table) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(member index, a batch of its output rows, in its own schema) for
    whole groups of the shared input."""
    if table.num_rows == 0:
        return
    in_tree = {i for t in spec.trees for i in t.members} | {gm.member for g in spec.graphs for gm in g.members}
    for i, m in enumerate(spec.members):
        if i in in_tree:
            continue
        rows = view(table, m)
        if rows.num_rows == 0:
            continue
        run = detect_table if isinstance(m.spec, K.DetectSpec) else aggregate_table
        with of_query(m.name):
            for b in run(m.spec, rows):
                yield i, b
    for tree in spec.trees:
        yield from tree_batches(spec, tree, table)
    for g in spec.graphs:
        yield from graph_batches(spec, g, table, [member_schema(spec.members[gm.member], table.schema) for gm in g.members])


def workload_table(spec: WorkloadSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """Every member's rows of whole groups of the shared input, as rows of the combined schema."""
    schema = combined_schema(spec, table.schema) if table.num_rows else None
    for i, b in member_batches(spec, table):
        yield pack(spec, spec.members[i], b, schema)


def members_fn(spec: WorkloadSpec):
    """`member_batches` over sorted batches (the embedded engine's slices)."""
    return map_groups(list(spec.columns.group), lambda table: member_batches(spec, table))


def workload_fn(spec: WorkloadSpec):
    """The function given to `mapInArrow` for a shared exchange."""
    return map_groups(list(spec.columns.group), lambda table: workload_table(spec, table))
