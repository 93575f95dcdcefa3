"""The Spark compiler: a logical plan → a lazy DataFrame, one function per
operator.  Every decision was taken by the plan; names and column
definitions come from `lower`; this module only spells them in Spark.

    scan → filter → windows → partition → detect | aggregate

DataFrame API only (no RDDs, no JVM handles), so the same plan runs on
classic Spark and on Spark Connect.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from cetql.options import Strategy

from ..kernels import process
from ..kernels import spec as K
from ..logical.plan import Aggregate, Detect, Filter, LogicalPlan, Partition, Scan, Windows
from ..lower import Physical, lower
from . import reader
from .distributed import extract
from .exprs import column

INVALID = "cetql: invalid value"  # the start of every message `raise_error` gives for a bad row


@dataclass(frozen=True)
class Input:
    """One input: its DataFrame, and how the reader saw it (None for a
    DataFrame or table given as such)."""

    df: DataFrame
    source: reader.Source | None = None


def compile_plan(plan: LogicalPlan, inputs: dict[str | None, Input]) -> DataFrame:
    return compile_physical(plan, inputs)[0]


def compile_physical(plan: LogicalPlan, inputs: dict[str | None, Input]) -> tuple[DataFrame, Physical]:
    """The plan as a DataFrame, and the lowered plan it was built from (what
    the workers receive: keys, sub-keys, kernel spec)."""
    df, phys = _partitioned(plan, inputs)
    if isinstance(plan.root, Detect):
        return detect(plan.root, phys, df), phys
    return aggregate(plan.root, phys, df), phys


def compile_kernel_input(plan: LogicalPlan, inputs: dict[str | None, Input]) -> tuple[DataFrame, Physical]:
    """The rows the kernel of the plan's root receives, unsorted, and the
    lowered plan (`cetql draw` takes one group of them)."""
    df, phys = _partitioned(plan, inputs)
    return _kernel_input(phys, df, phys.spec, []), phys


def _partitioned(plan: LogicalPlan, inputs: dict[str | None, Input]) -> tuple[DataFrame, Physical]:
    """Scan → Filter → Windows → Partition, compiled."""
    columns = tuple(dict.fromkeys(c for i in inputs.values() for c in i.df.columns))
    phys = lower(plan, columns)
    df = scan(plan.find(Scan), phys, inputs, used_columns(phys, plan))
    df = filter_events(plan.find(Filter), phys, df)
    df = windows(plan.find(Windows), phys, df)
    return partition(plan.find(Partition), phys, df), phys


def used_columns(phys: Physical, plan: LogicalPlan) -> list[str]:
    """The input columns the plan reads (checked for invalid values)."""
    internal = phys.names.prefix
    found: list[str] = [plan.find(Scan).time_col]
    if plan.find(Scan).id_col:
        found.append(plan.find(Scan).id_col)
    read = K.columns(phys.constant, *(e for _, e in (*phys.masks, *phys.subkeys, *phys.derived)))
    found += [c for c in read if not c.startswith(internal)]
    found += [attr for _, attr in phys.keys]
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------- Scan


def scan(op: Scan, phys: Physical, inputs: dict[str | None, Input], used: list[str]) -> DataFrame:
    """The events: the inputs' columns (typed), plus id, time and type."""
    n = phys.names
    frames = []
    for type_name, inp in inputs.items():
        df = inp.df
        bad = F.lit(None).cast("string")
        if inp.source is not None and inp.source.text:
            typed = {}
            for c in inp.source.columns:
                value, invalid = reader.cast_column(inp.source, c.name)
                typed[c.name] = value
                if c.name in used:
                    bad = F.when(invalid, F.lit(c.name)).otherwise(bad)
            df = df.select(*[typed[c].alias(c) for c in df.columns], bad.alias(n.prefix + "bad"))
        else:
            df = df.withColumn(n.prefix + "bad", bad)
        nanos = inp.source is not None and any(c.nanos and c.name == op.time_col for c in inp.source.columns)
        t = F.col(f"`{op.time_col}`")
        kind = phys.time_kind
        if kind == "timestamp" and not nanos:
            time = F.unix_micros(t.cast("timestamp"))
        elif kind == "timestamp_ns":
            time = t.cast("long")
        elif dict(df.dtypes).get(op.time_col) == "string":
            time = t.cast("double")  # no value seen (an empty input)
        else:
            time = t
        ident = F.col(f"`{op.id_col}`") if op.id_col else F.monotonically_increasing_id()
        df = df.withColumn(n.id, ident).withColumn(n.time, time).withColumn(n.type, F.lit(type_name).cast("string"))
        if nanos:  # show the time as a timestamp (to the microsecond) in rows; n.time keeps every nanosecond
            df = df.withColumn(op.time_col, F.timestamp_micros(F.floor(F.col(n.time) / 1000).cast("long")))
        frames.append(df)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)

    tcol = F.col(n.time)
    invalid_time = tcol.isNull()
    if phys.time_kind == "numeric" and dict(out.dtypes).get(n.time) in ("double", "float"):
        invalid_time = invalid_time | F.isnan(tcol) | (F.abs(tcol) == float("inf"))
    why = (
        F.when(invalid_time, F.concat(F.lit(f"{INVALID}: time column '{op.time_col}' is null, NaN or infinite")))
        .when(F.col(n.prefix + "bad").isNotNull(), F.concat(F.lit(f"{INVALID} in column '"), F.col(n.prefix + "bad"),
                                                            F.lit("'")))  # fmt: skip
    )
    if op.invalid.choice == "drop":
        out = out.filter(why.isNull())
    else:
        out = out.withColumn(n.time, F.when(why.isNull(), tcol).otherwise(F.raise_error(why).cast(out.schema[n.time].dataType)))
    return out.drop(n.prefix + "bad")


