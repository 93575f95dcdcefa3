"""The one way to a plan:

    plan(compiled, inputs, resources) → PhysicalPlan

bind (types, parameters, predicate classes) → the logical rules → the
physical plan.  Pure: every surface — the Python API, `spark.cet`, `cetql
compile|run|draw`, the REPL, `cetql serve`'s clients — gets its plan here,
so the plan `--explain` prints for some inputs and resources is the plan
that runs on them.
"""

from __future__ import annotations

from cetql.base.errors import QueryError
from cetql.planner.logical.build import build
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.physical.build import physical
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.semantics.bind import bind


def plan(compiled, inputs: Inputs | None = None, resources: Resources | None = None, *,
         strict_params: bool = True) -> PhysicalPlan:  # fmt: skip
    """`compiled`: anything with the query's `ast`, `source`, `params` and
    run `options` (a `cetql.CompiledQuery`).  Without `strict_params`, a
    parameter left unbound is shown in the plan and refused when it runs."""
    inputs = inputs or Inputs()
    try:
        query = bind(compiled.ast, dict(compiled.params), inputs.schema, strict_params=strict_params,
                     time_col=compiled.options.time_col)  # fmt: skip
        return physical(build(query, compiled.options, inputs, resources or Resources()))
    except QueryError as e:
        raise e.with_source(compiled.source) from None
