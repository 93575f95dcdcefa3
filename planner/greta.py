"""Trend aggregation without trend construction (GRETA), inside one group —
pure Python, exact with Python integers (or floats when approximate).

Nodes are (event, template state) pairs.  Processing events in time order,
each node's value is the sum of its predecessors' values plus its own start
(GRETA Theorem 4.3 and 9.1):

    count  = [START] + Σ pred.count            COUNT(*) = Σ_END count
    cnt_E  = Σ pred.cnt_E + [var = E]·count    COUNT(E) = Σ_END cnt_E
    sum    = Σ pred.sum + [var = E]·attr·count SUM      = Σ_END sum
    min    = min(pred.min…, attr if var = E)   MIN      = min_END min   (MAX alike)

Predecessors come from an index per transition, the ABI attribute index:
a running total (no edge predicate, O(1)), a hash on the value (one equal
predicate, O(1)), a Fenwick tree over the sorted distinct h values (one range
predicate, O(log n)), or a scan (anything else, or a transition a negation
constrains, O(n)).  Events of equal time never chain: a time step queries
first and inserts after.

Negation (GRETA §5): a trend of the negated sub-pattern N makes the
events of the state before it invalid to connect to events of the state after
it when it lies strictly between them (`between`), forbids starting after it
(`before`), or ending before it (`after`).  N's trends are summarised by the
latest start among N-trends ending before each time, computed with the same
machinery (values are max start times).

COMPLETE trends: the same recurrence, started only at nodes without a
predecessor and summed only at nodes without a successor.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .exprs import COMPARATORS, MIRROR

_OPS, _MIRROR = COMPARATORS, MIRROR

SUM, MIN, MAX = "sum", "min", "max"


@dataclass
class Edge:
    """Predicates of one transition prev → next: next.lval OP h(prev)."""

    equal: list[tuple[Sequence, Sequence]] = field(default_factory=list)  # (lval, h) per event
    ranges: list[tuple[Sequence, str, Sequence]] = field(default_factory=list)
    others: list[Callable[[int, int], object]] = field(default_factory=list)  # f(prev event, next event)


@dataclass
class Template:
    """A (sub-)pattern for the DP.  `negatives`: (template, previous states,
    following states) of each negated sub-pattern."""

    states: dict[str, Callable[[int], bool]]  # state -> eligible(event)
    start: set[str]
    end: set[str]
    edges: dict[tuple[str, str], Edge]
    negatives: list[tuple[Template, set[str], set[str]]] = field(default_factory=list)


@dataclass
class Target:
    """One aggregate: COUNT(*) (state None), COUNT(E), SUM/MIN/MAX/AVG(E.attr)."""

    func: str
    states: set[str] | None = None  # the states of variable E
    values: Sequence | None = None  # attr per event


# ---------------------------------------------------------------- monoid vectors


class _Monoid:
    """Component-wise sums, minima and maxima of value vectors (None = empty)."""

    def __init__(self, kinds: list[str], zero_count):
        self.kinds = kinds
        self.zero = [zero_count if k == SUM else None for k in kinds]

    def add(self, acc: list, v: list) -> None:
        for i, k in enumerate(self.kinds):
            x = v[i]
            if x is None:
                continue
            y = acc[i]
            if k == SUM:
                acc[i] = x if y is None else y + x
            elif y is None or (x < y if k == MIN else x > y):
                acc[i] = x


# ---------------------------------------------------------------- indexes


class _Total:
    def __init__(self, m: _Monoid):
        self.m, self.acc = m, list(m.zero)

    def insert(self, node, v):
        self.m.add(self.acc, v)

    def query(self, node):
        return self.acc


class _Hash:
    def __init__(self, m: _Monoid, key: Sequence, probe: Sequence):
        self.m, self.key, self.probe, self.buckets = m, key, probe, {}

    def insert(self, node, v):
        k = self.key[node[0]]
        if k is None:
            return
        acc = self.buckets.get(k)
        if acc is None:
            acc = self.buckets[k] = list(self.m.zero)
        self.m.add(acc, v)

    def query(self, node):
        k = self.probe[node[0]]
        return self.buckets.get(k, self.m.zero) if k is not None else self.m.zero


class _Fenwick:
    """Σ over inserted nodes whose key k satisfies probe OP k, with the keys
    known up front (the ABI attribute vertices: distinct sorted h values)."""

    def __init__(self, m: _Monoid, key: Sequence, probe: Sequence, op: str, universe: list):
        self.m, self.key, self.probe = m, key, probe
        self.keys = sorted(set(x for x in universe if x is not None))
        # probe OP k: '>' → k < probe (prefix), '>=' → k <= probe, '<' → k > probe (suffix), '<=' → k >= probe
        self.prefix = op in (">", ">=")
        self.strict = op in (">", "<")
        self.tree = [list(m.zero) for _ in range(len(self.keys) + 1)]

    def _pos(self, k) -> int:  # 1-based position in the tree's order
        r = bisect.bisect_left(self.keys, k)
        return r + 1 if self.prefix else len(self.keys) - r

    def insert(self, node, v):
        k = self.key[node[0]]
        if k is None:
            return
        i = self._pos(k)
        while i < len(self.tree):
            self.m.add(self.tree[i], v)
            i += i & -i

    def query(self, node):
        q = self.probe[node[0]]
        if q is None:
            return self.m.zero
        if self.prefix:  # keys < q (strict) or <= q
            i = bisect.bisect_left(self.keys, q) if self.strict else bisect.bisect_right(self.keys, q)
        else:  # keys > q (strict) or >= q: count them from the top
            i = len(self.keys) - (
                bisect.bisect_right(self.keys, q) if self.strict else bisect.bisect_left(self.keys, q)
            )
        acc = list(self.m.zero)
        while i > 0:
            self.m.add(acc, self.tree[i])
            i -= i & -i
        return acc


class _Scan:
    """Every inserted node, each checked against the query: O(n) a query."""

    def __init__(self, m: _Monoid, valid: Callable[[tuple, tuple], bool]):
        self.m, self.valid, self.items = m, valid, []

    def insert(self, node, v):
        self.items.append((node, v))

    def query(self, node):
        acc = list(self.m.zero)
        for other, v in self.items:
            if self.valid(other, node):
                self.m.add(acc, v)
        return acc


def _edge_holds(edge: Edge, prev: int, nxt: int) -> bool:
    for lv, h in edge.equal:
        a, b = lv[nxt], h[prev]
        if a is None or b is None or a != b:
            return False
    for lv, op, h in edge.ranges:
        a, b = lv[nxt], h[prev]
        if a is None or b is None or not _OPS[op](a, b):
            return False
    return all(f(prev, nxt) is True for f in edge.others)


def _index(m: _Monoid, edge: Edge, reverse: bool, extra_valid, universe_prev, universe_next):
    """The cheapest index for a transition; `reverse` indexes the later event
    (for out-degrees); `extra_valid(prev_node, next_node)` (negation) forces a scan."""
    simple = extra_valid is None and not edge.others and len(edge.equal) + len(edge.ranges) <= 1
    if simple and not edge.equal and not edge.ranges:
        return _Total(m)
    if simple and edge.equal:
        ((lv, h),) = edge.equal
        return _Hash(m, lv, h) if reverse else _Hash(m, h, lv)
    if simple and edge.ranges:
        ((lv, op, h),) = edge.ranges
        if reverse:  # inserted: later events keyed by lval; probe: h(prev); lval OP h ⇔ h MIRROR(OP) lval
            return _Fenwick(m, lv, h, _MIRROR[op], universe_next)
        return _Fenwick(m, h, lv, op, universe_prev)

    def valid(inserted, probe):
        prev, nxt = (probe, inserted) if reverse else (inserted, probe)
        if not _edge_holds(edge, prev[0], nxt[0]):
            return False
        return extra_valid is None or extra_valid(prev, nxt)

    return _Scan(m, valid)


# ---------------------------------------------------------------- negation summaries


class _NegationSummary:
    """Trends of a negated sub-pattern in one group, summarised for its
    parent: latest start among trends ending before t, and whether any trend
    starts after t / ends before t."""

    def __init__(self, template: Template, times: Sequence):
        starts, ends = _trend_spans(template, times)
        order = sorted(range(len(ends)), key=lambda k: ends[k])
        self.ends = [ends[k] for k in order]
        best, self.prefix_max_start = None, []
        for k in order:
            best = starts[k] if best is None or starts[k] > best else best
            self.prefix_max_start.append(best)
        self.max_start = max(starts) if starts else None
        self.min_end = min(ends) if ends else None

    def latest_start_before(self, t):
        """max start over trends with end < t (None if none)."""
        i = bisect.bisect_left(self.ends, t)
        return self.prefix_max_start[i - 1] if i else None


def _trend_spans(t: Template, times: Sequence) -> tuple[list, list]:
    """(latest start, end time) for each END node of N that ends some trend:
    the DP with values = latest start time, which is all a parent needs."""
    m = _Monoid([MAX], None)
    ends_start, ends_time = [], []

    def on_node(node, acc, is_start):
        start = acc[0]
        if is_start:
            start = times[node[0]] if start is None or times[node[0]] > start else start
        return [start]

    def on_end(node, v):
        if v[0] is not None:
            ends_start.append(v[0])
            ends_time.append(times[node[0]])

    _propagate(t, times, m, on_node, on_end, complete=False)
    return ends_start, ends_time


# ---------------------------------------------------------------- the DP


def _nodes_by_time(t: Template, times: Sequence) -> list[list[tuple[int, str]]]:
    n = len(times)
    steps: list[list[tuple[int, str]]] = []
    last = object()
    for e in range(n):
        here = [(e, s) for s, ok in t.states.items() if ok(e)]
        if not here:
            continue
        if times[e] != last:
            steps.append([])
            last = times[e]
        steps[-1].extend(here)
    return steps


def _negation_rules(t: Template, times: Sequence):
    """Per negation: (summary, previous states, following states)."""
    return [(_NegationSummary(sub, times), prev, follow) for sub, prev, follow in t.negatives]


def _between_check(rules, p: str, q: str, times: Sequence):
    """For a transition p → q with negations between them: prev may precede
    next only if no trend of N lies strictly between (None: no negation)."""
    between = [r for r in rules if p in r[1] and q in r[2]]
    if not between:
        return None

    def check(prev, nxt):
        for summary, _, _ in between:
            latest = summary.latest_start_before(times[nxt[0]])
            if latest is not None and times[prev[0]] < latest:
                return False
        return True

    return check


def _propagate(t: Template, times: Sequence, m: _Monoid, on_node, on_end, complete: bool,
               degrees: tuple[dict, dict] | None = None) -> None:  # fmt: skip
    """Forward pass: for each node, acc = Σ valid predecessors; `on_node(node,
    acc, is_start)` returns its value; `on_end(node, value)` is called for END
    nodes (that may end a trend)."""
    rules = _negation_rules(t, times)
    indexes: dict[tuple[str, str], object] = {}
    all_events = range(len(times))
    for (p, q), edge in t.edges.items():
        extra = _between_check(rules, p, q, times)

        universe = [h[e] for _, _, h in edge.ranges for e in all_events] if edge.ranges else []
        indexes[(p, q)] = _index(m, edge, False, extra, universe, universe)
    before = [(s, follow) for s, prev, follow in rules if not prev]
    after = [(s, prev) for s, prev, follow in rules if not follow]
    incoming: dict[str, list[tuple[str, str]]] = {}
    for p, q in t.edges:
        incoming.setdefault(q, []).append((p, q))
    has_pred, has_succ = degrees if degrees else ({}, {})

    for step in _nodes_by_time(t, times):
        values = []
        for node in step:
            e, s = node
            acc = list(m.zero)
            for key in incoming.get(s, ()):
                m.add(acc, indexes[key].query(node))
            is_start = s in t.start and all(
                summary.min_end is None or not summary.min_end < times[e] for summary, follow in before if s in follow
            )
            if complete and has_pred.get(node):
                is_start = False
            v = on_node(node, acc, is_start)
            values.append(v)
            if s in t.end and all(
                summary.max_start is None or not summary.max_start > times[e] for summary, prev in after if s in prev
            ):
                if not (complete and has_succ.get(node)):
                    on_end(node, v)
        for node, v in zip(step, values):
            for (p, _q), idx in indexes.items():
                if p == node[1]:
                    idx.insert(node, v)


def _degrees(t: Template, times: Sequence) -> tuple[dict, dict]:
    """Which nodes have a predecessor / a successor (for COMPLETE)."""
    m = _Monoid([SUM], 0)
    has_pred: dict = {}
    _propagate(
        t, times, m, lambda node, acc, is_start: (has_pred.__setitem__(node, acc[0] > 0) or [1]), lambda *_: None,
        complete=False,
    )  # fmt: skip
    # successors: the mirror pass over reversed time, with each edge reversed
    rules = _negation_rules(t, times)
    has_succ: dict = {}
    indexes = {}
    for (p, q), edge in t.edges.items():
        extra = _between_check(rules, p, q, times)

        universe = [lv[e] for lv, _, _ in edge.ranges for e in range(len(times))] if edge.ranges else []
        indexes[(p, q)] = _index(m, edge, True, extra, universe, universe)
    outgoing: dict[str, list[tuple[str, str]]] = {}
    for p, q in t.edges:
        outgoing.setdefault(p, []).append((p, q))
    for step in reversed(_nodes_by_time(t, times)):
        for node in step:
            acc = [0]
            for key in outgoing.get(node[1], ()):
                m.add(acc, indexes[key].query(node))
            has_succ[node] = acc[0] > 0
        for node in step:
            for (_p, q), idx in indexes.items():
                if q == node[1]:
                    idx.insert(node, [1])
    return has_pred, has_succ


def aggregate(t: Template, times: Sequence, targets: list[Target], complete: bool = False, approx: bool = False):
    """The aggregates of one group: a list of values, one per target (COUNT /
    SUM exact ints or Decimals unless `approx`; MIN / MAX None without trends;
    AVG as (sum, count) pair for the caller to divide)."""
    one = 1.0 if approx else 1
    kinds = [SUM]  # component 0: count
    slots: list[tuple] = []
    for tg in targets:
        if tg.func == "COUNT" and tg.states is None:
            slots.append(("count",))
        elif tg.func == "COUNT":
            kinds.append(SUM)
            slots.append(("cnt", len(kinds) - 1))
        elif tg.func in ("SUM", "AVG"):
            kinds += [SUM, SUM]
            slots.append(("sum", len(kinds) - 2, len(kinds) - 1))
        else:
            kinds.append(MIN if tg.func == "MIN" else MAX)
            slots.append(("ext", len(kinds) - 1))
    m = _Monoid(kinds, 0.0 if approx else 0)
    degrees = _degrees(t, times) if complete else None
    final = list(m.zero)

    def on_node(node, acc, is_start):
        e, s = node
        v = list(acc)
        if is_start:
            v[0] = (v[0] or 0) + one
        c = v[0]
        for tg, slot in zip(targets, slots):
            if tg.states is None or s not in tg.states or not c:
                continue
            if slot[0] == "cnt":
                v[slot[1]] += c
            elif slot[0] == "sum":
                x = tg.values[e]
                v[slot[2]] += c  # occurrences of E (AVG's denominator counts non-null values only)
                if x is not None:
                    v[slot[1]] += (float(x) if approx else x) * c
                else:
                    v[slot[2]] -= c
            else:
                x = tg.values[e]
                if x is not None:
                    y = v[slot[1]]
                    if y is None or (x < y if tg.func == "MIN" else x > y):
                        v[slot[1]] = x
        return v

    _propagate(t, times, m, on_node, lambda node, v: m.add(final, v), complete, degrees)
    out = []
    for tg, slot in zip(targets, slots):
        if slot[0] == "count":
            out.append(final[0])
        elif slot[0] == "cnt":
            out.append(final[slot[1]])
        elif slot[0] == "sum":
            out.append(final[slot[1]] if tg.func == "SUM" else (final[slot[1]], final[slot[2]]))
        else:
            out.append(final[slot[1]])
    return out


# ---------------------------------------------------------------- COUNT(*) of E+, scalar


def kleene_count(times: Sequence, edge: Edge, approx: bool = False, kernel: str = "index"):
    """COUNT(*) of all trends of `E+` with at most one equal or range
    predicate: the recurrence above with plain numbers instead of vectors.

    kernel "index": the ABI index (hash / Fenwick over distinct h values),
    O(n log n); kernel "scan": GRETA's own predecessor scan, vectorised with
    numpy, O(n²) — kept for comparison (bench/aggregate.py)."""
    zero = 0.0 if approx else 0
    one = 1.0 if approx else 1
    n = len(times)
    if kernel == "scan":
        return _scan_count(times, edge, approx)
    total = zero
    if edge.equal:
        ((lval, h),) = edge.equal
        sums: dict = {}
        i = 0
        while i < n:
            j = i
            while j < n and times[j] == times[i]:
                j += 1
            counts = [one + (sums.get(lval[e], zero) if lval[e] is not None else zero) for e in range(i, j)]
            for e, c in zip(range(i, j), counts):
                if h[e] is not None:
                    sums[h[e]] = sums.get(h[e], zero) + c
                total += c
            i = j
        return total
    if not edge.ranges:
        running = zero
        i = 0
        while i < n:
            j = i
            while j < n and times[j] == times[i]:
                j += 1
            c = one + running
            running += c * (j - i)
            total += c * (j - i)
            i = j
        return total
    ((lval, op, h),) = edge.ranges
    keys = sorted({x for x in h if x is not None})
    size = len(keys)
    tree = [zero] * (size + 1)
    prefix = op in (">", ">=")
    strict = op in (">", "<")
    left, right = bisect.bisect_left, bisect.bisect_right
    i = 0
    while i < n:
        j = i
        while j < n and times[j] == times[i]:
            j += 1
        counts = []
        for e in range(i, j):
            q = lval[e]
            acc = one
            if q is not None:
                if prefix:
                    k = left(keys, q) if strict else right(keys, q)
                else:
                    k = size - (right(keys, q) if strict else left(keys, q))
                while k > 0:
                    acc += tree[k]
                    k -= k & -k
            counts.append(acc)
        for e, c in zip(range(i, j), counts):
            total += c
            x = h[e]
            if x is None:
                continue
            r = left(keys, x)
            k = r + 1 if prefix else size - r
            while k <= size:
                tree[k] += c
                k += k & -k
        i = j
    return total


def _scan_count(times, edge: Edge, approx: bool):
    import numpy as np

    n = len(times)
    if edge.equal:
        ((lval, h),) = edge.equal
        op = "="
    elif edge.ranges:
        ((lval, op, h),) = edge.ranges
    else:
        lval = h = [0] * n
        op = "="
    dtype = np.float64 if approx else object
    t = np.asarray(times, dtype=np.float64)
    present = np.asarray([x is not None for x in h], dtype=bool)
    numeric = all(isinstance(x, (int, float)) for x in h if x is not None)
    hv = np.asarray([0 if x is None else x for x in h], dtype=np.float64 if numeric else object)
    counts = np.zeros(n, dtype=dtype)
    cmp = _OPS[op]
    for j in range(n):
        q = lval[j]
        if q is None:
            mask = np.zeros(j, dtype=bool)
        else:
            mask = (t[:j] < t[j]) & present[:j] & np.asarray(cmp(q, hv[:j]), dtype=bool)
        counts[j] = (1.0 if approx else 1) + counts[:j][mask].sum()
    return counts.sum() if n else (0.0 if approx else 0)
