"""Which trends the query returns or aggregates over (SEMANTICS.md)."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.errors import UsageError
from cetql.base.options import TrendSet
from cetql.planner.logical.plan import Decision
from cetql.planner.logical.rules import Draft

READS = ("query", "options")
SETS = ("trend_set",)


def apply(d: Draft) -> Draft:
    q, o = d.query, d.options
    if not d.detection and o.trends == TrendSet.MAXIMAL:
        raise UsageError("aggregates are over ALL or COMPLETE trends, not MAXIMAL")
    if o.trends is not None:
        why = f"asked for by --trends {o.trends.value.lower()}"
    elif q.trends is not None:
        why = "asked for by TRENDS"
    elif d.detection:
        why = "default for detection: complete event trends (no event can be prepended or appended; ABI §3, CET §2.1)"
    else:
        why = "default for aggregation: all trends, as GRETA and A-Seq define their aggregates"
    default = TrendSet.COMPLETE if d.detection else TrendSet.ALL
    return replace(d, trend_set=Decision(o.trends or q.trends or default, why))
