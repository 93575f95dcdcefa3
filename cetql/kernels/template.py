"""A template spec bound to one group's events, shared by detection
(`graph`) and aggregation (`greta`).

Events are `0..n-1` in time order (equal times are never adjacent in a
trend).  A *node* is (event, state) where the state's mask holds.  This
module knows which nodes exist, whether a step between two nodes holds
(every predicate of the transition, and no negated trend strictly between),
which nodes may start and end a trend (negations before and after), and
runs GRETA's forward propagation over the nodes with the ABI index.

Negation (GRETA §5): a trend of the negated sub-pattern N strictly between
the two events of a step it sits between forbids that step; anchored to the
window's start, it forbids starting after N's earliest end; anchored to its
end, ending before N's latest start.  N's trends are summarised by the same
propagation (values: latest start times).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from cetql.kernels import spec as K
from cetql.kernels.compare import MIRROR
from cetql.kernels.expr import Row, compile_expr
from cetql.kernels.index import MAX, AttributeIndex, Monoid, sums


class Step:
    """One transition's predicates over a group's columns: the equal and
    range predicates as attribute indexes (`indexes`; `keyed` is the one the
    plan finds successors by, None for a scan), the others as functions of
    two events, and the negations that may lie between."""

    __slots__ = ("source", "target", "indexes", "keyed", "checks", "others", "between", "times")

    def __init__(self, tr: K.Transition, cols: dict, between: list, times: Sequence):
        self.source, self.target = tr.source, tr.target
        equal = [AttributeIndex(cols[lc], "=", cols[hc]) for lc, hc in tr.equal]
        ranges = [AttributeIndex(cols[lc], op, cols[hc]) for lc, op, hc in tr.ranges]
        self.indexes = equal + ranges
        if tr.index == K.HASH and equal:
            self.keyed = equal[0]
        elif tr.index == K.RANGE and ranges:
            self.keyed = ranges[0]
        else:
            self.keyed = None
        self.checks = [i for i in self.indexes if i is not self.keyed]  # what the index leaves to check
        fs = [compile_expr(e) for e in tr.others]
        self.others = [lambda i, j, f=f: f({"prev": Row(cols, i), "next": Row(cols, j)}) for f in fs]
        self.between = between  # summaries of negations between source and target
        self.times = times

    def holds(self, e: int, f: int, indexed: bool = False) -> bool:
        """Every predicate holds from event e to the later event f
        (`indexed`: the pair came from the `keyed` index, which holds)."""
        for idx in self.checks if indexed else self.indexes:
            if not idx.holds(e, f):
                return False
        for g in self.others:
            if g(e, f) is not True:
                return False
        if self.between:
            tf, te = self.times[f], self.times[e]
            for summary in self.between:
                latest = summary.latest_start_before(tf)
                if latest is not None and te < latest:
                    return False
        return True

    @property
    def exact(self) -> bool:
        """Is a pair the keyed index finds (every later pair, without one) a step?"""
        return not self.checks and not self.others and not self.between

    @property
    def simple(self) -> bool:
        return not self.others and not self.between and len(self.indexes) <= 1


class Summary:
    """Trends of a negated sub-pattern in one group: the latest start among
    trends ending before t; the earliest end; the latest start."""

    def __init__(self, spans: list[tuple]):
        spans = sorted(spans, key=lambda s: s[1])
        self.ends = [end for _, end in spans]
        best, self.prefix_max_start = None, []
        for start, _ in spans:
            best = start if best is None or start > best else best
            self.prefix_max_start.append(best)
        self.max_start = max((s for s, _ in spans), default=None)
        self.min_end = min(self.ends, default=None)

    def latest_start_before(self, t):
        i = bisect.bisect_left(self.ends, t)
        return self.prefix_max_start[i - 1] if i else None


class GroupTemplate:
    def __init__(self, spec: K.TemplateSpec, times: Sequence, cols: dict):
        self.spec = spec
        self.times = times
        self.cols = cols
        self.n = len(times)
        self.names = [s.name for s in spec.states]
        self.masks = {s.name: cols[s.mask] for s in spec.states}
        self.start = spec.start
        self.end = spec.end
        self.summaries = [(Summary(spans(GroupTemplate(neg.template, times, cols))), neg) for neg in spec.negations]
        self.before = [(s, neg.starts) for s, neg in self.summaries if neg.starts]
        self.after = [(s, neg.ends) for s, neg in self.summaries if neg.ends]
        self.steps = []
        for tr in spec.transitions:
            between = [s for s, neg in self.summaries if (tr.source, tr.target) in neg.pairs]
            self.steps.append(Step(tr, cols, between, times))

    def unique_states(self) -> bool:
        """Can every event take at most one state?"""
        if len(self.names) == 1:
            return True
        masks = list(self.masks.values())
        return all(sum(1 for m in masks if m[e] is True) <= 1 for e in range(self.n))

    def start_ok(self, e: int, q: str) -> bool:
        """Node (e, q) may begin a trend."""
        if q not in self.start or self.masks[q][e] is not True:
            return False
        t = self.times[e]
        return all(s.min_end is None or not s.min_end < t for s, follow in self.before if q in follow)

    def end_ok(self, e: int, q: str) -> bool:
        """Node (e, q) may end a trend."""
        if q not in self.end or self.masks[q][e] is not True:
            return False
        t = self.times[e]
        return all(s.max_start is None or not s.max_start > t for s, prev in self.after if q in prev)

    def nodes_by_time(self) -> list[list[tuple[int, str]]]:
        """Nodes grouped by time step (nodes of one step never chain)."""
        steps: list[list[tuple[int, str]]] = []
        last = object()
        for e in range(self.n):
            here = [(e, s) for s in self.names if self.masks[s][e] is True]
            if not here:
                continue
            if self.times[e] != last:
                steps.append([])
                last = self.times[e]
            steps[-1].extend(here)
        return steps

    # ------------------------------------------------------------ the propagation

    def index(self, m: Monoid, step: Step, reverse: bool = False, force_scan: bool = False):
        """The cheapest structure for summing over the predecessors along one
        transition (reverse: the successors): a running total without
        predicates, the step's attribute index (ABI), else a scan."""
        if not force_scan and step.simple:
            if not step.indexes:
                return _Total(m)
            if step.keyed is not None:
                return _Indexed(m, step.keyed, reverse)
        return _Scan(m, step, reverse)

    def propagate(self, m: Monoid, on_node: Callable, on_end: Callable | None, *, starts: Callable | None = None,
                  ends: Callable | None = None, force_scan: bool = False) -> None:  # fmt: skip
        """GRETA's forward pass: for each node, acc = Σ over valid
        predecessors; `on_node(node, acc, is_start)` returns the node's value;
        `on_end(node, value)` is called for nodes that may end a trend.
        `starts(node)` / `ends(node)` narrow which nodes start / end (COMPLETE)."""
        indexes = [(st, self.index(m, st, force_scan=force_scan)) for st in self.steps]
        incoming: dict[str, list] = {}
        outgoing: dict[str, list] = {}
        for st, idx in indexes:
            incoming.setdefault(st.target, []).append(idx)
            outgoing.setdefault(st.source, []).append(idx)
        for group in self.nodes_by_time():
            values = []
            for node in group:
                e, s = node
                acc = list(m.zero)
                for idx in incoming.get(s, ()):
                    m.add(acc, idx.query(node))
                is_start = self.start_ok(e, s) and (starts is None or starts(node))
                v = on_node(node, acc, is_start)
                values.append(v)
                if on_end is not None and self.end_ok(e, s) and (ends is None or ends(node)):
                    on_end(node, v)
            for node, v in zip(group, values):
                for idx in outgoing.get(node[1], ()):
                    idx.insert(node, v)

    def flags(self, force_scan: bool = False) -> tuple[set, set]:
        """(nodes with a predecessor that may start a trend, nodes with a
        successor that may end one) — who can be prepended to / appended to."""
        m = Monoid(["sum"], 0)
        from_start: set = set()

        def mark(node, acc, is_start):
            if acc[0]:
                from_start.add(node)
            return [1 if is_start else 0]

        self.propagate(m, mark, None, force_scan=force_scan)
        # the mirror pass: over reversed time, each step reversed, only end nodes inserted
        to_end: set = set()
        indexes = [(st, self.index(m, st, reverse=True, force_scan=force_scan)) for st in self.steps]
        for group in reversed(self.nodes_by_time()):
            for node in group:
                acc = [0]
                for st, idx in indexes:
                    if st.source == node[1]:
                        m.add(acc, idx.query(node))
                if acc[0]:
                    to_end.add(node)
            for node in group:
                if self.end_ok(*node):
                    for st, idx in indexes:
                        if st.target == node[1]:
                            idx.insert(node, [1])
        return from_start, to_end


