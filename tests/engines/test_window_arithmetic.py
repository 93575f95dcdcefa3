"""The window arithmetic as the embedded engine's SQL (`backends.sql.windows`
in DuckDB's dialect) is exact: for fractional sizes (decimal arithmetic),
every time the plan admits (`physical.ranges`) gets the window indexes
floor(t / slide) and floor((t - length) / slide) + 1 of exact arithmetic,
computed here in Python's decimals.  DuckDB divides decimals through a
double (exact only below 2^53): these times reach 10^19.  (The embedded
engine's capability table keeps decimal window arithmetic on Spark, for
another reason — its cast of double times —, so this SQL runs only when
that is lifted: it is exact then.)"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import duckdb
from budget import budget
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cetql
from cetql.backends.sql import windows as W
from cetql.backends.sql.dialects import DUCKDB
from cetql.planner.physical.plan import Arithmetic

SOME = settings(max_examples=budget(200), deadline=None, suppress_health_check=list(HealthCheck))


def _floor_div(x: Decimal, s: Decimal) -> int:
    return int((x - x % s) // s) if x >= 0 or x % s == 0 else int((x - (x % s + s)) // s)


def _exact(t: Decimal, length: Decimal, slide: Decimal) -> tuple[int, int]:
    return _floor_div(t - length, slide) + 1, _floor_div(t, slide)


@st.composite
def cases(draw):
    places = draw(st.integers(1, 6))
    unit = Decimal(1).scaleb(-places)
    slide = unit * draw(st.integers(1, 10**6))
    length = slide * draw(st.integers(1, 4)) + unit * draw(st.sampled_from([0, 0, 1]))
    plan = cetql.compile(f"PATTERN A+ a[] WITHIN {length} SLIDE {slide}").plan
    r = plan.windows.times
    magnitude = draw(st.sampled_from([10**3, 2**53 // 10**places, 10**15, 10**17, r.hi]))
    t = draw(st.decimals(max(r.lo, -magnitude), min(r.hi, magnitude), places=plan.windows.scale))
    return plan, t


@SOME
@given(cases())
@example((cetql.compile("PATTERN A+ a[] WITHIN 0.6 SLIDE 0.3").plan, Decimal("3000000000000000.4")))  # 10^16 + 1 as a double: 10^16
def test_decimal_windows_are_exact_in_duckdb(case):
    plan, t = case
    w = plan.windows
    if w.arithmetic == Arithmetic.INTEGER:  # whole sizes (`1.0`): the times are bigints
        t, typed = Decimal(int(t)), "BIGINT"
    else:
        typed = f"DECIMAL(38, {w.scale})"
    sql = (f"SELECT {W.first_window(plan, DUCKDB)}, {W.last_window(plan, DUCKDB)} "
           f"FROM (SELECT CAST('{t}' AS {typed}) AS {DUCKDB.quote(plan.names.time)})")  # fmt: skip
    got = duckdb.connect().execute(sql).fetchall()[0]
    assert tuple(map(int, got)) == _exact(t, w.length, w.slide), (t, w.length, w.slide)



def _size(places: int, digits: int) -> Decimal:
    return Decimal(digits).scaleb(-places)


@SOME
@given(st.builds(_size, st.integers(0, 27), st.integers(1, 10**27)), st.builds(_size, st.integers(0, 27), st.integers(1, 10**27)))
@example(Decimal("19.99999999999999999999999999"), Decimal("9.999999999999999999999999994"))  # 2 + 2e-28: 2 in 28 digits
def test_per_event_holds_every_events_windows(a, b):
    """The embedded engine places an event in its windows by joining
    range(per_event): per_event is the most windows an event is in,
    ceil(length / slide) exactly (at time 0 an event is in that many),
    never a quotient rounded to 28 digits."""
    length, slide = max(a, b), min(a, b)
    try:
        w = cetql.compile(f"PATTERN A+ a[] WITHIN {length:f} SLIDE {slide:f}", max_windows=0).plan.windows
    except cetql.CetqlError:
        return  # sizes the planner refuses
    assert w.per_event == math.ceil(Fraction(w.length) / Fraction(w.slide)), (w.length, w.slide, w.per_event)
