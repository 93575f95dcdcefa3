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
from decimal import Decimal

from . import spec as K
from .expr import MIRROR, Row, compile_expr
from .index import MAX, Fenwick, Hash, Monoid, Scan, Total, matches


def _first(values: Sequence):
    return next((v for v in values if v is not None), None)


def _comparable(lv: Sequence, h: Sequence) -> tuple[Sequence, Sequence]:
    """A DECIMAL column against a DOUBLE one, both as doubles, as Spark
    compares them (and `expr.compare` does); so the index (hash, sorted
    lists) and a check pair by pair agree.  A column holds one type."""
    a, b = _first(lv), _first(h)
    if isinstance(a, Decimal) and isinstance(b, float):
        return [None if v is None else float(v) for v in lv], h
    if isinstance(b, Decimal) and isinstance(a, float):
        return lv, [None if v is None else float(v) for v in h]
    return lv, h


class Step:
    """One transition's predicates over a group's columns."""

    __slots__ = ("source", "target", "equal", "ranges", "others", "index", "between", "times")

    def __init__(self, tr: K.Transition, cols: dict, between: list, times: Sequence):
        self.source, self.target, self.index = tr.source, tr.target, tr.index
        self.equal = [_comparable(cols[lc], cols[hc]) for lc, hc in tr.equal]
        self.ranges = [(lv, op, h) for (lc, op, hc) in tr.ranges for lv, h in [_comparable(cols[lc], cols[hc])]]
        fs = [compile_expr(e) for e in tr.others]
        self.others = [lambda i, j, f=f: f({"prev": Row(cols, i), "next": Row(cols, j)}) for f in fs]
        self.between = between  # summaries of negations between source and target
        self.times = times

    def holds(self, e: int, f: int, skip: int | None = None) -> bool:
        """Every predicate holds from event e to the later event f (`skip`:
        the index predicate, already known to hold: ("equal"|"range", 0))."""
        for k, (lv, h) in enumerate(self.equal):
            if skip == ("equal", k):
                continue
            a, b = lv[f], h[e]
            if a is None or b is None or not matches("=", a, b):
                return False
        for k, (lv, op, h) in enumerate(self.ranges):
            if skip == ("range", k):
                continue
            if not matches(op, lv[f], h[e]):
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
    def simple(self) -> bool:
        return not self.others and not self.between and len(self.equal) + len(self.ranges) <= 1


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

    def eligible(self, e: int, q: str) -> bool:
        return self.masks[q][e] is True

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
        transition (reverse: the successors)."""
        use_index = not force_scan and step.simple and (step.index != K.SCAN or not (step.equal or step.ranges))
        if use_index:
            if not step.equal and not step.ranges:
                return Total(m)
            if step.equal:
                ((lv, h),) = step.equal
                return Hash(m, lv, h) if reverse else Hash(m, h, lv)
            ((lv, op, h),) = step.ranges
            if reverse:  # inserted: later events keyed by lval; probe: h(prev); lval OP h ⇔ h MIRROR(OP) lval
                return Fenwick(m, lv, h, MIRROR[op], lv)
            return Fenwick(m, h, lv, op, h)

        def valid(inserted, probe):
            prev, nxt = (probe, inserted) if reverse else (inserted, probe)
            return step.holds(prev[0], nxt[0])

        return Scan(m, valid)

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
