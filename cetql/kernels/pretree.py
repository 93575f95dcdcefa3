"""A-Seq's Pre-Tree (SIGMOD'14 §4.1): the prefix counters of several
fixed-length SEQ queries, those of a common prefix kept once, each query
reading the counter of its own last position.

The counting is `aseq.count`'s, over whole columns at once: in a part (a
window, split by the equivalence sub-keys), an event at a node's position
adds its parent's count as it was before the event's time step (events of
equal time never chain), 1 at a root.  With prefix sums S of the parent's
contributions, the count an event reads is S(first row of its step) −
S(first row of the parent's last clear before its step): a negated event
between two positions clears the earlier one's count after its own step
has read it, so the count restarts with that step's contributions; before
the first position it stops new starts; after the last, it clears the
count the query reads.

Exact: counts in 64-bit integers while every prefix sum stays below 2^62
(checked from the sums in doubles), else in Python integers.  Only exact
COUNT(*) queries are given a tree (the plan's rule): approximate counts
add in `aseq`'s order of doubles, which sums in another order would not
match to the last digit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.kernels import spec as K
from cetql.kernels.aggregate import _final, aggregate_schema
from cetql.kernels.batches import group_starts, window_groups
from cetql.kernels.compare import key, time_keys
from cetql.kernels.errors import of_query
from cetql.kernels.workload_spec import PrefixTree, WorkloadSpec

SAFE = float(1 << 62)  # prefix sums below this are exact in int64 (doubles estimate them)


@dataclass
class Layout:
    """The rows of a table's windows, each window's rows split into parts
    (sub-key values), in time order: positions index `rows` (table rows;
    a row is repeated in every window of a block it falls in)."""

    rows: np.ndarray  # table row of each position, windows one after the other
    window_start: np.ndarray  # first position of each window
    window_key: list  # each window's index k
    window_row: np.ndarray  # a table row of each window (its group's keys)
    order: np.ndarray  # positions of the counted rows, by window, part, time
    part_start: np.ndarray  # for each of `order`: the index (into `order`) of its part's first row
    step_start: np.ndarray  # … of the first row of its time step
    part_first: np.ndarray  # index into `order` of each part's first row
    part_window: np.ndarray  # each part's window


def _windows(c: K.Columns, table: pa.Table):
    """(start, end, k) of each window's rows (slices of the table)."""
    if c.block:
        return [w for _, _, _, ws in window_groups(table, list(c.group), c.block, c.window_lo, c.window_hi) for w in ws]
    starts = group_starts(table, list(c.group))
    ends = [*starts[1:], table.num_rows]
    first = table.column(c.group[0]).take(pa.array(starts, type=pa.int64())).to_pylist() if starts else []
    return list(zip(starts, ends, first))


def _part_codes(table: pa.Table, subkeys: tuple[str, ...], rows: np.ndarray) -> np.ndarray:
    """A code per position: equal codes for equal sub-key values (as Spark
    compares them), -1 where one is null (in no part)."""
    if not subkeys:
        return np.zeros(len(rows), dtype=np.int64)
    columns = [table.column(s).take(pa.array(rows)).to_pylist() for s in subkeys]
    codes: dict[tuple, int] = {}
    out = np.empty(len(rows), dtype=np.int64)
    for i, values in enumerate(zip(*columns)):
        k = tuple(key(v) for v in values)
        out[i] = -1 if None in k else codes.setdefault(k, len(codes))
    return out


def layout(c: K.Columns, table: pa.Table, subkeys: tuple[str, ...]) -> Layout:
    windows = _windows(c, table)
    sizes = np.array([z - a for a, z, _ in windows], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    rows = np.concatenate([np.arange(a, z, dtype=np.int64) for a, z, _ in windows]) if windows else np.zeros(0, np.int64)
    window_of = np.repeat(np.arange(len(windows), dtype=np.int64), sizes)
    codes = _part_codes(table, subkeys, rows)
    keep = np.flatnonzero(codes >= 0)
    order = keep[np.lexsort((keep, codes[keep], window_of[keep]))]  # by window, part, then table order (time)
    n = len(order)
    t = time_keys(table.column(c.time).combine_chunks().take(pa.array(rows[order]))) if n else np.zeros(0, np.int64)
    new_part = np.ones(n, dtype=bool)
    new_part[1:] = (window_of[order][1:] != window_of[order][:-1]) | (codes[order][1:] != codes[order][:-1])
    new_step = new_part.copy()
    new_step[1:] |= t[1:] != t[:-1]
    at = np.arange(n, dtype=np.int64)
    part_start = np.maximum.accumulate(np.where(new_part, at, 0)) if n else at
    step_start = np.maximum.accumulate(np.where(new_step, at, 0)) if n else at
    part_first = np.flatnonzero(new_part)
    return Layout(rows, starts, [k for _, _, k in windows], np.array([a for a, _, _ in windows], dtype=np.int64),
                  order, part_start, step_start, part_first, window_of[order][part_first])  # fmt: skip


def _mask(table: pa.Table, column: str, at: np.ndarray) -> np.ndarray:
    col = pc.fill_null(table.column(column).combine_chunks(), False)
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=bool)[at]


