"""A workload on the embedded engine: it spells the workload plan and
decides nothing.

    each scan group:  one DuckDB scan (its events table, checked once)
      each exchange:  one query of it — the shared columns, the rows any
                      query takes, placed in windows, sorted — then the
                      kernels of every query (`kernels.workload`), each
                      query's rows taken out in its own schema
    each query alone: its own plan (`compiler.run`)

Each query's `Result` is what it gives alone: the same schema, the same
rows; a scan group's queries share the connection holding its events (for
looking up the events of trends).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from cetql.backends.arrow.result import output
from cetql.backends.embedded import compiler
from cetql.backends.embedded.compiler import EVENTS, Q, Result, close, connect, order_sql, placed_sql
from cetql.backends.embedded.run import failures
from cetql.backends.embedded.slices import cut, kernels
from cetql.backends.sql.dialects import DUCKDB
from cetql.backends.sql.workload import column_sql, levels
from cetql.kernels import spec as K
from cetql.kernels.errors import of_query
from cetql.kernels.workload import base_columns, member_schema, members_fn
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.workload.kernel import workload_spec
from cetql.planner.workload.plan import Exchange, WorkloadPlan


def exchange_sql(ex: Exchange, plan: PhysicalPlan, spec) -> str:
    """The shared kernel input: the shared columns, the rows some query
    takes, in their windows, keys not null, sorted as every kernel reads."""
    late = set(ex.selection)  # computed from the masks once sorted (`selections`): fewer columns to sort
    guards = {c.guard for c in ex.columns}  # … unless a derived column is computed where one holds
    stage = f"SELECT * FROM {EVENTS}"
    for level in levels(tuple(c for c in ex.columns if c.column not in late or c.column in guards)):
        stage = f"SELECT *, {', '.join(f'{column_sql(c, DUCKDB)} AS {Q(c.column)}' for c in level)} FROM ({stage})"
    stage = f"SELECT * FROM ({stage}) WHERE {' OR '.join(Q(m) for m in _masks(ex))}"
    part = plan.partition
    keyed = "".join(f", {Q(k.attr)} AS {Q(k.column)}" for k in part.keys)
    present = " AND ".join(f"{Q(k.attr)} IS NOT NULL" for k in part.keys) or "TRUE"
    cols = [*base_columns(spec.columns), *(c.column for c in ex.columns if c.column not in late)]
    return (f"SELECT {', '.join(Q(c) for c in dict.fromkeys(cols))} FROM (SELECT *{keyed} FROM "
            f"({placed_sql(plan, stage)}) WHERE {present}) ORDER BY {order_sql(plan)}")  # fmt: skip


def _items(c) -> tuple:
    return c.definition.items if isinstance(c.definition, K.Or) else (c.definition,)


def _masks(ex: Exchange) -> list[str]:
    """The mask columns the selections read: a row some query takes holds one."""
    chosen = [c for c in ex.columns if c.column in ex.selection]
    return list(dict.fromkeys(x.column for c in chosen for x in _items(c)))


def selections(table: pa.Table, ex: Exchange) -> pa.Table:
    """Each query's selection column (one of its masks holds), from the
    sorted table's masks."""
    for c in ex.columns:
        if c.column not in ex.selection or c.column in table.column_names:
            continue
        held = None
        for x in _items(c):
            col = pc.fill_null(table.column(x.column), False)
            held = col if held is None else pc.or_(held, col)
        table = table.append_column(c.column, held)
    return table


def run_workload(w: WorkloadPlan) -> dict[str, Result]:
    """Every query's result, by name, in the workload's order."""
    out: dict[str, Result] = {}
    made: list = []
    try:
        return _run_workload(w, out, made)
    except BaseException:  # Ctrl-C or an error: every connection made so far closed, its spill folder removed
        for con in [*made, *(r.connection for r in out.values())]:
            close(con)
        raise


def _run_workload(w: WorkloadPlan, out: dict[str, Result], made: list) -> dict[str, Result]:
    for g in w.groups:
        con = connect()
        made.append(con)
        scanned = replace(w.plan(g.reader), scan=g.scan)
        with _of(w, g.queries):
            dropped = compiler.scan(con, scanned)
        for ex in g.exchanges:
            with _of(w, ex.queries):
                out.update(_exchange(w, ex, con, dropped))
    for i in w.alone:
        with _of(w, (i,)):
            out[w.queries[i].name] = compiler.run(w.plan(i))
    return {q.name: out[q.name] for q in w.queries}


@contextmanager
def _of(w: WorkloadPlan, queries: tuple[int, ...]):
    """An error of work done for one query names it, of work several share
    names them (DuckDB's words mapped to cetql's first)."""
    names = tuple(w.queries[i].name for i in queries)
    with of_query(names[0] if len(names) == 1 else names), failures():
        yield


def _exchange(w: WorkloadPlan, ex: Exchange, con, dropped: int) -> dict[str, Result]:
    plan = w.plan(ex.queries[0])
    spec = workload_spec(w, ex)
    table = selections(con.sql(exchange_sql(ex, plan, spec)).to_arrow_table(), ex)
    rows: list[list] = [[] for _ in ex.members]
    for i, batch in kernels(members_fn(spec), cut(table, plan.names.window)):
        if batch.num_rows:
            rows[i].append(batch)
    out = {}
    for i, m in enumerate(ex.members):
        p = w.plan(m.query)
        schema, project = output(p, member_schema(m, table.schema))
        out[w.queries[m.query].name] = Result(schema, iter([project(b) for b in rows[i]]), dropped, con, p)
    return out
