"""One meaning for a comparison (SEMANTICS.md, Errors: "Comparisons mean one
thing everywhere"): Spark SQL's — NaN equals NaN and is larger than every
other number, -0.0 equals 0.0, a comparison with null is not true, a
DECIMAL against a DOUBLE is compared as doubles — in the expression
evaluator, in every index (hash keys, sorted and Fenwick ranks, the range
sweep), in the group keys, in detection and in aggregation alike.

The kernels' implementation (`kernels.values`) is checked against the
reference's own (`reference.sql_compare`), and queries over a DOUBLE
attribute holding null, NaN, ±infinity, -0.0 and 0.0 — equal, range and
other edge predicates, vertex filters, cross predicates, `[y]`, MIN / MAX /
SUM — against the reference's trends and aggregates.
"""

import itertools
import math
from decimal import Decimal

import pyarrow as pa
from budget import budget
from checks import check_aggregates, compile_or_skip, detected, wanted
from generators import SPECIAL, queries, stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import sql_compare

from cetql.kernels import spec as K
from cetql.kernels.batches import group_starts
from cetql.kernels.compare import COMPARATORS, compare, ranks
from cetql.kernels.expr import evaluate
from cetql.kernels.index import MAX, MIN, SUM, AttributeIndex, Monoid, count_in_range, later_in_range, sums

OPS = ["=", "!=", "<", "<=", ">", ">="]
VALUES = [*SPECIAL, 1, 3, Decimal("2.5"), Decimal("-1")]
SOME = settings(max_examples=budget(150), deadline=None, suppress_health_check=list(HealthCheck))


def test_compare_is_the_references_on_every_pair():
    for op, a, b in itertools.product(OPS, VALUES, VALUES):
        assert compare(op, a, b) == sql_compare(op, a, b), (op, a, b)
        expr = K.Cmp(op, K.Col("self", "a"), K.Col("self", "b"))
        assert evaluate(expr, {"self": {"a": a, "b": b}}) == sql_compare(op, a, b), (op, a, b)


def test_the_issue_examples():
    nan = math.nan
    assert compare("=", nan, nan) is True
    assert compare(">", nan, 1.0) is True and compare(">", nan, math.inf) is True
    assert compare("<", 5.0, nan) is True and compare("<", nan, nan) is False
    assert compare("=", -0.0, 0.0) is True
    assert compare("=", None, None) is None and compare("<", 1.0, None) is None
    assert compare("=", Decimal("0.1"), 0.1) is True  # as doubles
    assert compare("<", "a", 1) is None  # not comparable: null
    assert evaluate(K.IsNotNull(K.Col("self", "y")), {"self": {"y": nan}}) is True
    assert evaluate(K.IsNotNull(K.Col("self", "y")), {"self": {"y": None}}) is False


columns = st.lists(st.sampled_from(SPECIAL), max_size=12)


@SOME
@given(columns, columns)
def test_ranks_keep_every_comparison(a, b):
    ra, rb, size = ranks(a, b)
    for (i, x), (j, y) in itertools.product(enumerate(a), enumerate(b)):
        assert (ra[i] is None) == (x is None) and (rb[j] is None) == (y is None)
        for op in OPS:
            by_rank = ra[i] is not None and rb[j] is not None and COMPARATORS[op](ra[i], rb[j])
            assert by_rank == (compare(op, x, y) is True), (op, x, y)
    assert all(r is None or 0 <= r < size for r in ra + rb)


