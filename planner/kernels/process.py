"""The Arrow layer of the kernels: what Spark's `mapInArrow` calls.

    detect_fn(spec)      RecordBatches sorted by (group, time, id) → trends
    aggregate_fn(spec)   … → one row of aggregates per group
    detect_schema / aggregate_schema: the one definition of each output schema
    (the Spark side converts it to Spark's)

Pure pyarrow and Python: tests run these functions directly, without Spark.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from decimal import Decimal
from itertools import chain, product, repeat

import numpy as np
import pyarrow as pa

from . import greta
from . import spec as K
from .aseq import count as aseq_count
from .batches import map_groups, segments, window_groups
from .errors import AggregateOverflow, TrendLimitExceeded, describe_group, describe_window, digits, magnitude
from .graph import Graph, SharedWalk, trend_nodes
from .template import GroupTemplate, Step

DEC38 = pa.decimal128(38, 0)
MAX38 = 10**38 - 1


def _template_columns(t: K.TemplateSpec) -> list[str]:
    names = [s.mask for s in t.states]
    for tr in t.transitions:
        names += [c for pair in tr.equal for c in pair] + [c for lc, _, hc in tr.ranges for c in (lc, hc)]
        names += _expr_columns(tr.others)
    names += _expr_columns([c.expr for c in t.cross])
    for neg in t.negations:
        names += _template_columns(neg.template)
    return names


def _expr_columns(exprs) -> list[str]:
    out = []

    def walk(e):
        if e[0] == "col":
            out.append(e[2])
        elif e[0] in ("and", "or"):
            for x in e[1]:
                walk(x)
        else:
            for x in e[1:]:
                if isinstance(x, tuple):
                    walk(x)

    for e in exprs:
        walk(e)
    return out


# ---------------------------------------------------------------- detection


def detect_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    c = spec.columns
    fields = [input_schema.field(g) for g in c.group]
    fields += [pa.field("events", pa.list_(input_schema.field(c.id).type)), pa.field("length", pa.int32())]
    if c.row:
        fields.append(pa.field("rows", pa.list_(input_schema.field(c.row).type)))
    return pa.schema(fields)


def detect_fn(spec: K.DetectSpec):
    """The function given to `mapInArrow` for detection."""
    return map_groups(list(spec.columns.group), lambda table: detect_table(spec, table))


def _segments(spec, table: pa.Table) -> list[tuple[int, int, int]]:
    c = spec.columns
    return segments(table, list(c.group), c.block, c.window_lo, c.window_hi)


def _parts(spec, cols: dict, start: int, end: int) -> list[tuple[range | list[int], dict]]:
    """(rows, columns) of each part of a group: shared sub-keys split the
    group (a null key: in no trend); state keys ([v.k], the plan's PARTS)
    split it into one part per combination of the keyed states' values, in
    which a keyed state's mask holds only for events of that value (the plan
    guarantees every trend binds each keyed state, so a trend lies in one
    part)."""
    shared = getattr(spec, "shared_subkeys", ())
    state_keys = getattr(spec, "state_keys", ())
    if shared:
        by_shared: dict[tuple, list[int]] = {}
        for r in range(start, end):
            key = tuple(cols[c][r] for c in shared)
            if any(k is None for k in key):
                continue
            by_shared.setdefault(key, []).append(r)
        groups = list(by_shared.values()) or [[]]
    else:
        groups = [range(start, end)]
    if not state_keys:
        return [(rows, cols) for rows in groups]
    masks = {s.name: s.mask for s in spec.template.states}
    out = []
    for rows in groups:
        values = [sorted({cols[k.column][r] for r in rows if cols[masks[k.state]][r] is True
                          and cols[k.column][r] is not None}, key=repr) for k in state_keys]  # fmt: skip
        for combo in product(*values):
            part = dict(cols)
            for k, v in zip(state_keys, combo):
                m, key = cols[masks[k.state]], cols[k.column]
                part[masks[k.state]] = [m[r] is True and key[r] == v for r in range(len(m))]
            out.append((rows, part))
    return out or [([], cols)]


def detect_table(spec: K.DetectSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """The trends of every group of a sorted table, in Arrow batches."""
    n = table.num_rows
    if n == 0:
        return
    c = spec.columns
    names = set(_template_columns(spec.template)) | set(getattr(spec, "shared_subkeys", ()))
    names |= {k.column for k in getattr(spec, "state_keys", ())}
    cols = {name: table.column(name).to_pylist() for name in names if name in table.column_names}
    times = table.column(c.time).to_pylist()
    schema = detect_schema(spec, table.schema)
    # Trends waiting for the next batch, by part: (the group's first row,
    # its window, the row event offsets count from, the part's rows when it is
    # not a slice of the table, the divisor from the walk's ids to event
    # offsets, the part's trends end to end, their lengths).
    pending: list[tuple] = []
    trends_held = events_held = 0
    max_trends, max_events = spec.batch_rows, spec.batch_events
    for part, walk in _walks(spec, table, cols, times):
        flat: list[int] = []  # the part's trends, one after another (no list kept per trend)
        lengths: list[int] = []
        pending.append((*part, flat, lengths))
        for path in walk:
            flat += path
            lengths.append(len(path))
            trends_held += 1
            events_held += len(path)
            if trends_held >= max_trends or events_held >= max_events:
                yield _trend_batch(spec, table, schema, pending)
                flat, lengths = [], []
                pending = [(*part, flat, lengths)]
                trends_held = events_held = 0
        if not lengths:  # no trend (left): nothing of this part waits for a batch
            pending.pop()
    if trends_held:
        yield _trend_batch(spec, table, schema, pending)


def _walks(spec: K.DetectSpec, table: pa.Table, cols: dict, times: list) -> Iterator[tuple[tuple, Iterator]]:
    """(part, its trends as they are found) of each window's parts, in table
    order; a part is (the window's first row, the window, the row event
    offsets count from, the part's rows when not a slice, the divisor from
    the walk's ids to event offsets).  With a shared graph (the plan's
    choice), a block's graph is built once and each window walked on it."""
    c = spec.columns
    if spec.shared_graph and c.block:
        for start, end, _, windows in window_groups(table, list(c.group), c.block, c.window_lo, c.window_hi):
            for rows, pcols in _parts(spec, cols, start, end):
                if rows:
                    yield from _block_walks(spec, table, pcols, times, rows, windows)
        return
    for start, end, wk in _segments(spec, table):
        for rows, pcols in _parts(spec, cols, start, end):
            if rows:
                yield from _window_walk(spec, table, pcols, times, rows, start, wk)


