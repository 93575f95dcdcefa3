"""A workload on Spark: the workload plan spelled as lazy DataFrames,
deciding nothing.

    each scan group:  one scan (the compiler's, checking every column any
                      of its queries reads)
      each exchange:  the shared columns, the rows some query takes, in
                      their windows and keys → one exchange (hash
                      partitioned by the group, sorted) → one mapInArrow
                      running every query's kernel (`kernels.workload`)
                      → each query's rows, in its own columns
    each query alone: its own plan (`compiler.compile_plan`)

An exchange that serves several queries is persisted (memory and disk):
the first action on any of its queries' DataFrames computes every one of
them, the others read what it kept; `unpersist` releases them.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.spark import compiler as C
from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.exchange import sorted_groups
from cetql.backends.spark.kept import keep
from cetql.backends.spark.sql import quote
from cetql.backends.sql.dialects import SPARK
from cetql.backends.sql.workload import column_sql, levels
from cetql.kernels.workload import base_columns, combined_schema, result_name, workload_fn
from cetql.kernels.workload_spec import WorkloadSpec
from cetql.planner.physical.plan import Detect, PhysicalPlan
from cetql.planner.workload.kernel import workload_spec
from cetql.planner.workload.plan import Exchange, WorkloadPlan


def compile_workload(w: WorkloadPlan, inputs: dict[str | None, C.Input]) -> tuple[dict[str, DataFrame], list]:
    """(every query's lazy DataFrame by name, the persisted DataFrames)."""
    out: dict[str, DataFrame] = {}
    kept = []
    for g in w.groups:
        events = C.scan(replace(w.plan(g.reader), scan=g.scan), inputs)
        for ex in g.exchanges:
            combined, spec = exchange_frame(w, ex, events)
            if len(ex.queries) > 1:
                combined = keep(combined, StorageLevel.MEMORY_AND_DISK)
                kept.append(combined)
            for m in ex.members:
                out[w.queries[m.query].name] = query_frame(w.plan(m.query), combined, spec, m.query)
    for i in w.alone:
        out[w.queries[i].name] = C.compile_plan(w.plan(i), inputs)
    return {q.name: out[q.name] for q in w.queries}, kept


def shared_input(ex: Exchange, plan: PhysicalPlan, spec: WorkloadSpec, events: DataFrame) -> DataFrame:
    """The shared kernel input, unsorted: shared columns, the rows some
    query takes, in their windows, keys not null."""
    df = events
    for level in levels(ex.columns):
        df = df.select("*", *[F.expr(column_sql(c, SPARK)).alias(c.column) for c in level])
    df = C.keep_rows(plan, df, F.expr(" OR ".join(SPARK.quote(s) for s in ex.selection)))
    df = C.windows(plan, df)
    for k in plan.partition.keys:
        df = C.keep_rows(plan, df, F.col(quote(k.attr)).isNotNull()).withColumn(k.column, F.col(quote(k.attr)))
    if spec.columns.row is not None:
        user = [c for c in events.columns if not c.startswith(plan.names.prefix)]
        df = df.withColumn(spec.columns.row, F.struct(*[F.col(quote(c)) for c in user]))
    return df.select(*dict.fromkeys([*base_columns(spec.columns), *(c.column for c in ex.columns)]))


def exchange_frame(w: WorkloadPlan, ex: Exchange, events: DataFrame) -> tuple[DataFrame, WorkloadSpec]:
    """(every member's rows, as one DataFrame of the combined schema; the spec)."""
    plan = w.plan(ex.queries[0])
    spec = workload_spec(w, ex)
    df = sorted_groups(plan, shared_input(ex, plan, spec, events))
    schema = combined_schema(spec, batch_schema(df))
    return df.mapInArrow(workload_fn(spec), from_arrow_schema(schema)), spec


def query_frame(plan: PhysicalPlan, combined: DataFrame, spec: WorkloadSpec, query: int) -> DataFrame:
    """One query's rows, in the columns it gives alone (`compiler.detect` / `aggregate`)."""
    df = combined.filter(F.col(spec.query) == F.lit(query))
    start, end = C.window_bounds(plan)
    cols = [start.alias("window_start"), end.alias("window_end")]
    mine = lambda name: F.col(quote(result_name(query, name))).alias(name)  # noqa: E731
    if isinstance(plan.root, Detect):
        cols += [F.col(k.column).alias(k.attr) for k in plan.partition.keys]
        cols += [mine("events"), mine("length")] + ([mine("rows")] if plan.root.with_rows else [])
    else:
        cols += [F.col(k.column).alias(k.attr) for k in plan.partition.keys if k.output is not None]
        cols += [mine(t.name) for t in plan.root.targets]
    return df.select(*cols)
