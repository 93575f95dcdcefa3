"""What a group costs, in words (--explain)."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.options import Algorithm, Completeness, Index, Strategy
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir

READS = ("query", "strategy", "shared_graph", "algorithm", "transitions", "propagate", "complete")
SETS = ("cost",)

_ORDER = (Index.HASH, Index.RANGE, Index.SCAN)


def apply(d: Draft) -> Draft:
    return replace(d, cost=_detection(d) if d.detection else _aggregation(d))


def _detection(d: Draft) -> str:
    if d.strategy.choice == Strategy.DISTRIBUTED:
        return "one Spark job per round; each round joins the open paths with their next events"
    text = "per group: the index O(n log n), the graph O(n + steps), then O(output) to write each trend"
    if d.shared_graph:
        text = ("per block: the index O(n log n) and the graph O(n + steps) once; per window: O(its nodes) "
                "to find where its trends start, then O(output) to write each trend")  # fmt: skip
    if d.query.of_kind(ir.CrossPredicate):
        text += "; cross predicates are checked on each extension"
    return text


def _aggregation(d: Draft) -> str:
    if d.algorithm.choice == Algorithm.ASEQ:
        return "per group: O(n · pattern length)"
    worst = max((_ORDER.index(tp.index.choice) for tp in d.transitions
                 if tp.predicates or tp.index.choice != Index.SCAN), default=0)  # fmt: skip
    text = ("per group: O(n) (hash lookups)", "per group: O(n log n) (range index)",
            "per group: O(n²) (predecessor scan)")[worst]  # fmt: skip
    if d.propagate:
        text = text.replace("per group:", "per block:") + " vector operations of one entry per window"
    if d.complete is not None and d.complete.choice == Completeness.DETERMINIZED:
        text += "; COMPLETE over sets of runs: O(steps · sets)"
    return text
