"""The ABI attribute index — one implementation, shared by detection and
aggregation.

An indexed edge predicate is `next.lval OP h(prev)`, OP in = < <= > >=.
`AttributeIndex` holds both sides as comparison keys (`compare`: NaN one
value above every number, -0.0 = 0.0, decimals against doubles as doubles)
— for a range, as their ranks in one SQL order (`compare.ranks`), ABI's
attribute vertices — so that a predicate is a comparison of two keys and
the events a probe may pair with are one key or a span of ranks (`span`):

- detection (`graph`) lists successors: the later events whose lval
  equals an event's h (a hash) or whose rank lies in its span (ranks kept
  sorted: `later_in_range`, `count_in_range`);
- aggregation (`template`, `kleene`) sums over predecessors (GRETA): values
  inserted at the key of their h, queried with a later event's lval
  (`sums`: one sum a key for =, the one `Fenwick` tree over ranks otherwise).

`Monoid` adds the value vectors aggregation propagates (sums, minima,
maxima); `Fenwick` is the one prefix-sum tree, over numbers (also the
counts detection's guard takes), numpy rows or monoid vectors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
from sortedcontainers import SortedList

from cetql.kernels.compare import COMPARATORS, comparable, ranks, smaller

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
    and `h` are the two columns as keys (=) or ranks (a range; `size` of
    them), None for null."""

    __slots__ = ("op", "lval", "h", "size")

    def __init__(self, lval: Sequence, op: str, h: Sequence):
        self.op = op
        if op == "=":
            (self.lval, self.h), self.size = comparable(lval, h), 0
        else:
            self.lval, self.h, self.size = ranks(lval, h)

    def later(self, e: int) -> tuple[int, int]:
        """The lval ranks an event after e may have: [lo, hi) (a range)."""
        return span(self.op, self.h[e], self.size)

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
        """acc ⊕= v: `add_at` over every component, written out (GRETA's hot
        loop; a test holds the two equal)."""
        for i, k in enumerate(self.kinds):
            x = v[i]
            if x is None:
                continue
            y = acc[i]
            if k == SUM:
                acc[i] = x if y is None else y + x
            elif y is None or (smaller(x, y) if k == MIN else smaller(y, x)):
                acc[i] = x

    def add_at(self, acc: list, v: list, at: Sequence[int]) -> None:
        """acc[at[j]] ⊕= v[j] (v: the components `at` of a vector)."""
        kinds = self.kinds
        for x, i in zip(v, at):
            if x is None:
                continue
            y, k = acc[i], kinds[i]
            if k == SUM:
                acc[i] = x if y is None else y + x
            elif y is None or (smaller(x, y) if k == MIN else smaller(y, x)):
                acc[i] = x


class Fenwick:
    """Σ of the values inserted at a rank r with `r OP q`, for a query rank
    q and OP one of < <= > >=: a Fenwick tree over the ranks (reversed for
    > and >=, so that the ranks asked for are a prefix), O(log size) an
    insertion or a query.  Values are numbers (added with +), numpy rows
    (`zero` an array: one vectorised step a call) or vectors added in place
    by `add`; `insert(r, v)` and `query(q)` are the methods for the kind,
    chosen once.  A null rank is inserted nowhere and matches nothing."""

    __slots__ = ("size", "tree", "zero", "add", "base", "sign", "end", "insert", "query")

    def __init__(self, size: int, op: str, zero, add: Callable | None = None):
        self.size, self.zero, self.add = size, zero, add
        # rank r is at position base + sign * r (1-based: + 1); query q sums the positions before end + sign * q
        reverse = op in (">", ">=")
        self.base, self.sign = (size, -1) if reverse else (1, 1)
        self.end = (size - 1 if reverse else 0) + (1 if op in ("<=", ">=") else 0)
        if isinstance(zero, np.ndarray):
            self.tree = np.zeros((size + 1, *zero.shape), dtype=zero.dtype)
            self.insert, self.query = self._insert_rows, self._query_rows
        else:
            self.tree = [copy.copy(zero) for _ in range(size + 1)]
            if add is None:
                self.insert, self.query = self._insert_numbers, self._query_numbers
            else:
                self.insert, self.query = self._insert_vectors, self._query_vectors

    def _insert_numbers(self, r: int | None, v) -> None:
        if r is None:
            return
        i, tree, size = self.base + self.sign * r, self.tree, self.size
        while i <= size:
            tree[i] += v
            i += i & -i

    def _query_numbers(self, q: int | None):
        acc = self.zero
        if q is None:
            return acc
        i, tree = self.end + self.sign * q, self.tree
        while i > 0:
            acc = acc + tree[i]
            i -= i & -i
        return acc

    def _insert_vectors(self, r: int | None, v) -> None:
        if r is None:
            return
        i, tree, size, add = self.base + self.sign * r, self.tree, self.size, self.add
        while i <= size:
            add(tree[i], v)
            i += i & -i

    def _query_vectors(self, q: int | None):
        acc = copy.copy(self.zero)
        if q is None:
            return acc
        i, tree, add = self.end + self.sign * q, self.tree, self.add
        while i > 0:
            add(acc, tree[i])
            i -= i & -i
        return acc

    def _insert_rows(self, r: int | None, v) -> None:
        if r is None:
            return
        i, path = self.base + self.sign * r, []
        while i <= self.size:
            path.append(i)
            i += i & -i
        self.tree[path] += v

    def _query_rows(self, q: int | None):
        if q is None:
            return self.zero.copy()
        i, path = self.end + self.sign * q, []
        while i > 0:
            path.append(i)
            i -= i & -i
        return self.tree[path].sum(axis=0) if path else self.zero.copy()


class ByKey:
    """Σ of the values inserted at the query's own key (an equal predicate):
    one sum a key."""

    __slots__ = ("sums", "zero", "add")

    def __init__(self, zero, add: Callable | None = None):
        self.sums, self.zero, self.add = {}, zero, add

    def insert(self, k, v) -> None:
        if k is None:
            return
        acc = self.sums.get(k)
        if acc is None:
            self.sums[k] = copy.copy(v)
        elif self.add is not None:
            self.add(acc, v)
        else:
            self.sums[k] = acc + v

    def query(self, q):
        acc = self.sums.get(q)
        return self.zero if acc is None else acc


def sums(size: int, op: str, zero, add: Callable | None = None) -> ByKey | Fenwick:
    """Σ of the values inserted at a key r with `r OP q`, for a query key q
    (`insert(r, v)`, `query(q)`; ranks 0 … size-1 for a range): the ABI
    attribute vertices with GRETA's sums.  Numbers, numpy rows, or vectors
    of a monoid (`add`)."""
    return ByKey(zero, add) if op == "=" else Fenwick(size, op, zero, add)


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
    none: the later targets counted by lval rank (a Fenwick tree)."""
    tree = sums(idx.size, idx.op, 0)
    lval, h = idx.lval, idx.h
    total = 0
    for e, _, _ in _sweep(times, sources, targets, idx, lambda f: tree.insert(lval[f], 1)):
        total += tree.query(h[e])
    return total
