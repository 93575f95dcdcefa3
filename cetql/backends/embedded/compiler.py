"""The embedded compiler: a physical plan → Arrow batches of its result,
in this process, no Spark.  The relational stages run on DuckDB, spelled
from the plan by the same SQL compilers Spark's are (`sql.expressions`,
`sql.windows`, `inputs.casts`); the kernels are the ones Spark's Python
workers run (`kernels.process`), on the sorted kernel input.

    scan (reader) → checks → filter → windows → partition → sort   (DuckDB)
    → detect | aggregate                                          (kernels)
    → window bounds and output columns                            (Arrow)

It decides nothing: only plans whose `engine` is EMBEDDED come here, and
what it runs is what `capabilities` declares.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from cetql.backends.embedded import checks, reader
from cetql.backends.embedded.output import output
from cetql.backends.embedded.slices import kernels
from cetql.backends.inputs.stamps import check_unchanged
from cetql.backends.sql import windows as W
from cetql.backends.sql.dialects import DUCKDB
from cetql.backends.sql.expressions import condition, to_sql
from cetql.kernels import process, select
from cetql.planner.logical import plan as L
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Detect, PhysicalPlan

Q = DUCKDB.quote
EVENTS = "__cetql_events"


@dataclass
class Result:
    """The result's schema and batches (lazy: the kernels run as they are
    read), what the scan dropped (--drop-invalid), and the connection that
    holds the scanned events (for looking up the events of trends)."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    dropped: int = 0
    connection: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    plan: PhysicalPlan | None = field(default=None, repr=False)