def _part_template(spec, cols: dict, times: list, rows) -> tuple[GroupTemplate, int, np.ndarray | None]:
    """(the template of a part's rows, the row its offsets count from, its
    rows when they are not a slice)."""
    if isinstance(rows, range):  # the whole group: slices
        a, z = rows.start, rows.stop
        local = {k: v[a:z] for k, v in cols.items()}
        return GroupTemplate(spec.template, times[a:z], local), a, None
    local = {k: [v[r] for r in rows] for k, v in cols.items()}
    return GroupTemplate(spec.template, [times[r] for r in rows], local), 0, np.asarray(rows, dtype=np.int64)


def _window_walk(spec, table, cols, times, rows, start: int, wk: int):
    """One window's part: its own graph, counted by the guard, then walked."""
    gt, base, at = _part_template(spec, cols, times, rows)
    graph = Graph(gt, spec.max_edges)  # built once (or its index only): counted by the guard, then walked
    if spec.max_trends:
        _guard(spec, table, start, wk, *greta.count_trends(gt, spec.template, spec.trend_set, spec.max_trends, graph))
    walk, per_event = trend_nodes(gt, spec.trend_set, spec.template, graph)
    yield (start, wk, base, at, per_event), walk


def _block_walks(spec, table, cols, times, rows, windows):
    """The windows of one block's part, walked on the part's one graph."""
    gt, base, at = _part_template(spec, cols, times, rows)
    sliced = isinstance(rows, range)
    if not gt.unique_states():  # an event of two states (the plan rules this out): each window on its own
        for w_start, w_end, wk in windows:
            sub = range(w_start, w_end) if sliced else [r for r in rows if w_start <= r < w_end]
            if sub:
                yield from _window_walk(spec, table, cols, times, sub, w_start, wk)
        return
    graph = Graph(gt, spec.max_edges)
    shared = SharedWalk(graph, spec.trend_set)
    limit = spec.max_trends
    # every window's trends are at most the block's start-to-end paths:
    # windows are counted one by one only when those are too many
    each = bool(limit) and greta.count_trends(gt, spec.template, "ALL", limit, graph)[0] > limit
    for w_start, w_end, wk in windows:
        if sliced:
            lo, hi = w_start - rows.start, w_end - rows.start
        else:
            lo, hi = bisect.bisect_left(rows, w_start), bisect.bisect_left(rows, w_end)
        if lo == hi:
            continue
        if each and not (graph.stored and shared.paths(lo, hi) <= limit):
            sub = range(w_start, w_end) if sliced else rows[lo:hi]
            own, _, _ = _part_template(spec, cols, times, sub)
            _guard(spec, table, w_start, wk, *greta.count_trends(own, spec.template, spec.trend_set, limit))
        yield (w_start, wk, base, at, graph.S), shared.window(lo, hi)


