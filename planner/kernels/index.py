"""The ABI attribute index, in the forms the kernels need — one
implementation of each, shared by detection and aggregation.

- `Monoid`: component-wise sums, minima and maxima of value vectors.
- `Total`, `Hash`, `Fenwick`, `Scan`: aggregate the values of the events
  inserted so far that a later event may follow (GRETA's predecessor sums):
  no predicate (a running total), `next.l = h(prev)` (a hash on h),
  `next.l OP h(prev)` (a Fenwick tree over the sorted distinct h values — the
  ABI range vertices with prefix sums), anything else (a scan).
- `later_in_range`: for detection, the events after each event whose value
  satisfies `l OP h` — the ABI range to-edges — in O(log n + k) each.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

from sortedcontainers import SortedList

from .expr import COMPARATORS, _mixed

SUM, MIN, MAX = "sum", "min", "max"


def usable(v) -> bool:
    """A value an index may hold: not null, not NaN (NaN compares false)."""
    return v is not None and v == v  # NaN is the one value unequal to itself


class Monoid:
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


class Total:
    def __init__(self, m: Monoid):
        self.m, self.acc = m, list(m.zero)

    def insert(self, node, v):
        self.m.add(self.acc, v)

    def query(self, node):
        return self.acc


class Hash:
    """Values keyed by `key[event]`; a query sums the bucket `probe[event]`."""

    def __init__(self, m: Monoid, key: Sequence, probe: Sequence):
        self.m, self.key, self.probe, self.buckets = m, key, probe, {}

    def insert(self, node, v):
        k = self.key[node[0]]
        if not usable(k):
            return
        acc = self.buckets.get(k)
        if acc is None:
            acc = self.buckets[k] = list(self.m.zero)
        self.m.add(acc, v)

    def query(self, node):
        k = self.probe[node[0]]
        return self.buckets.get(k, self.m.zero) if usable(k) else self.m.zero


class Fenwick:
    """Σ over inserted nodes whose key k satisfies `probe OP k`, the keys
    known up front (the ABI attribute vertices: distinct sorted values)."""

    def __init__(self, m: Monoid, key: Sequence, probe: Sequence, op: str, universe):
        self.m, self.key, self.probe = m, key, probe
        self.keys = sorted({x for x in universe if usable(x)})
        # probe OP k: '>' → k < probe (prefix), '>=' → k <= probe, '<' → k > probe (suffix), '<=' → k >= probe
        self.prefix = op in (">", ">=")
        self.strict = op in (">", "<")
        self.tree = [list(m.zero) for _ in range(len(self.keys) + 1)]

    def _pos(self, k) -> int:  # 1-based position in the tree's order
        r = bisect.bisect_left(self.keys, k)
        return r + 1 if self.prefix else len(self.keys) - r

    def insert(self, node, v):
        k = self.key[node[0]]
        if not usable(k):
            return
        i = self._pos(k)
        while i < len(self.tree):
            self.m.add(self.tree[i], v)
            i += i & -i

    def query(self, node):
        q = self.probe[node[0]]
        if not usable(q):
            return self.m.zero
        try:
            if self.prefix:  # keys < q (strict) or <= q
                i = bisect.bisect_left(self.keys, q) if self.strict else bisect.bisect_right(self.keys, q)
            else:  # keys > q (strict) or >= q: counted from the top
                i = len(self.keys) - (bisect.bisect_right(self.keys, q) if self.strict else bisect.bisect_left(self.keys, q))
        except TypeError:  # values that do not compare (text against numbers): no match
            return self.m.zero
        acc = list(self.m.zero)
        while i > 0:
            self.m.add(acc, self.tree[i])
            i -= i & -i
        return acc


class Scan:
    """Every inserted node, each checked against the query: O(n) a query."""

    def __init__(self, m: Monoid, valid: Callable[[tuple, tuple], bool]):
        self.m, self.valid, self.items = m, valid, []

    def insert(self, node, v):
        self.items.append((node, v))

    def query(self, node):
        acc = list(self.m.zero)
        for other, v in self.items:
            if self.valid(other, node):
                self.m.add(acc, v)
        return acc


# ---------------------------------------------------------------- detection: range to-edges


def _range_sweep(times: Sequence, sources: Sequence[int], targets: Sequence[int], lval: Sequence, op: str,
                 h: Sequence):  # fmt: skip
    """(e, later, lo, hi) for each source event e, latest first: `later`
    holds the targets after e sorted by lval, and [lo, hi) is the slice
    of it where `lval OP h[e]` holds (empty slices are not yielded)."""
    later = SortedList()
    ti = len(targets) - 1
    si = len(sources) - 1
    inf = math.inf
    while si >= 0:
        t = times[sources[si]]
        while ti >= 0 and times[targets[ti]] > t:
            f = targets[ti]
            if usable(lval[f]):
                later.add((lval[f], f))
            ti -= 1
        e = sources[si]
        hv = h[e]
        si -= 1
        if not usable(hv) or not later:
            continue
        try:
            if op == ">":
                lo, hi = later.bisect_left((hv, inf)), len(later)
            elif op == ">=":
                lo, hi = later.bisect_left((hv, -1)), len(later)
            elif op == "<":
                lo, hi = 0, later.bisect_left((hv, -1))
            else:  # "<="
                lo, hi = 0, later.bisect_left((hv, inf))
        except TypeError:  # values that do not compare: no match
            continue
        if lo < hi:
            yield e, later, lo, hi


def later_in_range(times: Sequence, sources: Sequence[int], targets: Sequence[int], lval: Sequence, op: str,
                   h: Sequence) -> dict[int, list[int]]:  # fmt: skip
    """For each source event e, the target events f with t_f > t_e and
    `lval[f] OP h[e]`, in time order.  A backward sweep over time keeps the
    later targets in a list sorted by lval, so each query is one slice of it:
    O((n + k) log n) in all, never a scan of every later event."""
    out: dict[int, list[int]] = {}
    for e, later, lo, hi in _range_sweep(times, sources, targets, lval, op, h):
        found = [f for _, f in later.islice(lo, hi)]
        found.sort()
        out[e] = found
    return out


def count_in_range(times: Sequence, sources: Sequence[int], targets: Sequence[int], lval: Sequence, op: str,
                   h: Sequence) -> int:  # fmt: skip
    """How many pairs `later_in_range` would list, in O(n log n), listing none."""
    return sum(hi - lo for _, _, lo, hi in _range_sweep(times, sources, targets, lval, op, h))


def matches(op: str, a, b) -> bool:
    """`a OP b` holds (SQL: false when null or not comparable)."""
    if a is None or b is None:
        return False
    a, b = _mixed(a, b)
    try:
        return bool(COMPARATORS[op](a, b))
    except TypeError:
        return False
