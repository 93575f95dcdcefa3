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

from . import ast as A
from .explain import explain_json, explain_text
from .options import RunOptions
from .parser import parse
from .planner.logical.plan import Inputs, Resources
from .planner.physical.plan import PhysicalPlan
from .planner.planning import plan
from .planner.semantics import ir
from .planner.semantics.bind import check_params
from .planner.semantics.schema import Schema
from .runtime import Execution, default_resources, execute


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
    `strict_params` makes them an error now.  Keywords are run options
    (`trends=`, `strategy=`, `time_col=`, …; see `RunOptions`): what they
    make impossible is refused here, before any data is read.  Without
    `inputs` and `resources`, the plan assumes them (`explain()` says what)."""
    options = RunOptions.of(options, **keywords)
    params = check_params(dict(params or {}))
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
        return replace(self, plan=plan(self, inputs, resources or default_resources(), strict_params=strict_params))

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

    def explain(self, format: str = "text") -> str:  # noqa: A002 - the CLI's word
        """The plan as `cetql compile --explain` prints it (format "text"),
        or as JSON ("json"): the logical plan, then the physical plan."""
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
        bound = replace(self, params=tuple(sorted(merged.items())), options=opts)
        return execute(bound, data, typed, spark=spark, options=opts)

    def run(self, data=None, *, spark=None, params: dict | None = None, options: RunOptions | None = None,
            **keywords):  # fmt: skip
        """The query's result as a lazy DataFrame (see `execution`)."""
        return self.execution(data, spark=spark, params=params, options=options, **keywords).dataframe


_OPTION_NAMES = set(RunOptions.__dataclass_fields__)
