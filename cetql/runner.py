"""`CompiledQuery.run`: bind the query to its inputs, check it against their
columns, and build the Spark plan (lazily: no job runs here)."""

from __future__ import annotations

import dataclasses

from .errors import SchemaError, UsageError
from .planner import schema as S
from .planner.analyze import AGGREGATION

TREND_SETS = ("COMPLETE", "MAXIMAL", "ALL")


def resolve_sources(spark, data, typed_sources: dict) -> dict:
    """{type name or None: DataFrame}."""
    from pyspark.sql import DataFrame

    from .planner.sources import read_source

    sources: dict = {}
    if isinstance(data, dict):
        typed_sources = {**data, **typed_sources}
    elif data is not None:
        sources[None] = data
    for name, value in typed_sources.items():
        sources[name] = value
    if not sources:
        raise UsageError("no input: give a DataFrame, a path or a table name")
    if None in sources and len(sources) > 1:
        raise UsageError("give either one untyped input or inputs bound to type names (Type=...), not both")
    out = {}
    for name, value in sources.items():
        out[name] = value if isinstance(value, DataFrame) else read_source(spark, value)
    return out


def _merged_schema(sources: dict) -> S.Schema:
    cols = {}
    for df in sources.values():
        for col in S.from_spark(df.schema).columns:
            cols.setdefault(col[0], col)
    return S.Schema(tuple(cols.values()))


def _empty_text_times(sources: dict, time_col: str) -> dict:
    """An empty CSV reads every column as text.  With a text time column and
    no rows at all there are no events, so no trends — not a type error: the
    column is read as a number instead (the check is a job only in that case)."""
    from pyspark.sql import functions as F

    found = _merged_schema(sources).lookup(time_col)
    if found is None or found[0] != S.STRING or not all(df.isEmpty() for df in sources.values()):
        return sources
    return {k: df.withColumn(time_col, F.col(time_col).cast("double")) for k, df in sources.items()}


def run(
    compiled,
    data,
    *,
    spark,
    params,
    time_col,
    id_col,
    strategy,
    trends,
    with_rows,
    partitions,
    typed_sources,
    approx=False,
    exact="decimal",
    kernel="index",
):
    from .compiler import compile
    from .planner.physical import detect
    from .session import get_spark

    spark = spark or get_spark()
    sources = resolve_sources(spark, data, typed_sources)
    time_col = time_col or compiled.bound.time_col
    sources = _empty_text_times(sources, time_col)
    params = {**compiled.bound.params, **(params or {})}
    bound_types = {k for k in sources if k is not None}
    pattern_types = {p.type for p in compiled.bound.positions.values()}
    unknown = bound_types - pattern_types
    if unknown:
        raise UsageError(
            f"input bound to type(s) {', '.join(sorted(unknown))} that the pattern does not use "
            f"(its types: {', '.join(sorted(pattern_types))})"
        )
    checked = compile(
        compiled.source,
        params,
        _merged_schema(sources),
        strict_params=True,
        time_col=time_col,
        strategy=strategy,
    )
    bound = checked.bound
    if trends is not None:
        t = trends.upper()
        if t not in TREND_SETS:
            raise UsageError(f"unknown trend set '{trends}'; expected complete, maximal or all")
        bound.trend_set = t
    if id_col is not None and any(id_col not in df.columns for df in sources.values()):
        raise SchemaError(f"id column '{id_col}' is not in the input")
    if bound.kind == AGGREGATION:
        from .planner.aggregation import run as aggregate

        if approx:
            bound.query = dataclasses.replace(bound.query, approx=True)
        if bound.trend_set == "MAXIMAL":
            raise UsageError("aggregates are over ALL or COMPLETE trends, not MAXIMAL")
        return aggregate(
            bound, checked.predicates, sources, id_col=id_col, exact=exact, partitions=partitions, kernel=kernel
        )
    return detect(
        bound,
        checked.predicates,
        sources,
        strategy=strategy or checked.plan.strategy,
        id_col=id_col,
        with_rows=with_rows,
        partitions=partitions,
    )


def null_time_counts(spark, data, typed: dict, time_col: str) -> int:
    """How many input rows have no time (for the error message)."""
    from pyspark.sql import functions as F

    sources = resolve_sources(spark, data, typed)
    return sum(df.filter(F.col(time_col).isNull()).count() for df in sources.values())