# ---------------------------------------------------------------- Filter


def filter_events(op: Filter, phys: Physical, df: DataFrame) -> DataFrame:
    """Constant conditions, then one mask column per position; events that
    may take no position are dropped."""
    if phys.constant is not None:
        df = df.filter(F.coalesce(column(phys.constant), F.lit(False)))
    any_state = F.lit(False)
    for name, definition in phys.masks:
        df = df.withColumn(name, F.coalesce(column(definition), F.lit(False)))
        any_state = any_state | F.col(name)
    return df.filter(any_state)


# ---------------------------------------------------------------- Windows


def windows(op: Windows, phys: Physical, df: DataFrame) -> DataFrame:
    """One row per (event, window it falls in): windows [k*s, k*s + w), with
    integer arithmetic for integer times."""
    n = phys.names
    t = F.col(n.time)
    w, s = phys.window_length, phys.window_slide
    integral = isinstance(w, int) and isinstance(s, int) and dict(df.dtypes).get(n.time) in ("bigint", "int",
                                                                                          "smallint", "tinyint")  # fmt: skip
    if integral:
        k_hi = _floor_div(f"`{n.time}`", s)
        k_lo = _floor_div(f"(`{n.time}` - {w})", s) + F.lit(1)
    else:
        k_hi = F.floor(t / F.lit(s)).cast("long")
        k_lo = (F.floor((t - F.lit(w)) / F.lit(s)) + 1).cast("long")
    if op.sharing.choice == "none":
        return df.withColumn(n.window, k_hi)
    if op.block:
        # blocks of `block` windows: an event falls in at most 2 of them
        df = df.withColumn(n.window_lo, k_lo).withColumn(n.window_hi, k_hi)
        b_lo = _floor_div(f"`{n.window_lo}`", op.block)
        b_hi = _floor_div(f"`{n.window_hi}`", op.block)
        return df.withColumn(n.window, F.explode(F.sequence(b_lo, b_hi)))
    return df.withColumn(n.window, F.explode(F.sequence(k_lo, k_hi)))


def _floor_div(x: str, s: int):
    """floor(x / s) for a long SQL expression `x`, exactly (Spark's `/` goes
    through a double, which is wrong for epoch nanoseconds)."""
    return F.expr(f"({x} - pmod({x}, {s})) div {s}")


# ---------------------------------------------------------------- Partition


def partition(op: Partition, phys: Physical, df: DataFrame) -> DataFrame:
    """Key columns (rows with a null key are in no trend) and sub-key columns."""
    for name, attr in phys.keys:
        df = df.filter(F.col(f"`{attr}`").isNotNull()).withColumn(name, F.col(f"`{attr}`"))
    for name, definition in phys.subkeys:
        df = df.withColumn(name, column(definition))
    return df


# ---------------------------------------------------------------- Detect / Aggregate


def _kernel_input(phys: Physical, df: DataFrame, spec, extra: list[str]) -> DataFrame:
    for name, definition in phys.derived:
        df = df.withColumn(name, column(definition))
    c = spec.columns
    cols = [*c.group, c.time, c.id, *(m for m, _ in phys.masks), *((c.window_lo, c.window_hi) if c.block else ())]
    cols += [name for name, _ in phys.derived] + [name for name, _ in phys.subkeys] + extra
    return df.select(*dict.fromkeys(cols))


def _sorted(df: DataFrame, spec, partitions: int | None) -> DataFrame:
    group = list(spec.columns.group)
    # An explicit count: adaptive execution would otherwise coalesce small
    # shuffles into fewer partitions than cores and leave the kernel on one.
    partitions = partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return df.repartition(partitions, *group).sortWithinPartitions(*group, spec.columns.time, spec.columns.id)


def _window_bounds(phys: Physical):
    k = F.col(phys.names.window)
    start = k * F.lit(phys.window_slide)
    end = start + F.lit(phys.window_length)
    if phys.time_kind == "timestamp":
        return F.timestamp_micros(start.cast("long")), F.timestamp_micros(end.cast("long"))
    if phys.time_kind == "timestamp_ns":
        return (F.timestamp_micros(F.floor(start / 1000).cast("long")),
                F.timestamp_micros(F.floor(end / 1000).cast("long")))  # fmt: skip
    return start, end


def _spark_schema(arrow_schema):
    return from_arrow_schema(arrow_schema)


