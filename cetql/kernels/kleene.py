"""COUNT(*) of all trends of `E+` whose one step has at most one equal or
range predicate (the plan's KLEENE_COUNT): GRETA's propagation with plain
numbers instead of vectors.

Each event's count is 1 + the sum of its predecessors' counts (events of
equal time never precede each other, so a run of ties reads the sums before
any of them is added); COUNT(*) is the sum of every count.  Predecessors are
summed by the attribute index (`index.sums`: one sum a rank for =, the one
Fenwick tree for a range): O(n log n).  `kleene_count_windows` does it for
every window of a block at once (a count per window an event falls in);
`scan=True` is GRETA's own predecessor scan, O(n²), kept for comparison
(bench/aggregate.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from cetql.kernels.compare import COMPARATORS, MIRROR
from cetql.kernels.index import ByKey, Fenwick, sums
from cetql.kernels.template import Step


def tie_runs(times: Sequence):
    """(i, j) of each run of equal times."""
    n, i = len(times), 0
    while i < n:
        j = i
        while j < n and times[j] == times[i]:
            j += 1
        yield i, j
        i = j


class Predecessors(NamedTuple):
    """How an event's predecessors are summed along the step's one indexed
    predicate: inserted at the rank of their h (`at`), a later event f
    queries with the rank of its lval (`probe`), for ranks r with
    `lval[f] OP r`, i.e. `r MIRROR(OP) lval[f]`."""

    sums: ByKey | Fenwick
    at: list
    probe: list
    size: int  # the number of ranks (a range), 0 (=)


def _predecessors(step: Step, zero) -> Predecessors | None:
    """None without a predicate: every earlier event is a predecessor."""
    if not step.indexes:
        return None
    (idx,) = step.indexes
    return Predecessors(sums(idx.size, MIRROR[idx.op], zero), idx.h, idx.lval, idx.size)


def kleene_count(times: Sequence, step: Step, approx: bool = False, scan: bool = False):
    """COUNT(*) of E+ in one group (see the module)."""
    zero, one = (0.0, 1.0) if approx else (0, 1)
    if scan:
        return _scan_count(times, step, approx)
    total = zero
    pred = _predecessors(step, zero)
    if pred is None:
        running = zero
        for i, j in tie_runs(times):
            c = one + running
            running += c * (j - i)
            total += c * (j - i)
        return total
    insert, query, at, probe = pred.sums.insert, pred.sums.query, pred.at, pred.probe
    tied: list[tuple] = []  # events whose next event has their time: inserted once the time changes
    last = len(times) - 1
    for e in range(last + 1):
        c = one + query(probe[e])
        total += c
        if e < last and times[e + 1] == times[e]:
            tied.append((at[e], c))
            continue
        for r, v in tied:
            insert(r, v)
        tied.clear()
        insert(at[e], c)
    return total


def kleene_count_windows(times: Sequence, step: Step, first: Sequence[int], last: Sequence[int], width: int,
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
    dtype = np.float64 if approx else object  # object: exact Python ints (np.zeros fills them with int 0)
    zero = np.zeros(width, dtype=dtype)
    total = zero.copy()
    pred = _predecessors(step, zero)
    if pred is not None and ((pred.size or len(set(pred.at))) + 1) * width > max_cells:  # a vector a value
        return None
    running = zero.copy()  # without a predicate: the sum of every earlier event's vector
    for i, j in tie_runs(times):
        counts = []
        for e in range(i, j):
            a, b = first[e], last[e] + 1
            acc = zero.copy()
            before = running if pred is None else pred.sums.query(pred.probe[e])
            acc[a:b] = 1 + before[a:b]
            counts.append(acc)
        for e, c in zip(range(i, j), counts):
            total += c
            if pred is None:
                running += c
            else:
                pred.sums.insert(pred.at[e], c)
    return total


def _scan_count(times: Sequence, step: Step, approx: bool):
    """GRETA's predecessor scan, vectorised with numpy over ranks."""
    n = len(times)
    if step.indexes:
        (idx,) = step.indexes
        lval, h, cmp = idx.lval, idx.h, COMPARATORS[idx.op]
    else:
        lval = h = [0] * n
        cmp = COMPARATORS["="]
    dtype = np.float64 if approx else object
    t = np.asarray(times, dtype=np.float64)
    present = np.asarray([r is not None for r in h], dtype=bool)
    hv = np.asarray([-1 if r is None else r for r in h], dtype=np.int64)
    counts = np.zeros(n, dtype=dtype)
    for j in range(n):
        q = lval[j]
        if q is None:
            mask = np.zeros(j, dtype=bool)
        else:
            mask = (t[:j] < t[j]) & present[:j] & np.asarray(cmp(q, hv[:j]), dtype=bool)
        counts[j] = (1.0 if approx else 1) + counts[:j][mask].sum()
    return counts.sum() if n else (0.0 if approx else 0)
