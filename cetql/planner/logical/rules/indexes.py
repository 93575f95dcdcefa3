"""For each template transition, how a step along it is found (the ABI
index the plan chooses per transition)."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.options import Index, Kernel
from cetql.planner.logical.plan import Decision, TransitionPlan
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir
from cetql.planner.semantics.ir import Op

READS = ("query", "options", "key_predicates")
SETS = ("transitions",)

COST = {
    Index.HASH: "a hash on the value (ABI attribute vertex per value): O(1) per step",
    Index.RANGE: "a sorted index over h(prev) values (ABI range index): O(log n) per step",
}


def pairs(t) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """Every transition of the template and of its negated sub-templates, and
    the pairs a negation lies between."""
    between, out = set(), []

    def walk(t):
        between.update(pair for neg in t.negatives for pair in neg.pairs)
        out.extend((p, n) for p, n, _ in t.transitions)
        for neg in t.negatives:
            walk(neg.template)

    walk(t)
    return out, between


def apply(d: Draft) -> Draft:
    q = d.query
    edges = [*q.of_kind(ir.EdgePredicate), *(p for p in d.key_predicates if isinstance(p, ir.EdgePredicate))]
    steps, between = pairs(q.template)
    plans = []
    for p, n in steps:
        preds = tuple(e for e in edges if (e.source, e.target) == (p, n))
        plans.append(TransitionPlan(p, n, preds, _index(d, preds, (p, n) in between)))
    return replace(d, transitions=tuple(plans))


def _index(d: Draft, preds, negation_between: bool) -> Decision:
    equal = [e for e in preds if e.op == Op.EQUAL]
    ranges = [e for e in preds if e.op == Op.RANGE]
    if not d.detection and d.options.kernel == Kernel.SCAN:
        return Decision(Index.SCAN, "--kernel scan: GRETA's predecessor scan, O(n) per step (for comparisons)")
    if not d.detection and negation_between:
        return Decision(Index.SCAN, "a negation lies between these positions: every predecessor is checked, O(n)")
    if equal:
        return Decision(Index.HASH, f"{equal[0].text}: {COST[Index.HASH]}")
    if ranges:
        return Decision(Index.RANGE, f"{ranges[0].text}: {COST[Index.RANGE]}")
    if preds:
        return Decision(Index.SCAN, "no equal or range predicate: candidate pairs, O(n) per step")
    if d.detection:
        return Decision(Index.SCAN, "no predicate: every later event follows")
    return Decision(Index.SCAN, "no predicate: every later event follows, O(1) per step as a running total")