def spans(t: GroupTemplate) -> list[tuple]:
    """(latest start, end time) for each end node of a negated sub-pattern's
    trends: the propagation with values = latest start time."""
    m = Monoid([MAX], None)
    out = []

    def on_node(node, acc, is_start):
        start = acc[0]
        if is_start:
            te = t.times[node[0]]
            start = te if start is None or te > start else start
        return [start]

    def on_end(node, v):
        if v[0] is not None:
            out.append((v[0], t.times[node[0]]))

    t.propagate(m, on_node, on_end)
    return out


# ---------------------------------------------------------------- predecessor sums (nodes are (event, state))


class _Total:
    def __init__(self, m: Monoid):
        self.m, self.acc = m, list(m.zero)

    def insert(self, _node, v):
        self.m.add(self.acc, v)

    def query(self, _node):
        return self.acc


class _Indexed:
    """Sums over one attribute index: nodes inserted at the rank of their
    h (reverse: lval), queried over the span of a node's lval (h)."""

    def __init__(self, m: Monoid, idx: AttributeIndex, reverse: bool):
        if reverse:  # inserted: later events by lval; a probe e takes lval OP h[e]
            self.at, self.probe, op = idx.lval, idx.h, idx.op
        else:  # inserted: earlier events by h; a probe f takes h MIRROR(OP) lval[f]
            self.at, self.probe, op = idx.h, idx.lval, MIRROR[idx.op]
        self.sums = sums(idx.size, op, m.zero, m.add)

    def insert(self, node, v):
        self.sums.insert(self.at[node[0]], v)

    def query(self, node):
        return self.sums.query(self.probe[node[0]])


class _Scan:
    """Every inserted node, each checked against the query: O(n) a query."""

    def __init__(self, m: Monoid, step: Step, reverse: bool):
        self.m, self.step, self.reverse, self.items = m, step, reverse, []

    def insert(self, node, v):
        self.items.append((node[0], v))

    def query(self, node):
        acc = list(self.m.zero)
        f, holds = node[0], self.step.holds
        for e, v in self.items:
            if holds(f, e) if self.reverse else holds(e, f):
                self.m.add(acc, v)
        return acc
