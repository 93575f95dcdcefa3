"""Every approximate value is finite or refused (SEMANTICS.md, Engines and
workloads), intermediates included; an exact aggregate is exact, whatever
its output type.

The expected values are derived here, not taken from a kernel: `E+` over n
events of one group at distinct times has every non-empty subset as a trend
(ALL trends), so COUNT(*) = 2^n - 1, COUNT(e) = n·2^(n-1), SUM(e.v) =
2^(n-1)·Σv, AVG(e.v) = Σv / (values), MIN / MAX those of the values.  Small
streams are checked against the brute-force reference as well.
"""

import dataclasses
import math
from decimal import Decimal
from fractions import Fraction

import pytest
from checks import check_aggregates
from harness import run_local
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cetql.kernels.errors import AggregateOverflow

SOME = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
CHAIN = "PATTERN E+ e[] WHERE e[i].g = e[i-1].g WITHIN 100000"
AGGREGATES = ["COUNT(*)", "COUNT(e)", "SUM(e.v)", "AVG(e.v)", "MIN(e.v)", "MAX(e.v)"]
DEC38 = 10**38


def _values(kind: str):
    if kind == "int":
        return st.integers(-(10**12), 10**12)
    if kind == "decimal:2":
        return st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False)
    return st.one_of(st.floats(-1e6, 1e6), st.sampled_from([0.0, 1e300, -1e300, 1e-300, 5e-324]))


@st.composite
def streams(draw):
    """(n events of one group, their value kind, the values, null included)."""
    kind = draw(st.sampled_from(["int", "decimal:2", "double"]))
    n = draw(st.one_of(st.integers(1, 40), st.integers(60, 130), st.integers(1015, 1100)))
    values = draw(st.lists(st.one_of(st.none(), _values(kind)), min_size=n, max_size=n))
    return kind, values


def _exact(func: str, values: list):
    """The aggregate over every non-empty subset, as an exact number (None: no value)."""
    n, xs = len(values), [Fraction(v) for v in values if v is not None]
    if func == "COUNT(*)":
        return Fraction(2**n - 1)
    if func == "COUNT(e)":
        return Fraction(n * 2 ** (n - 1))
    if func == "SUM(e.v)":
        return 2 ** (n - 1) * sum(xs)  # 0 without values, as the reference's
    if not xs:
        return None
    return {"AVG(e.v)": sum(xs) / len(xs), "MIN(e.v)": min(xs),
            "MAX(e.v)": max(xs)}[func]  # fmt: skip


def _double(x: Fraction):
    try:
        return float(x)
    except OverflowError:
        return math.inf


def _run(func: str, kind: str, values: list, **options):
    events = [{"id": i, "ts": i, "g": 1, "v": v} for i, v in enumerate(values)]

    def typed(_plan, phys):  # the value column's SQL type, as a real input's schema gives it
        from cetql.planner.physical.kernel import kernel_spec

        return {"targets": tuple(dataclasses.replace(t, kind=kind) if t.value else t for t in kernel_spec(phys).targets)}

    _, _, out = run_local(f"RETURN {func} {CHAIN}", events, spec_changes=typed, **options)
    (row,) = out
    return row[func]


@SOME
@given(st.sampled_from(AGGREGATES), streams())
@example("AVG(e.v)", ("int", list(range(1100))))  # the issue's AVG = NaN
@example("SUM(e.v)", ("double", [0.0] * 1100))  # 0 · inf intermediates: the exact sum is 0
def test_an_approximate_value_is_finite_or_refused(func, drawn):
    kind, values = drawn
    want = _exact(func, values)
    try:
        got = _run(func, kind, values, approx=True)
    except AggregateOverflow as e:
        assert func in str(e) and "window [0, 100000)" in str(e) and "drop --approx" in str(e)
        assert want is not None and math.isinf(_double(want)), (func, want)  # refused only past the range
        return
    if want is None:
        assert got is None
        return
    assert isinstance(got, float) and math.isfinite(got), (func, got)
    signs = {v > 0 for v in values if v}
    if func not in ("SUM(e.v)", "AVG(e.v)") or len(signs) <= 1:  # no cancellation: as close as doubles are
        assert math.isclose(got, _double(want), rel_tol=1e-9), (func, got, float(want))


