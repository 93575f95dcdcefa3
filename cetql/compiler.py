"""`cetql.compile(text)`: the front half of the compiler, stage by stage.

    text ─parse→ AST ─analyze→ Bound ─classify→ predicates ─plan→ LogicalPlan

Each stage is a pure function of the one before; `CompiledQuery` keeps every
stage so `--explain` can print them.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from .errors import QueryError
from .parser import parse
from .planner.analyze import Bound, analyze
from .planner.classify import Predicate, classify
from .planner.logical import LogicalPlan, plan
from .planner.schema import Schema


@dataclass
class CompiledQuery:
    source: str
    ast: A.Query
    bound: Bound
    predicates: list[Predicate]
    plan: LogicalPlan

    @property
    def kind(self) -> str:
        return self.bound.kind

    @property
    def trend_set(self) -> str:
        return self.bound.trend_set

    def run(
        self,
        data=None,
        *,
        spark=None,
        params: dict | None = None,
        time_col: str | None = None,
        id_col: str | None = None,
        strategy: str | None = None,
        trends: str | None = None,
        with_rows: bool = False,
        partitions: int | None = None,
        approx: bool = False,
        exact: str = "decimal",
        kernel: str = "index",
        **typed_sources,
    ):
        """Run the query on Spark; returns a lazy DataFrame.

        `data` is a DataFrame, a path (CSV/Parquet/JSON) or a table/view name
        for a single-type stream, or a dict {type name: DataFrame | path};
        typed sources may also be given as keywords (`Check=df`).

        Aggregation queries: `approx=True` computes DOUBLE aggregates in
        floating point (as the APPROX clause does); `exact="string"` returns
        exact counts and sums as decimal strings of any length instead of
        DECIMAL(38,0).  `kernel="scan"` replaces the attribute index by
        GRETA's O(n²) predecessor scan (for comparisons only)."""
        from .runner import run

        return run(
            self,
            data,
            spark=spark,
            params=params,
            time_col=time_col,
            id_col=id_col,
            strategy=strategy,
            trends=trends,
            with_rows=with_rows,
            partitions=partitions,
            typed_sources=typed_sources,
            approx=approx,
            exact=exact,
            kernel=kernel,
        )


def compile(  # noqa: A001 - the public name users expect
    text: str,
    params: dict[str, object] | None = None,
    schema: Schema | None = None,
    *,
    strict_params: bool = False,
    time_col: str = "ts",
    strategy: str | None = None,
) -> CompiledQuery:
    """Compile query text.  Parameters missing from `params` are listed in
    `bound.unbound_params` unless `strict_params` (then they are an error)."""
    ast = parse(text)
    try:
        bound = analyze(ast, params, schema, strict_params=strict_params, time_col=time_col)
        preds = classify(bound)
    except QueryError as e:
        raise e.with_source(text) from None
    return CompiledQuery(text, ast, bound, preds, plan(bound, preds, strategy))
