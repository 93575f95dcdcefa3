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
  stream): the sets of runs of each event sequence are followed (see
  `complete_classes`), exactly as detection decides completeness.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import spec as K
from .expr import COMPARATORS
from .graph import Graph, complete_classes
from .index import MAX, MIN, SUM, Monoid
from .template import GroupTemplate


class Target:
    """One aggregate over a group: `states` the variable's state (None:
    COUNT(*)), `values` the attribute per event."""

    def __init__(self, func: str, state: str | None = None, values: Sequence | None = None):
        self.func, self.state, self.values = func, state, values


def _slots(targets: list[Target]) -> tuple[list[str], list[tuple]]:
    kinds = [SUM]  # component 0: count
    slots: list[tuple] = []
    for tg in targets:
        if tg.func == "COUNT" and tg.state is None:
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
    return kinds, slots


def _contribute(v: list, targets, slots, e: int, s: str, approx: bool) -> None:
    """Add event e at state s to value vector v, whose component 0 is the
    number of trends (prefixes) the vector stands for."""
    c = v[0]
    for tg, slot in zip(targets, slots):
        if tg.state is None or s != tg.state or not c:
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


def _results(final, targets, slots):
    out = []
    for tg, slot in zip(targets, slots):
        if slot[0] == "count":
            out.append(final[0])
        elif slot[0] in ("cnt", "ext"):
            out.append(final[slot[1]])
        else:
            out.append(final[slot[1]] if tg.func == "SUM" else (final[slot[1]], final[slot[2]]))
    return out


def aggregate(gt: GroupTemplate, targets: list[Target], trend_set: str = "ALL",
              complete: str = K.PER_STATE, approx: bool = False, force_scan: bool = False) -> list:  # fmt: skip
    """The aggregates of one group: one value per target (COUNT / SUM exact
    ints or Decimals unless `approx`; MIN / MAX None without trends; AVG as a
    (sum, count) pair for the caller to divide)."""
    one = 1.0 if approx else 1
    kinds, slots = _slots(targets)
    m = Monoid(kinds, 0.0 if approx else 0)
    final = list(m.zero)
    if str(trend_set) == "COMPLETE" and complete == K.DETERMINIZED:
        return _results(_determinized(gt, targets, slots, m, approx), targets, slots)

    def on_node(node, acc, is_start):
        e, s = node
        v = list(acc)
        if is_start:
            v[0] = (v[0] or 0) + one
        _contribute(v, targets, slots, e, s, approx)
        return v

    starts = ends = None
    if str(trend_set) == "COMPLETE":
        from_start, to_end = gt.flags(force_scan)
        starts = lambda node: node not in from_start  # noqa: E731
        ends = lambda node: node not in to_end  # noqa: E731
    gt.propagate(m, on_node, lambda node, v: m.add(final, v), starts=starts, ends=ends, force_scan=force_scan)
    return _results(final, targets, slots)


def _determinized(gt: GroupTemplate, targets, slots, m: Monoid, approx: bool) -> list:
    """COMPLETE aggregates where events may take several states: per event,
    the classes of prefixes (their sets of runs) with counts and, per run
    from a start, the aggregate vector along it."""
    final = list(m.zero)
    graph = Graph(gt)
    for accepted in complete_classes(graph, one=1.0 if approx else 1, zero=m.zero,
                                     contribute=lambda v, e, s: _contribute(v, targets, slots, e, s, approx),
                                     add=m.add):  # fmt: skip
        m.add(final, accepted)
    return final


# ---------------------------------------------------------------- counting


def count(gt: GroupTemplate, trend_set: str = "ALL", complete: str = K.PER_STATE, approx: bool = False,
          force_scan: bool = False):  # fmt: skip
    (n,) = aggregate(gt, [Target("COUNT")], trend_set, complete, approx, force_scan)
    return n


# ---------------------------------------------------------------- COUNT(*) of E+, scalar


def _tie_runs(times: Sequence):
    """(i, j) of each run of equal times: events of one run never precede
    each other, so a run's counts are all taken before any is added."""
    n, i = len(times), 0
    while i < n:
        j = i
        while j < n and times[j] == times[i]:
            j += 1
        yield i, j
        i = j


