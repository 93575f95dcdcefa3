"""Aggregation over sets of runs: COMPLETE (or ALL) trends counted without
building them, where an event can take several states (`SEQ(A a, A+ b[])`
on one stream) and no cross predicates.

Prefixes that end at the same event with the same set of runs (`runs`:
START runs from a start node, POISON runs from an event that an earlier
start node leads into) have the same future, so they are one *class*: per
event, each class keeps how many prefixes it stands for and, per START run's
state, the aggregate vector along it.  A class is accepted as `walks.accepts`
says, exactly as detection decides for each of its prefixes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from cetql.base.options import TrendSet
from cetql.kernels.graph import Graph, facts
from cetql.kernels.runs import POISON, START
from cetql.kernels.walks import accepts


def complete_classes(g: Graph, *, one, zero, contribute: Callable, add: Callable,
                     trend_set: TrendSet = TrendSet.COMPLETE) -> Iterator[list]:  # fmt: skip
    """Yields the vector of every accepted class — summed, these are the
    aggregates over the trends of `trend_set` (ALL or COMPLETE).
    `contribute(vector, event, state name)` adds one event to a vector
    whose component 0 is its count; `add(a, b)` adds b into a."""
    n = len(g)
    found = facts(g)
    alive = [x < n for x in found.need]
    poisons = not accepts(trend_set, ends=True, vetoed=True)
    poisoned = [x >= 0 and poisons for x in found.last_start]
    classes: list[dict | None] = [{} for _ in range(g.gt.n)]  # event -> {runs: (count, {state: vector})}
    for e in range(g.gt.n):
        runs, vectors = [], {}
        for qi, v in enumerate(g.nodes.of_event(e)):
            if not g.node[v] or not alive[v]:
                continue
            if g.start[v]:
                runs.append((START, qi))
                vec = list(zero)
                vec[0] = one
                contribute(vec, e, g.names[qi])
                vectors[qi] = vec
            if poisoned[v]:
                runs.append((POISON, qi))
        if vectors:
            _merge(classes[e], frozenset(runs), one, vectors, add)
        for R, (count, vecs) in classes[e].items():
            if _accepted(g, trend_set, R, e):
                for qi, vec in vecs.items():
                    if g.end[g.nodes.id(e, qi)]:
                        yield vec
                        break
            for f, (runs2, vecs2) in _step(g, alive, R, e, vecs, contribute).items():
                goods = {qi for kind, qi in runs2 if kind == START}
                if goods and not goods <= {qi for kind, qi in runs2 if kind == POISON}:
                    _merge(classes[f], frozenset(runs2), count, vecs2, add)
        classes[e] = None  # done with this event


def _step(g: Graph, alive: list, R, e: int, vecs: dict, contribute) -> dict[int, tuple[set, dict]]:
    """The runs and vectors at each event that follows event e's class R."""
    nexts: dict[int, tuple[set, dict]] = {}
    for kind, qi in R:
        for w in g.succ[g.nodes.id(e, qi)]:
            if not alive[w]:
                continue
            f, qj = g.nodes.split(w)
            runs2, vecs2 = nexts.setdefault(f, (set(), {}))
            runs2.add((kind, qj))
            if kind == START and qi in vecs and qj not in vecs2:
                vec = list(vecs[qi])
                contribute(vec, f, g.names[qj])
                vecs2[qj] = vec
    return nexts


def _merge(target: dict, R, count, vectors: dict, add) -> None:
    found = target.get(R)
    if found is None:
        target[R] = (count, {qi: list(v) for qi, v in vectors.items()})
        return
    c0, vecs = found
    for qi, v in vectors.items():
        if qi in vecs:
            add(vecs[qi], v)
        else:
            vecs[qi] = list(v)
    target[R] = (c0 + count, vecs)


def _accepted(g: Graph, trend_set: TrendSet, R, e: int) -> bool:
    ends = vetoed = False
    for kind, qi in R:
        if g.end[g.nodes.id(e, qi)]:
            if kind == START:
                ends = True
            else:
                vetoed = True
    if not accepts(trend_set, ends=ends, vetoed=vetoed):
        return False
    if accepts(trend_set, ends=True, appendable=True):  # appending does not matter (ALL)
        return True
    appendable = any(g.end[w] for kind, qi in R if kind == START for w in g.succ[g.nodes.id(e, qi)])
    return accepts(trend_set, ends=True, appendable=appendable)
