"""Detection over a sorted Arrow table: every group's parts walked, their
trends written as Arrow batches of event ids (and rows)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, repeat

import numpy as np
import pyarrow as pa

from cetql.base.options import TrendSet
from cetql.kernels import compiled_walk, greta, select
from cetql.kernels import spec as K
from cetql.kernels.batches import segments, window_groups
from cetql.kernels.columns import detect_schema, read_columns, template_columns  # noqa: F401 - detect_schema is also process's
from cetql.kernels.errors import TrendLimitExceeded, describe_group, describe_window, magnitude
from cetql.kernels.graph import Graph, Nodes, paths
from cetql.kernels.parts import Part, keyed_template, part_columns, parts
from cetql.kernels.runs import trend_nodes
from cetql.kernels.template import GroupTemplate
from cetql.kernels.walks import Walk


@dataclass
class Found:
    """A part's trends waiting for an output batch: where its rows are, and
    its trends end to end (node ids, converted to rows in bulk)."""

    first_row: int  # the group's first table row (its key columns are read there)
    window: int
    base: int  # the table row of the part's event 0, when its rows are a slice
    rows: np.ndarray | None  # the part's table rows, when they are not a slice
    nodes: Nodes  # what the walk's ids are
    flat: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)

    def table_rows(self) -> np.ndarray:
        events = self.nodes.events(self.flat)
        return self.rows[events] if self.rows is not None else events + self.base


def detect_table(spec: K.DetectSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """The trends of every group of a sorted table, in Arrow batches."""
    if table.num_rows == 0:
        return
    quick = compiled_walk.detect_batches(spec, table) if select.variant(spec, table.num_rows) == select.Variant.WALK \
        else None  # fmt: skip
    if quick is not None:  # the compiled walk (the same trends)
        yield from quick
        return
    cols, times = _columns(spec, table)
    schema = detect_schema(spec, table.schema)
    pending: list[Found] = []
    trends_held = events_held = 0
    for found, walk in _walks(spec, table, cols, times):
        pending.append(found)
        for path in walk:
            found.flat += path
            found.lengths.append(len(path))
            trends_held += 1
            events_held += len(path)
            if trends_held >= spec.batch_rows or events_held >= spec.batch_events:
                yield _trend_batch(spec, table, schema, pending)
                found = replace(found, flat=[], lengths=[])
                pending = [found]
                trends_held = events_held = 0
        if not found.lengths:  # no trend (left): nothing of this part waits for a batch
            pending.pop()
    if trends_held:
        yield _trend_batch(spec, table, schema, pending)


def _columns(spec: K.DetectSpec, table: pa.Table) -> tuple[dict, list]:
    """The columns the kernel reads, as lists, and the times."""
    return read_columns(table, template_columns(spec.template) | {k.column for k in spec.state_keys}, spec.columns)


def _parts(spec: K.DetectSpec, cols: dict, start: int, end: int) -> list[Part]:
    return [p for p in parts(cols, start, end, spec.template, (), spec.state_keys) if p.rows]


def _template(spec: K.DetectSpec) -> K.TemplateSpec:
    return keyed_template(spec.template, spec.state_keys) if spec.state_keys else spec.template


def _walks(spec: K.DetectSpec, table: pa.Table, cols: dict, times: list) -> Iterator[tuple[Found, Iterator]]:
    """(where a part's trends go, its trends as they are found) of each
    window's parts, in table order.  With a shared graph (the plan's
    choice), a block's graph is built once and each window walked on it."""
    c = spec.columns
    if spec.shared_graph and c.block:
        for start, end, _, windows in window_groups(table, list(c.group), c.block, c.window_lo, c.window_hi):
            for part in _parts(spec, cols, start, end):
                yield from _block_walks(spec, table, cols, times, part, windows)
        return
    for start, end, wk in segments(table, list(c.group), c.block, c.window_lo, c.window_hi):
        for part in _parts(spec, cols, start, end):
            yield from _window_walk(spec, table, cols, times, part, start, wk)


def _part_template(spec: K.DetectSpec, cols: dict, times: list, part: Part) -> tuple[GroupTemplate, int, np.ndarray | None]:  # fmt: skip
    """(the template of a part's rows, the row its offsets count from, its
    rows when they are not a slice)."""
    local, local_times = part_columns(cols, times, part)
    gt = GroupTemplate(_template(spec), local_times, local)
    if isinstance(part.rows, range):
        return gt, part.rows.start, None
    return gt, 0, np.asarray(part.rows, dtype=np.int64)


def _window_walk(spec: K.DetectSpec, table, cols: dict, times: list, part: Part, start: int, wk: int):
    """One window's part: its own graph, counted by the guard, then walked."""
    gt, base, at = _part_template(spec, cols, times, part)
    graph = Graph(gt, spec.max_edges)  # built once (or its index only): counted by the guard, then walked
    if spec.max_trends:
        _guard(spec, table, start, wk, *greta.count_trends(gt, gt.spec, spec.trend_set, spec.max_trends, graph))
    walk, nodes = trend_nodes(gt, spec.trend_set, gt.spec, graph)
    yield Found(start, wk, base, at, nodes), walk