def _range_positions(lval: Sequence, h: Sequence, op: str) -> tuple[int, list[int], list[int | None]]:
    """Fenwick positions for a range predicate `next.lval OP h(prev)` over the
    distinct (non-null, non-NaN) h values: (size, where each event's prefix
    sum starts (0: none), where each event is added (None: nowhere))."""
    import bisect

    keys = sorted({x for x in h if x is not None and x == x})
    size = len(keys)
    left, right = bisect.bisect_left, bisect.bisect_right
    strict = op in (">", "<")
    if op in (">", ">="):  # predecessors with smaller h: a prefix
        side = left if strict else right
        starts = [side(keys, q) if q is not None and q == q else 0 for q in lval]
        adds = [left(keys, x) + 1 if x is not None and x == x else None for x in h]
    else:  # larger h: a prefix of the reversed order
        side = right if strict else left
        starts = [size - side(keys, q) if q is not None and q == q else 0 for q in lval]
        adds = [size - left(keys, x) if x is not None and x == x else None for x in h]
    return size, starts, adds


def kleene_count(times: Sequence, step, approx: bool = False, scan: bool = False):
    """COUNT(*) of all trends of `E+` whose one step has at most one equal or
    range predicate: the propagation with plain numbers instead of vectors.

    scan=False: the ABI index (hash / Fenwick over distinct h values),
    O(n log n); scan=True: GRETA's own predecessor scan, vectorised with
    numpy, O(n²) — kept for comparison (bench/aggregate.py)."""
    zero = 0.0 if approx else 0
    one = 1.0 if approx else 1
    if scan:
        return _scan_count(times, step, approx)
    total = zero
    if step.equal:
        ((lval, h),) = step.equal
        sums: dict = {}
        for i, j in _tie_runs(times):
            counts = [one + (sums.get(lval[e], zero) if lval[e] is not None else zero) for e in range(i, j)]
            for e, c in zip(range(i, j), counts):
                if h[e] is not None:
                    sums[h[e]] = sums.get(h[e], zero) + c
                total += c
        return total
    if not step.ranges:
        running = zero
        for i, j in _tie_runs(times):
            c = one + running
            running += c * (j - i)
            total += c * (j - i)
        return total
    ((lval, op, h),) = step.ranges
    size, starts, adds = _range_positions(lval, h, op)
    tree = [zero] * (size + 1)
    for i, j in _tie_runs(times):
        counts = []
        for e in range(i, j):
            acc = one
            k = starts[e]
            while k > 0:
                acc += tree[k]
                k -= k & -k
            counts.append(acc)
        for e, c in zip(range(i, j), counts):
            total += c
            k = adds[e]
            if k is None:
                continue
            while k <= size:
                tree[k] += c
                k += k & -k
    return total


