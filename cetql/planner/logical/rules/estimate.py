"""How large the largest (window, partition) group of a detection is, from
the inputs' statistics (Parquet footers: rows and the time column's range;
a sample of the first rows: each column's distinct values), before anything
runs.  Events are assumed spread evenly over time; of a partition key's
values, the largest group holds the most frequent value's share of the
sample's rows (at least 1/distinct: a skewed key's heavy value); an
edge predicate keeps, of a transition's ordered pairs, 1/distinct of them
for an equality of two attributes (the larger distinct count), 1/10 for an
equality of expressions, 1/3 for a range and 1/2 for any other."""

from __future__ import annotations

import math
from dataclasses import replace

from cetql.base.options import EDGE_BYTES, NODE_BYTES
from cetql.planner.logical.plan import Decision, GroupEstimate
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir

READS = ("query", "inputs", "keys", "transitions")
SETS = ("estimate",)
UNITS = {"timestamp": 1e6, "timestamp_ns": 1e9}  # time-column units per second


def apply(d: Draft) -> Draft:
    if not d.detection:
        return replace(d, estimate=None)
    return replace(d, estimate=_estimate(d))


def _sources(d: Draft):
    used = {p.type for p in d.query.template.all_positions.values()}
    return [f.source for f in d.inputs.each if f.type_name is None or f.type_name in used]


def _distinct(sources, attr: str) -> int | None:
    found = [s.stat(attr) for s in sources]
    return max((s.distinct for s in found if s is not None), default=None)


def _top(sources, attr: str) -> float:
    found = [s.stat(attr) for s in sources]
    return max((s.top for s in found if s is not None), default=0.0)


def _estimate(d: Draft) -> Decision:
    q, sources = d.query, _sources(d)
    if not sources or any(s is None or s.rows is None or not s.stats for s in sources):
        return Decision(None, "no statistics: an input is not Parquet files (their footers give rows and ranges)")
    times = [s.stat(q.time_col) for s in sources]
    if any(t is None or t.lo is None for t in times):
        return Decision(None, f"no statistics: the footers give no range of the time column '{q.time_col}'")
    rows = sum(s.rows for s in sources)
    span = max(t.hi for t in times) - min(t.lo for t in times)
    length = float(q.window.length) * (1 if q.window.unitless else UNITS.get(d.inputs.time_kind, 1))
    events = rows * min(1.0, length / span) if span > 0 else rows
    how = [f"{rows:,} rows over a time span of {span:,.0f}, windows of {length:,.0f}"]
    for k in d.keys:
        n, top = _distinct(sources, k.attr), _top(sources, k.attr)
        if n:
            share = max(1 / n, top)  # the largest group's: a skewed key's most frequent value
            events *= share
            how.append(f"{n:,} values of {k.attr}, the most frequent in {share:.2%} of the rows")
    events = max(1, math.ceil(events))
    positive = [p for p in q.template.all_positions.values() if not p.negated]
    types = len({p.type for p in positive}) if d.inputs.typed else 1
    per_state = events / types  # an event takes each state of its type
    edges = sum(per_state * per_state / 2 * _selectivity(sources, tp) for tp in d.transitions)
    est = GroupEstimate(events, math.ceil(per_state * len(positive)), math.ceil(edges),
                        math.ceil(per_state * len(positive) * NODE_BYTES + edges * EDGE_BYTES))  # fmt: skip
    return Decision(est, "; ".join(how))


def _attr(e) -> str | None:
    return e.attr if isinstance(e, ir.Ref) else None


def _selectivity(sources, tp) -> float:
    out = 1.0
    for p in tp.predicates:
        if p.op == ir.Op.EQUAL:
            sides = [_distinct(sources, a) for a in (_attr(p.lval), _attr(p.h)) if a is not None]
            out *= 1 / max(sides) if len(sides) == 2 and all(sides) else 0.1
        else:
            out *= 1 / 3 if p.op == ir.Op.RANGE else 1 / 2
    return out
