"""Walking (window, key) groups through the Arrow batches `mapInArrow` gives
a Python worker: rows arrive sorted by the group columns, and a group may
straddle two batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa


def group_starts(table: pa.Table, group_cols: list[str]) -> list[int]:
    """Row offsets where a new group begins (vectorised)."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    if n == 0:
        return []
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in group_cols:
        col = table.column(c)
        differs = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True)
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
