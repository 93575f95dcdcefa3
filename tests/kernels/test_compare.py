"""The one module of comparison semantics (`kernels.compare`) against its
table of cases (`CASES`: NaN, ±0.0, ±infinity, int against double, DECIMALs,
null, text by bytes, booleans, mixed kinds), written from Spark SQL's rules
by hand, and every evaluator that reads it against the same table: the
row evaluator (`expr`), the ranks every index reads (`ranks`), the
compiled kernels' int64 keys (`arrow_keys`) and their per-segment ranks
(`jit.local_codes`), and the sort key.  Generated columns check that keys
and ranks keep every comparison of their values."""

import itertools
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from budget import budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.kernels import jit
from cetql.kernels import spec as K
from cetql.kernels.compare import CASES, COMPARATORS, MIRROR, OPS, arrow_keys, compare, order_key, ranks, time_keys
from cetql.kernels.expr import evaluate

SOME = settings(max_examples=budget(200), deadline=None, suppress_health_check=list(HealthCheck))
NEGATION = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
IDS = [f"{c.a!r} {c.op} {c.b!r}" for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_table(case):
    assert compare(case.op, case.a, case.b) is case.want
    assert compare(MIRROR[case.op], case.b, case.a) is case.want  # a OP b ⇔ b MIRROR(OP) a
    negated = None if case.want is None else not case.want  # two-valued once neither side is null
    assert compare(NEGATION[case.op], case.a, case.b) is negated


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_row_evaluator_reads_it(case):
    expr = K.Cmp(case.op, K.Col("self", "a"), K.Col("self", "b"))
    assert evaluate(expr, {"self": {"a": case.a, "b": case.b}}) is case.want
    literal = K.Cmp(case.op, K.Col("self", "a"), K.Lit(case.b))
    if not isinstance(case.b, Decimal):  # a DECIMAL literal is a double in an expression (Spark's literal)
        assert evaluate(literal, {"self": {"a": case.a}}) is case.want


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ranks_read_it(case):
    ra, rb, _ = ranks([case.a], [case.b])
    by_rank = None if ra[0] is None or rb[0] is None else COMPARATORS[case.op](ra[0], rb[0])
    assert by_rank is case.want


def _arrow(v, other):
    """A one-value Arrow column of v's type (null: of the other side's type)."""
    if v is None:
        return pa.array([None], type=_arrow(other, 1).type if other is not None else pa.null())
    if isinstance(v, int) and not isinstance(v, bool):
        return pa.array([v], type=pa.int64())
    return pa.array([v])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_compiled_keys_read_it(case):
    ka, va, kb, vb = arrow_keys(_arrow(case.a, case.b), _arrow(case.b, case.a))
    assert ka.dtype == kb.dtype == np.int64
    by_key = bool(COMPARATORS[case.op](ka[0], kb[0])) if va[0] and vb[0] else None
    assert by_key is case.want


SPECIAL = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 2.5, -3.0, 2.0**53]
TYPED = {
    "double": (st.sampled_from(SPECIAL), pa.float64()),
    "long": (st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**53, 2**53 + 1, 0, 3])),
             pa.int64()),
    "int": (st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), pa.int32()),
    "decimal": (st.one_of(st.none(), st.decimals(-(10**6), 10**6, places=3, allow_nan=False)), pa.decimal128(12, 3)),
    "text": (st.one_of(st.none(), st.text(alphabet="aAzé€\uff5e\U0001f600\x00", max_size=3)), pa.string()),
    "bool": (st.one_of(st.none(), st.booleans()), pa.bool_()),
}  # fmt: skip


@st.composite
def two_columns(draw):
    """Two columns of drawn types (comparable or not), up to 10 values each."""
    ta, tb = draw(st.sampled_from(sorted(TYPED))), draw(st.sampled_from(sorted(TYPED)))
    a = draw(st.lists(TYPED[ta][0], max_size=10))
    b = draw(st.lists(TYPED[tb][0], max_size=10))
    return pa.array(a, type=TYPED[ta][1]), pa.array(b, type=TYPED[tb][1])