def connect() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the session settings every run uses: UTC
    (no machine zone in any value), every core, and what it spills to disk
    in a folder of its own under the system's temporary folder, removed with
    the connection (DuckDB's default is `.tmp` in the working folder)."""
    spill = tempfile.mkdtemp(prefix="cetql-duckdb-")
    con = duckdb.connect(config={"threads": max(1, os.cpu_count() or 1), "temp_directory": spill})
    weakref.finalize(con, shutil.rmtree, spill, True)
    con.execute("SET TimeZone = 'UTC'").fetchall()
    return con


def run(plan: PhysicalPlan) -> Result:
    """The plan's result, read from its input files."""
    spec = kernel_spec(plan)
    con = connect()
    dropped = scan(con, plan)
    select.preload(spec, con.execute(f"SELECT count(*) FROM {EVENTS}").fetchall()[0][0])  # beside the kernel input's query
    table = con.sql(kernel_input_sql(plan)).to_arrow_table()
    if isinstance(plan.root, Detect):
        fn, schema = process.detect_fn(spec), process.detect_schema(spec, table.schema)
    else:
        fn, schema = process.aggregate_fn(spec), process.aggregate_schema(spec, table.schema)
    out_schema, project = output(plan, schema)
    batches = (project(b) for b in kernels(fn, table, plan.names.window))
    return Result(out_schema, batches, dropped, con, plan)


# ---------------------------------------------------------------- Scan


def scan(con: duckdb.DuckDBPyConnection, plan: PhysicalPlan) -> int:
    """The events as a table of the connection: the inputs one after the
    other, by name (a column an input lacks is null there); invalid rows
    and ids checked (`checks`).  The number of rows --drop-invalid dropped."""
    sources = {f.type_name: f.source for f in plan.logical.find(L.Scan).inputs.each}
    parts = [reader.input_sql(plan, si, sources[si.type_name]) for si in plan.scan.inputs]
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM ({p})" for p in parts)
    if plan.scan.id_col is None:  # ids from input order: numbered as read (only aggregation, where none is shown)
        union = f"SELECT * REPLACE (CAST(row_number() OVER () - 1 AS BIGINT) AS {Q(plan.names.id)}) FROM ({union})"
    for si in plan.scan.inputs:  # the files as planned: before they are read, and after (a change while read)
        check_unchanged(si.stamps, si.label)
    con.execute(f"CREATE TABLE {EVENTS} AS {union}").fetchall()
    for si in plan.scan.inputs:
        check_unchanged(si.stamps, si.label)
    return checks.check_rows(con, plan, EVENTS, sources)


# ---------------------------------------------------------------- Filter, Windows, Partition, sort


def kernel_input_sql(plan: PhysicalPlan) -> str:
    """The kernel's input: each (event, window) — or (event, block) — row,
    its masks, keys and derived columns, sorted by the group columns, time
    and id (nulls first, NaN last, -0.0 with 0.0, as Spark sorts)."""
    n, w, part, filt = plan.names, plan.windows, plan.partition, plan.filter
    masks = [f"{condition(m.definition, DUCKDB)} AS {Q(m.column)}" for m in filt.masks]
    any_mask = " OR ".join(Q(m.column) for m in filt.masks) or "TRUE"
    stage = f"SELECT *, {', '.join(masks)} FROM {EVENTS} WHERE {condition(filt.constant, DUCKDB)}" if masks else \
        f"SELECT * FROM {EVENTS} WHERE {condition(filt.constant, DUCKDB)}"  # fmt: skip
    placed = placed_sql(plan, f"SELECT * FROM ({stage}) WHERE {any_mask}")
    keyed = [f"{Q(k.attr)} AS {Q(k.column)}" for k in (*part.keys, *part.subkeys, *part.state_keys)]
    keyed += [f"{to_sql(d.definition, DUCKDB)} AS {Q(d.column)}" for d in plan.root.derived]
    present = " AND ".join(f"{Q(k.attr)} IS NOT NULL" for k in part.keys) or "TRUE"
    cols = [*part.group, n.time, n.id, *(m.column for m in filt.masks)]
    if w.block:
        cols += [n.window_lo, n.window_hi]
    cols += [d.column for d in plan.root.derived] + [k.column for k in part.subkeys]
    cols += [k.column for k in part.state_keys]
    return (f"SELECT {', '.join(Q(c) for c in dict.fromkeys(cols))} FROM (SELECT *{''.join(', ' + k for k in keyed)} "
            f"FROM ({placed}) WHERE {present}) ORDER BY {order_sql(plan)}")  # fmt: skip


def placed_sql(plan: PhysicalPlan, stage: str) -> str:
    """The rows of `stage` placed in their windows: one row per (event,
    window) — or (event, block) — in the plan's exact arithmetic."""
    n, w = plan.names, plan.windows
    wk = Q(n.window)
    if w.sharing is None:
        return f"SELECT *, {W.last_window(plan, DUCKDB)} AS {wk} FROM ({stage})"
    if w.block:
        lo, hi = Q(n.window_lo), Q(n.window_hi)
        bounds = f"SELECT *, {W.first_window(plan, DUCKDB)} AS {lo}, {W.last_window(plan, DUCKDB)} AS {hi} FROM ({stage})"
        blocks = f"generate_series({W.block_of(DUCKDB, lo, w.block)}, {W.block_of(DUCKDB, hi, w.block)})"
        return f"SELECT *, unnest({blocks}) AS {wk} FROM ({bounds})"
    series = f"generate_series({W.first_window(plan, DUCKDB)}, {W.last_window(plan, DUCKDB)})"
    return f"SELECT *, unnest({series}) AS {wk} FROM ({stage})"


def order_sql(plan: PhysicalPlan) -> str:
    """The kernels' order: group columns, time, id, as Spark sorts them."""
    n, part = plan.names, plan.partition
    return ", ".join(f"{_sort_key(plan, c)} ASC NULLS FIRST" for c in [*part.group, n.time, n.id])


def _sort_key(plan: PhysicalPlan, column: str) -> str:
    """A group column as Spark orders it: -0.0 beside 0.0 (equal, so the
    next keys order them), NaN above every number (DuckDB's own order)."""
    floating = {k.column for k in plan.partition.keys if _floating(plan, k.attr)}
    if column in floating:
        return f"(CASE WHEN {Q(column)} = 0 THEN CAST(0 AS DOUBLE) ELSE {Q(column)} END)"
    return Q(column)


def _floating(plan: PhysicalPlan, attr: str) -> bool:
    for f in plan.logical.find(L.Scan).inputs.each:
        for c in f.source.columns if f.source is not None else ():
            if c.name == attr and c.type in ("double", "float"):
                return True
    return False