def _guard(spec, table, row: int, wk: int, count, exact: bool) -> None:
    if count > spec.max_trends:
        raise TrendLimitExceeded(_too_many(spec, table, row, wk, count, exact))


def guard_schema(spec: K.DetectSpec, input_schema: pa.Schema) -> pa.Schema:
    return pa.schema([input_schema.field(g) for g in spec.columns.group])


def guard_fn(spec: K.DetectSpec):
    """For the distributed strategy: count each group's trends as the local
    kernel does and fail with its message past `max_trends`; yields no row."""
    return map_groups(list(spec.columns.group), lambda table: guard_table(spec, table))


def guard_table(spec: K.DetectSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    if table.num_rows == 0 or not spec.max_trends:
        return
    names = set(_template_columns(spec.template))
    cols = {name: table.column(name).to_pylist() for name in names if name in table.column_names}
    times = table.column(spec.columns.time).to_pylist()
    for start, end, wk in _segments(spec, table):
        for rows, pcols in _parts(spec, cols, start, end):
            if rows:
                gt, _, _ = _part_template(spec, pcols, times, rows)
                _guard(spec, table, start, wk, *greta.count_trends(gt, spec.template, spec.trend_set, spec.max_trends))
    yield from ()


def group_graphs(spec: K.DetectSpec, table: pa.Table) -> Iterator[tuple[list[int], Graph]]:
    """(rows, run graph) of each part of the groups of a sorted table: the
    graph detection walks (for `cetql draw`; nodes are `event * S + state`)."""
    n = table.num_rows
    if n == 0:
        return
    c = spec.columns
    names = set(_template_columns(spec.template)) | set(getattr(spec, "shared_subkeys", ()))
    names |= {k.column for k in getattr(spec, "state_keys", ())}
    cols = {name: table.column(name).to_pylist() for name in names if name in table.column_names}
    times = table.column(c.time).to_pylist()
    for start, end, _ in _segments(spec, table):
        for rows, pcols in _parts(spec, cols, start, end):
            if rows:
                local = {k: [v[r] for r in rows] for k, v in pcols.items()}
                yield rows, Graph(GroupTemplate(spec.template, [times[r] for r in rows], local))


def _too_many(spec: K.DetectSpec, table, row: int, k: int, count, exact: bool) -> str:
    c = spec.columns
    keys = [table.column(g)[row].as_py() for g in c.group[1:]]
    shown = magnitude(count) if exact else f"at most {magnitude(count)}"
    return (
        f"{describe_window(spec.context, k)}, {describe_group(spec.context.key_names, keys)} would return {shown} "
        f"{str(spec.trend_set).lower()} trends, more than --max-trends {spec.max_trends:,}; ask for an aggregation "
        "(RETURN COUNT(*) …) or a narrower window, or raise --max-trends (0: no limit)"
    )


def _trend_batch(spec, table, schema, pending) -> pa.RecordBatch:
    c = spec.columns
    pending = [p for p in pending if p[6]]
    per_part = np.fromiter((len(p[6]) for p in pending), dtype=np.int64, count=len(pending))
    starts = pa.array(np.repeat(np.fromiter((p[0] for p in pending), dtype=np.int64, count=len(pending)), per_part))
    windows = list(chain.from_iterable(repeat(p[1], len(p[6])) for p in pending))
    counts = np.concatenate([np.asarray(p[6], dtype=np.int32) for p in pending])
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int32))
    pieces = []
    for _, _, base, rows, per_event, flat, _ in pending:
        ids = np.asarray(flat, dtype=np.int64)
        if per_event != 1:
            ids //= per_event
        pieces.append(rows[ids] if rows is not None else ids + base)
    rows = pa.array(np.concatenate(pieces))
    arrays = [pa.array(windows, type=schema.field(0).type), *(table.column(g).take(starts) for g in c.group[1:])]
    arrays.append(pa.ListArray.from_arrays(offsets, table.column(c.id).take(rows).combine_chunks()))
    arrays.append(pa.array(counts))
    if c.row:
        arrays.append(pa.ListArray.from_arrays(offsets, table.column(c.row).take(rows).combine_chunks()))
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# ---------------------------------------------------------------- aggregation