def detect(op: Detect, phys: Physical, df: DataFrame) -> DataFrame:
    spec: K.DetectSpec = phys.spec
    extra = []
    if spec.columns.row:
        user = [c for c in df.columns if not c.startswith(phys.names.prefix)]
        df = df.withColumn(spec.columns.row, F.struct(*[F.col(f"`{c}`") for c in user]))
        extra.append(spec.columns.row)
    df = _kernel_input(phys, df, spec, extra)
    if op.strategy.choice == Strategy.DISTRIBUTED.value:
        trends = extract(spec, df)
    else:
        df = _sorted(df, spec, None)
        schema = process.detect_schema(spec, to_arrow_schema(df.schema))
        trends = df.mapInArrow(process.detect_fn(spec), _spark_schema(schema))
    start, end = _window_bounds(phys)
    cols = [start.alias("window_start"), end.alias("window_end")]
    cols += [F.col(name).alias(attr) for name, attr in phys.keys]
    cols += [F.col("events"), F.col("length")]
    if spec.columns.row:
        cols.append(F.col("rows"))
    return trends.select(*cols)


def aggregate(op: Aggregate, phys: Physical, df: DataFrame) -> DataFrame:
    spec: K.AggregateSpec = phys.spec
    df = _sorted(_kernel_input(phys, df, spec, []), spec, None)
    schema = process.aggregate_schema(spec, to_arrow_schema(df.schema))
    out = df.mapInArrow(process.aggregate_fn(spec), _spark_schema(schema))
    start, end = _window_bounds(phys)
    cols = [start.alias("window_start"), end.alias("window_end")]
    by_name = dict(phys.keys)
    cols += [F.col(c).alias(by_name[c]) for c in spec.output_keys]
    cols += [F.col(f"`{t.name}`") for t in spec.targets]
    return out.select(*cols)


# ---------------------------------------------------------------- diagnosis


def diagnose_invalid(plan: LogicalPlan, inputs: dict[str | None, Input]) -> str:
    """Why the scan refused rows, with counts and a sample (one small job per
    input; run only after a query failed on an invalid row)."""
    columns = tuple(dict.fromkeys(c for i in inputs.values() for c in i.df.columns))
    phys = lower(plan, columns)
    used = used_columns(phys, plan)
    op = plan.find(Scan)
    parts = []
    for type_name, inp in inputs.items():
        where = f" of input {type_name}" if type_name else ""
        df, aggs, labels = inp.df, [], []
        text = inp.source is not None and inp.source.text
        for name in used:
            if name not in df.columns:
                continue
            if text:
                typed, invalid = reader.cast_column(inp.source, name)
                aggs += [F.sum(invalid.cast("long")), F.first(F.when(invalid, F.col(f"`{name}`")), ignorenulls=True)]
                labels.append(("invalid", name, inp.source and next(c.type for c in inp.source.columns if c.name == name)))
            else:
                typed = F.col(f"`{name}`")
            if name == op.time_col:
                bad = typed.isNull()
                if dict(df.dtypes).get(name) in ("double", "float") or (text and _source_type(inp, name) == "double"):
                    bad = bad | F.isnan(typed) | (F.abs(typed) == float("inf"))
                aggs.append(F.sum(bad.cast("long")))
                labels.append(("time", name, None))
        if not aggs:
            continue
        row = df.agg(*aggs).collect()[0]
        values = list(row)
        for kind, name, typ in labels:
            if kind == "invalid":
                n, sample = values.pop(0), values.pop(0)
                if n:
                    what = {"bigint": "a whole number", "double": "a number", "timestamp": "a time",
                            "boolean": "true or false"}.get(typ, typ)  # fmt: skip
                    parts.append(f"column '{name}'{where} holds {n:,} value(s) that cannot be read as {what} "
                                 f"(e.g. {sample!r})")  # fmt: skip
            else:
                n = values.pop(0)
                if n:
                    parts.append(f"time column '{name}'{where}: {n:,} row(s) have no time (null, NaN or infinite)")
    if not parts:
        return "an input row was refused (null time or unreadable value)"
    return "; ".join(parts) + "; fix the input, or run with --drop-invalid to drop those rows"


def _source_type(inp: Input, name: str) -> str | None:
    return next((c.type for c in inp.source.columns if c.name == name), None) if inp.source else None


def count_invalid(plan: LogicalPlan, inputs: dict[str | None, Input]) -> int:
    """How many input rows --drop-invalid drops (one job)."""
    columns = tuple(dict.fromkeys(c for i in inputs.values() for c in i.df.columns))
    phys = lower(plan, columns)
    kept = scan(plan.find(Scan), phys, inputs, used_columns(phys, plan)).count()
    return sum(i.df.count() for i in inputs.values()) - kept


def compile_events(plan: LogicalPlan, inputs: dict[str | None, Input]) -> tuple[DataFrame, str]:
    """The scanned events (before windows) and the name of their id column:
    for looking up the events of a few trends."""
    columns = tuple(dict.fromkeys(c for i in inputs.values() for c in i.df.columns))
    phys = lower(plan, columns)
    return scan(plan.find(Scan), phys, inputs, used_columns(phys, plan)), phys.names.id