def _slice(part: Part, lo: int, hi: int) -> Part:
    if isinstance(part.rows, range):
        return Part(part.rows[lo:hi])
    return Part(part.rows[lo:hi], {k: v[lo:hi] for k, v in part.masks.items()})


def _block_walks(spec: K.DetectSpec, table, cols: dict, times: list, part: Part, windows):
    """The windows of one block's part, walked on the part's one graph."""
    gt, base, at = _part_template(spec, cols, times, part)
    rows = part.rows
    if not gt.unique_states():  # an event of two states (the plan rules this out): each window on its own
        for w_start, w_end, wk in windows:
            lo, hi = bisect.bisect_left(rows, w_start), bisect.bisect_left(rows, w_end)
            if lo < hi:
                yield from _window_walk(spec, table, cols, times, _slice(part, lo, hi), w_start, wk)
        return
    graph = Graph(gt, spec.max_edges)
    walk = Walk(graph, spec.trend_set)
    limit = spec.max_trends
    # every window's trends are at most the block's start-to-end paths:
    # windows are counted one by one only when those are too many
    each = bool(limit) and greta.count_trends(gt, gt.spec, TrendSet.ALL, limit, graph)[0] > limit
    for w_start, w_end, wk in windows:
        lo, hi = bisect.bisect_left(rows, w_start), bisect.bisect_left(rows, w_end)
        if lo == hi:
            continue
        if each and not (graph.stored and paths(graph, lo, hi) <= limit):
            own, _, _ = _part_template(spec, cols, times, _slice(part, lo, hi))
            _guard(spec, table, w_start, wk, *greta.count_trends(own, own.spec, spec.trend_set, limit))
        yield Found(w_start, wk, base, at, graph.nodes), walk.window(lo, hi)


def _guard(spec: K.DetectSpec, table, row: int, wk: int, count, exact: bool) -> None:
    if count > spec.max_trends:
        raise TrendLimitExceeded(_too_many(spec, table, row, wk, count, exact))


def guard_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    return pa.schema([input_schema.field(g) for g in spec.columns.group])


def guard_table(spec: K.DetectSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """Count each (window, group) part's trends as detection does and fail
    with its message past `max_trends`; yields no row."""
    if table.num_rows == 0 or not spec.max_trends:
        return
    cols, times = _columns(spec, table)
    c = spec.columns
    for start, end, wk in segments(table, list(c.group), c.block, c.window_lo, c.window_hi):
        for part in _parts(spec, cols, start, end):
            gt, _, _ = _part_template(spec, cols, times, part)
            _guard(spec, table, start, wk, *greta.count_trends(gt, gt.spec, spec.trend_set, spec.max_trends))
    yield from ()


def group_graphs(spec: K.DetectSpec, table: pa.Table) -> Iterator[tuple[list[int], Graph]]:
    """(rows, run graph) of each part of the groups of a sorted table: the
    graph detection walks (for `cetql draw`; nodes are `graph.nodes` ids)."""
    if table.num_rows == 0:
        return
    cols, times = _columns(spec, table)
    c = spec.columns
    for start, end, _ in segments(table, list(c.group), c.block, c.window_lo, c.window_hi):
        for part in _parts(spec, cols, start, end):
            gt, _, _ = _part_template(spec, cols, times, part)
            yield list(part.rows), Graph(gt)


def _too_many(spec: K.DetectSpec, table, row: int, k: int, count, exact: bool) -> str:
    c = spec.columns
    keys = [table.column(g)[row].as_py() for g in c.group[1:]]
    shown = magnitude(count) if exact else f"at most {magnitude(count)}"
    return (
        f"{describe_window(spec.context, k)}, {describe_group(spec.context.key_names, keys)} would return {shown} "
        f"{spec.trend_set.value.lower()} trends, more than --max-trends {spec.max_trends:,}; ask for an aggregation "
        "(RETURN COUNT(*) …) or a narrower window, or raise --max-trends (0: no limit)"
    )


def _trend_batch(spec: K.DetectSpec, table, schema, pending: list[Found]) -> pa.RecordBatch:
    c = spec.columns
    pending = [p for p in pending if p.lengths]
    per_part = np.fromiter((len(p.lengths) for p in pending), dtype=np.int64, count=len(pending))
    starts = pa.array(np.repeat(np.fromiter((p.first_row for p in pending), dtype=np.int64, count=len(pending)),
                                per_part))  # fmt: skip
    windows = list(chain.from_iterable(repeat(p.window, len(p.lengths)) for p in pending))
    counts = np.concatenate([np.asarray(p.lengths, dtype=np.int32) for p in pending])
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int32))
    rows = pa.array(np.concatenate([p.table_rows() for p in pending]))
    arrays = [pa.array(windows, type=schema.field(0).type), *(table.column(g).take(starts) for g in c.group[1:])]
    arrays.append(pa.ListArray.from_arrays(offsets, table.column(c.id).take(rows).combine_chunks()))
    arrays.append(pa.array(counts))
    if c.row:
        arrays.append(pa.ListArray.from_arrays(offsets, table.column(c.row).take(rows).combine_chunks()))
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