@SOME
@given(st.sampled_from(AGGREGATES), streams())
def test_an_exact_value_is_exact_or_refused(func, drawn):
    """Without APPROX: COUNT / SUM of integers and DECIMALs every digit (the
    default decimal context would keep 28), a DOUBLE the exact value
    rounded once, refused past its type."""
    kind, values = drawn
    want = _exact(func, values)
    double = func in ("AVG(e.v)", "MIN(e.v)", "MAX(e.v)") or (func == "SUM(e.v)" and kind == "double")
    try:
        got = _run(func, kind, values)
    except AggregateOverflow as e:
        assert func in str(e) and "window [0, 100000)" in str(e)
        limit = 10 ** (38 - (2 if kind == "decimal:2" and func == "SUM(e.v)" else 0))
        assert math.isinf(_double(want)) if double else abs(want) >= limit, (func, want)
        return
    if want is None:
        assert got is None
    elif double:
        assert got == _double(want), (func, got, float(want))
    else:
        assert Fraction(got) == want, (func, got, want)


@pytest.mark.parametrize("approx", [True, False])
def test_the_issues_average_of_eleven_hundred_events(approx):
    """AVG, MIN, MAX of e.ts over the 2^1100 - 1 trends of one group: the
    mean of the times (each event is in half the trends), never NaN."""
    events = [{"id": i, "ts": i, "g": 7} for i in range(1100)]
    text = f"RETURN AVG(e.ts), MIN(e.ts), MAX(e.ts) {CHAIN}"
    (row,) = run_local(text, events, approx=approx)[2]
    assert row["AVG(e.ts)"] == sum(range(1100)) / 1100
    assert (row["MIN(e.ts)"], row["MAX(e.ts)"]) == (0.0, 1099.0)


def test_a_count_past_a_double_names_the_aggregate_window_and_the_way_out():
    events = [{"id": i, "ts": i, "g": 1} for i in range(1100)]
    with pytest.raises(AggregateOverflow) as e:
        run_local(f"RETURN AVG(e.ts), COUNT(*) {CHAIN}", events, approx=True)
    text = str(e.value)
    assert text.startswith("COUNT(*) in window [0, 100000), the whole window, has no finite approximate value")
    assert "drop --approx (APPROX) to get the exact value (as DECIMAL(38,0)" in text and "\n" not in text


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([0.5, -2.25, 1e300])), min_size=1,
                max_size=6),  # fmt: skip
       st.booleans())
def test_small_streams_are_the_references(values, approx):
    events = [{"id": i, "ts": i, "g": 1, "v": v} for i, v in enumerate(values)]
    text = f"RETURN COUNT(*), {', '.join(AGGREGATES[1:])} {CHAIN}"
    check_aggregates(text, events, typed=False, approx=approx)


@SOME
@given(st.integers(60, 125), st.lists(st.decimals(-1000, 1000, places=2, allow_nan=False, allow_infinity=False),
                                      min_size=1, max_size=8))  # fmt: skip
@example(100, [Decimal("1.01")])
def test_decimal_sums_keep_every_digit(n, some):
    """SUM of a DECIMAL(·,2) over 2^(n-1)·n occurrences: 30 and more digits,
    past the 28 that Python's default decimal context keeps."""
    values = (some * n)[:n]
    want = 2 ** (n - 1) * sum(map(Fraction, values))  # exactly (Decimal's default context would round)
    try:
        got = _run("SUM(e.v)", "decimal:2", values)
    except AggregateOverflow:
        assert abs(want) >= 10**36
        return
    assert Fraction(got) == want
