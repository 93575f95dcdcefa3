"""`cetql.compile(text)` and what it returns.

    text ─parse→ AST ─plan(compiled, inputs, resources)→ PhysicalPlan ─Spark compiler→ DataFrame

`compile` parses and plans with what is known (refusing, before any data is
read, what the query makes impossible); `CompiledQuery.run` binds the query
to its inputs, plans again with their columns and the session's resources —
through the same `plan` function, so `explain()` given the same inputs and
resources shows the plan that runs — and builds the lazy DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from cetql.backends.inputs.sources import is_path
from cetql.backends.spark.resources import default_resources
from cetql.base.errors import ArgumentTypeError, InputNotFoundError, QueryError, UnknownTypeError, UsageError, spoken
from cetql.base.options import RunOptions, option_names, unknown_keyword
from cetql.base.words import did_you_mean
from cetql.language import ast as A
from cetql.language.parser import parse
from cetql.planner.explain import explain_json, explain_text
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.planning import plan
from cetql.planner.semantics import ir
from cetql.planner.semantics.bind import bind
from cetql.planner.semantics.parameters import check_params
from cetql.planner.semantics.schema import Schema
from cetql.surfaces.api.engines import OFFERED
from cetql.surfaces.arguments import query_text


def compile(  # noqa: A001 - the public name users expect
    text: str,
    params: dict[str, object] | None = None,
    schema: Schema | None = None,
    *,
    options: RunOptions | None = None,
    strict_params: bool = False,
    inputs: Inputs | None = None,
    resources: Resources | None = None,
    **keywords,
) -> CompiledQuery:
    """Compile query text into a plan.  Parameters missing from `params` are
    listed in `query.unbound` (and refused when it runs) unless
    `strict_params` makes them an error now; a parameter in `params` the
    query does not read is refused by name (`ParameterError`), with the
    nearest name it reads.  Keywords are run options
    (`trends=`, `strategy=`, `time_col=`, …; see `RunOptions`): what they
    make impossible is refused here, before any data is read.  Without
    `inputs` and `resources`, the plan assumes them (`explain()` says what)."""
    text = query_text(text)
    options = RunOptions.of(options, **keywords)
    params = check_params(_param_dict(params))
    if inputs is None and schema is not None:
        inputs = Inputs(schema=schema)
    compiled = CompiledQuery(text, parse(text), tuple(sorted(params.items())), options)
    return compiled.planned(inputs, resources, strict_params=strict_params)


@dataclass(frozen=True)
class CompiledQuery:
    source: str
    ast: A.Query
    params: tuple[tuple[str, object], ...] = ()
    options: RunOptions = field(default_factory=RunOptions)
    plan: PhysicalPlan | None = None  # planned for the inputs and resources given to `compile` (or assumed)

    def planned(self, inputs: Inputs | None = None, resources: Resources | None = None, *,
                strict_params: bool = True) -> CompiledQuery:  # fmt: skip
        """This query planned for these inputs and resources (the one `plan` function)."""
        return replace(self, plan=plan(self, inputs, resources or default_resources(), OFFERED,
                                       strict_params=strict_params))  # fmt: skip

    @property
    def query(self) -> ir.BoundQuery:
        return self.plan.logical.query

    @property
    def kind(self) -> str:
        return self.query.kind.value

    @property
    def trend_set(self) -> str:
        return self.plan.logical.root.trend_set.choice.value

    @property
    def predicates(self) -> tuple[ir.Predicate, ...]:
        return self.query.predicates

    def explain(self, format: str = "text", *, as_string: bool = False) -> str | None:  # noqa: A002 - the CLI's word
        """Print the plan, as `DataFrame.explain()` does (and return None):
        as `cetql compile --explain` shows it (format "text"), or as JSON
        ("json").  `as_string=True` returns the text instead of printing it.
        Options are named as Python spells them (`trends="maximal"`)."""
        if format not in ("text", "json"):
            raise UsageError(f"explain format must be 'text' or 'json', not {format!r}")
        text = explain_json(self) if format == "json" else spoken(explain_text(self), "python")
        if as_string:
            return text
        print(text)
        return None

    def execution(self, data=None, *, spark=None, params: dict | None = None, options: RunOptions | None = None,
                  watermark=None, **keywords):  # fmt: skip
        """Bind the query to its inputs and plan it: nothing runs yet.

        `data`: a DataFrame, a path (CSV/Parquet/JSON lines, file or folder)
        or a table/view name for a single-type stream, or a dict
        {type name: one of those}; typed inputs may also be keywords named
        after the pattern's types (`Check=df`).  Other keywords are run
        options (see `RunOptions`); anything else is refused by name, as is
        a parameter in `params` the query does not read.  A path that does
        not exist is refused before Spark is asked.
        Streaming DataFrames give a streaming result: `watermark` ("10
        minutes", or a number in the time column's units; default 0) is how
        far behind the latest event time a window may still receive events."""
        types = self.types
        typed, opts = {}, {}
        for k, v in keywords.items():
            if k in _OPTION_NAMES:
                opts[k] = v
            elif k in types:
                typed[k] = v
            else:
                raise ArgumentTypeError(unknown_keyword(k, option_names(), types))
        opts = RunOptions.of(options or self.options, **opts)
        merged = {**dict(self.params), **check_params(_param_dict(params))}
        if params or set(self.query.unbound) - set(merged):  # refused now, before Spark reads anything
            try:
                bind(self.ast, merged, None, strict_params=True, time_col=opts.time_col)
            except QueryError as e:
                raise e.with_source(self.source) from None
        check_inputs(data, types)
        check_inputs(typed, types)
        bound = replace(self, params=tuple(sorted(merged.items())), options=opts)
        from cetql.surfaces.api.runtime import execute  # start-up cost: pyspark, only for a run on Spark

        return execute(bound, data, typed, spark=spark, options=opts, watermark=watermark)

    @property
    def types(self) -> tuple[str, ...]:
        """The event types of the pattern, sorted: the names typed inputs take."""
        return tuple(sorted({p.type for p in self.query.positions.values()}))

    def run(self, data=None, *, spark=None, params: dict | None = None, options: RunOptions | None = None,
            watermark=None, **keywords):  # fmt: skip
        """The query's result as a lazy DataFrame (see `execution`)."""
        return self.execution(data, spark=spark, params=params, options=options, watermark=watermark,
                              **keywords).dataframe  # fmt: skip


_OPTION_NAMES = set(option_names())


def _param_dict(params) -> dict:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ArgumentTypeError(f"params must be a dict of name → value, not {type(params).__name__}")
    for k, v in params.items():
        if not isinstance(k, str):
            raise ArgumentTypeError(f"params: a parameter's name is a string, not {k!r}")
        if not isinstance(v, (bool, int, float, Decimal, str)):
            raise ArgumentTypeError(f"params: {k}={v!r} is a {type(v).__name__}; give a number, a string or a boolean")
    return dict(params)


def check_inputs(data, types: tuple[str, ...] | None = None) -> None:
    """Refuse, without Spark, inputs that cannot be read: one bound to a type
    the pattern does not have (`data` a dict {type: input}; KeyError), a
    value that is no DataFrame, path or table name (TypeError), and a path
    that does not exist where the text cannot be a table name either — it
    has a `/` or a file extension such as `.csv` (FileNotFoundError)."""
    given = dict(data) if isinstance(data, dict) else ({None: data} if data is not None else {})
    unknown = sorted(str(k) for k in given if k is not None and types is not None and k not in types)
    if unknown:
        raise UnknownTypeError(f"input bound to type(s) {', '.join(unknown)} that the pattern does not use"
                               f"{did_you_mean(unknown[0], types)} (its types: {', '.join(types)})")  # fmt: skip
    for name, value in given.items():
        where = f"input {name}" if name else "the input"
        if isinstance(value, (str, Path)):
            text = str(value)
            if not Path(text).exists() and is_path(text):
                raise InputNotFoundError(f"input '{text}' does not exist", text)
        elif not _spark_input(value):
            raise ArgumentTypeError(f"{where} is a {type(value).__name__}; give a DataFrame, a path or a table name")


def _spark_input(value) -> bool:
    """A Spark DataFrame, or an input the CLI read for Spark (a stream read by
    the reader's rules), told without importing pyspark where it is not loaded."""
    import sys

    if "pyspark" not in sys.modules:
        return False
    from pyspark.sql import DataFrame  # loaded already (a DataFrame exists only then)

    from cetql.backends.spark.compiler import Input  # start-up cost: only where pyspark is loaded already

    return isinstance(value, (DataFrame, Input))
