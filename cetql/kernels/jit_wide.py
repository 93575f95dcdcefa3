"""Exact counts past int64, compiled: `jit.kleene_counts`'s loop over
counts of L unsigned 64-bit limbs (least significant first), for the
segments whose int64 count overflowed.

`compiled_count.aggregate_counts` runs this loop on the segments of more than
`compiled_count.WIDE_FROM` events and on those whose int64 count overflowed, with as
many limbs as `limbs_for` allows; the additions run over the limbs in use
only (every value of a segment is at most its total, so the total's width
bounds them).  A segment whose count passes them is counted by the
reference with Python integers.  An addition that carries out of the top limb marks the segment
(`over`): a count is exact or absent, never wrapped.  The additions are
the reference's, in its order (same Fenwick tree, same ranks, same ties).
"""

from __future__ import annotations

import numpy as np

from cetql.kernels.jit import fenwick_insert_start, fenwick_query_start, njit, segment_ranks, widest
from cetql.kernels.opcodes import EQ, NONE

MAX_LIMBS = 64  # 4,096 bits, 1,233 digits
WIDE_BYTES = 64 << 20  # the limb arrays of one call: the tree, the tied counts


def limbs_for(longest: int) -> int:
    """Limbs for segments of at most `longest` events: as many as the count
    can need (fewer than 2^n trends in n events), at most MAX_LIMBS, and no
    more than WIDE_BYTES of tree allow (a window of a million events gets 2:
    past that the reference counts it)."""
    need = longest // 64 + 1
    room = WIDE_BYTES // (24 * (longest + 1))
    return max(1, min(MAX_LIMBS, need, room))




@njit
def _add(dst, src, w):
    """dst += src (limb rows, zero past limb w): the loop stops there unless
    a carry goes on; True when it carries out of the top limb."""
    carry = np.uint64(0)
    for k in range(w):
        a = dst[k]
        s = a + src[k]
        t = s + carry
        carry = np.uint64(s < a) | np.uint64(t < s)
        dst[k] = t
    return _ripple(dst, w, carry)


@njit
def _ripple(x, k, carry):
    """Carry on into x[k], x[k + 1], …; True when it leaves the top limb."""
    n = x.shape[0]
    while carry and k < n:
        t = x[k] + np.uint64(1)
        x[k] = t
        carry = np.uint64(t == np.uint64(0))
        k += 1
    return carry != np.uint64(0)


@njit
def _add_to_node(tree, i, src, w):
    """tree[i] += src: `_add` on a node by index (a view of a node costs a
    third of the loop)."""
    carry = np.uint64(0)
    for k in range(w):
        a = tree[i, k]
        s = a + src[k]
        t = s + carry
        carry = np.uint64(s < a) | np.uint64(t < s)
        tree[i, k] = t
    k = w
    n = tree.shape[1]
    while carry and k < n:
        t = tree[i, k] + np.uint64(1)
        tree[i, k] = t
        carry = np.uint64(t == np.uint64(0))
        k += 1
    return carry != np.uint64(0)


@njit
def _add_node(acc, tree, i, w):
    """acc += tree[i], by index."""
    carry = np.uint64(0)
    for k in range(w):
        a = acc[k]
        s = a + tree[i, k]
        t = s + carry
        carry = np.uint64(s < a) | np.uint64(t < s)
        acc[k] = t
    return _ripple(acc, w, carry)


@njit
def _double(x, w):
    """x += x (zero past limb w); True when a bit leaves the top limb."""
    carry = np.uint64(0)
    for k in range(w):
        v = x[k]
        x[k] = (v << np.uint64(1)) | carry
        carry = v >> np.uint64(63)
    if carry and w < x.shape[0]:
        x[w] = carry
        return False
    return carry != np.uint64(0)


@njit
def _times(dst, src, k, tmp, w):
    """dst = src · k (k ≥ 1, by doubling; src zero past limb w); True on overflow."""
    dst[:] = 0
    tmp[:] = src
    while k > 0:
        if k & 1 and _add(dst, tmp, w):
            return True
        k >>= 1
        if k > 0:
            if _double(tmp, w):
                return True
            w = min(w + 1, len(tmp))
    return False


@njit
def _width(total, w):
    """Limbs the total uses, knowing it uses at most w + 2."""
    k = min(w + 2, len(total))
    while k > 1 and total[k - 1] == np.uint64(0):
        k -= 1
    return k


