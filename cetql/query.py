"""`cetql.compile(text)` and what it returns.

    text ─parse→ AST ─bind→ BoundQuery ─rules→ LogicalPlan ─Spark compiler→ DataFrame

`compile` runs the pure stages and keeps their results; `CompiledQuery.run`
binds the query to its inputs (their columns and types), plans again with
what is now known (the same pure functions, so `--explain --input` shows the
plan that runs), and builds the lazy DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ast as A
from .arguments import query_text
from .errors import QueryError
from .explain import explain_json, explain_text
from .options import RunOptions
from .parser import parse
from .planner.logical.build import build
from .planner.logical.plan import Inputs, LogicalPlan
from .planner.semantics import ir
from .planner.semantics.bind import bind, check_params
from .planner.semantics.schema import Schema
from .runtime import Execution, execute


def compile(  # noqa: A001 - the public name users expect
    text: str,
    params: dict[str, object] | None = None,
    schema: Schema | None = None,
    *,
    options: RunOptions | None = None,
    strict_params: bool = False,
    inputs: Inputs | None = None,
    **keywords,
) -> CompiledQuery:
    """Compile query text into a plan.  Parameters missing from `params` are
    listed in `query.unbound` (and refused when it runs) unless
    `strict_params` makes them an error now.  Keywords are run options
    (`trends=`, `strategy=`, `time_col=`, …; see `RunOptions`): what they
    make impossible is refused here, before any data is read."""
    text = query_text(text)
    options = RunOptions.of(options, **keywords)
    params = check_params(dict(params or {}))
    ast = parse(text)
    if inputs is None and schema is not None:
        inputs = Inputs(schema=schema)
    try:
        query = bind(ast, params, schema, strict_params=strict_params, time_col=options.time_col)
        plan = build(query, options, inputs)
    except QueryError as e:
        raise e.with_source(text) from None
    return CompiledQuery(text, ast, query, plan, tuple(sorted(params.items())), options)


@dataclass(frozen=True)
class CompiledQuery:
    source: str
    ast: A.Query
    query: ir.BoundQuery
    plan: LogicalPlan
    params: tuple[tuple[str, object], ...] = ()
    options: RunOptions = field(default_factory=RunOptions)

    @property
    def kind(self) -> str:
        return self.query.kind.value

    @property
    def trend_set(self) -> str:
        return self.plan.root.trend_set.choice

    @property
    def predicates(self) -> tuple[ir.Predicate, ...]:
        return self.query.predicates

    def explain(self, format: str = "text") -> str:  # noqa: A002 - the CLI's word
        """The plan as `cetql compile --explain` prints it (format "text"),
        or as JSON ("json")."""
        return explain_json(self) if format == "json" else explain_text(self)

    def execution(self, data=None, *, spark=None, params: dict | None = None, options: RunOptions | None = None,
                  **keywords) -> Execution:  # fmt: skip
        """Bind the query to its inputs and plan it: nothing runs yet.

        `data`: a DataFrame, a path (CSV/Parquet/JSON lines, file or folder)
        or a table/view name for a single-type stream, or a dict
        {type name: one of those}; typed inputs may also be keywords
        (`Check=df`).  Other keywords are run options (see `RunOptions`)."""
        typed = {k: keywords.pop(k) for k in list(keywords) if k not in _OPTION_NAMES}
        opts = RunOptions.of(options or self.options, **keywords)
        merged = {**dict(self.params), **check_params(dict(params or {}))}
        return execute(self, data, typed, spark=spark, params=merged, options=opts)

    def run(self, data=None, *, spark=None, params: dict | None = None, options: RunOptions | None = None,
            **keywords):  # fmt: skip
        """The query's result as a lazy DataFrame (see `execution`)."""
        return self.execution(data, spark=spark, params=params, options=options, **keywords).dataframe


_OPTION_NAMES = set(RunOptions.__dataclass_fields__)
