"""How an aggregation is computed, how COMPLETE trends are told apart, and
how its numbers leave the kernel."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.options import Algorithm, Completeness, Exact, TrendSet
from cetql.planner.logical.plan import Decision, Numbers
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir
from cetql.planner.semantics.ir import Op

READS = ("query", "options", "inputs", "trend_set", "transitions")
SETS = ("algorithm", "complete", "numbers")


def apply(d: Draft) -> Draft:
    if d.detection:
        return replace(d, algorithm=None, complete=None, numbers=None)
    return replace(d, algorithm=_algorithm(d), complete=_complete(d), numbers=_numbers(d))


def _algorithm(d: Draft) -> Decision:
    q, t = d.query, d.query.template
    all_trends = d.trend_set.choice == TrendSet.ALL
    count_only = all(a.func == "COUNT" and a.position is None for a in q.aggregates)
    between_events = any(tp.predicates for tp in d.transitions) or q.of_kind(ir.CrossPredicate)
    simple_negations = all(len(n.template.positions) == 1 and not n.template.negatives for n in t.negatives)
    if t.fixed_length and all_trends and count_only and not between_events and simple_negations:
        return Decision(Algorithm.ASEQ, "COUNT(*) of a fixed-length SEQ with no predicate between events: one "
                        "counter per prefix (A-Seq)")  # fmt: skip
    one = d.transitions[0] if len(d.transitions) == 1 else None
    if (t.single_kleene is not None and all_trends and count_only and one is not None and len(one.predicates) <= 1
            and all(p.op != Op.OTHER for p in one.predicates)):  # fmt: skip
        return Decision(Algorithm.KLEENE_COUNT, "COUNT(*) of E+ with at most one equal or range predicate: "
                        "GRETA's propagation with plain numbers")  # fmt: skip
    why = "Kleene or nested pattern" if not t.fixed_length else "predicates between events or other aggregates"
    return Decision(Algorithm.GRETA, f"propagate aggregates along the template from predecessors (GRETA): {why}")


def _complete(d: Draft) -> Decision | None:
    if d.trend_set.choice != TrendSet.COMPLETE:
        return None
    positions = d.query.template.positions
    types = {p.type for p in positions}
    typed = d.inputs.typed if d.inputs.typed is not None else len(types) > 1
    if len(positions) == 1 or (typed and len(types) == len(positions)):
        return Decision(Completeness.PER_STATE, "each event can take one position: a trend starts at an event no "
                        "start event precedes, and ends at one no end event follows")  # fmt: skip
    return Decision(Completeness.DETERMINIZED, "an event can take several positions: runs are followed as sets per "
                    "event sequence, so a trend is complete exactly when no event can be prepended or appended")  # fmt: skip


def _numbers(d: Draft) -> Decision:
    o, q = d.options, d.query
    if o.approx or q.approx:
        return Decision(Numbers.APPROXIMATE, "DOUBLE, asked for by " + ("--approx" if o.approx else "APPROX"))
    if o.exact == Exact.DECIMAL:
        return Decision(Numbers.EXACT_DECIMAL, "exact integers, as DECIMAL(38, s) (a larger value is an error)")
    return Decision(Numbers.EXACT_STRING, "exact integers, as decimal strings of any length")
