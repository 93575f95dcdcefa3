"""The cost rule: a workload shared against each query alone, in passes
over the input's events — a guess made before any data is read, shown by
`--explain` with how it was reckoned.

- a scan reads every event: 1 (Spark reads the input again for each
  exchange of a scan: no cache is asked for);
- an exchange sorts the rows it carries, with their columns:
  2 × rows × (1 + columns / 10);
- a query's own kernel: 5 × its rows × its positions (per event and
  position, in Python); taking its rows from a shared input: 0.1 × the
  input's rows;
- a prefix tree: 0.5 × rows × counters (a pass of prefix sums each);
- a shared propagation: 5 × the rows of its busiest query × its merged
  states, plus 0.1 × the input's rows a query (it walks every query's
  nodes once, the edges its queries have in common once).

Rows are the events a query takes times the windows an event falls in;
what a query takes is guessed from its vertex predicates (an equality
keeps 1/10, a range 1/3, any other 1/2; a typed input 1/types), a shared
input carrying what any of its queries takes.
"""

from __future__ import annotations

from math import prod

from cetql.base.options import Engine
from cetql.planner.logical import plan as L
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.semantics import ir
from cetql.planner.workload.plan import Estimate, Exchange, Named, ScanGroup

KEEPS = {ir.Op.EQUAL: 0.1, ir.Op.RANGE: 1 / 3, ir.Op.OTHER: 0.5}
READ, SORT, WIDTH, LOOP, TAKE, TREE = 1.0, 2.0, 0.1, 5.0, 0.1, 0.5


def taken(p: PhysicalPlan) -> float:
    """The share of events a query takes (a guess from its predicates)."""
    f = p.logical.find(L.Filter)
    inputs = p.logical.find(L.Scan).inputs
    per_type = 1 / max(1, len(inputs.types)) if inputs.typed else 1.0
    constant = prod(KEEPS[x.op] for x in f.constant)
    states = sum(per_type * prod(KEEPS[x.op] for x in s.predicates) for s in f.states)
    return constant * min(1.0, states)


def _columns(p: PhysicalPlan) -> int:
    return len(p.filter.masks) + len(p.root.derived) + len(p.partition.subkeys) + len(p.partition.state_keys)


def _positions(p: PhysicalPlan) -> int:
    return len(p.root.template.states) + len(p.root.template.negations)


def alone(p: PhysicalPlan) -> float:
    rows = taken(p) * p.windows.per_event
    return READ + SORT * rows * (1 + WIDTH * _columns(p)) + LOOP * rows * _positions(p)


def _exchange(queries: tuple[Named, ...], ex: Exchange) -> float:
    plans = [queries[i].plan for i in ex.queries]
    union = 1 - prod(1 - taken(p) for p in plans)
    rows = union * plans[0].windows.per_event
    in_tree = {i for t in ex.trees for i in t.members} | {gm.member for g in ex.graphs for gm in g.members}
    cost = SORT * rows * (1 + WIDTH * len(ex.columns)) + TREE * rows * sum(len(t.nodes) + len(t.suffixes) for t in ex.trees)
    for g in ex.graphs:
        busiest = max(taken(queries[ex.members[gm.member].query].plan) for gm in g.members)
        cost += TAKE * rows * len(g.members) + LOOP * busiest * plans[0].windows.per_event * len(g.template.states)
    for k, m in enumerate(ex.members):
        if k not in in_tree:
            p = queries[m.query].plan
            cost += TAKE * rows + LOOP * taken(p) * p.windows.per_event * _positions(p)
    return cost


def estimate(queries: tuple[Named, ...], groups: tuple[ScanGroup, ...], engine: Engine) -> Estimate:
    apart = sum(alone(q.plan) for q in queries)
    grouped = {i for g in groups for i in g.queries}
    shared = sum(alone(queries[i].plan) for i in range(len(queries)) if i not in grouped)
    lines = []
    for g in groups:
        reads = READ * (len(g.exchanges) if engine == Engine.SPARK else 1)
        parts = [_exchange(queries, ex) for ex in g.exchanges]
        shared += reads + sum(parts)
        names = ", ".join(queries[i].name for i in g.queries)
        lines.append(f"{names}: {reads:.1f} to read, " + " + ".join(f"{c:.1f}" for c in parts) + " in exchanges and "
                     f"kernels; alone {sum(alone(queries[i].plan) for i in g.queries):.1f}")  # fmt: skip
    for q in queries:
        lines.append(f"{q.name}: takes ~{taken(q.plan):.2g} of the events × {q.plan.windows.per_event} window(s) "
                     f"each; alone {alone(q.plan):.1f}")  # fmt: skip
    return Estimate(round(shared, 2), round(apart, 2), tuple(lines))
