"""One shared kernel input for queries with the same windows and keys:
every column they read, computed once per definition, and one member per
query (pure).

A query's columns, as its own plan computes them:

- its constant condition (`const`), then its masks, each computed only
  where its constant holds;
- its selection: one of its masks holds (the rows its plan keeps);
- its derived columns (edge-predicate sides, attributes, aggregated
  values) — one that may fail (an overflow) computed only on rows it
  selects —, and its sub-keys and state keys (attributes, as they are).

Two queries share a column when its definition and its guard are the same:
equal predicates on a shared prefix give one mask column.
"""

from __future__ import annotations

from cetql.kernels import spec as K
from cetql.kernels.workload_spec import Member
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.show import show
from cetql.planner.workload.graphs import shared_graphs
from cetql.planner.workload.plan import Exchange, Named, SharedColumn
from cetql.planner.workload.trees import prefix_trees


class _Columns:
    """Shared columns by (definition, guard), named `<prefix>x<n>`."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.by_key: dict[tuple, SharedColumn] = {}
        self.whose: dict[str, list[str]] = {}

    def get(self, definition: K.Expr, guard: str | None, what: str, query: str, boolean: bool = True) -> str:
        key = (K.identity(definition), guard, boolean)  # a literal's type too: `x * 2` is not `x * 2.0`
        found = self.by_key.get(key)
        if found is None:
            name = f"{self.prefix}x{len(self.by_key)}"
            found = SharedColumn(name, definition, guard, boolean, what)
            self.by_key[key] = found
        users = self.whose.setdefault(found.column, [])
        if query not in users:
            users.append(query)
        return found.column

    def values(self) -> tuple[SharedColumn, ...]:
        out = []
        for c in self.by_key.values():
            about = f"{c.about} of {', '.join(self.whose[c.column])}"
            out.append(SharedColumn(c.column, c.definition, c.guard, c.boolean, about))
        return tuple(out)


def may_fail(e: K.Expr) -> bool:
    """Can evaluating `e` fail (64-bit or decimal overflow of +, -, * and
    negation; division and modulo give null)?  Such a column is computed
    only where its query selects the row; any other is computed on every
    row, once for every query that reads it."""
    match e:
        case K.Neg():
            return True
        case K.Arith(op=op, left=a, right=b):
            return op in "+-*" or may_fail(a) or may_fail(b)
        case K.Cmp(left=a, right=b):
            return may_fail(a) or may_fail(b)
        case K.And(items=xs) | K.Or(items=xs):
            return any(may_fail(x) for x in xs)
        case K.Not(operand=x) | K.IsNotNull(operand=x):
            return may_fail(x)
    return False


def _member(cols: _Columns, i: int, q: Named) -> Member:
    p = q.plan
    own: list[tuple[str, str]] = []
    guard = None
    if p.filter.constant is not None:
        guard = cols.get(p.filter.constant, None, f"constant ({show(p.filter.constant)})", q.name)
    masks = []
    for m in p.filter.masks:
        shared = cols.get(m.definition, guard, f"mask {show(m.definition)}", q.name)
        own.append((m.column, shared))
        masks.append(K.Col("self", shared))
    masks = list(dict.fromkeys(masks))
    selection = K.Or(tuple(masks)) if len(masks) > 1 else masks[0]
    select = cols.get(selection, None, "selection", q.name)
    for d in p.root.derived:
        guard = select if may_fail(d.definition) else None
        own.append((d.column, cols.get(d.definition, guard, f"{d.column} = {show(d.definition)}", q.name, False)))
    for k in (*p.partition.subkeys, *p.partition.state_keys):
        own.append((k.column, cols.get(K.Col("self", k.attr), None, f"key {k.attr}", q.name, False)))
    return Member(i, kernel_spec(p), select, tuple(own), q.name)


def exchange(queries: tuple[Named, ...], indices: tuple[int, ...], reason: str) -> Exchange:
    """The shared kernel input of the queries `indices` (same windows, same keys)."""
    prefix = queries[indices[0]].plan.names.prefix
    cols = _Columns(prefix)
    members = tuple(_member(cols, i, queries[i]) for i in indices)
    columns = cols.values()
    describe = {c.column: show(c.definition) for c in columns}
    trees, text = prefix_trees(queries, members, describe)
    graphs, graphs_text = shared_graphs([queries[m.query].name for m in members], members, describe)
    return Exchange(indices, columns, members, trees, text, reason, graphs, graphs_text)

