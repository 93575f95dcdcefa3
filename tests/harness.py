"""Queries run without Spark, through the real compiler.

`run_local(text, events, **options)` plans a query as every surface does
(parse → bind → plan → lower), evaluates the lowering's column definitions
(masks, keys, sub-keys, lval/h, attributes) on each event with the kernels'
one expression evaluator (`kernels.expr`, Spark SQL's semantics), assigns
windows with the Spark compiler's integer arithmetic, sorts and groups the
rows as Spark does (NaN with NaN, -0.0 with 0.0), and runs the very kernels
Spark's workers run (`kernels.process`) on the resulting Arrow table.  The
only part not exercised is Spark itself.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

import pyarrow as pa

from cetql.options import RunOptions
from cetql.parser import parse
from cetql.planner.kernels import process
from cetql.planner.kernels import spec as K
from cetql.planner.kernels.expr import compile_expr
from cetql.planner.kernels.values import key
from cetql.planner.logical.build import build
from cetql.planner.logical.plan import Inputs
from cetql.planner.lower import lower
from cetql.planner.semantics.bind import bind


def plan_for(text, *, params=None, typed=False, types=(), options: RunOptions | None = None, columns=()):
    """(logical plan, lowered plan) of a query."""
    q = bind(parse(text), params or {}, strict_params=True)
    inputs = Inputs(typed=typed, types=tuple(types), time_kind="numeric")
    plan = build(q, options or RunOptions(), inputs)
    return plan, lower(plan, tuple(columns))


class _Event(dict):
    """An input row: an attribute it does not have is null."""

    def __missing__(self, column):
        return None


def _windows(t, w, s, block: int) -> list[int]:
    """The windows (or blocks of windows) an event at time t falls in, and
    its first and last window, as the Spark compiler computes them."""
    if isinstance(t, int) and isinstance(w, int) and isinstance(s, int):
        k_hi, k_lo = t // s, (t - w) // s + 1
    else:
        k_hi, k_lo = math.floor(t / s), math.floor((t - w) / s) + 1
    if block:
        return list(range(k_lo // block, k_hi // block + 1)), k_lo, k_hi
    return (list(range(k_lo, k_hi + 1)) if w != s else [k_hi]), k_lo, k_hi


def kernel_table(plan, phys, events: list[dict]) -> pa.Table:
    """The kernel's input table for `events` (dicts with ts, id, attributes,
    and `__type` for typed inputs), as the Spark compiler builds it."""
    n, spec = phys.names, phys.spec
    constant = compile_expr(phys.constant) if phys.constant is not None else None
    masks = [(name, compile_expr(d)) for name, d in phys.masks]
    defined = [(name, compile_expr(d)) for name, d in (*phys.subkeys, *phys.derived)]
    rows = []
    for ev in events:
        row = _Event(ev)
        row[n.id], row[n.time], row[n.type] = ev["id"], ev["ts"], ev.get("__type")
        env = {"self": row}
        if constant is not None and constant(env) is not True:
            continue
        for name, f in masks:
            row[name] = f(env) is True
        if not any(row[name] for name, _ in masks) or any(row[attr] is None for _, attr in phys.keys):
            continue
        for name, attr in phys.keys:
            row[name] = row[attr]
        for name, f in defined:
            row[name] = f(env)
        found, row[n.window_lo], row[n.window_hi] = _windows(row[n.time], phys.window_length, phys.window_slide,
                                                             spec.columns.block)  # fmt: skip
        rows += [_Event(row, **{n.window: k}) for k in found]
    group = list(spec.columns.group)
    rows.sort(key=lambda r: (*(_order(r[g]) for g in group), r[n.time], r[n.id]))
    cols = [*group, spec.columns.time, spec.columns.id, *(m for m, _ in phys.masks)]
    cols += [name for name, _ in phys.derived] + [name for name, _ in phys.subkeys]
    if spec.columns.block:
        cols += [spec.columns.window_lo, spec.columns.window_hi]
    cols = list(dict.fromkeys(cols))
    return pa.Table.from_pylist([{c: r[c] for c in cols} for r in rows], schema=_schema(cols, rows, n))


def _order(v):
    """Spark's sort order of a key: nulls first, NaN last, -0.0 = 0.0."""
    return (v is not None, key(v))


def _schema(cols, rows, n):
    fields = []
    for c in cols:
        values = [r[c] for r in rows if r[c] is not None]
        if c in (n.window, n.window_lo, n.window_hi):
            t = pa.int64()
        elif not values:
            t = pa.bool_() if c.startswith(n.prefix + "m_") else pa.null()
        elif all(isinstance(v, bool) for v in values):
            t = pa.bool_()
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            t = pa.int64()
        elif all(isinstance(v, Decimal) for v in values):
            t = pa.decimal128(38, max(-v.as_tuple().exponent for v in values))
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            t = pa.float64()
        else:
            t = pa.string()
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def run_local(text, events, *, params=None, typed=False, batch_size=None, spec_changes=None, **options):
    """(plan, lowered plan, output rows as dicts) of a query on a list of
    events; `options` are `RunOptions` keywords, `spec_changes` overrides
    fields of the kernel spec (to compare a plan's choice with another): a
    dict, or a function of (plan, lowered plan) giving one."""
    types = sorted({e["__type"] for e in events if e.get("__type")}) if typed else ()
    cols = sorted({k for e in events for k in e})
    plan, phys = plan_for(text, params=params, typed=typed, types=types, options=RunOptions.of(**options),
                          columns=cols)  # fmt: skip
    if callable(spec_changes):
        spec_changes = spec_changes(plan, phys)
    if spec_changes:
        phys = dataclasses.replace(phys, spec=dataclasses.replace(phys.spec, **spec_changes))
    table = kernel_table(plan, phys, events)
    detect = isinstance(phys.spec, K.DetectSpec)
    fn = process.detect_fn(phys.spec) if detect else process.aggregate_fn(phys.spec)
    batches = table.to_batches(max_chunksize=batch_size) if batch_size else table.to_batches()
    out = []
    for b in fn(iter(batches)):
        out += pa.Table.from_batches([b]).to_pylist()
    return plan, phys, out
