"""Building the logical plan: the rules in order, then the operator tree.

    plan = build(query, options, inputs, resources)

Pure: the same bound query, options, inputs and resources give the same
plan.  Each rule module says what it reads and sets; `build` checks it
after every rule, so an order that would read a decision before it is made
fails here, naming both, rather than later on a missing value.
"""

from __future__ import annotations

from cetql.base.errors import SchemaError
from cetql.base.options import RunOptions, Sharing
from cetql.base.words import did_you_mean
from cetql.planner.logical.plan import (
    Aggregate,
    Detect,
    Filter,
    Inputs,
    LogicalPlan,
    Partition,
    Resources,
    Scan,
    StateFilter,
    Windows,  # fmt: skip
)
from cetql.planner.logical.rules import (
    GIVEN,
    MISSING,
    Draft,
    algorithm,
    capabilities,
    cost,
    estimate,
    guard,
    indexes,
    invalid,
    keys,
    memory,
    partitions,  # fmt: skip
    strategy,
    streaming,
    trend_set,
    windows,
)
from cetql.planner.semantics import ir

RULES = (trend_set, capabilities, keys, indexes, algorithm, estimate, strategy, streaming, windows, guard, memory, partitions,
         invalid, cost)  # fmt: skip


def order_errors(rules=RULES) -> list[str]:
    """Fields a rule reads that no earlier rule sets (empty: the order is sound)."""
    known, wrong = set(GIVEN), []
    for rule in rules:
        wrong += [f"{rule.__name__} reads '{f}' before any rule sets it" for f in rule.READS if f not in known]
        known |= set(rule.SETS)
    return wrong


def run_rules(draft: Draft, rules=RULES) -> Draft:
    """Apply the rules in order, checking each one's contract."""
    for rule in rules:
        missing = [f for f in rule.READS if getattr(draft, f) is MISSING]
        if missing:
            raise AssertionError(f"{rule.__name__} reads {missing}, which no earlier rule set")
        draft = rule.apply(draft)
        unset = [f for f in rule.SETS if getattr(draft, f) is MISSING]
        if unset:
            raise AssertionError(f"{rule.__name__} did not set {unset}")
    return draft


def build(query: ir.BoundQuery, options: RunOptions, inputs: Inputs | None = None,
          resources: Resources | None = None) -> LogicalPlan:  # fmt: skip
    resources = resources or Resources()
    _check_id_column(options.id_col, inputs or Inputs())
    d = run_rules(Draft(query, options, inputs or Inputs(), resources))
    return LogicalPlan(query, options, resources, _assemble(d), d.stream)


def _check_id_column(id_col: str | None, inputs: Inputs) -> None:
    """The id column is in every input whose columns are known."""
    if id_col is None:
        return
    for f in inputs.each:
        names = [c.name for c in f.source.columns] if f.source is not None else None
        if names is not None and id_col not in names:
            where = f"input {f.type_name}" if f.type_name else "the input"
            raise SchemaError(f"id column '{id_col}' is not in {where}{did_you_mean(id_col, names)} "
                              f"(columns: {', '.join(names)})")  # fmt: skip


def _assemble(d: Draft) -> Detect | Aggregate:
    q = d.query
    positions = q.template.all_positions
    vertex = [*q.of_kind(ir.VertexPredicate), *(p for p in d.key_predicates if isinstance(p, ir.VertexPredicate))]
    scan = Scan(d.inputs, tuple(sorted({p.type for p in positions.values()})), q.time_col, d.options.id_col, d.invalid)
    states = tuple(
        StateFilter(p.name, p.type, p.negated, tuple(v for v in vertex if v.positions == (p.name,)))
        for p in positions.values()
    )
    filt = Filter(scan, tuple(v for v in vertex if not v.positions), states)
    win = Windows(filt, q.window, d.sharing, d.block, d.propagate, d.shared_graph)
    part = Partition(win, d.keys, d.subkeys, d.variable_keys, d.partitions, _partition_reason(d))
    if d.detection:
        return Detect(part, q.template, d.transitions, tuple(q.of_kind(ir.CrossPredicate)), d.trend_set, d.strategy,
                      d.guard, d.options.with_rows, d.cost, d.memory, d.max_edges, d.batch_events or 0,
                      d.prefilter, d.estimate, d.split)  # fmt: skip
    return Aggregate(part, q.template, d.transitions, q.aggregates, q.group_by, d.trend_set, d.algorithm, d.complete,
                     d.numbers, d.cost)  # fmt: skip


def _partition_reason(d: Draft) -> str:
    """Why the groups are what they are, from the keys' and windows' decisions."""
    blocks = d.sharing.choice == Sharing.BLOCKS
    unit = "block of windows" if blocks else "window"
    if d.detection:
        reason = (f"equivalence attributes: every event of a trend has the same values, so each ({unit}, key) group "
                  "is extracted on its own" if d.keys else f"no equivalence attribute: one group per {unit}")  # fmt: skip
    else:
        reason = "GROUP-BY attributes: one output row per (window, group)" if d.keys else "no GROUP-BY: one row per window"
        if d.subkeys:
            reason += ("; equivalence attributes that are not grouped split each group inside the kernel, and the "
                       "parts' aggregates are summed")  # fmt: skip
    if blocks:
        how = "each window walked on the block's one graph" if d.shared_graph else "each window evaluated on its own slice"
        reason += f"; a kernel group holds a block of {d.block} windows, {how}"
    return reason