def _output_type(spec: K.AggregateSpec, t: K.Target):
    if t.func in ("AVG", "MIN", "MAX") or spec.approx or t.kind == "double":
        return pa.float64()
    if spec.exact == K.Exact.STRING:
        return pa.string()
    if t.kind.startswith("decimal:"):
        return pa.decimal128(38, int(t.kind.split(":")[1]))
    return DEC38


def aggregate_schema(spec: K.AggregateSpec, input_schema: pa.Schema) -> pa.Schema:
    fields = [input_schema.field(spec.columns.group[0])]
    fields += [input_schema.field(k) for k in spec.output_keys]
    fields += [pa.field(t.name, _output_type(spec, t)) for t in spec.targets]
    return pa.schema(fields)


def aggregate_fn(spec: K.AggregateSpec):
    """The function given to `mapInArrow` for aggregation."""
    return map_groups(list(spec.columns.group), lambda table: aggregate_table(spec, table))


def aggregate_table(spec: K.AggregateSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    n = table.num_rows
    if n == 0:
        return
    names = set(_template_columns(spec.template)) | {t.value for t in spec.targets if t.value}
    names |= set(spec.shared_subkeys) | {k.column for k in spec.state_keys}
    cols = {name: table.column(name).to_pylist() for name in names if name in table.column_names}
    times = table.column(spec.columns.time).to_pylist()
    outputs = {k: table.column(k).to_pylist() for k in spec.output_keys}
    schema = aggregate_schema(spec, table.schema)
    out: list[list] = [[] for _ in schema]

    def emit(wk, start, totals):
        group = [outputs[k][start] for k in spec.output_keys]
        row = [wk, *group, *(_final(spec, i, v, wk, group) for i, v in enumerate(totals))]
        for i, v in enumerate(row):
            out[i].append(v)

    c = spec.columns
    for start, end, b, windows in window_groups(table, list(c.group), c.block, c.window_lo, c.window_hi):
        shared = _propagate_block(spec, table, cols, times, start, end, b) if spec.propagate else None
        if shared is not None:  # every window of the block in one pass
            for w_start, _, wk in windows:
                emit(wk, w_start, [shared[wk - b * c.block]])
            continue
        for w_start, w_end, wk in windows:
            totals = None
            for rows, pcols in _parts(spec, cols, w_start, w_end):
                local, part_times = _local(pcols, times, rows, w_start, w_end)
                got = _aggregate_part(spec, part_times, local)
                totals = got if totals is None else _combine(spec, totals, got)
            emit(wk, w_start, totals)
    yield pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(out, schema)], schema=schema)


def _local(cols: dict, times: list, rows, start: int, end: int) -> tuple[dict, list]:
    """The columns and times of a part's rows (slices for a whole group)."""
    if isinstance(rows, range):
        return {k: v[start:end] for k, v in cols.items()}, times[start:end]
    return {k: [v[r] for r in rows] for k, v in cols.items()}, [times[r] for r in rows]


def _propagate_block(spec: K.AggregateSpec, table, cols: dict, times: list, start: int, end: int, b: int):
    """COUNT(*) of E+ for every window of block `b` (rows start … end), by
    one propagation of per-window counts (greta.kleene_count_windows), its
    parts summed; None when a part's index would be too large (then each
    window is evaluated on its own)."""
    import numpy as np

    c = spec.columns
    width = c.block
    base = b * width
    lo = np.asarray(table.column(c.window_lo).slice(start, end - start).to_numpy(), dtype=np.int64)
    hi = np.asarray(table.column(c.window_hi).slice(start, end - start).to_numpy(), dtype=np.int64)
    first = (np.maximum(lo, base) - base).tolist()
    last = (np.minimum(hi, base + width - 1) - base).tolist()
    (tr,) = spec.template.transitions
    total = None
    for rows, pcols in _parts(spec, cols, start, end):
        local, part_times = _local(pcols, times, rows, start, end)
        at = range(end - start) if isinstance(rows, range) else [r - start for r in rows]
        step = Step(tr, local, [], part_times)
        got = greta.kleene_count_windows(part_times, step, [first[i] for i in at], [last[i] for i in at], width,
                                         spec.approx, spec.max_shared_cells)  # fmt: skip
        if got is None:
            return None
        total = got if total is None else total + got
    return total