def _any(table: pa.Table, columns: tuple[str, ...], at: np.ndarray) -> np.ndarray | None:
    if not columns:
        return None
    out = np.zeros(len(at), dtype=bool)
    for c in columns:
        out |= _mask(table, c, at)
    return out


def _sums(c: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums: S[i] = c[0] + … + c[i-1]."""
    out = np.zeros(len(c) + 1, dtype=c.dtype)
    np.cumsum(c, out=out[1:])
    return out


def _last_clear(lay: Layout, clears: np.ndarray | None) -> np.ndarray:
    """For each row: where its count restarts — the first row of the last
    step before its own with a clearing event in its part (else the part's
    first row)."""
    if clears is None or not clears.any():
        return lay.part_start
    marks = np.where(clears, lay.step_start, -1)
    latest = np.maximum.accumulate(marks)
    before = np.concatenate([[-1], latest[:-1]])[lay.step_start]  # over rows of earlier steps only
    return np.maximum(before, lay.part_start)


def _contributions(lay: Layout, parent, mask: np.ndarray, clears: np.ndarray | None, dtype):
    """Each row's contribution to a node's count."""
    if parent is None:  # a root: 1, unless a negated event came before (in an earlier step)
        c = mask.astype(dtype)
        if clears is not None and clears.any():
            seen = _sums(clears.astype(np.int64))
            c[(seen[lay.step_start] - seen[lay.part_start]) > 0] = 0
        return c
    s = _sums(parent)
    read = s[lay.step_start] - s[_last_clear(lay, clears)]
    return np.where(mask, read, np.zeros(1, dtype=dtype)).astype(dtype)


def _finals(lay: Layout, c: np.ndarray, clears: np.ndarray | None, windows: int, dtype) -> np.ndarray:
    """Each window's count: per part, the contributions since the last clear."""
    s = _sums(c)
    ends = np.append(lay.part_first[1:], len(c))
    if clears is not None and clears.any():
        marks = np.maximum.accumulate(np.where(clears, lay.step_start, -1))
        last = np.maximum(marks[ends - 1] if len(ends) else ends, lay.part_first)
    else:
        last = lay.part_first
    per_part = s[ends] - s[last]
    out = np.zeros(windows, dtype=dtype)
    np.add.at(out, lay.part_window, per_part)
    return out


def _backward(lay: Layout) -> Layout:
    """The layout's rows in reverse (each part from its last step to its
    first): the same counting, run from a window's end, gives suffix counts."""
    n = len(lay.order)
    at = np.arange(n, dtype=np.int64)

    def starts(first: np.ndarray) -> np.ndarray:
        ids = np.cumsum(first == at)[::-1]
        new = np.ones(n, dtype=bool)
        new[1:] = ids[1:] != ids[:-1]
        return np.maximum.accumulate(np.where(new, at, 0)) if n else at

    return replace(lay, part_start=starts(lay.part_start), step_start=starts(lay.step_start))


def _too_big(c: np.ndarray, dtype) -> bool:
    return dtype is not object and len(c) > 0 and float(np.add.reduce(c, dtype=np.float64)) >= SAFE


def _suffix_counts(table: pa.Table, tree: PrefixTree, lay: Layout, at: np.ndarray, dtype) -> list | None:
    """Each suffix node's contributions (in table time order), counted
    backward: the matches of its suffix starting at each event."""
    back, rat = _backward(lay), at[::-1]
    values: list = []
    for node in tree.suffixes:
        child = values[node.child] if node.child >= 0 else None
        c = _contributions(back, child, _mask(table, node.mask, rat), _any(table, node.clears, rat), dtype)
        if _too_big(c, dtype):
            return None
        values.append(c)
    return [np.ascontiguousarray(v[::-1]) for v in values]  # contiguous: every chop multiplies by it


def _connect(lay: Layout, f: np.ndarray, b: np.ndarray, windows: int, dtype) -> np.ndarray | None:
    """A chopped member's count per window: Σ F(e) × B(e) over its chop
    position's events, summed per part by prefix sums (None: past int64)."""
    if dtype is not object and len(f) and float(np.add.reduce(np.multiply(f, b, dtype=np.float64))) >= SAFE:
        return None  # (not np.dot: BLAS threads beside the kernel's own are slower than one pass)
    s = _sums(f * b)
    ends = np.append(lay.part_first[1:], len(f))
    out = np.zeros(windows, dtype=dtype)
    np.add.at(out, lay.part_window, s[ends] - s[lay.part_first])
    return out


def count_tree(table: pa.Table, tree: PrefixTree, lay: Layout, dtype) -> dict[int, np.ndarray] | None:
    """Each member's count per window (None: past int64, count again exactly)."""
    at = lay.rows[lay.order]
    values: dict[int, np.ndarray] = {}
    children = [0] * len(tree.nodes)
    for node in tree.nodes:
        if node.parent >= 0:
            children[node.parent] += 1
    kept = {e.node for e in tree.ends} | {c.node for c in tree.chops}
    for i, node in enumerate(tree.nodes):
        parent = values[node.parent] if node.parent >= 0 else None
        c = _contributions(lay, parent, _mask(table, node.mask, at), _any(table, node.clears, at), dtype)
        if _too_big(c, dtype):
            return None
        values[i] = c
        if node.parent >= 0:
            children[node.parent] -= 1
            if children[node.parent] == 0 and node.parent not in kept:
                del values[node.parent]
    windows = len(lay.window_key)
    out = {e.member: _finals(lay, values[e.node], _any(table, e.clears, at), windows, dtype) for e in tree.ends}
    suffix = _suffix_counts(table, tree, lay, at, dtype) if tree.chops else []
    if suffix is None:
        return None
    for ch in tree.chops:
        counts = _connect(lay, values[ch.node], suffix[ch.suffix], windows, dtype)
        if counts is None:
            return None
        out[ch.member] = counts
    return out


def tree_batches(spec: WorkloadSpec, tree: PrefixTree, table: pa.Table) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(member, its output batch) for every member of the tree, as
    `aggregate_table` gives it alone: a row for each window with one of
    its events."""
    lay = layout(spec.columns, table, tree.subkeys)
    counts = count_tree(table, tree, lay, np.int64)
    if counts is None:
        counts = count_tree(table, tree, lay, object)
    for member in tree.members:
        m = spec.members[member]
        taken = np.asarray(pc.fill_null(table.column(m.select).combine_chunks(), False).to_numpy(zero_copy_only=False),
                           dtype=bool)[lay.rows]  # fmt: skip
        present = np.logical_or.reduceat(taken, lay.window_start) if len(taken) else np.zeros(0, dtype=bool)
        with of_query(m.name):
            batch = _batch(m.spec, table, lay, counts[member], np.flatnonzero(present))
        yield member, batch


def _batch(spec: K.AggregateSpec, table: pa.Table, lay: Layout, counts: np.ndarray, windows: np.ndarray):
    schema = aggregate_schema(spec, table.schema)
    rows = pa.array(lay.window_row[windows], type=pa.int64())
    keys = [table.column(k).take(rows).combine_chunks().cast(schema.field(1 + i).type)
            for i, k in enumerate(spec.output_keys)]  # fmt: skip
    wk = [lay.window_key[w] for w in windows.tolist()]
    arrays = [pa.array(wk, type=schema.field(0).type), *keys]
    target = schema.field(len(arrays)).type
    if counts.dtype != object and (pa.types.is_string(target) or target == pa.decimal128(38, 0)):
        arrays.append(pa.array(counts[windows], type=pa.int64()).cast(target))  # below 2^62: as `_final` gives them
    else:
        values = [k.to_pylist() for k in keys]
        arrays.append(pa.array([_final(spec, 0, int(counts[w]), wk[j], [v[j] for v in values])
                                for j, w in enumerate(windows.tolist())], type=target))  # fmt: skip
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
