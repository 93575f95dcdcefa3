"""The Spark compiler: a physical plan → a lazy DataFrame, one function per
operator.  Every decision — names, casts, window arithmetic, partition count,
strategy, pre-filter — was taken by the plan; this module only spells it in
Spark, and runs no job.

    scan → filter → windows → partition → detect | aggregate

DataFrame API only (no RDDs, no JVM handles), so the same plan runs on
classic Spark and on Spark Connect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.arrow.columns import restore, restored_fields
from cetql.backends.inputs import refusals
from cetql.backends.spark import checks, reader
from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.distributed import extract, split_groups
from cetql.backends.spark.exchange import sorted_groups
from cetql.backends.spark.exprs import column, holds
from cetql.backends.spark.sql import quote
from cetql.backends.sql import windows as W
from cetql.backends.sql.columns import constant_masks, kernel_columns, same_columns
from cetql.backends.sql.dialects import SPARK
from cetql.base.options import Strategy
from cetql.kernels import process
from cetql.planner.logical.plan import InvalidRows
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Arithmetic, Bounds, Detect, PhysicalPlan, TimeCast

INVALID = "cetql: invalid value"  # the start of every message `raise_error` gives for a bad row


@dataclass(frozen=True)
class Input:
    """One input: its DataFrame, and how the reader saw it (None for a
    DataFrame or table given as such)."""

    df: DataFrame
    source: reader.Source | None = None


def compile_plan(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> DataFrame:
    """The plan's result as a lazy DataFrame."""
    df = partitioned(plan, inputs)
    if isinstance(plan.root, Detect):
        return detect(plan, df)
    return aggregate(plan, df)


