"""The ABI attribute index — one implementation, shared by detection and
aggregation.

An indexed edge predicate is `next.lval OP h(prev)`, OP in = < <= > >=.
`AttributeIndex` replaces the values of both sides by their ranks in one
SQL order (`values.ranks`: NaN last, -0.0 = 0.0, decimals against doubles
as doubles), ABI's attribute vertices; from then on a predicate is a
comparison of two integers and the events a probe may pair with are a span
of ranks (`span`):

- detection (`graph`) lists successors: the later events whose lval rank
  lies in the span of an event's h (a hash by rank for =, ranks kept sorted
  for a range: `later_in_range`, `count_in_range`);
- aggregation (`template`, `kleene`) sums over predecessors (GRETA): values
  inserted at the rank of their h, queried over the span of a later event's
  lval (`Sums`: a list by rank for =, one `Fenwick` tree otherwise).

`Monoid` adds the value vectors aggregation propagates (sums, minima,
maxima); `Fenwick` is the one prefix-sum tree, over numbers, numpy rows or
monoid vectors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
from sortedcontainers import SortedList

from .values import COMPARATORS, MIRROR, ranks, smaller

SUM, MIN, MAX = "sum", "min", "max"


def span(op: str, r: int | None, size: int) -> tuple[int, int]:
    """The ranks k (0 … size-1) with `k OP r`, as [lo, hi); empty for a null r."""
    if r is None:
        return 0, 0
    if op == "=":
        return r, r + 1
    if op == "<":
        return 0, r
    if op == "<=":
        return 0, r + 1
    if op == ">":
        return r + 1, size
    return r, size  # ">="


class AttributeIndex:
    """One predicate `next.lval OP h(prev)` over a group's events: `lval`
    and `h` are the two columns as ranks (None for null)."""

    __slots__ = ("op", "lval", "h", "size")

    def __init__(self, lval: Sequence, op: str, h: Sequence):
        self.op = op
        self.lval, self.h, self.size = ranks(lval, h)

    def later(self, e: int) -> tuple[int, int]:
        """The lval ranks an event after e may have: [lo, hi)."""
        return span(self.op, self.h[e], self.size)

    def earlier(self, f: int) -> tuple[int, int]:
        """The h ranks an event before f may have: [lo, hi)."""
        return span(MIRROR[self.op], self.lval[f], self.size)

    def holds(self, e: int, f: int) -> bool:
        """The predicate from e to the later event f."""
        a, b = self.lval[f], self.h[e]
        return a is not None and b is not None and COMPARATORS[self.op](a, b)


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
            elif y is None or (smaller(x, y) if k == MIN else smaller(y, x)):
                acc[i] = x


class Fenwick:
    """Prefix sums over positions 0 … size-1: `insert(p, v)` adds v at p,
    `prefix(end)` sums the positions before `end`, both in O(log size).
    Values are numbers (added with +), numpy rows (`zero` an array: one
    vectorised step a call) or vectors added in place by `add`."""

    __slots__ = ("size", "tree", "zero", "add", "rows")

    def __init__(self, size: int, zero, add: Callable | None = None):
        self.size, self.zero, self.add = size, zero, add
        self.rows = isinstance(zero, np.ndarray)
        if self.rows:
            self.tree = np.zeros((size + 1, *zero.shape), dtype=zero.dtype)
        else:
            self.tree = [copy.copy(zero) for _ in range(size + 1)]

    def insert(self, p: int, v) -> None:
        i, tree, size = p + 1, self.tree, self.size
        if self.rows:
            path = []
            while i <= size:
                path.append(i)
                i += i & -i
            tree[path] += v
        elif self.add is None:
            while i <= size:
                tree[i] += v
                i += i & -i
        else:
            while i <= size:
                self.add(tree[i], v)
                i += i & -i

    def prefix(self, end: int):
        i, tree = end, self.tree
        if self.rows:
            path = []
            while i > 0:
                path.append(i)
                i -= i & -i
            return tree[path].sum(axis=0) if path else self.zero.copy()
        if self.add is None:
            acc = self.zero
            while i > 0:
                acc = acc + tree[i]
                i -= i & -i
            return acc
        acc = copy.copy(self.zero)
        while i > 0:
            self.add(acc, tree[i])
            i -= i & -i
        return acc


class Sums:
    """Σ of the values inserted at a rank r with `r OP q`, for a query rank
    q: a list by rank for =, a Fenwick tree (reversed for > and >=, so
    that the span is a prefix) otherwise.  Numbers, numpy rows, or vectors
    of a monoid (`add`)."""

    __slots__ = ("op", "size", "zero", "add", "by_rank", "tree", "reverse")

    def __init__(self, size: int, op: str, zero, add: Callable | None = None):
        self.op, self.size, self.zero, self.add = op, size, zero, add
        self.reverse = op in (">", ">=")
        self.by_rank = [None] * size if op == "=" else None
        self.tree = None if op == "=" else Fenwick(size, zero, add)

    def insert(self, r: int | None, v) -> None:
        if r is None:
            return
        if self.by_rank is None:
            self.tree.insert(self.size - 1 - r if self.reverse else r, v)
            return
        acc = self.by_rank[r]
        if acc is None:
            self.by_rank[r] = copy.copy(v)
        elif self.add is not None:
            self.add(acc, v)
        else:
            self.by_rank[r] = acc + v

    def query(self, q: int | None):
        lo, hi = span(self.op, q, self.size)
        if lo >= hi:
            return self.zero
        if self.by_rank is not None:
            acc = self.by_rank[lo]
            return self.zero if acc is None else acc
        return self.tree.prefix(self.size - lo if self.reverse else hi)


# ---------------------------------------------------------------- detection: range to-edges


def _sweep(times: Sequence, sources: Sequence[int], targets: Sequence[int], idx: AttributeIndex, later):
    """Sources latest first, each as (e, lo, hi) with `later` holding (by
    `later.insert(f)`) exactly the targets after e: [lo, hi) is the span of
    lval ranks a successor of e may have (empty spans are not yielded)."""
    lval = idx.lval
    ti = len(targets) - 1
    for si in range(len(sources) - 1, -1, -1):
        e = sources[si]
        t = times[e]
        while ti >= 0 and times[targets[ti]] > t:
            f = targets[ti]
            if lval[f] is not None:
                later(f)
            ti -= 1
        lo, hi = idx.later(e)
        if lo < hi:
            yield e, lo, hi


def later_in_range(times: Sequence, sources: Sequence[int], targets: Sequence[int],
                   idx: AttributeIndex) -> dict[int, list[int]]:  # fmt: skip
    """For each source event e, the target events f with t_f > t_e and
    `lval[f] OP h[e]`, in time order.  A backward sweep over time keeps the
    later targets sorted by lval rank (coded as rank * n + f), so each query
    is one slice of them: O((n + k) log n) in all."""
    n = len(times)
    code = idx.lval
    kept = SortedList()
    out: dict[int, list[int]] = {}
    for e, lo, hi in _sweep(times, sources, targets, idx, lambda f: kept.add(code[f] * n + f)):
        a, b = kept.bisect_left(lo * n), kept.bisect_left(hi * n)
        if a < b:
            found = [c % n for c in kept.islice(a, b)]
            found.sort()
            out[e] = found
    return out


def count_in_range(times: Sequence, sources: Sequence[int], targets: Sequence[int], idx: AttributeIndex) -> int:
    """How many pairs `later_in_range` would list, in O(n log n), listing
    none: a Fenwick tree counts the later targets by lval rank."""
    tree = Fenwick(idx.size, 0)
    lval = idx.lval
    total = 0
    for _, lo, hi in _sweep(times, sources, targets, idx, lambda f: tree.insert(lval[f], 1)):
        total += tree.prefix(hi) - tree.prefix(lo)
    return total
