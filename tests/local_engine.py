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
from cetql.planner.logical.plan import InputFacts, Inputs
from cetql.planner.physical.build import physical
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
    if tag == "notnull":
        return evaluate(e[1], row) is not None
    raise ValueError(e)


def _mod(a, b):
    r = abs(a) % abs(b)  # SQL: the sign of the dividend
    return -r if a < 0 else r


def plan_for(text, *, params=None, typed=False, types=(), options: RunOptions | None = None, columns=(),
             streaming=False):  # fmt: skip
    """(logical plan, physical plan) for events with these columns (read
    as a stream with `streaming`)."""
    q = bind(parse(text), params or {}, strict_params=True)
    each = tuple(InputFacts(t, t, time_type="bigint") for t in types) if typed else (InputFacts(None, "events", time_type="bigint"),)
    from cetql.planner.semantics.schema import Schema

    schema = Schema(tuple((c, "other", "") for c in columns)) if columns else None
    inputs = Inputs(typed=typed, types=tuple(types), time_kind="numeric", schema=schema, each=each)
    if streaming:
        inputs = inputs.as_stream()
    plan = build(q, options or RunOptions(), inputs)
    return plan, physical(plan)


def _floor_div(x: int, s: int) -> int:
    return x // s


def kernel_table(plan, phys, events: list[dict]) -> pa.Table:
    """The kernel's input table for `events` (dicts with ts, id, attributes,
    and `__type` for typed inputs), as the Spark compiler would build it."""
    n = phys.names
    spec = phys.spec
    w, s = phys.windows.length, phys.windows.slide
    rows = []
    for ev in events:
        row = dict(ev)
        row[n.id] = ev["id"]
        row[n.time] = ev["ts"]
        row[n.type] = ev.get("__type")
        if phys.filter.constant is not None and evaluate(phys.filter.constant, row) is not True:
            continue
        any_state = False
        for m in phys.filter.masks:
            row[m.column] = evaluate(m.definition, row) is True
            any_state |= row[m.column]
        if not any_state:
            continue
        if any(row.get(k.attr) is None for k in phys.partition.keys):
            continue
        for k in (*phys.partition.keys, *phys.partition.subkeys, *phys.partition.state_keys):
            row[k.column] = row.get(k.attr)
        for d in phys.root.derived:
            row[d.column] = evaluate(d.definition, row)
        t = row[n.time]
        if isinstance(t, int) and isinstance(w, int) and isinstance(s, int):
            k_hi, k_lo = _floor_div(t, s), _floor_div(t - w, s) + 1
        else:
            from decimal import Decimal

            td = Decimal(repr(t)) if isinstance(t, float) else Decimal(t)
            k_hi, k_lo = math.floor(td / Decimal(s)), math.floor((td - Decimal(w)) / Decimal(s)) + 1
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
    cols = [*group, spec.columns.time, spec.columns.id, *(m.column for m in phys.filter.masks)]
    cols += [d.column for d in phys.root.derived] + [k.column for k in phys.partition.subkeys]
    cols += [k.column for k in phys.partition.state_keys]
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
    spec = phys.spec
    if spec_changes:
        spec = dataclasses.replace(spec, **spec_changes)
    table = kernel_table(plan, phys, events)
    if spec.__class__.__name__ == "DetectSpec":
        fn = process.detect_fn(spec)
    else:
        fn = process.aggregate_fn(spec)
    batches = table.to_batches(max_chunksize=batch_size) if batch_size else table.to_batches()
    out = []
    for b in fn(iter(batches)):
        out += pa.Table.from_batches([b]).to_pylist()
    return plan, phys, out
