"""The kernel tests' comparisons: a query run through the real planner and
the kernels (`harness`) against the reference's trends and aggregates."""

from __future__ import annotations

import math
from decimal import Decimal

from harness import plan_for, run_local
from hypothesis import assume
from reference import reference_aggregates, reference_trends

import cetql
from cetql.base.errors import QueryError
from cetql.language.printer import aggregate_to_text


def compile_or_skip(text, *, typed, options=None):
    try:
        plan_for(text, typed=typed, options=options)
    except QueryError:
        assume(False)


def window_of(row) -> int:
    return row[next(k for k in row if k.endswith("wk"))]


def detected(text, events, typed, trend_set, spec_changes=None, **options) -> dict[int, set[tuple]]:
    """{window: its trends as id tuples}, checking no trend comes twice."""
    _, _, out = run_local(text, events, typed=typed, spec_changes=spec_changes, trends=trend_set, max_trends=0,
                          **options)  # fmt: skip
    got, rows = {}, 0
    for r in out:
        got.setdefault(window_of(r), set()).add(tuple(r["events"]))
        assert r["length"] == len(r["events"])
        rows += 1
    assert rows == sum(map(len, got.values())), "a trend returned twice"
    return got


def wanted(text, events, typed, trend_set, window_slide=None) -> dict[int, set[tuple]]:
    """The reference's trends, by window."""
    window_slide = window_slide or slide(text)
    want = {}
    for (start, _end), trends in reference_trends(text, events, trend_set=trend_set, typed=typed).items():
        want[start // window_slide] = set(trends)
    return want


def slide(text):
    q = cetql.parse(text)
    return (q.slide or q.within).amount


def aggregates(text, events, typed, **options) -> dict[int, dict]:
    _, _, out = run_local(text, events, typed=typed, **options)
    return {window_of(r): r for r in out}


def same_value(g, w) -> bool:
    """An aggregate equals the reference's: exactly, or as doubles (NaN equal to NaN)."""
    if isinstance(w, float) or isinstance(g, float):
        if g is None or w is None:
            return False
        g, w = float(g), float(w)
        return (math.isnan(g) and math.isnan(w)) or g == w or math.isclose(g, w)
    return (int(g) if isinstance(g, Decimal) else g) == w


def check_aggregates(text, events, typed, spec_changes=None, **options):
    q = cetql.parse(text)
    names = [aggregate_to_text(a) for a in q.aggregates]
    _, _, out = run_local(text, events, typed=typed, spec_changes=spec_changes, **options)
    got = {window_of(r): r for r in out}
    step = slide(text)
    want = {start // step: row for (start, _), row in reference_aggregates(text, events, typed=typed).items()}
    got = {k: v for k, v in got.items() if v["COUNT(*)"] != 0}  # the reference lists windows with trends only
    assert got.keys() == want.keys(), text
    for k, row in want.items():
        for n in names:
            assert same_value(got[k][n], row[n]), (text, k, n, got[k][n], row[n])
