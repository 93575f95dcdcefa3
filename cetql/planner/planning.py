"""The one way to a plan:

    plan(compiled, inputs, resources, engines) → PhysicalPlan

bind (types, parameters, predicate classes) → the logical rules → the
physical plan → the engine that runs it (`physical.engine`: the first of
`engines`, the capability tables the surface offers, that runs it).  Pure: every surface — the Python API, `spark.cet`, `cetql
compile|run|draw`, the REPL, `cetql serve`'s clients — gets its plan here,
so the plan `--explain` prints for some inputs and resources is the plan
that runs on them.
"""

from __future__ import annotations

from dataclasses import replace

from cetql.base.errors import QueryError
from cetql.planner.logical.build import build
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.physical import engine
from cetql.planner.physical.build import physical
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.semantics.bind import bind


def plan(compiled, inputs: Inputs | None = None, resources: Resources | None = None,
         engines: tuple[engine.Capabilities, ...] = (), *, strict_params: bool = True) -> PhysicalPlan:  # fmt: skip
    """`compiled`: anything with the query's `ast`, `source`, `params` and
    run `options` (a `cetql.CompiledQuery`).  `engines`: the engines that
    may run it, in the order of preference (none: Spark).  Without
    `strict_params`, a parameter left unbound is shown in the plan and
    refused when it runs."""
    inputs = inputs or Inputs()
    try:
        query = bind(compiled.ast, dict(compiled.params), inputs.schema, strict_params=strict_params,
                     time_col=compiled.options.time_col)  # fmt: skip
        p = physical(build(query, compiled.options, inputs, resources or Resources()))
    except QueryError as e:
        raise e.with_source(compiled.source) from None
    need = engine.requirements(p.logical, p.names, p.scan, p.filter, p.windows, p.root, p.stream)
    return replace(p, engine=engine.choose(need, engines, compiled.options.engine))
