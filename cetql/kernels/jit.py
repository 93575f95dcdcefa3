"""The kernels' hot loops compiled by numba (`select` decides when they run).

Each function here is the loop of a reference kernel, over numpy arrays of
one table, segment by segment (a segment: the rows of one (window, group),
`seg_lo[s]` … `seg_hi[s] - 1`):

- `kleene_counts`: `kleene.kleene_count` (COUNT(*) of E+ with at most one
  equal or range predicate), the same Fenwick tree over the same ranks,
  the same order of additions (so floats agree bit for bit), exact counts
  in int64 while they fit: an addition that would pass 2^63 - 1 marks the
  segment (`over`) for `jit_wide` to count in wider limbs —
  never a wrapped number.
- `jit_trends.trend_rows`: `walks.Walk` over the graph of E+ with one
  equal predicate (every event a start and an end node): how many trends
  and trend events each segment has, then the trends themselves, depth
  first in the reference's order, written as table rows into buffers.

Values are keys: int64 in SQL order (`compiled_count.keys`) with their validity,
compressed per segment to ranks by `local_codes` (where order matters), or
to codes by `equal_codes` (where only equality does).

Without numba the module imports (the functions stay plain Python), and
`select.available()` is False: the reference kernels run.
"""

from __future__ import annotations

import numpy as np

from cetql.kernels.opcodes import EQ, GE, GT, LE, LIMIT, NONE  # noqa: F401 - LIMIT, NONE: the callers' names

try:
    import numba

    COMPILED = True

    def njit(f):
        return numba.njit(cache=True, nogil=True)(f)

except ImportError:  # pragma: no cover - numba is optional, or installed and broken (`select.available`)
    COMPILED = False

    def njit(f):
        return f


@njit
def local_codes(x, valid, out):
    """out[i]: x[i]'s position among the distinct values of x where valid
    (-1 where not); returns how many distinct values."""
    order = np.argsort(x, kind="mergesort")
    r, prev, first = -1, 0, True
    for k in range(len(order)):
        i = order[k]
        if not valid[i]:
            out[i] = -1
            continue
        v = x[i]
        if first or v != prev:
            r += 1
            prev, first = v, False
        out[i] = r
    return r + 1


@njit
def new_slots(n):
    """A hash table for `equal_codes` of at most n keys: 2^k slots, at
    least 2n (row 0: the key, row 1: its code, -1: empty; row 2: code c's
    slot)."""
    size = 16
    while size < 2 * n:
        size *= 2
    slots = np.empty((3, size), dtype=np.int64)
    slots[1, :] = -1
    return slots


@njit
def _mix(v):
    """splitmix64's finaliser (in int64, its shifts arithmetic): every bit of
    v moves the low bits, so doubles' keys (low bits zero) spread too."""
    z = (v ^ (v >> 30)) * -4658895280553007687
    z = (z ^ (z >> 27)) * -7723592293110705685
    return z ^ (z >> 31)


@njit
def equal_codes(x, valid, out, slots):
    """out[i]: a code for x[i], equal codes for equal values, 0 … size - 1
    in order of first appearance (-1 where not valid); returns size.  For
    predicates that ask only equality, in O(n) (a hash table, `new_slots`,
    left empty again); `local_codes` gives ranks where order matters."""
    keys, codes, where = slots[0], slots[1], slots[2]
    last = len(keys) - 1
    size = 0
    for i in range(len(x)):
        if not valid[i]:
            out[i] = -1
            continue
        v = x[i]
        h = _mix(v) & last  # never negative
        while codes[h] >= 0 and keys[h] != v:
            h = (h + 1) & last
        if codes[h] < 0:
            keys[h], codes[h], where[size] = v, size, h
            size += 1
        out[i] = codes[h]
    for c in range(size):  # empty again
        codes[where[c]] = -1
    return size


@njit
def fenwick_query_start(q, op, size):
    """The first node a query of rank q visits: the Fenwick tree's layout
    (`index.Fenwick`: ranks reversed for > and >=, so that those asked for
    are a prefix), written once for the compiled trees (int64 and limbs)."""
    reverse = op == GT or op == GE
    end = (size - 1 if reverse else 0) + (1 if op == LE or op == GE else 0)
    return end + (-q if reverse else q)


@njit
def fenwick_insert_start(r, op, size):
    """The first node an insertion at rank r updates (`index.Fenwick`)."""
    return size - r if (op == GT or op == GE) else 1 + r


@njit
def _fenwick_query(tree, q, op, size, zero, lim):
    """Σ of the values at ranks r with `r op q` (index.Fenwick._query_numbers);
    (sum, overflowed)."""
    acc = zero
    i = fenwick_query_start(q, op, size)
    while i > 0:
        v = tree[i]
        if acc > lim - v:
            return acc, True
        acc = acc + v
        i -= i & -i
    return acc, False


