"""Detection by the compiled walk (`jit_trends`, `select.Variant.WALK`): E+
with one equal predicate, ALL or COMPLETE trends, written straight into
Arrow buffers; None for a table it does not apply to (the reference,
`detect`, runs).  Where it runs is `select`'s decision.

A window whose trends pass --max-trends, or whose count passes 2^62, is
left to the reference as a whole (it raises the one error with its
numbers): the compiled path decides before it writes anything.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.base.options import TrendSet
from cetql.kernels import spec as K
from cetql.kernels.columns import detect_schema
from cetql.kernels.compiled_count import _column, keys, segments
from cetql.kernels.compiled_count import times as fast_times


def detect_batches(spec: K.DetectSpec, table: pa.Table) -> list[pa.RecordBatch] | None:
    """The trends of every window of a sorted table, or None (see the module)."""
    c, t = spec.columns, spec.template
    ((lc, hc),) = t.transitions[0].equal
    times = fast_times(table, c.time)
    if times is None:
        return None
    lk, lok, hk, hok = keys(_column(table, lc), _column(table, hc))
    mask = np.asarray(pc.fill_null(_column(table, t.states[0].mask), False).to_numpy(zero_copy_only=False), dtype=bool)
    lo, hi, wk = segments(c, table)
    every = spec.trend_set is TrendSet.ALL
    from cetql.kernels import jit_trends  # start-up cost: numba's import, only where a compiled loop runs

    limit = spec.max_trends or jit_trends.CAP
    rows, sizes, seg, trends, events, done = jit_trends.trend_rows(lo, hi, mask, times, hk, hok, lk, lok, every, limit)
    if not done:
        return None
    schema = detect_schema(spec, table.schema)
    t_at = np.concatenate([[0], np.cumsum(trends)])  # segment s's trends: t_at[s] … t_at[s + 1] - 1
    e_at = np.concatenate([[0], np.cumsum(events)])
    return [_batch(spec, table, schema, wk, lo, rows[e_at[a]:e_at[z]], sizes[t_at[a]:t_at[z]], seg[t_at[a]:t_at[z]])
            for a, z in _cuts(trends, events, spec.batch_rows, spec.batch_events)]  # fmt: skip


def _cuts(trends: np.ndarray, events: np.ndarray, rows: int, held: int) -> Iterator[tuple[int, int]]:
    """Runs of segments whose trends fit one batch (a segment alone may pass)."""
    a, n_t, n_e = 0, 0, 0
    for s in np.flatnonzero(trends).tolist():
        if n_t and (n_t + trends[s] > rows or n_e + events[s] > held):
            yield a, s
            a, n_t, n_e = s, 0, 0
        n_t += int(trends[s])
        n_e += int(events[s])
    if n_t:
        yield a, len(trends)


def _batch(spec: K.DetectSpec, table, schema, wk, lo, rows, sizes, seg):
    """One batch of trends: their rows one after another, each one's length
    and segment."""
    c = spec.columns
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int32))
    taken = pa.array(rows)
    arrays = [wk.take(pa.array(seg)).cast(schema.field(0).type)]
    arrays += [_column(table, g).take(pa.array(lo[seg])) for g in c.group[1:]]
    arrays.append(pa.ListArray.from_arrays(offsets, _column(table, c.id).take(taken)))
    arrays.append(pa.array(sizes))
    if c.row:
        arrays.append(pa.ListArray.from_arrays(offsets, _column(table, c.row).take(taken)))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
