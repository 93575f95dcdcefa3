"""The times whose windows a plan computes exactly (`physical.ranges`): for
every time inside the plan's range, every window it falls in has an index
that a 64-bit integer holds and bounds its output type holds (a bigint, a
DECIMAL(38, s), a timestamp Python and Spark can show).  Outside, the scan
refuses the row as invalid.  Checked here in exact arithmetic, independently
of Spark; the scan's use of the range is checked on Spark
(tests/engines/test_inputs_spark.py)."""

import datetime as dt
from decimal import Decimal

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cetql
from cetql.planner.physical.ranges import time_range

SOME = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
LONG = 2**63 - 1
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _floor_div(x, s):
    return (x - x % s) // s  # as the plan's SQL: exact in integers and decimals


def _windows(t, length, slide):
    k_hi = _floor_div(t, slide)
    k_lo = _floor_div(t - length, slide) + 1
    return [(k, k * slide, k * slide + length) for k in (k_lo, k_hi)]


def _fits_timestamp(micros) -> bool:
    try:
        (EPOCH + dt.timedelta(microseconds=int(micros))).astimezone(dt.timezone(dt.timedelta(hours=-14)))
        (EPOCH + dt.timedelta(microseconds=int(micros))).astimezone(dt.timezone(dt.timedelta(hours=14)))
    except OverflowError:
        return False
    return True


sizes = st.one_of(st.integers(1, 10**12), st.decimals(Decimal("0.001"), 10**6, places=3).filter(lambda d: d > 0))


@SOME
@given(sizes, st.integers(1, 5), st.sampled_from(["numeric", "timestamp", "timestamp_ns"]), st.integers(0, 18),
       st.booleans())  # fmt: skip
@example(5, 1, "numeric", 0, True)  # the decimal times near 10^37, WITHIN 5
@example(5_000_000, 1, "timestamp", 0, True)  # a year-0001 time, WITHIN 5 seconds
def test_every_window_of_a_time_in_range_is_exact(length, per, kind, places, decimal_bounds):
    slide = length / per if isinstance(length, Decimal) else max(1, length // per)
    integer = isinstance(length, int) and kind != "numeric" or (isinstance(length, int) and places == 0)
    scale = None if integer else max(places, 3)
    bounds_scale = 3 if decimal_bounds and not integer else None
    r = time_range(kind, scale, bounds_scale, length, slide)
    third = (r.hi - r.lo) // 3 if isinstance(r.hi - r.lo, int) else (r.hi - r.lo) / 3
    for t in (r.lo, r.hi, r.lo + third):
        for k, start, end in _windows(t, length, slide):
            assert abs(k) <= LONG, (t, k)
            if kind == "timestamp":
                assert _fits_timestamp(start) and _fits_timestamp(end), (t, start, end)
                continue
            if bounds_scale is None:
                assert abs(start) <= LONG and abs(end) <= LONG
            else:
                assert abs(start) < Decimal(10) ** (38 - bounds_scale) and abs(end) < Decimal(10) ** (38 - bounds_scale)
            if scale is not None:
                assert abs(t) < Decimal(10) ** (38 - scale) and abs(t - length) < Decimal(10) ** (38 - scale)


def test_the_plan_states_its_range():
    plan = cetql.compile("PATTERN A+ a[] WITHIN 5 SLIDE 1").plan
    # the window indexes floor(t / 1) and floor((t - 5) / 1) + 1 are bigints, and so are their bounds
    assert (plan.windows.times.lo, plan.windows.times.hi) == (-(LONG - 8), LONG - 8)
    assert plan.windows.times.text.startswith("from -9,223,372,036,854,775,799 to 9,223,372,036,854,775,799")
