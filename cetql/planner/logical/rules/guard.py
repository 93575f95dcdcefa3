"""The runaway guard: the most trends a (window, group) may return,
counted before any trend is built."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.options import Strategy, TrendSet
from cetql.planner.logical.plan import Decision
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir

READS = ("query", "options", "trend_set", "strategy")
SETS = ("guard",)


def apply(d: Draft) -> Draft:
    if not d.detection:
        return replace(d, guard=None)
    n = d.options.max_trends
    if not n:
        return replace(d, guard=Decision(0, "no limit (--max-trends 0)"))
    how = {TrendSet.ALL: "counted exactly by propagation", TrendSet.COMPLETE: "counted exactly by propagation",
           TrendSet.MAXIMAL: "bounded by the number of complete trends"}[d.trend_set.choice]  # fmt: skip
    if d.query.of_kind(ir.CrossPredicate):
        how = "bounded by the number of all trends without the cross predicates"
    where = "before any is built"
    if d.strategy.choice == Strategy.DISTRIBUTED:
        where = "before the paths are extended (each group counted by the local kernel's propagation)"
    return replace(d, guard=Decision(n, f"a (window, group) with more than {n:,} trends is refused {where} ({how})"))