@SOME
@given(two_columns())
def test_keys_and_ranks_keep_every_comparison(columns):
    """Python ranks (every index), the compiled keys and their local ranks
    (`jit.local_codes`, what the compiled loops compare) against `compare`
    on every pair of values."""
    a, b = columns
    x, y = a.to_pylist(), b.to_pylist()
    ra, rb, size = ranks(x, y)
    ka, va, kb, vb = arrow_keys(a, b)
    codes = np.empty(len(x) + len(y), dtype=np.int64)
    n = jit.local_codes(np.concatenate([ka, kb]), np.concatenate([va, vb]), codes)
    ca, cb = codes[: len(x)], codes[len(x) :]
    same = np.empty(len(x) + len(y), dtype=np.int64)  # `jit.equal_codes`: what the compiled walk's = compares
    jit.equal_codes(np.concatenate([ka, kb]), np.concatenate([va, vb]), same, jit.new_slots(len(same)))
    assert all(r is None or 0 <= r < size for r in ra + rb) and all(-1 <= c < n for c in codes)
    for (i, u), (j, v) in itertools.product(enumerate(x), enumerate(y)):
        for op in OPS:
            want = compare(op, u, v)
            by_rank = None if ra[i] is None or rb[j] is None else COMPARATORS[op](ra[i], rb[j])
            by_key = bool(COMPARATORS[op](ka[i], kb[j])) if va[i] and vb[j] else None
            by_code = bool(COMPARATORS[op](ca[i], cb[j])) if ca[i] >= 0 and cb[j] >= 0 else None
            assert by_rank is want and by_key is want and by_code is want, (op, u, v)
            if op in ("=", "!="):
                by_same = bool(COMPARATORS[op](same[i], same[len(x) + j])) if ca[i] >= 0 and cb[j] >= 0 else None
                assert by_same is want, (op, u, v)


@SOME
@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False).map(
    lambda f: int(np.float64(f).view(np.int64))), st.integers(0, 40).map(lambda k: k << 52)), max_size=60),
    st.lists(st.booleans(), max_size=60), st.integers(0, 3))  # fmt: skip
def test_equal_codes_code_equal_keys_alike_and_only_them(keys, valid, reuse):
    """`jit.equal_codes` against Python's equality, keys that share their
    low bits included (doubles' keys), on one table used again and again
    (it must be left empty each time)."""
    x = np.asarray(keys, dtype=np.int64)
    ok = np.asarray((valid + [True] * len(keys))[: len(keys)], dtype=bool)
    slots = jit.new_slots(len(x))
    for _ in range(reuse + 1):
        out = np.empty(len(x), dtype=np.int64)
        n = jit.equal_codes(x, ok, out, slots)
        assert n == len({int(v) for v, o in zip(x, ok) if o})
        for i, j in itertools.product(range(len(x)), repeat=2):
            if ok[i] and ok[j]:
                assert (out[i] == out[j]) == (x[i] == x[j]) and 0 <= out[i] < n
            else:
                assert (out[i] == -1) == (not ok[i])


@SOME
@given(st.sampled_from(sorted(TYPED)), st.data())
def test_the_sort_key_is_nulls_first_then_compare(name, data):
    values = data.draw(st.lists(TYPED[name][0], max_size=10))
    ordered = sorted(values, key=order_key)
    for u, v in itertools.pairwise(ordered):
        assert u is None or compare("<=", u, v) is True


@SOME
@given(st.lists(st.sampled_from([x for x in SPECIAL if x is not None and not math.isnan(x)]), max_size=12))
def test_time_keys_keep_the_order_of_times(times):
    times = sorted(times)
    k = time_keys(pa.array(times, type=pa.float64()))
    for i, j in itertools.combinations(range(len(times)), 2):
        assert (k[i] < k[j]) == (times[i] < times[j]) and (k[i] == k[j]) == (times[i] == times[j])