@njit
def _query(tree, q, op, size, acc, w):
    """acc = Σ of the rows at ranks r with `r op q` (jit._fenwick_query); True on overflow."""
    acc[:w] = 0
    i = fenwick_query_start(q, op, size)
    while i > 0:
        if _add_node(acc, tree, i, w):
            return True
        i -= i & -i
    return False


@njit
def _insert(tree, r, v, op, size, w):
    """Add row v at rank r (jit._insert); True on overflow."""
    if r < 0:
        return False
    if op == EQ:
        return _add_to_node(tree, r, v, w)
    i = fenwick_insert_start(r, op, size)
    while i <= size:
        if _add_to_node(tree, i, v, w):
            return True
        i += i & -i
    return False


@njit
def _count_plain(times, lo, hi, total, running, c, ck, tmp, one):
    """jit._count_plain in limbs: tie runs, a running total; True on overflow."""
    limbs = len(total)
    total[:] = 0
    running[:] = 0
    w = 1
    i = lo
    while i < hi:
        j = i
        while j < hi and times[j] == times[i]:
            j += 1
        c[:] = running
        wide = min(w + 1, limbs)
        if _add(c, one, wide) or _times(ck, c, j - i, tmp, wide) or _add(running, ck, limbs):
            return True
        if _add(total, ck, limbs):
            return True
        w = _width(total, limbs)
        i = j
    return False


@njit
def _count_indexed(times, at, probe, lo, hi, op, size, tree, tied_r, tied_c, total, c, one):
    """jit._count_indexed in limbs, the sums over the limbs in use (every
    value of a segment is at most its total, and one addition widens a
    number by at most one limb); True on overflow."""
    limbs = len(total)
    tree[: size + 1] = 0
    total[:] = 0
    c[:] = 0
    w = 1
    ntied = 0
    for e in range(lo, hi):
        wide = min(w + 1, limbs)
        q = probe[e - lo]
        c[:wide] = 0
        if q >= 0:
            if op == EQ:
                c[:wide] = tree[q, :wide]
            elif _query(tree, q, op, size, c, wide):
                return True
        if _add(c, one, wide) or _add(total, c, wide):
            return True
        w = _width(total, w)
        wide = min(w + 1, limbs)
        if e < hi - 1 and times[e + 1] == times[e]:
            tied_r[ntied] = at[e - lo]
            tied_c[ntied] = c
            ntied += 1
            continue
        for k in range(ntied):
            if _insert(tree, tied_r[k], tied_c[k], op, size, wide):
                return True
        ntied = 0
        if _insert(tree, at[e - lo], c, op, size, wide):
            return True
    return False


@njit
def kleene_counts_wide(seg_lo, seg_hi, times, at_g, at_ok, probe_g, probe_ok, op, limbs):
    """jit.kleene_counts, exact in up to `limbs` limbs: (totals[s, limb], over[s])."""
    ns = len(seg_lo)
    totals = np.zeros((ns, limbs), dtype=np.uint64)
    over = np.zeros(ns, dtype=np.bool_)
    width = widest(seg_lo, seg_hi)
    both = np.empty(2 * width, dtype=np.int64)
    ok = np.empty(2 * width, dtype=np.bool_)
    codes = np.empty(2 * width, dtype=np.int64)
    tree = np.zeros((2 * width + 1, limbs), dtype=np.uint64)
    tied_r = np.empty(width, dtype=np.int64)
    tied_c = np.zeros((width, limbs), dtype=np.uint64)
    one = np.zeros(limbs, dtype=np.uint64)
    one[0] = 1
    c = np.zeros(limbs, dtype=np.uint64)
    running = np.zeros(limbs, dtype=np.uint64)
    ck = np.zeros(limbs, dtype=np.uint64)
    tmp = np.zeros(limbs, dtype=np.uint64)
    for s in range(ns):
        lo, hi = seg_lo[s], seg_hi[s]
        n = hi - lo
        if op == NONE:
            over[s] = _count_plain(times, lo, hi, totals[s], running, c, ck, tmp, one)
            continue
        size = segment_ranks(lo, hi, at_g, at_ok, probe_g, probe_ok, both, ok, codes)
        over[s] = _count_indexed(times, codes[:n], codes[n : 2 * n], lo, hi, op, size, tree, tied_r, tied_c,
                                 totals[s], c, one)  # fmt: skip
    return totals, over


def to_int(row: np.ndarray) -> int:
    """A limb row as a Python integer."""
    return sum(int(v) << (64 * k) for k, v in enumerate(row.tolist()))