@SOME
@given(columns, columns, st.sampled_from(["=", "<", "<=", ">", ">="]))
def test_the_index_finds_exactly_the_pairs_the_predicate_holds_on(lval, h, op):
    """Hash and range successors (`later_in_range`), the guard's count, and
    aggregation's sums over ranks (one sum a rank, the Fenwick tree) against
    the predicate checked pair by pair."""
    n = min(len(lval), len(h))
    lval, h = lval[:n], h[:n]
    times = [e // 2 for e in range(n)]  # ties: an event never follows one of its own time
    idx = AttributeIndex(lval, op, h)
    pairs = {e: [f for f in range(n) if times[f] > times[e] and compare(op, lval[f], h[e]) is True] for e in range(n)}
    assert all(idx.holds(e, f) == (f in fs) for e, fs in pairs.items() for f in range(n) if times[f] > times[e])
    if op != "=":
        assert count_in_range(times, range(n), range(n), idx) == sum(map(len, pairs.values()))
        found = later_in_range(times, list(range(n)), list(range(n)), idx)
        assert {e: fs for e, fs in pairs.items() if fs} == found
    index = sums(idx.size, op, 0)  # values at lval keys; a query from h[e] sums those with lval OP h[e]
    for f in range(n):
        index.insert(idx.lval[f], 2**f)
    for e in range(n):
        assert index.query(idx.h[e]) == sum(2**f for f in range(n) if compare(op, lval[f], h[e]) is True)


def test_group_keys_are_sparks():
    """NaN with NaN, -0.0 with 0.0: one group each."""
    table = pa.table({"k": [1.0, math.nan, math.nan, -0.0, 0.0, math.inf, math.inf]})
    assert group_starts(table, ["k"]) == [0, 1, 3, 5]


def test_an_equal_predicate_pairs_nan_with_nan_and_zero_with_negative_zero():
    text = "PATTERN S+ s[] WHERE s[i].y = s[i-1].y WITHIN 10"
    events = [{"id": i, "ts": i, "y": y} for i, y in enumerate([math.nan, 1.0, math.nan, -0.0, 0.0])]
    assert detected(text, events, False, "COMPLETE") == {0: {(0, 2), (1,), (3, 4)}}
    assert detected(text, events, False, "COMPLETE") == wanted(text, events, False, "COMPLETE")


def test_a_range_predicate_puts_nan_above_every_number():
    text = "PATTERN S+ s[] WHERE s[i].y > s[i-1].y WITHIN 10"
    events = [{"id": i, "ts": i, "y": y} for i, y in enumerate([1.0, math.inf, math.nan, 2.0])]
    assert detected(text, events, False, "ALL") == wanted(text, events, False, "ALL")
    assert (0, 1, 2) in detected(text, events, False, "ALL")[0]


def _special(data, typed, aggregation, windows=None):
    kw = {"windows": windows} if windows else {}
    text = data.draw(queries(aggregation, repeated_types=not typed, special=True, **kw))
    return text, data.draw(stream(typed, special=True))


@SOME
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.sampled_from([None, 1]))
def test_detection_over_special_values_equals_reference(data, typed, trend_set, budget):
    """Stored edges and none (1 byte: every successor found again in the index)."""
    text, events = _special(data, typed, False)
    compile_or_skip(text, typed=typed)
    options = {} if budget is None else {"memory_budget": budget}
    assert detected(text, events, typed, trend_set, **options) == wanted(text, events, typed, trend_set), text


@SOME
@given(st.data(), st.booleans(), st.sampled_from(["ALL", "COMPLETE"]))
def test_aggregation_over_special_values_equals_reference(data, typed, trend_set):
    text, events = _special(data, typed, True)
    if trend_set == "COMPLETE":
        text += "\nTRENDS COMPLETE"
    compile_or_skip(text, typed=typed)
    check_aggregates(text, events, typed)


def test_min_and_max_order_nan_above_every_number():
    events = [{"id": i, "ts": i, "y": y} for i, y in enumerate([2.0, math.nan, -math.inf])]
    text = "RETURN COUNT(*), MIN(s.y), MAX(s.y) PATTERN S+ s[] WITHIN 10"
    check_aggregates(text, events, False)
    rows = detected("PATTERN S+ s[] WITHIN 10", events, False, "ALL")
    assert len(rows[0]) == 7


ADDED = st.none() | st.integers(-3, 3) | st.sampled_from([math.nan, -0.0, 0.0, 1.5, math.inf, -math.inf])


@settings(max_examples=budget(200), deadline=None)
@given(st.lists(st.sampled_from([SUM, MIN, MAX]), min_size=1, max_size=6), st.data())
def test_a_vector_add_is_its_components_added_at_their_places(kinds, data):
    """`Monoid.add` (GRETA's hot loop) is `add_at` over every component,
    and `add_at` over some components leaves the others as they were:
    sums, minima and maxima of values with nulls, NaN and -0.0."""
    m = Monoid(kinds, 0)
    vector = st.lists(ADDED, min_size=len(kinds), max_size=len(kinds))
    acc, v = data.draw(vector), data.draw(vector)
    at = data.draw(st.lists(st.sampled_from(range(len(kinds))), unique=True))
    whole, some = list(acc), list(acc)
    m.add(whole, v)
    m.add_at(some, [v[i] for i in at], at)
    every = list(acc)
    m.add_at(every, v, range(len(kinds)))
    assert repr(whole) == repr(every)
    assert repr(some) == repr([whole[i] if i in at else acc[i] for i in range(len(kinds))])
