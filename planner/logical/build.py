"""Building the logical plan: the rules in order, then the operator tree.

    plan = build(query, options, inputs)

Pure: the same bound query, options and inputs give the same plan, so the
plan `--explain` prints is the plan `run` executes.
"""

from __future__ import annotations

from functools import reduce

from cetql.options import RunOptions, Sharing

from ..semantics import ir
from . import rules
from .plan import Aggregate, Detect, Filter, Inputs, LogicalPlan, Partition, Scan, StateFilter, Windows

RULES = (
    rules.trend_set,
    rules.capabilities,
    rules.keys,
    rules.indexes,
    rules.algorithm,
    rules.strategy,
    rules.windows,
    rules.guard,
    rules.memory,
    rules.invalid,
    rules.cost,
)


def build(query: ir.BoundQuery, options: RunOptions, inputs: Inputs | None = None) -> LogicalPlan:
    d = reduce(lambda draft, rule: rule(draft), RULES, rules.Draft(query, options, inputs or Inputs()))
    return LogicalPlan(query, options, _assemble(d))


def _assemble(d: rules.Draft) -> Detect | Aggregate:
    q = d.query
    positions = q.template.all_positions
    vertex = q.of_kind(ir.VertexPredicate)
    scan = Scan(
        inputs=d.inputs,
        types=tuple(sorted({p.type for p in positions.values()})),
        time_col=q.time_col,
        id_col=d.options.id_col,
        invalid=d.invalid,
    )
    states = tuple(
        StateFilter(p.name, p.type, p.negated, tuple(v for v in vertex if v.positions == (p.name,)))
        for p in positions.values()
    )
    filt = Filter(scan, tuple(v for v in vertex if not v.positions), states)
    blocks = d.sharing.choice == Sharing.BLOCKS.value
    win = Windows(filt, q.window, d.sharing, q.window.copies if blocks else 0, blocks and d.propagate,
                  blocks and d.shared_graph)
    part = Partition(win, d.keys, d.subkeys, d.partition_reason)
    if d.detection:
        return Detect(
            child=part,
            template=q.template,
            transitions=d.transitions,
            cross=tuple(q.of_kind(ir.CrossPredicate)),
            trend_set=d.trend_set,
            strategy=d.strategy,
            guard=d.guard,
            with_rows=d.options.with_rows,
            cost=d.cost,
            memory=d.memory,
            memory_bytes=d.memory_bytes,
            max_edges=d.max_edges,
            batch_events=d.batch_events,
        )
    return Aggregate(
        child=part,
        template=q.template,
        transitions=d.transitions,
        aggregates=q.aggregates,
        group_by=q.group_by,
        trend_set=d.trend_set,
        algorithm=d.algorithm,
        complete=d.complete,
        numbers=d.numbers,
        cost=d.cost,
    )
