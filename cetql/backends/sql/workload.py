"""A shared kernel input's columns (`planner.workload`) as SQL in a
dialect, for both backends: each column computed where its guard holds
(else null, its definition never evaluated there), in levels so that a
column is computed after the columns it reads."""

from __future__ import annotations

from cetql.backends.sql.dialects import Dialect
from cetql.backends.sql.expressions import condition, to_sql
from cetql.kernels import spec as K
from cetql.planner.workload.plan import SharedColumn


def column_sql(c: SharedColumn, dialect: Dialect) -> str:
    value = condition(c.definition, dialect) if c.boolean else to_sql(c.definition, dialect)
    if c.guard is None:
        return value
    return f"CASE WHEN {dialect.quote(c.guard)} THEN {value} END"


def levels(columns: tuple[SharedColumn, ...]) -> list[list[SharedColumn]]:
    """The columns by the order they can be computed in: a level reads
    only the input's columns and the earlier levels'."""
    depth: dict[str, int] = {}
    for c in columns:  # a column reads only columns made before it
        reads = [x for x in (*K.columns(c.definition), c.guard) if x in depth]
        depth[c.column] = 1 + max((depth[x] for x in reads), default=-1)
    out: list[list[SharedColumn]] = [[] for _ in range(1 + max(depth.values(), default=-1))]
    for c in columns:
        out[depth[c.column]].append(c)
    return out