def _aggregate_part(spec: K.AggregateSpec, times: list, cols: dict) -> list:
    approx = spec.approx
    scan = spec.kernel == K.Kernel.SCAN
    if spec.algorithm == K.KLEENE_COUNT:
        (tr,) = spec.template.transitions
        return [greta.kleene_count(times, Step(tr, cols, [], times), approx, scan)]
    if spec.algorithm == K.ASEQ:
        return [_aseq(spec.template, cols, times, approx)]
    gt = GroupTemplate(spec.template, times, cols)
    targets = [greta.Target(t.func, t.state, cols[t.value] if t.value else None) for t in spec.targets]
    return greta.aggregate(gt, targets, str(spec.trend_set), spec.complete, approx, scan)


def _aseq(t: K.TemplateSpec, cols: dict, times: list, approx: bool):
    """COUNT(*) of a fixed-length SEQ by A-Seq's prefix counters."""
    nxt = {tr.source: tr.target for tr in t.transitions}
    (first,) = t.start
    order = [first]
    while order[-1] in nxt:
        order.append(nxt[order[-1]])
    masks = {s.name: [v is True for v in cols[s.mask]] for s in t.states}
    states = [masks[s].__getitem__ for s in order]
    negations = []
    for neg in t.negations:
        (state,) = neg.template.states
        m = [v is True for v in cols[state.mask]]
        if neg.pairs:
            k = order.index(next(iter(neg.pairs))[0]) + 1
        else:
            k = 0 if neg.starts else len(order)
        negations.append((k, m.__getitem__))
    return aseq_count(states, negations, times, approx)


def _combine(spec: K.AggregateSpec, a: list, b: list) -> list:
    out = []
    for t, x, y in zip(spec.targets, a, b):
        if t.func == "AVG":
            out.append((x[0] + y[0], x[1] + y[1]))
        elif t.func in ("MIN", "MAX"):
            vals = [v for v in (x, y) if v is not None]
            out.append((min if t.func == "MIN" else max)(vals) if vals else None)
        else:
            out.append(x + y)
    return out


def _final(spec: K.AggregateSpec, k: int, value, wk, group) -> object:
    t = spec.targets[k]
    if t.func == "AVG":
        total, n = value
        if not n:
            return None
        return float(total) / n if spec.approx or isinstance(total, float) else float(Decimal(total) / n)
    if t.func in ("MIN", "MAX"):
        return None if value is None else float(value)
    if spec.approx or isinstance(value, float):
        x = float(value)
        # counts, and sums of whole or decimal numbers, are finite: past a double's range they overflowed
        if (x != x or x in (math.inf, -math.inf)) and (t.func == "COUNT" or t.kind != "double"):
            raise AggregateOverflow(
                f"{t.name} passed the range of a double (about 1.8e308) in {describe_window(spec.context, wk)}, "
                f"{describe_group(spec.output_names, group)}: the approximate result would be "
                f"{'NaN' if x != x else 'Infinity'}; ask for exact results (drop APPROX / --approx): DECIMAL(38), "
                "or every digit with --exact string"
            )
        return x
    if spec.exact == K.Exact.STRING:
        return digits(value)
    if isinstance(value, Decimal):
        scale = int(t.kind.split(":")[1]) if t.kind.startswith("decimal:") else 0
        too_big = abs(value) >= Decimal(10) ** (38 - scale)
    else:
        too_big = abs(value) > MAX38
    if too_big:
        text = digits(abs(int(value)))
        raise AggregateOverflow(
            f"{t.name} = {'-' if value < 0 else ''}{text[:12]}… ({len(text):,} digits) in "
            f"{describe_window(spec.context, wk)}, "
            f"{describe_group(spec.output_names, group)}, does not fit DECIMAL(38,0); ask for approximate results "
            "(APPROX / --approx) or every digit as a string (--exact string)"
        )
    return value