def kleene_count_windows(times: Sequence, step, first: Sequence[int], last: Sequence[int], width: int,
                         approx: bool = False, max_cells: int = 1 << 22):  # fmt: skip
    """`kleene_count` for every window of a block at once (GRETA §4.2: one
    count per window an event falls in): event e falls in the block's windows
    first[e] … last[e] (positions 0 … width-1), and its count is a vector
    over them — 1 + the sum of its predecessors' vectors, zero outside its
    own windows, so a predecessor counts only in the windows both share.
    One pass over the events, O(n log n) vector operations of length
    `width`.  The totals per window position, or None when the index (a
    vector per distinct value) would exceed `max_cells` (evaluate window by
    window then)."""
    import numpy as np

    dtype = np.float64 if approx else object  # object: exact Python ints (np.zeros fills them with int 0)
    total = np.zeros(width, dtype=dtype)

    def vector():
        return np.zeros(width, dtype=dtype)

    if step.equal:
        ((lval, h),) = step.equal
        if (len({x for x in h if x is not None}) + 1) * width > max_cells:
            return None
        sums: dict = {}
        for i, j in _tie_runs(times):
            counts = []
            for e in range(i, j):
                a, b = first[e], last[e] + 1
                acc = vector()
                acc[a:b] = 1
                prev = sums.get(lval[e]) if lval[e] is not None else None
                if prev is not None:
                    acc[a:b] += prev[a:b]
                counts.append(acc)
            for e, c in zip(range(i, j), counts):
                if h[e] is not None:
                    if h[e] in sums:
                        sums[h[e]] += c
                    else:
                        sums[h[e]] = c.copy()
                total += c
        return total
    if not step.ranges:
        running = vector()
        for i, j in _tie_runs(times):
            counts = []
            for e in range(i, j):
                a, b = first[e], last[e] + 1
                acc = vector()
                acc[a:b] = 1 + running[a:b]
                counts.append(acc)
            for c in counts:
                running += c
                total += c
        return total
    ((lval, op, h),) = step.ranges
    size, starts, adds = _range_positions(lval, h, op)
    if (size + 1) * width > max_cells:
        return None
    tree = np.zeros((size + 1, width), dtype=dtype)
    for i, j in _tie_runs(times):
        counts = []
        for e in range(i, j):
            a, b = first[e], last[e] + 1
            acc = vector()
            acc[a:b] = 1
            k, nodes = starts[e], []
            while k > 0:
                nodes.append(k)
                k -= k & -k
            if nodes:
                acc[a:b] += tree[nodes, a:b].sum(axis=0)
            counts.append(acc)
        for e, c in zip(range(i, j), counts):
            total += c
            k = adds[e]
            if k is None:
                continue
            nodes = []
            while k <= size:
                nodes.append(k)
                k += k & -k
            a, b = first[e], last[e] + 1
            tree[nodes, a:b] += c[a:b]
    return total


def _scan_count(times, step, approx: bool):
    import numpy as np

    n = len(times)
    if step.equal:
        ((lval, h),) = step.equal
        op = "="
    elif step.ranges:
        ((lval, op, h),) = step.ranges
    else:
        lval = h = [0] * n
        op = "="
    dtype = np.float64 if approx else object
    t = np.asarray(times, dtype=np.float64)
    present = np.asarray([x is not None for x in h], dtype=bool)
    numeric = all(isinstance(x, (int, float)) for x in h if x is not None)
    hv = np.asarray([0 if x is None else x for x in h], dtype=np.float64 if numeric else object)
    counts = np.zeros(n, dtype=dtype)
    cmp = COMPARATORS[op]
    for j in range(n):
        q = lval[j]
        if q is None:
            mask = np.zeros(j, dtype=bool)
        else:
            mask = (t[:j] < t[j]) & present[:j] & np.asarray(cmp(q, hv[:j]), dtype=bool)
        counts[j] = (1.0 if approx else 1) + counts[:j][mask].sum()
    return counts.sum() if n else (0.0 if approx else 0)


def count_trends(gt: GroupTemplate, spec: K.TemplateSpec, trend_set, limit: int = 0,
                 graph: Graph | None = None) -> tuple[int, bool]:  # fmt: skip
    """How many trends detection will return for one group, and whether that
    is exact (else an upper bound: MAXIMAL is bounded by COMPLETE, a pattern
    with cross predicates by its trends without them), without building
    them.  With `limit`, stop refining once the count is known to be within."""
    # runs of the pattern, cross predicates left out: at least every trend
    # (from the stored graph's edges, else from the index: a graph that stores
    # none would find every edge again)
    bound = graph.paths() if graph is not None and graph.stored else count(gt, "ALL")
    ts = str(trend_set)
    if (limit and bound <= limit) or spec.cross:
        return bound, False
    unique = gt.unique_states()
    if ts == "ALL":
        return (bound if unique else _count_classes(graph or Graph(gt), "ALL")), True
    exact = count(gt, "COMPLETE", K.PER_STATE) if unique else _count_classes(graph or Graph(gt), "COMPLETE")
    return exact, ts == "COMPLETE"


def _count_classes(g: Graph, trend_set: str) -> int:
    total = 0
    for vec in complete_classes(g, one=1, zero=[0], contribute=lambda v, e, s: None,
                                add=lambda a, b: a.__setitem__(0, a[0] + b[0]), trend_set=trend_set):  # fmt: skip
        total += vec[0]
    return total