def kernel_input(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> DataFrame:
    """The rows the kernel of the plan's root receives, unsorted (`cetql draw`
    takes one group of them)."""
    return _kernel_columns(plan, partitioned(plan, inputs))


def partitioned(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> DataFrame:
    """Scan → Filter → Windows → Partition, compiled."""
    return partition(plan, windows(plan, filter_events(plan, scan(plan, inputs))))


# ---------------------------------------------------------------- Scan


def _time(plan: PhysicalPlan, cast: TimeCast, t):
    """The internal time: a number as it is — in 64 bits where the windows'
    arithmetic is integer (`sql.windows`), as the embedded engine reads it
    (an int column's windows overflowed 32 bits near its limits) —, a
    timestamp in micro- or nanoseconds."""
    integer = plan.windows.arithmetic == Arithmetic.INTEGER
    return {
        TimeCast.NUMBER: lambda: t.cast("long") if integer else t,
        TimeCast.MICROS: lambda: F.unix_micros(t.cast("timestamp")),
        TimeCast.MICROS_TO_NANOS: lambda: F.unix_micros(t.cast("timestamp")) * F.lit(1000),
        TimeCast.NANOS: lambda: t.cast("long"),
        TimeCast.EMPTY: lambda: t.cast("double"),
    }[cast]()


def scan(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> DataFrame:
    """The events: the inputs' columns (typed), plus id, time and type; rows
    with an invalid time or an unreadable value fail the query or are dropped."""
    op, n = plan.scan, plan.names
    frames = []
    for si in op.inputs:
        inp = inputs[si.type_name]
        df, bad = reader.unchanged(inp.df, si.stamps, si.label), F.lit(None).cast("string")
        if si.text:
            typed = {}
            for c in inp.source.columns:
                value, invalid = reader.cast_column(inp.source, c.name)
                typed[c.name] = value
                if c.name in op.checked:
                    bad = F.when(invalid, F.lit(c.name)).otherwise(bad)
            df = df.select(*[typed[c].alias(c) for c in df.columns], bad.alias(n.bad))
        else:
            df = df.withColumn(n.bad, bad)
        ident = F.col(quote(op.id_col)) if op.id_col else F.monotonically_increasing_id()
        time = _time(plan, si.time_cast, F.col(quote(op.time_col)))
        df = df.withColumn(n.id, ident).withColumn(n.time, time)
        df = df.withColumn(n.type, F.lit(si.type_name).cast("string"))
        if si.time_cast == TimeCast.NANOS:  # rows show the time to the microsecond; n.time keeps every nanosecond
            df = df.withColumn(op.time_col, F.timestamp_micros(F.floor(F.col(n.time) / 1000).cast("long")))
        frames.append(df)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)
    t = F.col(n.time)
    invalid_time = t.isNull()
    if op.nan_times:
        invalid_time = invalid_time | F.isnan(t) | (F.abs(t) == float("inf"))
    times = plan.windows.times
    why = (F.when(invalid_time, F.lit(f"{INVALID}: time column '{op.time_col}' is null, NaN or infinite"))
           .when(_outside(t, times), F.lit(f"{INVALID}: {refusals.outside(op.time_col, times.text)}"))
           .when(F.col(n.bad).isNotNull(), F.concat(F.lit(f"{INVALID} in column '"), F.col(n.bad), F.lit("'"))))  # fmt: skip
    if op.invalid == InvalidRows.DROP:
        out = out.filter(why.isNull())
    else:
        out = out.withColumn(n.time, F.when(why.isNull(), t).otherwise(F.raise_error(why).cast(out.schema[n.time].dataType)))
    out = out.drop(n.bad)
    if op.id_col and op.unique_ids:  # a user's ids identify events: present and unique across the inputs
        out = checks.check_ids(out, n.id, drop=op.invalid == InvalidRows.DROP, label=op.id_col)
    elif op.id_col:  # a stream's: present (unique over a stream with no end cannot be checked)
        out = checks.check_present_ids(out, n.id, drop=op.invalid == InvalidRows.DROP, label=op.id_col)
    return out


def _outside(t, times):
    """Whether an internal time lies outside the range its windows are exact in."""
    return (t < F.lit(times.lo)) | (t > F.lit(times.hi))


# ---------------------------------------------------------------- Filter


def keep_rows(plan: PhysicalPlan, df: DataFrame, condition) -> DataFrame:
    """The rows `condition` holds for: every row a plan drops after its scan
    is dropped here.  On a stream every scanned event moves event time on,
    the ones dropped too (a later event of no pattern closes the windows
    before it); Spark's optimizer pushes a filter that does not read the
    event-time column below the watermark (PushPredicateThroughNonJoin),
    where the events it drops would no longer move time, so on a stream the
    condition reads that column — `OR event time IS NULL`, never true: a
    null time is an invalid row, refused or dropped by the scan."""
    event_time = plan.names.event_time
    if plan.stream is not None and event_time in df.columns:
        condition = condition | F.col(quote(event_time)).isNull()
    return df.filter(condition)


def filter_events(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """Constant conditions, then one mask column per position; events that
    may take no position are dropped."""
    op = plan.filter
    if op.constant is not None:
        df = keep_rows(plan, df, holds(op.constant))
    any_state = F.lit(False)
    for m in op.masks:
        df = df.withColumn(m.column, holds(m.definition))
        any_state = any_state | F.col(m.column)
    return keep_rows(plan, df, any_state)


# ---------------------------------------------------------------- Windows


def windows(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """One row per (event, window it falls in) — or per (event, block) —:
    windows [k*s, k*s + w) in the plan's exact arithmetic (`sql.windows`)."""
    n, w = plan.names, plan.windows
    k_hi = F.expr(W.last_window(plan, SPARK))
    if w.sharing is None:
        return df.withColumn(n.window, k_hi)
    k_lo = F.expr(W.first_window(plan, SPARK))
    if w.block:
        df = df.withColumn(n.window_lo, k_lo).withColumn(n.window_hi, k_hi)
        b_lo = F.expr(W.block_of(SPARK, SPARK.quote(n.window_lo), w.block))
        b_hi = F.expr(W.block_of(SPARK, SPARK.quote(n.window_hi), w.block))
        return df.withColumn(n.window, F.explode(F.sequence(b_lo, b_hi)))
    return df.withColumn(n.window, F.explode(F.sequence(k_lo, k_hi)))


def window_bounds(plan: PhysicalPlan):
    """(window_start, window_end) columns from the window index."""
    w, k = plan.windows, SPARK.quote(plan.names.window)
    start, end = F.expr(W.window_start(plan, k)), F.expr(W.window_end(plan, k))
    if w.bounds == Bounds.TIMESTAMP:
        return F.timestamp_micros(start.cast("long")), F.timestamp_micros(end.cast("long"))
    if w.bounds == Bounds.TIMESTAMP_NS:  # to the microsecond, floored exactly (a double would round epoch nanoseconds)
        def micros(bound: str):  # never null (the window is not): Spark cannot tell that of pmod and div
            return F.coalesce(F.timestamp_micros(F.expr(W.floor_div(SPARK, bound, 1000))), F.timestamp_micros(F.lit(0)))

        return micros(W.window_start(plan, k)), micros(W.window_end(plan, k))
    if w.bounds == Bounds.DECIMAL:
        kind = f"decimal(38,{w.bounds_scale})"
        return start.cast(kind), end.cast(kind)
    if w.bounds == Bounds.DOUBLE:
        return start.cast("double"), end.cast("double")
    return start.cast("long"), end.cast("long")


# ---------------------------------------------------------------- Partition


def partition(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """Key columns (rows with a null key are in no trend) and the columns the
    kernel splits groups by."""
    op = plan.partition
    for k in op.keys:
        df = keep_rows(plan, df, F.col(quote(k.attr)).isNotNull()).withColumn(k.column, F.col(quote(k.attr)))
    for k in op.subkeys:
        df = df.withColumn(k.column, F.col(quote(k.attr)))
    for k in op.state_keys:
        df = df.withColumn(k.column, F.col(quote(k.attr)))
    return df


# ---------------------------------------------------------------- Detect / Aggregate


def _kernel_columns(plan: PhysicalPlan, df: DataFrame, extra: tuple[str, ...] = ()) -> DataFrame:
    for d in plan.root.derived:
        df = df.withColumn(d.column, column(d.definition))
    return df.select(*dict.fromkeys([*kernel_columns(plan), *extra]))


def _with_rows(plan: PhysicalPlan, df: DataFrame) -> tuple[DataFrame, tuple[str, ...]]:
    if not plan.root.with_rows:
        return df, ()
    user = [c for c in df.columns if not c.startswith(plan.names.prefix)]
    return df.withColumn(plan.names.row, F.struct(*[F.col(quote(c)) for c in user])), (plan.names.row,)


def moved(plan: PhysicalPlan, df: DataFrame) -> tuple[DataFrame, Callable, pa.Schema]:
    """The local kernels' input as their exchange moves it — hash-partitioned
    and sorted (`sorted_groups`), without the columns the workers put back
    (`sql.columns`: another's expression, a mask true for every event) —,
    the function putting them back (batches → batches) and the schema of
    the batches it gives."""
    order, same, constant = list(df.columns), same_columns(plan), constant_masks(plan)
    slim = sorted_groups(plan, df.select(*[F.col(quote(c)) for c in order if c not in same and c not in constant]))
    return slim, restore(order, same, constant), restored_fields(batch_schema(slim), order, same, constant)


def restored(kernel, put_back, batches):
    """`kernel` over the batches with every column put back (`moved`)."""
    return kernel(put_back(batches))


def _local_detect(plan: PhysicalPlan, spec, df: DataFrame) -> DataFrame:
    df, put_back, schema_in = moved(plan, df)
    schema = process.detect_schema(spec, schema_in)
    return df.mapInArrow(partial(restored, process.detect_fn(spec), put_back), from_arrow_schema(schema))


def detect(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    spec = kernel_spec(plan)
    df, extra = _with_rows(plan, df)
    df = _kernel_columns(plan, df, extra)
    if plan.root.strategy == Strategy.DISTRIBUTED and plan.root.split:  # big groups distributed, the rest local
        big, small = split_groups(plan, df)
        trends = extract(plan, spec, big).unionByName(_local_detect(plan, spec, small))
    elif plan.root.strategy == Strategy.DISTRIBUTED:
        trends = extract(plan, spec, df)
    else:
        trends = _local_detect(plan, spec, df)
    start, end = window_bounds(plan)
    cols = [start.alias("window_start"), end.alias("window_end")]
    cols += [F.col(k.column).alias(k.attr) for k in plan.partition.keys]
    cols += [F.col("events"), F.col("length")] + ([F.col("rows")] if plan.root.with_rows else [])
    return trends.select(*cols)


def aggregate(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    spec = kernel_spec(plan)
    df, put_back, schema_in = moved(plan, _kernel_columns(plan, df))
    schema = process.aggregate_schema(spec, schema_in)
    out = df.mapInArrow(partial(restored, process.aggregate_fn(spec), put_back), from_arrow_schema(schema))
    start, end = window_bounds(plan)
    cols = [start.alias("window_start"), end.alias("window_end")]
    cols += [F.col(k.column).alias(k.attr) for k in plan.partition.keys if k.output is not None]
    cols += [F.col(quote(t.name)) for t in spec.targets]
    return out.select(*cols)


# ---------------------------------------------------------------- after a failure, or on request


def diagnose_invalid(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> str:
    """Why the scan refused rows, with counts and a sample (one small job per
    input; run only after a query failed on an invalid row)."""
    op = plan.scan
    parts = []
    for si in op.inputs:
        inp = inputs[si.type_name]
        where = f" of input {si.type_name}" if si.type_name else ""
        df, aggs, labels = inp.df, [], []
        for name in op.checked:
            if name not in df.columns:
                continue
            if si.text:
                typed, invalid = reader.cast_column(inp.source, name)
                aggs += [F.sum(invalid.cast("long")), F.first(F.when(invalid, F.col(quote(name))), ignorenulls=True)]
                labels.append(("invalid", name, next(c.type for c in inp.source.columns if c.name == name)))
            else:
                typed = F.col(quote(name))
            if name == op.time_col:
                bad = typed.isNull()
                if op.nan_times:
                    bad = bad | F.isnan(typed) | (F.abs(typed) == float("inf"))
                aggs += [F.sum(bad.cast("long")), F.sum((~bad & _outside(_time(plan, si.time_cast, typed),
                                                                          plan.windows.times)).cast("long"))]  # fmt: skip
                labels += [("time", name, None), ("range", name, plan.windows.times.text)]
        if aggs:
            parts += _describe_counts(list(df.agg(*aggs).collect()[0]), labels, where)
    if not parts:
        return "an input row was refused (null time or unreadable value)"
    return "; ".join(parts) + refusals.ROWS_ADVICE


def _describe_counts(values: list, labels: list, where: str) -> list[str]:
    parts = []
    for kind, name, typ in labels:
        if kind == "invalid":
            n, sample = values.pop(0), values.pop(0)
            if n:
                parts.append(refusals.unreadable(name, n, sample, typ, where))
        elif kind == "range":
            n = values.pop(0)
            if n:
                parts.append(refusals.outside(name, typ, n, where))
        else:
            n = values.pop(0)
            if n:
                parts.append(refusals.no_time(name, n, where))
    return parts


def count_invalid(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> int:
    """How many input rows --drop-invalid drops (one job; asked for by the CLI's summary)."""
    kept = scan(plan, inputs).count()
    return sum(i.df.count() for i in inputs.values()) - kept


def events(plan: PhysicalPlan, inputs: dict[str | None, Input]) -> tuple[DataFrame, str]:
    """The scanned events (before windows) and the name of their id column:
    for looking up the events of a few trends."""
    return scan(plan, inputs), plan.names.id
