"""Refuse, before anything runs, what the engine would refuse later."""

from __future__ import annotations

from cetql.base.errors import QuerySemanticError, UsageError
from cetql.base.options import Exact, Kernel
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir

READS = ("query", "options", "inputs")
SETS = ()

# Output columns of a detection query and of an aggregation query, beside keys.
DETECT_COLUMNS = ("window_start", "window_end", "events", "length", "rows")
AGGREGATE_COLUMNS = ("window_start", "window_end")


def apply(d: Draft) -> Draft:
    if d.detection:
        _detection_options(d)
    else:
        _aggregation(d)
    q = d.query
    positions = q.template.all_positions
    for p in q.of_kind(ir.CrossPredicate):
        if any(positions[v].negated for v in p.positions):
            raise QuerySemanticError(
                f"'{p.text}' relates a negated event to another variable; a negated sub-pattern may only have "
                "predicates of its own (on its events and between them)",
                p.pos,
            )
    taken = DETECT_COLUMNS if d.detection else AGGREGATE_COLUMNS
    for k in (*[k for p in q.of_kind(ir.EquivalencePredicate) for k in p.keys], *q.group_by):
        if k.attr in taken:
            raise QuerySemanticError(
                f"the attribute '{k.attr}' would be an output column, but the output already has a column "
                f"'{k.attr}' ({', '.join(taken)}); rename the input column",
                None,
            )
    if not d.detection:
        names = [a.name for a in q.aggregates] + [k.attr for k in q.group_by]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise QuerySemanticError(f"the output would have two columns named {dup[0]}", None)
    return d


def _detection_options(d: Draft) -> None:
    o = d.options
    if o.kernel != Kernel.INDEX:
        raise UsageError("--kernel chooses how aggregation finds predecessors; this is a detection query")
    if o.approx:
        raise UsageError("--approx applies to aggregates; a detection query returns its trends exactly")
    if o.exact != Exact.DECIMAL:
        raise UsageError("--exact applies to aggregates; a detection query returns event ids, not numbers")


def _aggregation(d: Draft) -> None:
    q, o = d.query, d.options
    if o.strategy is not None:
        raise UsageError(
            "--strategy chooses how detection extracts trends; an aggregation query builds no trends "
            "(its algorithm is chosen by the plan: see --explain)"
        )
    if o.with_rows:
        raise UsageError("--with-rows adds each trend's events to detection output; an aggregation has no trends")
    if o.memory_budget is not None:
        raise UsageError("--memory-budget bounds what a detection group holds (its graph and output batch); "
                         "an aggregation holds a few values per event and builds no trends")  # fmt: skip
    for p in q.of_kind(ir.CrossPredicate):
        raise QuerySemanticError(
            f"'{p.text}' relates variables that are not adjacent in a trend; aggregation supports vertex, "
            "equivalence and adjacent (edge) predicates, as GRETA does",
            p.pos,
        )
    witness = q.template.ambiguity(same_letter(d))
    if witness is not None:
        a, b = witness
        raise QuerySemanticError(
            f"the pattern can match one sequence of events in two ways ({a} and {b} can take the same event at "
            "the same step), so aggregating would count such a trend twice; write the pattern so each event "
            "has one place (e.g. SEQ(A+ x[], B y) rather than SEQ(A+ x[], A+ y[]))",
            q.ast.pattern.pos,
        )


def same_letter(d: Draft):
    """Can one event take both positions p and q?  On inputs bound to types,
    when they have the same type; on one single-type stream, always."""
    positions = d.query.template.all_positions
    single = d.inputs.typed is False or (d.inputs.typed is None and len({p.type for p in positions.values()}) == 1)
    return lambda p, q: single or positions[p].type == positions[q].type
