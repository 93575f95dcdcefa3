"""Detection's walk compiled by numba (`select` decides when it runs):
the trends of E+ with one equal predicate `next.lval = prev.h`, per
segment (the rows of one (window, group), seg_lo[s] … seg_hi[s] - 1).

The graph is the reference's (`graph.Graph`): a node per event whose mask
holds, every node a start and an end node, an edge e → f where t_e < t_f
and lval[f] = h[e].  It is never stored: the events are bucketed by their
lval (a counting sort, event order kept inside a bucket), so e's
successors are one slice of its h's bucket, from the first event later
than e (`_prep`).  Then, as `walks.Walk` does: ALL — every path from every
node, emitted at each node; COMPLETE — paths from nodes without a
predecessor, emitted at nodes without a successor; depth first, successors
in event order, so the trends come in the reference's order.

`trend_counts` sizes the output (trends and trend events per segment, one
backward pass over the edges, saturating: `over` marks a segment past
2^62), `trend_fill` writes the trends as table rows into preallocated
buffers.
"""

from __future__ import annotations

import numpy as np

from cetql.kernels.jit import local_codes, njit

CAP = 1 << 62


@njit
def _buffers(seg_lo, seg_hi):
    width = 1
    for s in range(len(seg_lo)):
        width = max(width, seg_hi[s] - seg_lo[s])
    ints = np.empty((8, 2 * width + 1), dtype=np.int64)  # ev, order, succ_lo, succ_hi, first_h, cursor, path, stack
    pair = np.empty((2, 2 * width), dtype=np.int64)  # keys, codes
    ok = np.empty(2 * width, dtype=np.bool_)
    return ints, pair, ok


@njit
def _prep(lo, hi, mask, times, hk, hok, lk, lok, ints, pair, ok, has_pred):
    """The segment's nodes (ints[0]: their rows), and each node's successor
    slice of `order` (ints[1]): ints[2][j] … ints[3][j] - 1; has_pred[j]."""
    ev, order, succ_lo, succ_hi, first_h, cursor = ints[0], ints[1], ints[2], ints[3], ints[4], ints[5]
    m = 0
    for r in range(lo, hi):
        if mask[r]:
            ev[m] = r
            m += 1
    both, codes = pair[0], pair[1]
    for j in range(m):
        r = ev[j]
        both[j], ok[j] = hk[r], hok[r]
        both[m + j], ok[m + j] = lk[r], lok[r]
    size = local_codes(both[: 2 * m], ok[: 2 * m], codes[: 2 * m])
    hc, lc = codes[:m], codes[m : 2 * m]
    cursor[: size + 1] = 0
    first_h[:size] = -1
    for j in range(m):
        if lc[j] >= 0:
            cursor[lc[j] + 1] += 1
        if hc[j] >= 0 and first_h[hc[j]] < 0:
            first_h[hc[j]] = j
    for k in range(size):
        cursor[k + 1] += cursor[k]
    start = cursor[: size + 1].copy()
    for j in range(m):
        if lc[j] >= 0:
            order[cursor[lc[j]]] = j
            cursor[lc[j]] += 1
    for j in range(m):
        x = hc[j]
        succ_lo[j] = succ_hi[j] = 0
        if x >= 0:
            a, b = start[x], start[x + 1]
            while a < b:  # the first of the bucket later than j
                mid = (a + b) // 2
                if times[ev[order[mid]]] > times[ev[j]]:
                    b = mid
                else:
                    a = mid + 1
            succ_lo[j], succ_hi[j] = a, start[x + 1]
        f = first_h[lc[j]] if lc[j] >= 0 else -1
        has_pred[j] = f >= 0 and times[ev[f]] < times[ev[j]]
    return m


@njit
def trend_counts(seg_lo, seg_hi, mask, times, hk, hok, lk, lok, every):
    """(trends, trend events, overflowed) per segment; `every`: ALL, else COMPLETE."""
    ns = len(seg_lo)
    trends = np.zeros(ns, dtype=np.int64)
    events = np.zeros(ns, dtype=np.int64)
    over = np.zeros(ns, dtype=np.bool_)
    ints, pair, ok = _buffers(seg_lo, seg_hi)
    width = ints.shape[1]
    paths = np.empty(width, dtype=np.int64)
    lengths = np.empty(width, dtype=np.int64)
    has_pred = np.empty(width, dtype=np.bool_)
    order, succ_lo, succ_hi = ints[1], ints[2], ints[3]
    for s in range(ns):
        m = _prep(seg_lo[s], seg_hi[s], mask, times, hk, hok, lk, lok, ints, pair, ok, has_pred)
        t_sum, e_sum = 0, 0
        for j in range(m - 1, -1, -1):
            p, ln = 0, 0
            for k in range(succ_lo[j], succ_hi[j]):
                w = order[k]
                p = min(p + paths[w], CAP)
                ln = min(ln + lengths[w], CAP)
            if every or succ_lo[j] == succ_hi[j]:
                p = min(p + 1, CAP)
            paths[j], lengths[j] = p, min(ln + p, CAP)
            if every or not has_pred[j]:
                t_sum, e_sum = min(t_sum + p, CAP), min(e_sum + lengths[j], CAP)
        trends[s], events[s], over[s] = t_sum, e_sum, t_sum >= CAP or e_sum >= CAP
    return trends, events, over


@njit
def _emit(rows, sizes, segment, ev, path, depth, at, count, s):
    for d in range(depth + 1):
        rows[at + d] = ev[path[d]]
    sizes[count], segment[count] = depth + 1, s
    return at + depth + 1, count + 1


@njit
def trend_fill(seg_lo, seg_hi, mask, times, hk, hok, lk, lok, every, rows, sizes, segment):
    """Write each segment's trends: their rows one after another (`rows`),
    each trend's length (`sizes`) and segment index (`segment`), sized by
    `trend_counts`."""
    ints, pair, ok = _buffers(seg_lo, seg_hi)
    has_pred = np.empty(ints.shape[1], dtype=np.bool_)
    ev, order, succ_lo, succ_hi, path, stack = ints[0], ints[1], ints[2], ints[3], ints[6], ints[7]
    at, count = 0, 0
    for s in range(len(seg_lo)):
        m = _prep(seg_lo[s], seg_hi[s], mask, times, hk, hok, lk, lok, ints, pair, ok, has_pred)
        for root in range(m):
            if not every and has_pred[root]:
                continue
            depth = 0
            path[0], stack[0] = root, succ_lo[root]
            if every or succ_lo[root] == succ_hi[root]:
                at, count = _emit(rows, sizes, segment, ev, path, 0, at, count, s)
            while depth >= 0:
                v = path[depth]
                k = stack[depth]
                if k >= succ_hi[v]:
                    depth -= 1
                    continue
                stack[depth] = k + 1
                w = order[k]
                depth += 1
                path[depth], stack[depth] = w, succ_lo[w]
                if every or succ_lo[w] == succ_hi[w]:
                    at, count = _emit(rows, sizes, segment, ev, path, depth, at, count, s)
    return at, count