@njit
def _insert(tree, r, v, op, size, lim):
    """Add v at rank r (index.Fenwick._insert_numbers, ByKey.insert); False on overflow."""
    if r < 0:
        return True
    if op == EQ:
        if tree[r] > lim - v:
            return False
        tree[r] = tree[r] + v
        return True
    i = fenwick_insert_start(r, op, size)
    while i <= size:
        if tree[i] > lim - v:
            return False
        tree[i] = tree[i] + v
        i += i & -i
    return True


@njit
def _count_plain(times, lo, hi, zero, one, lim):
    """kleene_count without a predicate: tie runs, a running total."""
    total, running = zero, zero
    exact = lim == LIMIT
    i = lo
    while i < hi:
        j = i
        while j < hi and times[j] == times[i]:
            j += 1
        if running > lim - one:
            return total, True
        c = one + running
        k = j - i
        if exact and c > LIMIT // k:
            return total, True
        ck = c * k
        if running > lim - ck or total > lim - ck:
            return total, True
        running = running + ck
        total = total + ck
        i = j
    return total, False


@njit
def _count_indexed(times, at, probe, lo, hi, op, size, tree, tied_r, tied_c, zero, one, lim):
    """kleene_count along one index, at / probe local ranks (-1: null)."""
    for k in range(size + 1):
        tree[k] = zero
    total = zero
    ntied = 0
    for e in range(lo, hi):
        q = probe[e - lo]
        before = zero
        if q >= 0:
            if op == EQ:
                before = tree[q]
            else:
                before, bad = _fenwick_query(tree, q, op, size, zero, lim)
                if bad:
                    return total, True
        if before > lim - one:
            return total, True
        c = one + before
        if total > lim - c:
            return total, True
        total = total + c
        if e < hi - 1 and times[e + 1] == times[e]:
            tied_r[ntied] = at[e - lo]
            tied_c[ntied] = c
            ntied += 1
            continue
        for k in range(ntied):
            if not _insert(tree, tied_r[k], tied_c[k], op, size, lim):
                return total, True
        ntied = 0
        if not _insert(tree, at[e - lo], c, op, size, lim):
            return total, True
    return total, False


@njit
def widest(seg_lo, seg_hi):
    """The most rows a segment has (at least 1): the size of the scratch arrays."""
    width = 1
    for s in range(len(seg_lo)):
        width = max(width, seg_hi[s] - seg_lo[s])
    return width


@njit
def segment_ranks(lo, hi, at_g, at_ok, probe_g, probe_ok, both, ok, codes):
    """A segment's insert keys and probe keys as local ranks, into codes[:n]
    and codes[n:2n] (`local_codes` over both at once); returns how many
    distinct values."""
    n = hi - lo
    both[:n] = at_g[lo:hi]
    both[n : 2 * n] = probe_g[lo:hi]
    ok[:n] = at_ok[lo:hi]
    ok[n : 2 * n] = probe_ok[lo:hi]
    return local_codes(both[: 2 * n], ok[: 2 * n], codes[: 2 * n])


@njit
def kleene_counts(seg_lo, seg_hi, times, at_g, at_ok, probe_g, probe_ok, op, zero, one, lim):
    """COUNT(*) of E+ per segment, and whether it overflowed (see the module).
    at_g: the key each event is inserted at (h), probe_g: queried with
    (lval), each with its validity; op: how an inserted rank r relates to a probe q (`r op q`)."""
    ns = len(seg_lo)
    totals = np.empty(ns, dtype=np.asarray(zero).dtype)
    over = np.zeros(ns, dtype=np.bool_)
    width = widest(seg_lo, seg_hi)
    both = np.empty(2 * width, dtype=np.int64)
    ok = np.empty(2 * width, dtype=np.bool_)
    codes = np.empty(2 * width, dtype=np.int64)
    tree = np.empty(2 * width + 1, dtype=np.asarray(zero).dtype)
    tied_r = np.empty(width, dtype=np.int64)
    tied_c = np.empty(width, dtype=np.asarray(zero).dtype)
    for s in range(ns):
        lo, hi = seg_lo[s], seg_hi[s]
        n = hi - lo
        if op == NONE:
            totals[s], over[s] = _count_plain(times, lo, hi, zero, one, lim)
            continue
        size = segment_ranks(lo, hi, at_g, at_ok, probe_g, probe_ok, both, ok, codes)
        totals[s], over[s] = _count_indexed(times, codes[:n], codes[n : 2 * n], lo, hi, op, size, tree,
                                            tied_r, tied_c, zero, one, lim)  # fmt: skip
    return totals, over
