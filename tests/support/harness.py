"""Queries run without Spark, through the real planner.

`run_local(text, events, **options)` plans a query as every surface does
(`cetql.compile` → `planning.plan` → the physical plan → `kernel_spec`),
evaluates the physical plan's column definitions (filter masks, keys,
sub-keys, state keys, derived columns) on each event with the kernels' one
expression evaluator (`kernels.expr`, Spark SQL's semantics), assigns
windows in the plan's arithmetic as the Spark compiler does, sorts and
groups the rows as Spark does (NaN with NaN, -0.0 with 0.0), and runs the
very kernels Spark's workers run (`kernels.process`) on the resulting Arrow
table.  The only part not exercised is Spark itself.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

import pyarrow as pa

import cetql
from cetql.base.options import RunOptions
from cetql.kernels import process
from cetql.kernels import spec as K
from cetql.kernels.compare import key
from cetql.kernels.expr import compile_expr
from cetql.planner.logical.plan import InputFacts, Inputs, Resources
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Arithmetic, PhysicalPlan
from cetql.planner.semantics.schema import OTHER, Schema


def plan_for(text, *, params=None, typed=False, types=(), options: RunOptions | None = None, columns=(),
             streaming=False):  # fmt: skip
    """(logical plan, physical plan) of a query over inputs with these
    columns (read as a stream with `streaming`), planned by the one `plan`
    function."""
    if typed:
        each = tuple(InputFacts(t, t, time_type="bigint") for t in types)
    else:
        each = (InputFacts(None, "events", time_type="bigint"),)
    schema = Schema(tuple((c, OTHER, "") for c in columns)) if columns else None
    inputs = Inputs(typed=typed, types=tuple(types), schema=schema, time_kind="numeric", each=each)
    if streaming:
        inputs = inputs.as_stream()
    compiled = cetql.compile(text, params or {}, options=options or RunOptions(), strict_params=True, inputs=inputs,
                             resources=Resources())  # fmt: skip
    phys: PhysicalPlan = compiled.plan
    return phys.logical, phys


class _Event(dict):
    """An input row: an attribute it does not have is null."""

    def __missing__(self, column):
        return None


def _floor_div(x, s):
    return x // s if isinstance(x, int) and isinstance(s, int) else math.floor(x / s)


def _windows(phys: PhysicalPlan, t) -> tuple[list[int], int, int]:
    """The windows (or blocks of windows) an event at time t falls in, and
    its first and last window, in the plan's arithmetic."""
    w = phys.windows
    if w.arithmetic != Arithmetic.INTEGER:
        t = Decimal(repr(t)) if isinstance(t, float) else Decimal(t)
    k_hi, k_lo = _floor_div(t, w.slide), _floor_div(t - w.length, w.slide) + 1
    if w.sharing is None:
        return [k_hi], k_lo, k_hi
    if w.block:
        return list(range(_floor_div(k_lo, w.block), _floor_div(k_hi, w.block) + 1)), k_lo, k_hi
    return list(range(k_lo, k_hi + 1)), k_lo, k_hi


def _row(phys: PhysicalPlan, ev: dict, constant, masks, derived) -> _Event | None:
    """One event's kernel columns before its windows (None: dropped)."""
    n, part = phys.names, phys.partition
    row = _Event(ev)
    row[n.id], row[n.time], row[n.type] = ev["id"], ev["ts"], ev.get("__type")
    env = {"self": row}
    if constant is not None and constant(env) is not True:
        return None
    for name, f in masks:
        row[name] = f(env) is True
    if not any(row[name] for name, _ in masks) or any(row[k.attr] is None for k in part.keys):
        return None
    for k in (*part.keys, *part.subkeys, *part.state_keys):
        row[k.column] = row[k.attr]
    for name, f in derived:
        row[name] = f(env)
    return row


def kernel_table(plan, phys: PhysicalPlan, events: list[dict], extra=()) -> pa.Table:
    """The kernel's input table for `events` (dicts with ts, id, attributes,
    and `__type` for typed inputs), as the Spark compiler builds it, with the
    `extra` attributes as they are (for a spec a test changes)."""
    n, spec = phys.names, kernel_spec(phys)
    constant = compile_expr(phys.filter.constant) if phys.filter.constant is not None else None
    masks = [(m.column, compile_expr(m.definition)) for m in phys.filter.masks]
    derived = [(d.column, compile_expr(d.definition)) for d in phys.root.derived]
    rows = []
    for ev in events:
        row = _row(phys, ev, constant, masks, derived)
        if row is None:
            continue
        found, row[n.window_lo], row[n.window_hi] = _windows(phys, row[n.time])
        rows += [_Event(row, **{n.window: k}) for k in found]
    group = list(spec.columns.group)
    rows.sort(key=lambda r: (*(_order(r[g]) for g in group), r[n.time], r[n.id]))
    part = phys.partition
    cols = [*group, spec.columns.time, spec.columns.id, *(m for m, _ in masks)]
    cols += [d for d, _ in derived] + [k.column for k in (*part.subkeys, *part.state_keys)] + list(extra)
    if spec.columns.block:
        cols += [spec.columns.window_lo, spec.columns.window_hi]
    cols = list(dict.fromkeys(cols))
    return pa.Table.from_pylist([{c: r[c] for c in cols} for r in rows], schema=_schema(cols, rows, n))


def _order(v):
    """Spark's sort order of a key: nulls first, NaN last, -0.0 = 0.0."""
    return (v is not None, key(v))


def _type(values: list, boolean: bool):
    if not values:
        return pa.bool_() if boolean else pa.null()
    if all(isinstance(v, bool) for v in values):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    if all(isinstance(v, Decimal) for v in values):
        return pa.decimal128(38, max(-v.as_tuple().exponent for v in values))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pa.float64()
    return pa.string()


def _schema(cols, rows, n):
    fields = []
    for c in cols:
        if c in (n.window, n.window_lo, n.window_hi):
            fields.append(pa.field(c, pa.int64()))
        else:
            values = [r[c] for r in rows if r[c] is not None]
            fields.append(pa.field(c, _type(values, c.startswith(n.prefix + "m_"))))
    return pa.schema(fields)


def run_local(text, events, *, params=None, typed=False, batch_size=None, spec_changes=None, **options):
    """(logical plan, physical plan, output rows as dicts) of a query on a
    list of events; `options` are `RunOptions` keywords, `spec_changes`
    overrides fields of the kernel spec (to compare a plan's choice with
    another): a dict, or a function of (logical, physical plan) giving one."""
    types = sorted({e["__type"] for e in events if e.get("__type")}) if typed else ()
    cols = sorted({k for e in events for k in e})
    plan, phys = plan_for(text, params=params, typed=typed, types=types, options=RunOptions.of(**options),
                          columns=cols)  # fmt: skip
    spec = kernel_spec(phys)
    if callable(spec_changes):
        spec_changes = spec_changes(plan, phys)
    if spec_changes:
        spec = dataclasses.replace(spec, **spec_changes)
    extra = sorted({k.column for k in spec.state_keys} - {k.column for k in kernel_spec(phys).state_keys})
    table = kernel_table(plan, phys, events, extra)
    fn = process.detect_fn(spec) if isinstance(spec, K.DetectSpec) else process.aggregate_fn(spec)
    batches = table.to_batches(max_chunksize=batch_size) if batch_size else table.to_batches()
    out = []
    for b in fn(iter(batches)):
        out += pa.Table.from_batches([b]).to_pylist()
    return plan, phys, out
