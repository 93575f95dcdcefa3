"""The compiled COUNT(*) of E+ (`select.Variant.COUNT`): whole tables as
numpy arrays, the hot loops in `jit` (int64, or doubles when approximate)
and `jit_wide` (limbs, for exact counts past 64 bits), over columns of
every type (`compare.arrow_keys`).  Where it runs is `select`'s decision;
the shared helpers (segments, keys, times) serve `compiled_walk` too.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.kernels import opcodes as O
from cetql.kernels import spec as K
from cetql.kernels.batches import group_starts
from cetql.kernels.batches import segments as listed
from cetql.kernels.compare import MIRROR, arrow_keys, time_keys

OPS = {None: O.NONE, "=": O.EQ, "<": O.LT, "<=": O.LE, ">": O.GT, ">=": O.GE}


# Exact counts of segments longer than this start in `jit_wide`'s limbs: a
# count of n events can pass int64 from n = 64 on, and on random-walk prices
# with a range predicate 370 of 410 windows of 1,000 events did, so trying
# int64 first costs a third more there (bench/kernels.py, A W1000 exact).
WIDE_FROM = 256


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _numeric(a: pa.Array, dtype) -> np.ndarray:
    return np.asarray(pc.fill_null(a, 0).to_numpy(zero_copy_only=False), dtype=dtype)


def keys(a: pa.Array, b: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both columns as int64 keys in SQL order, and their validity (`compare.arrow_keys`)."""
    return arrow_keys(a, b)


def times(table: pa.Table, name: str) -> np.ndarray | None:
    a = _column(table, name)
    return None if a.null_count else time_keys(a)


def segments(c: K.Columns, table: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """(first row, past the last row, window key) of each (window, group)
    of a sorted table, as `batches.segments` gives them."""

    if c.block:
        found = listed(table, list(c.group), c.block, c.window_lo, c.window_hi)
        lo = np.fromiter((w[0] for w in found), dtype=np.int64, count=len(found))
        hi = np.fromiter((w[1] for w in found), dtype=np.int64, count=len(found))
        return lo, hi, pa.array([w[2] for w in found], type=table.schema.field(c.group[0]).type)
    lo = np.asarray(group_starts(table, list(c.group)), dtype=np.int64)
    hi = np.append(lo[1:], table.num_rows)
    return lo, hi, _column(table, c.group[0]).take(pa.array(lo))


# ---------------------------------------------------------------- aggregation


def aggregate_counts(spec: K.AggregateSpec, table: pa.Table, lo: np.ndarray, hi: np.ndarray) -> list | None:
    """COUNT(*) of E+ for each segment (rows lo[s] … hi[s] - 1): ints
    (or floats when approximate; exact counts past int64 in `jit_wide`'s
    limbs), None where even those overflowed (the caller counts those with
    the reference); None when the path does not apply to this table."""
    (tr,) = spec.template.transitions
    preds = [(lc, "=", hc) for lc, hc in tr.equal] + list(tr.ranges)
    if len(preds) > 1 or tr.others:
        return None
    t = times(table, spec.columns.time)
    if t is None:
        return None
    n = table.num_rows
    if preds:
        ((lc, op, hc),) = preds
        probe, probe_ok, at, at_ok = keys(_column(table, lc), _column(table, hc))
        code = OPS[MIRROR[op]]  # inserted at h's key r, a later event's probe q: `r MIRROR(op) q`
    else:
        probe = at = np.zeros(n, dtype=np.int64)
        probe_ok = at_ok = np.zeros(n, dtype=bool)
        code = O.NONE
    t, at, at_ok, probe, probe_ok = map(_read_only, (t, at, at_ok, probe, probe_ok))
    from cetql.kernels import jit  # start-up cost: numba's import, only where a compiled loop runs

    if spec.approx:
        one = np.float64(1.0)
        totals, _ = jit.kleene_counts(lo, hi, t, at, at_ok, probe, probe_ok, code, one * 0, one, np.float64(np.inf))
        return totals.tolist()
    return _exact_counts(lo, hi, t, at, at_ok, probe, probe_ok, code)


def _read_only(a: np.ndarray) -> np.ndarray:
    """`a` as a read-only view: numba compiles a loop once per argument
    types, and an array's writability is one of them (Arrow's arrays are
    read-only, a copy writable); one kind for every loop the counts call
    (int64, doubles, limbs), so the loops a serve's warm-up loaded are the
    ones its runs call."""
    view = a.view()
    view.setflags(write=False)
    return view


def _exact_counts(lo, hi, t, at, at_ok, probe, probe_ok, code) -> list:
    """Exact counts: int64 where it may hold, limbs where it overflowed or
    is likely to (`WIDE_FROM`), None past the limbs (`jit_wide.limbs_for`)."""
    from cetql.kernels import jit, jit_wide  # start-up cost: numba's import, only where a compiled loop runs

    args = (t, at, at_ok, probe, probe_ok, code)
    long = hi - lo > WIDE_FROM
    short = np.flatnonzero(~long)
    totals, over = jit.kleene_counts(lo[short], hi[short], *args, np.int64(0), np.int64(1), np.int64(O.LIMIT))
    out: list = [None] * len(lo)
    for k, v in zip(short.tolist(), totals.tolist()):
        out[k] = v
    todo = np.sort(np.concatenate([np.flatnonzero(long), short[over]]))
    if len(todo):
        wide, over = jit_wide.kleene_counts_wide(lo[todo], hi[todo], *args, jit_wide.limbs_for(int((hi - lo)[todo].max())))
        for k in np.flatnonzero(~over).tolist():
            out[todo[k]] = jit_wide.to_int(wide[k])
    return out
