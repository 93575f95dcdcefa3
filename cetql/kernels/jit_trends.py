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

`trend_rows` prepares each segment's graph once (its keys coded by a hash,
`jit.equal_codes`: only equality is asked), counts its trends and trend
events (one backward pass over the edges, saturating at 2^62) and, unless
they pass the limit, writes them as table rows into buffers it grows; a
segment past the limit stops it before anything is returned.
"""

from __future__ import annotations

import numpy as np

from cetql.kernels.jit import equal_codes, new_slots, njit

CAP = 1 << 62


@njit
def _buffers(seg_lo, seg_hi):
    width = 1
    for s in range(len(seg_lo)):
        width = max(width, seg_hi[s] - seg_lo[s])
    ints = np.empty((8, 2 * width + 1), dtype=np.int64)  # ev, order, succ_lo, succ_hi, first_h, cursor, path, stack
    pair = np.empty((2, 2 * width), dtype=np.int64)  # keys, codes
    ok = np.empty(2 * width, dtype=np.bool_)
    return ints, pair, ok, new_slots(2 * width)


@njit
def _prep(lo, hi, mask, times, hk, hok, lk, lok, ints, pair, ok, slots, has_pred):
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
    size = equal_codes(both[: 2 * m], ok[: 2 * m], codes[: 2 * m], slots)
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
def _count(m, every, succ_lo, succ_hi, order, has_pred, paths, lengths):
    """The segment's trends and trend events (saturating at CAP), one
    backward pass over its edges: paths[j] — the trends from node j on,
    lengths[j] — their events."""
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
    return t_sum, e_sum


@njit
def _grown(a, need):
    """`a`, or a copy of it at least `need` long (half as long again, at least)."""
    if need <= len(a):
        return a
    b = np.empty(max(need, len(a) + len(a) // 2), dtype=a.dtype)
    b[: len(a)] = a
    return b


@njit
def trend_rows(seg_lo, seg_hi, mask, times, hk, hok, lk, lok, every, limit):
    """Each segment's trends, one pass a segment: its graph prepared once,
    counted (`_count`), then — unless its trends pass `limit` or CAP — walked
    depth first into growing buffers.  Returns (rows: the trends' table rows
    one after another, sizes: each trend's length, segment: each trend's
    segment index, trends and trend events per segment, done: False when a
    segment passed the limit or CAP, and nothing of the table is to be
    written)."""
    ns = len(seg_lo)
    trends = np.zeros(ns, dtype=np.int64)
    events = np.zeros(ns, dtype=np.int64)
    ints, pair, ok, slots = _buffers(seg_lo, seg_hi)
    width = ints.shape[1]
    paths = np.empty(width, dtype=np.int64)
    lengths = np.empty(width, dtype=np.int64)
    has_pred = np.empty(width, dtype=np.bool_)
    ev, order, succ_lo, succ_hi, path, stack = ints[0], ints[1], ints[2], ints[3], ints[6], ints[7]
    rows = np.empty(max(16, seg_hi[ns - 1] - seg_lo[0] if ns else 0), dtype=np.int64)  # grown as trends need
    sizes = np.empty(max(16, len(rows) // 2), dtype=np.int32)
    segment = np.empty(len(sizes), dtype=np.int64)
    at, count = 0, 0
    for s in range(ns):
        m = _prep(seg_lo[s], seg_hi[s], mask, times, hk, hok, lk, lok, ints, pair, ok, slots, has_pred)
        t_sum, e_sum = _count(m, every, succ_lo, succ_hi, order, has_pred, paths, lengths)
        if t_sum >= CAP or e_sum >= CAP or t_sum > limit:
            return rows[:0], sizes[:0], segment[:0], trends, events, False
        trends[s], events[s] = t_sum, e_sum
        rows = _grown(rows, at + e_sum)
        sizes = _grown(sizes, count + t_sum)
        segment = _grown(segment, count + t_sum)
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
    return rows[:at], sizes[:count], segment[:count], trends, events, True


@njit
def _emit(rows, sizes, segment, ev, path, depth, at, count, s):
    for d in range(depth + 1):
        rows[at + d] = ev[path[d]]
    sizes[count], segment[count] = depth + 1, s
    return at + depth + 1, count + 1
