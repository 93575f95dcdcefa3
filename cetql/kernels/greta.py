"""Trend aggregation without trend construction (GRETA), inside one group:
exact with Python integers (or floats when approximate).

Each node's value is the sum of its predecessors' values plus its own start
(GRETA Theorem 4.3 and 9.1):

    count  = [START] + Σ pred.count            COUNT(*) = Σ_END count
    cnt_E  = Σ pred.cnt_E + [var = E]·count    COUNT(E) = Σ_END cnt_E
    sum    = Σ pred.sum + [var = E]·attr·count SUM      = Σ_END sum
    min    = min(pred.min…, attr if var = E)   MIN      = min_END min   (MAX alike)

COMPLETE trends (no event can be prepended or appended):

- per state (every event can take one state): a trend may start only at a
  node no start node precedes, and end only at a node no end node follows
  (an edge to a middle state, e.g. b2 → a3 in (SEQ(A+,B))+, does not make
  b2 appendable; an edge from a middle state, B36 → A41, does not make A41
  prependable);
- determinized (events may take several states, e.g. SEQ(A a, A+ b[]) on one
  stream): the sets of runs of each event sequence are followed
  (`classes`), exactly as detection decides completeness.

COUNT(*) of E+ with at most one indexed predicate needs no vectors:
`kleene`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from cetql.base.options import TrendSet
from cetql.kernels import spec as K
from cetql.kernels.classes import complete_classes
from cetql.kernels.compare import smaller
from cetql.kernels.doubles import exact
from cetql.kernels.graph import Graph, paths
from cetql.kernels.index import MAX, MIN, SUM, Monoid
from cetql.kernels.template import GroupTemplate


class Target:
    """One aggregate over a group: `state` the variable's state (None:
    COUNT(*)), `values` the attribute per event."""

    def __init__(self, func: str, state: str | None = None, values: Sequence | None = None):
        self.func, self.state, self.values = func, state, values


class Slot(NamedTuple):
    """Where a target lives in the value vector (component 0: the count)."""

    kind: str  # "count" (COUNT(*)), "cnt" (COUNT(E)), "sum" (SUM, AVG), "ext" (MIN, MAX)
    at: int = 0  # its component
    occurrences: int = 0  # "sum": the component counting E's non-null values (AVG's denominator)


def _slots(targets: list[Target]) -> tuple[list[str], list[Slot]]:
    kinds = [SUM]  # component 0: count
    slots: list[Slot] = []
    for tg in targets:
        if tg.func == "COUNT" and tg.state is None:
            slots.append(Slot("count"))
        elif tg.func == "COUNT":
            kinds.append(SUM)
            slots.append(Slot("cnt", len(kinds) - 1))
        elif tg.func in ("SUM", "AVG"):
            kinds += [SUM, SUM]
            slots.append(Slot("sum", len(kinds) - 2, len(kinds) - 1))
        else:
            kinds.append(MIN if tg.func == "MIN" else MAX)
            slots.append(Slot("ext", len(kinds) - 1))
    return kinds, slots


def _contribute(v: list, targets, slots, e: int, s: str, approx: bool) -> None:
    """Add event e at state s to value vector v, whose component 0 is the
    number of trends (prefixes) the vector stands for."""
    c = v[0]
    for tg, slot in zip(targets, slots):
        if tg.state is None or s != tg.state or not c:
            continue
        if slot.kind == "cnt":
            v[slot.at] += c
        elif slot.kind == "sum":
            x = tg.values[e]
            if x is not None:
                v[slot.at] += (float(x) if approx else exact(x)) * c  # exact: a double as its Decimal
                v[slot.occurrences] += c
        else:
            x = tg.values[e]
            if x is not None:
                y = v[slot.at]
                if y is None or (smaller(x, y) if tg.func == "MIN" else smaller(y, x)):
                    v[slot.at] = x


def _results(final, targets, slots):
    out = []
    for tg, slot in zip(targets, slots):
        if slot.kind == "count":
            out.append(final[0])
        elif slot.kind in ("cnt", "ext"):
            out.append(final[slot.at])
        else:
            out.append(final[slot.at] if tg.func == "SUM" else (final[slot.at], final[slot.occurrences]))
    return out


def aggregate(gt: GroupTemplate, targets: list[Target], trend_set: TrendSet = TrendSet.ALL,
              complete: str = K.PER_STATE, approx: bool = False, force_scan: bool = False) -> list:  # fmt: skip
    """The aggregates of one group: one value per target (COUNT / SUM exact
    ints or Decimals unless `approx`; MIN / MAX None without trends; AVG as a
    (sum, count) pair for the caller to divide)."""
    one = 1.0 if approx else 1
    kinds, slots = _slots(targets)
    m = Monoid(kinds, 0.0 if approx else 0)
    final = list(m.zero)
    if trend_set is TrendSet.COMPLETE and complete == K.DETERMINIZED:
        return _results(_determinized(gt, targets, slots, m, approx), targets, slots)

    def on_node(node, acc, is_start):
        e, s = node
        v = list(acc)
        if is_start:
            v[0] = (v[0] or 0) + one
        _contribute(v, targets, slots, e, s, approx)
        return v

    starts = ends = None
    if trend_set is TrendSet.COMPLETE:
        from_start, to_end = gt.flags(force_scan)
        starts = lambda node: node not in from_start  # noqa: E731
        ends = lambda node: node not in to_end  # noqa: E731
    gt.propagate(m, on_node, lambda _node, v: m.add(final, v), starts=starts, ends=ends, force_scan=force_scan)
    return _results(final, targets, slots)


def _determinized(gt: GroupTemplate, targets, slots, m: Monoid, approx: bool) -> list:
    """COMPLETE aggregates where events may take several states (`classes`)."""
    final = list(m.zero)
    graph = Graph(gt)
    for accepted in complete_classes(graph, one=1.0 if approx else 1, zero=m.zero,
                                     contribute=lambda v, e, s: _contribute(v, targets, slots, e, s, approx),
                                     add=m.add):  # fmt: skip
        m.add(final, accepted)
    return final


def count(gt: GroupTemplate, trend_set: TrendSet = TrendSet.ALL, complete: str = K.PER_STATE, approx: bool = False,
          force_scan: bool = False):  # fmt: skip
    (n,) = aggregate(gt, [Target("COUNT")], trend_set, complete, approx, force_scan)
    return n


def count_trends(gt: GroupTemplate, spec: K.TemplateSpec, trend_set: TrendSet, limit: int = 0,
                 graph: Graph | None = None) -> tuple[int, bool]:  # fmt: skip
    """How many trends detection will return for one group, and whether that
    is exact (else an upper bound: MAXIMAL is bounded by COMPLETE, a pattern
    with cross predicates by its trends without them), without building
    them.  With `limit`, stop refining once the count is known to be within."""
    # runs of the pattern, cross predicates left out: at least every trend
    # (from the stored graph's edges, else from the index: a graph that stores
    # none would find every edge again)
    bound = paths(graph) if graph is not None and graph.stored else count(gt, TrendSet.ALL)
    if (limit and bound <= limit) or spec.cross:
        return bound, False
    unique = gt.unique_states()
    if trend_set is TrendSet.ALL:
        return (bound if unique else _count_classes(graph or Graph(gt), TrendSet.ALL)), True
    if unique:
        exact = count(gt, TrendSet.COMPLETE, K.PER_STATE)
    else:
        exact = _count_classes(graph or Graph(gt), TrendSet.COMPLETE)
    return exact, trend_set is TrendSet.COMPLETE


def _count_classes(g: Graph, trend_set: TrendSet) -> int:
    total = 0
    for vec in complete_classes(g, one=1, zero=[0], contribute=lambda *_: None,
                                add=lambda a, b: a.__setitem__(0, a[0] + b[0]), trend_set=trend_set):  # fmt: skip
        total += vec[0]
    return total
