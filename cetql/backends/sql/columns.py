"""The kernel input's columns, as both engines make them: their order
(`kernel_columns`), which are another's expression (`same_columns`:
computed once, the same array under each name) and which masks hold for
every event (`constant_masks`).  An engine moves the columns left of
these (a sort, a shuffle, a transfer to the kernels' workers carry each
value once) and puts the others back before the kernel
(`backends/arrow/columns.restore`)."""

from __future__ import annotations

from cetql.backends.sql.dialects import DUCKDB
from cetql.backends.sql.expressions import to_sql
from cetql.kernels import spec as K
from cetql.planner.physical.plan import PhysicalPlan


def kernel_columns(plan: PhysicalPlan) -> list[str]:
    """The kernel input's columns, in order."""
    n, part = plan.names, plan.partition
    cols = [*part.group, n.time, n.id, *(m.column for m in plan.filter.masks)]
    if plan.windows.block:
        cols += [n.window_lo, n.window_hi]
    cols += [d.column for d in plan.root.derived] + [k.column for k in part.subkeys]
    cols += [k.column for k in part.state_keys]
    return list(dict.fromkeys(cols))


def computed_columns(plan: PhysicalPlan) -> list[tuple[str, str]]:
    """(an expression as DuckDB spells it, the column it computes) of each
    key and derived column, keys first."""
    part = plan.partition
    computed = [(DUCKDB.quote(k.attr), k.column) for k in (*part.keys, *part.subkeys, *part.state_keys)]
    return computed + [(to_sql(d.definition, DUCKDB), d.column) for d in plan.root.derived]


def same_columns(plan: PhysicalPlan) -> dict[str, str]:
    """Each key or derived column that is another's expression (`price` on
    both sides of `S.price < NEXT(S).price`): its name → the first column
    computing it (keys come first: a group column is never left out)."""
    first: dict[str, str] = {}  # an expression: the first column computing it
    same: dict[str, str] = {}
    for e, c in computed_columns(plan):
        if first.setdefault(e, c) != c:
            same[c] = first[e]
    return same


def constant_masks(plan: PhysicalPlan) -> tuple[str, ...]:
    """The masks true for every event (a position any event may take)."""
    return tuple(m.column for m in plan.filter.masks if m.definition == K.Lit(True))
