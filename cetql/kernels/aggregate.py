"""Aggregation over a sorted Arrow table: one row of aggregates per
(window, group), each window's parts aggregated and summed."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, localcontext

import numpy as np
import pyarrow as pa

from cetql.kernels import compiled_count, greta, select
from cetql.kernels import spec as K
from cetql.kernels.aseq import count as aseq_count
from cetql.kernels.batches import window_groups
from cetql.kernels.columns import group_fields, read_columns, template_columns
from cetql.kernels.compare import smaller
from cetql.kernels.doubles import EXACT, as_double, finite, mean
from cetql.kernels.errors import AggregateOverflow, describe_group, describe_window, digits
from cetql.kernels.kleene import kleene_count, kleene_count_windows
from cetql.kernels.parts import keyed_template, nothing, part_columns, parts
from cetql.kernels.template import GroupTemplate, Step

DEC38 = pa.decimal128(38, 0)
MAX38 = 10**38 - 1


def _output_type(spec: K.AggregateSpec, t: K.Target):
    if t.func in ("AVG", "MIN", "MAX") or spec.approx or t.kind == "double":
        return pa.float64()
    return _exact_type(spec, t)


def _exact_type(spec: K.AggregateSpec, t: K.Target):
    """A COUNT's or SUM's output type without APPROX."""
    if spec.exact == K.Exact.STRING:
        return pa.string()
    if t.kind.startswith("decimal:"):
        return pa.decimal128(38, int(t.kind.split(":")[1]))
    return DEC38


def aggregate_schema(spec: K.AggregateSpec, input_schema: pa.Schema) -> pa.Schema:
    fields = group_fields((spec.columns.group[0], *spec.output_keys), input_schema)
    fields += [pa.field(t.name, _output_type(spec, t)) for t in spec.targets]
    return pa.schema(fields)


def aggregate_table(spec: K.AggregateSpec, table: pa.Table) -> Iterator[pa.RecordBatch]:
    if table.num_rows == 0:
        return
    quick = _compiled_batch(spec, table) if select.variant(spec, table.num_rows) == select.Variant.COUNT else None
    if quick is not None:  # the compiled path (the same rows)
        yield quick
        return
    names = template_columns(spec.template) | {t.value for t in spec.targets if t.value}
    names |= set(spec.shared_subkeys) | {k.column for k in spec.state_keys}
    cols, times = read_columns(table, names, spec.columns)
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
            emit(wk, w_start, _window(spec, cols, times, w_start, w_end))
    yield pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(out, schema)], schema=schema)


def _window(spec: K.AggregateSpec, cols: dict, times: list, start: int, end: int) -> list:
    """A window's totals, its parts aggregated and combined.  Approximate
    totals that left a double's range are counted again exactly: their
    double is then the exact value's (`_final`), refused only when that is
    past the range itself."""
    totals = _window_totals(spec, cols, times, start, end, spec.approx)
    if spec.approx and not all(map(finite, totals)):
        totals = _window_totals(spec, cols, times, start, end, False)
    return totals


def _window_totals(spec: K.AggregateSpec, cols: dict, times: list, start: int, end: int, approx: bool) -> list:
    totals = None
    with localcontext(EXACT):  # exact sums of DECIMALs (the default context keeps 28 digits)
        for part in _parts(spec, cols, start, end) or [nothing(start, spec.template, spec.state_keys)]:
            local, part_times = part_columns(cols, times, part)
            got = _aggregate_part(spec, part_times, local, approx)
            totals = got if totals is None else _combine(spec, totals, got)
    return totals


def _parts(spec: K.AggregateSpec, cols: dict, start: int, end: int):
    return parts(cols, start, end, spec.template, spec.shared_subkeys, spec.state_keys)


def _template(spec: K.AggregateSpec) -> K.TemplateSpec:
    return keyed_template(spec.template, spec.state_keys) if spec.state_keys else spec.template


def _propagate_block(spec: K.AggregateSpec, table, cols: dict, times: list, start: int, end: int, b: int):
    """COUNT(*) of E+ for every window of block `b` (rows start … end), by
    one propagation of per-window counts (kleene.kleene_count_windows), its
    parts summed; None when a part's index would be too large (then each
    window is evaluated on its own)."""
    c = spec.columns
    width = c.block
    base = b * width
    lo = np.asarray(table.column(c.window_lo).slice(start, end - start).to_numpy(), dtype=np.int64)
    hi = np.asarray(table.column(c.window_hi).slice(start, end - start).to_numpy(), dtype=np.int64)
    first = (np.maximum(lo, base) - base).tolist()
    last = (np.minimum(hi, base + width - 1) - base).tolist()
    (tr,) = spec.template.transitions
    total = np.zeros(width, dtype=np.float64 if spec.approx else object)
    for part in _parts(spec, cols, start, end):
        local, part_times = part_columns(cols, times, part)
        at = [r - start for r in part.rows]
        step = Step(tr, local, [], part_times)
        got = kleene_count_windows(part_times, step, [first[i] for i in at], [last[i] for i in at], width,
                                   spec.approx, spec.max_shared_cells)  # fmt: skip
        if got is None:
            return None
        total = total + got
    return total


def _aggregate_part(spec: K.AggregateSpec, times: list, cols: dict, approx: bool) -> list:
    scan = spec.kernel == K.Kernel.SCAN
    template = _template(spec)
    if spec.algorithm == K.KLEENE_COUNT:
        (tr,) = template.transitions
        return [kleene_count(times, Step(tr, cols, [], times), approx, scan)]
    if spec.algorithm == K.ASEQ:
        return [_aseq(template, cols, times, approx)]
    gt = GroupTemplate(template, times, cols)
    targets = [greta.Target(t.func, t.state, cols[t.value] if t.value else None) for t in spec.targets]
    return greta.aggregate(gt, targets, spec.trend_set, spec.complete, approx, scan)


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
            if x is None or y is None:
                out.append(y if x is None else x)
            else:
                out.append(y if (smaller(y, x) if t.func == "MIN" else smaller(x, y)) else x)
        else:
            out.append(x + y)
    return out


def _final(spec: K.AggregateSpec, k: int, value, wk, group) -> object:
    t = spec.targets[k]
    if t.func == "AVG":
        value = None if value is None else mean(*value)
    if value is None:
        return None
    if _output_type(spec, t) == pa.float64():  # every DOUBLE of the output passes the one check
        exact = t.func in ("AVG", "MIN", "MAX") or t.kind == "double"  # a DOUBLE without APPROX too
        exact_as = "" if exact else f" (as {_sql_type(_exact_type(spec, t))}, or every digit with --exact string)"
        return as_double(value, approx=spec.approx, name=t.name, exact_as=exact_as,
                         where=lambda: f"{describe_window(spec.context, wk)}, {describe_group(spec.output_names, group)}")
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


def _sql_type(t: pa.DataType) -> str:
    return f"DECIMAL({t.precision},{t.scale})" if pa.types.is_decimal(t) else "STRING"


def _compiled_batch(spec: K.AggregateSpec, table: pa.Table) -> pa.RecordBatch | None:
    """`aggregate.aggregate_table`'s one batch by the compiled path, or None
    where it does not apply.  A window whose count passes `jit_wide.MAX_LIMBS`
    limbs is counted again by the reference, with Python integers."""
    c = spec.columns
    lo, hi, wk = compiled_count.segments(c, table)
    counts = compiled_count.aggregate_counts(spec, table, lo, hi)
    if counts is None:
        return None
    for i, got in enumerate(counts):
        if got is None:  # past the widest limbs: the reference's exact integers
            part = table.slice(int(lo[i]), int(hi[i] - lo[i]))
            cols, part_times = read_columns(part, template_columns(spec.template), c)
            (tr,) = spec.template.transitions
            counts[i] = kleene_count(part_times, Step(tr, cols, [], part_times), spec.approx)
    schema = aggregate_schema(spec, table.schema)
    arrays = [wk.cast(schema.field(0).type)]
    arrays += [compiled_count._column(table, k).take(pa.array(lo)) for k in spec.output_keys]
    keys = list(zip(*(a.to_pylist() for a in arrays[1:]))) or [()] * len(counts)
    windows = arrays[0].to_pylist()
    finals = [_final(spec, 0, v, w, list(k)) for v, w, k in zip(counts, windows, keys)]
    arrays.append(pa.array(finals, type=schema.field(len(arrays)).type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
