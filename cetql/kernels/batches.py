"""Walking (window, key) groups through the Arrow batches `mapInArrow` gives
a Python worker: rows arrive sorted by the group columns, and a group may
straddle two batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa


def group_starts(table: pa.Table, group_cols: list[str]) -> list[int]:
    """Row offsets where a new group begins (vectorised).  Keys compare as
    Spark groups them: NaN with NaN, -0.0 with 0.0, null with null."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    if n == 0:
        return []
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in group_cols:
        col = table.column(c)
        a, b = col.slice(1), col.slice(0, n - 1)
        differs = pc.not_equal(a, b)
        if pa.types.is_floating(col.type):  # NaN is unequal to itself in Arrow, equal in Spark
            differs = pc.and_kleene(differs, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        differs = pc.if_else(both_null, False, pc.fill_null(differs, True))
        change[1:] |= np.asarray(differs.to_numpy(zero_copy_only=False), dtype=bool)
    return np.flatnonzero(change).tolist()


def map_groups(
    group_cols: list[str], process: Callable[[pa.Table], Iterator[pa.RecordBatch]]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function given to `mapInArrow`: `process` sees only whole groups;
    the rows of the last, possibly unfinished group of a batch are carried
    into the next one."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        carry: pa.Table | None = None
        for batch in batches:
            table = pa.Table.from_batches([batch])
            if carry is not None and carry.num_rows:
                table = pa.concat_tables([carry, table]).combine_chunks()
            if table.num_rows == 0:
                continue
            cut = group_starts(table, group_cols)[-1]  # the last group may go on
            if cut > 0:
                yield from process(table.slice(0, cut))
            carry = table.slice(cut)
        if carry is not None and carry.num_rows:
            yield from process(carry)

    return fn


def window_groups(table: pa.Table, group_cols: list[str], block: int = 0, window_lo: str | None = None,
                  window_hi: str | None = None) -> list[tuple[int, int, int, list[tuple[int, int, int]]]]:  # fmt: skip
    """(start, end, first group value, [(start, end, window) of each window's
    rows]) of each group of a table sorted by the group columns, then time.
    Without blocks a group is one window (its first group column).  With
    blocks (`block` windows each, the first group column the block's index)
    a group holds several windows: window k's rows are those with
    window_lo <= k <= window_hi, one slice, since both columns grow with
    time; windows without rows are left out."""
    import numpy as np

    n = table.num_rows
    starts = group_starts(table, group_cols)
    ends = [*starts[1:], n]
    first = table.column(group_cols[0]).take(pa.array(starts, type=pa.int64())).to_pylist() if starts else []
    if not block:
        return [(a, z, k, [(a, z, k)]) for a, z, k in zip(starts, ends, first)]
    lo = np.asarray(table.column(window_lo).to_numpy(), dtype=np.int64)
    hi = np.asarray(table.column(window_hi).to_numpy(), dtype=np.int64)
    out = []
    for start, end, b in zip(starts, ends, first):
        glo, ghi = lo[start:end], hi[start:end]
        ks = np.arange(max(b * block, int(glo[0])), min((b + 1) * block - 1, int(ghi[-1])) + 1, dtype=np.int64)
        first_row = np.searchsorted(ghi, ks, "left")  # the first event whose last window is k or later
        past_row = np.searchsorted(glo, ks, "right")  # past the last event whose first window is k or earlier
        windows = [(start + int(i), start + int(j), int(k)) for k, i, j in zip(ks, first_row, past_row) if i < j]
        out.append((start, end, b, windows))
    return out


def segments(table: pa.Table, group_cols: list[str], block: int = 0, window_lo: str | None = None,
             window_hi: str | None = None) -> list[tuple[int, int, int]]:  # fmt: skip
    """(start, end, window) of each window's rows (see `window_groups`)."""
    return [w for *_, windows in window_groups(table, group_cols, block, window_lo, window_hi) for w in windows]
