"""The Spark side of a plan, emulated in Python, for tests without Spark.

`run_local(text, events, ...)` compiles a query (parse → bind → plan →
lower), evaluates the lowering's column definitions on each event the way
the Spark compiler asks Spark to (masks, keys, sub-keys, lval/h, attributes;
SQL three-valued logic), assigns windows with the same integer arithmetic,
sorts and groups the rows, and runs the very kernels Spark's workers run
(`kernels.process`) on the resulting Arrow table.  So a property test of
compile → plan → kernel needs no JVM, and the only part not exercised is
Spark itself.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

import pyarrow as pa

from cetql.options import RunOptions
from cetql.parser import parse
from cetql.planner.kernels import process
from cetql.planner.logical.build import build
from cetql.planner.logical.plan import Inputs
from cetql.planner.lower import lower
from cetql.planner.semantics.bind import bind


def _num(v):
    return float(v) if isinstance(v, Decimal) else v


def evaluate(e, row: dict):
    """A spec expression over one event (slot "self"), as Spark evaluates it."""
    tag = e[0]
    if tag == "lit":
        return _num(e[1])
    if tag == "col":
        return row.get(e[2])
    if tag == "neg":
        v = evaluate(e[1], row)
        return None if v is None else -v
    if tag == "arith":
        a, b = evaluate(e[2], row), evaluate(e[3], row)
        if a is None or b is None:
            return None
        op = e[1]
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return None
        return a / b if op == "/" else math.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else _mod(a, b)
    if tag == "cmp":
        a, b = evaluate(e[2], row), evaluate(e[3], row)
        if a is None or b is None:
            return None
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[e[1]]
    if tag in ("and", "or"):
        vals = [evaluate(x, row) for x in e[1]]
        absorbing = tag == "or"
        if absorbing in vals:
            return absorbing
        return None if None in vals else not absorbing
    if tag == "not":
        v = evaluate(e[1], row)
        return None if v is None else not v
    if tag == "when":
        return evaluate(e[2], row) if evaluate(e[1], row) is True else None
    raise ValueError(e)


def _mod(a, b):
    r = abs(a) % abs(b)  # SQL: the sign of the dividend
    return -r if a < 0 else r


def plan_for(text, *, params=None, typed=False, types=(), options: RunOptions | None = None, columns=()):
    q = bind(parse(text), params or {}, strict_params=True)
    inputs = Inputs(typed=typed, types=tuple(types), time_kind="numeric")
    plan = build(q, options or RunOptions(), inputs)
    return plan, lower(plan, tuple(columns))


def _floor_div(x: int, s: int) -> int:
    return x // s


def kernel_table(plan, phys, events: list[dict]) -> pa.Table:
    """The kernel's input table for `events` (dicts with ts, id, attributes,
    and `__type` for typed inputs), as the Spark compiler would build it."""
    n = phys.names
    spec = phys.spec
    w, s = phys.window_length, phys.window_slide
    rows = []
    for ev in events:
        row = dict(ev)
        row[n.id] = ev["id"]
        row[n.time] = ev["ts"]
        row[n.type] = ev.get("__type")
        if phys.constant is not None and evaluate(phys.constant, row) is not True:
            continue
        any_state = False
        for name, definition in phys.masks:
            row[name] = evaluate(definition, row) is True
            any_state |= row[name]
        if not any_state:
            continue
        if any(row.get(attr) is None for _, attr in phys.keys):
            continue
        for name, attr in phys.keys:
            row[name] = row[attr]
        for name, definition in phys.subkeys:
            row[name] = evaluate(definition, row)
        for name, definition in phys.derived:
            row[name] = evaluate(definition, row)
        t = row[n.time]
        if isinstance(t, int) and isinstance(w, int) and isinstance(s, int):
            k_hi, k_lo = _floor_div(t, s), _floor_div(t - w, s) + 1
        else:
            k_hi, k_lo = math.floor(t / s), math.floor((t - w) / s) + 1
        block = spec.columns.block
        if block:  # blocks of windows, as the Spark compiler assigns them
            row[spec.columns.window_lo], row[spec.columns.window_hi] = k_lo, k_hi
            for b in range(_floor_div(k_lo, block), _floor_div(k_hi, block) + 1):
                rows.append({**row, n.window: b})
            continue
        for k in range(k_lo, k_hi + 1) if w != s else [k_hi]:
            rows.append({**row, n.window: k})
    group = list(spec.columns.group)
    rows.sort(key=lambda r: (*(_key(r[g]) for g in group), r[n.time], r[n.id]))
    cols = [*group, spec.columns.time, spec.columns.id, *(m for m, _ in phys.masks)]
    cols += [name for name, _ in phys.derived] + [name for name, _ in phys.subkeys]
    if spec.columns.block:
        cols += [spec.columns.window_lo, spec.columns.window_hi]
    cols = list(dict.fromkeys(cols))
    return pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows], schema=_schema(cols, rows, n))


def _key(v):
    return (v is None, "" if v is None else v)


def _schema(cols, rows, n):
    fields = []
    for c in cols:
        values = [r.get(c) for r in rows if r.get(c) is not None]
        if c in (n.window, n.window_lo, n.window_hi):
            t = pa.int64()
        elif not values:
            t = pa.bool_() if c.startswith(n.prefix + "m_") else pa.null()
        elif all(isinstance(v, bool) for v in values):
            t = pa.bool_()
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            t = pa.int64()
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            t = pa.float64()
        else:
            t = pa.string()
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def run_local(text, events, *, params=None, typed=False, options: RunOptions | None = None, batch_size=None,
              spec_changes: dict | None = None):  # fmt: skip
    """(plan, list of output rows as dicts) for a query on a list of events;
    `spec_changes` overrides fields of the kernel spec (to compare a plan's
    choice with the other one)."""
    types = sorted({e["__type"] for e in events if e.get("__type")}) if typed else ()
    cols = sorted({k for e in events for k in e})
    plan, phys = plan_for(text, params=params, typed=typed, types=types, options=options, columns=cols)
    if spec_changes:
        phys = dataclasses.replace(phys, spec=dataclasses.replace(phys.spec, **spec_changes))
    table = kernel_table(plan, phys, events)
    if phys.spec.__class__.__name__ == "DetectSpec":
        fn = process.detect_fn(phys.spec)
    else:
        fn = process.aggregate_fn(phys.spec)
    batches = table.to_batches(max_chunksize=batch_size) if batch_size else table.to_batches()
    out = []
    for b in fn(iter(batches)):
        out += pa.Table.from_batches([b]).to_pylist()
    return plan, phys, out
