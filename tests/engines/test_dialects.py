"""The SQL both engines spell expressions in (`backends.sql`): every case of
the one table of comparison semantics (`kernels.compare.CASES`) that the
engines type alike, as DuckDB's SQL (the embedded engine) and as Spark's,
and generated expressions over special values against the kernels' row
evaluator (`kernels.expr`) — the three must agree."""

from __future__ import annotations

import math
from contextlib import contextmanager
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest
from budget import budget
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from cetql.backends.sql.dialects import DUCKDB, SPARK
from cetql.backends.sql.expressions import to_sql
from cetql.kernels import expr as kernel_expr
from cetql.kernels import spec as K
from cetql.kernels.compare import CASES
from cetql.kernels.errors import ValueOverflow
from cetql.kernels.expr import evaluate
from cetql.planner.physical.engine import kind


def _arrow_type(v):
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        return pa.int64()
    if isinstance(v, float):
        return pa.float64()
    if isinstance(v, str):
        return pa.string()
    return None


def typed(case):
    """(Arrow types of a and b) where both engines carry the case's values alike, else None."""
    ta, tb = _arrow_type(case.a), _arrow_type(case.b)
    if case.a is None and case.b is None:
        return pa.int64(), pa.int64()
    ta, tb = ta or tb, tb or ta
    if ta is None or isinstance(case.a, Decimal) or isinstance(case.b, Decimal):
        return None
    kinds = {pa.int64(): "int", pa.float64(): "float", pa.string(): "string", pa.bool_(): "bool"}
    if kind(K.Cmp(case.op, K.Col("self", "a"), K.Col("self", "b")), {"a": kinds[ta], "b": kinds[tb]}) is None:
        return None
    return ta, tb


CHOSEN = [c for c in CASES if typed(c) is not None]
IDS = [f"{c.a!r} {c.op} {c.b!r}" for c in CHOSEN]


def duck(expr: K.Expr, rows: list[dict], types: dict) -> list:
    table = pa.table({name: pa.array([r[name] for r in rows], t) for name, t in types.items()})
    con = duckdb.connect()
    con.register("t", table)
    return [r[0] for r in con.execute(f"SELECT {to_sql(expr, DUCKDB)} FROM t").fetchall()]


def test_enough_of_the_table_is_checked():
    assert len(CHOSEN) >= 30


@pytest.mark.parametrize("case", CHOSEN, ids=IDS)
def test_duckdb_spells_the_table(case):
    ta, tb = typed(case)
    got = duck(K.Cmp(case.op, K.Col("self", "a"), K.Col("self", "b")), [{"a": case.a, "b": case.b}], {"a": ta, "b": tb})
    assert got == [case.want]


def test_spark_spells_the_table(spark):
    from pyspark.sql import functions as F

    spark_types = {pa.int64(): "bigint", pa.float64(): "double", pa.string(): "string", pa.bool_(): "boolean"}
    columns = []
    for i, case in enumerate(CHOSEN):
        ta, tb = typed(case)
        a = F.lit(case.a).cast(spark_types[ta]).alias(f"a{i}")
        b = F.lit(case.b).cast(spark_types[tb]).alias(f"b{i}")
        columns += [a, b]
    df = spark.range(1).select(*columns)
    tests = [F.expr(to_sql(K.Cmp(c.op, K.Col("self", f"a{i}"), K.Col("self", f"b{i}")), SPARK)) for i, c in
             enumerate(CHOSEN)]  # fmt: skip
    got = list(df.select(*tests).first())
    assert got == [c.want for c in CHOSEN], [(c, g) for c, g in zip(CHOSEN, got) if g is not c.want]


# ---------------------------------------------------------------- generated expressions


def _exprs():
    ints = st.sampled_from([K.Col("self", "x"), K.Lit(0), K.Lit(2), K.Lit(-3), K.Lit(2**62)])
    floats = st.sampled_from([K.Col("self", "y"), K.Lit(0.0), K.Lit(-0.0), K.Lit(1.5), K.Lit(math.nan),
                              K.Lit(math.inf), K.Lit(None)])  # fmt: skip
    texts = st.sampled_from([K.Col("self", "g"), K.Lit("g"), K.Lit("é"), K.Lit(""), K.Lit("it's")])

    def numbers(inner):
        return st.one_of(st.builds(K.Arith, st.sampled_from("+-*/%"), inner, inner), st.builds(K.Neg, inner))

    number = st.recursive(ints | floats, numbers, max_leaves=4)
    ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    atoms = st.builds(K.Cmp, ops, number, number) | st.builds(K.Cmp, ops, texts, texts) | \
        st.builds(K.IsNotNull, number)  # fmt: skip

    def logic(inner):
        pairs = st.lists(inner, min_size=2, max_size=3).map(tuple)
        return st.builds(K.And, pairs) | st.builds(K.Or, pairs) | st.builds(K.Not, inner)

    return st.recursive(atoms, logic, max_leaves=4) | number


ROW = st.fixed_dictionaries({"x": st.none() | st.integers(-5, 5) | st.sampled_from([2**62, -(2**63)]),
                             "y": st.sampled_from([None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, 3.0]),
                             "g": st.sampled_from([None, "g", "é", "", "h"])})  # fmt: skip
TYPES = {"x": pa.int64(), "y": pa.float64(), "g": pa.string()}


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b and (isinstance(a, bool) == isinstance(b, bool))


@contextmanager
def _unbounded():
    """The row evaluator with Python's unbounded integers (no 64-bit check):
    what each step would be, to find the steps that leave 64 bits."""
    checked = kernel_expr.whole
    kernel_expr.whole = lambda v: v
    try:
        yield
    finally:
        kernel_expr.whole = checked


def _leaves_64_bits(e, rows) -> bool:
    """Whether an integer step of `e` leaves 64 bits on some row (the engines fail there)."""
    found = []

    def walk(x):
        if isinstance(x, (K.Arith, K.Neg)):
            for r in rows:
                with _unbounded():
                    v = evaluate(x, {"self": r})
                if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
                    found.append(x)
        for child in getattr(x, "items", ()) or [getattr(x, f, None) for f in ("left", "right", "operand")]:
            if child is not None and not isinstance(child, str):
                walk(child)

    walk(e)
    return bool(found)


@settings(max_examples=budget(250), deadline=None, suppress_health_check=list(HealthCheck))
@given(_exprs(), st.lists(ROW, min_size=1, max_size=8))
def test_duckdb_evaluates_as_the_kernels_do(e, rows):
    """Equal values, nulls and NaN alike; an integer past 64 bits fails
    the query (DuckDB's checks, Spark's ANSI mode) where the row evaluator's
    Python integer leaves 64 bits."""
    assume(kind(e, {"x": "int", "y": "float", "g": "string"}) is not None)
    try:
        want = [evaluate(e, {"self": r}) for r in rows]
    except ValueOverflow:  # the evaluator fails the query as the engines do
        want = None
        assert _leaves_64_bits(e, rows), e
    try:
        got = duck(e, rows, TYPES)
    except duckdb.OutOfRangeException:
        assert _leaves_64_bits(e, rows), e
        return
    if want is None:  # DuckDB folded the step away (a division by a literal 0 is null to it); Spark evaluates it
        return
    assert all(_same(g, w) for g, w in zip(got, want)), (e, rows, got, want)


# ---------------------------------------------------------------- 64-bit overflow beside a constant


def _int_exprs():
    leaves = st.sampled_from([K.Col("self", "x"), K.Lit(1), K.Lit(3), K.Lit(-2), K.Lit(2**62), K.Lit(-(2**63))])

    def steps(inner):
        return st.builds(K.Arith, st.sampled_from("+-*"), inner, inner) | st.builds(K.Neg, inner)

    return st.builds(K.Cmp, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.recursive(leaves, steps, max_leaves=3),
                     st.sampled_from([K.Lit(0), K.Lit(5), K.Lit(-(2**62))]))  # fmt: skip


@settings(max_examples=budget(250), deadline=None, suppress_health_check=list(HealthCheck))
@given(_int_exprs(), st.lists(st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**62, -(2**63), 2**63 - 1, 3]),
                              min_size=1, max_size=4))  # fmt: skip
@example(K.Cmp(">", K.Arith("*", K.Col("self", "x"), K.Lit(3)), K.Lit(0)), [2**62])  # moved: x > 0
@example(K.Cmp(">", K.Neg(K.Col("self", "x")), K.Lit(0)), [-(2**63)])  # moved: x < 0
@example(K.Cmp(">", K.Arith("-", K.Lit(3), K.Col("self", "x")), K.Lit(0)), [-(2**63)])
def test_duckdb_fails_where_an_integer_step_leaves_64_bits(e, xs):
    """An integer step past 64 bits fails the query, as Spark's ANSI
    arithmetic fails, also in a comparison with a constant: DuckDB's
    optimizer moves the constant across the operator (`x * 3 > 0` is
    `x > 0`, `-x > 0` is `x < 0`) and would answer instead, unless the
    dialect spells the step so that the rewrite leaves it alone."""
    rows = [{"x": x} for x in xs]
    try:
        got = duck(e, rows, {"x": pa.int64()})
    except duckdb.OutOfRangeException:
        assert _leaves_64_bits(e, rows), e
        return
    assert not _leaves_64_bits(e, rows), (e, xs, got)
    assert got == [evaluate(e, {"self": r}) for r in rows], (e, xs)


@settings(max_examples=budget(250), deadline=None, suppress_health_check=list(HealthCheck))
@given(_int_exprs(), st.lists(st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**62, -(2**63), 2**63 - 1, 3]),
                              min_size=1, max_size=4))  # fmt: skip
@example(K.Cmp(">", K.Arith("+", K.Col("self", "x"), K.Col("self", "x")), K.Lit(0)), [2**62])
def test_the_row_evaluator_fails_where_an_integer_step_leaves_64_bits(e, xs):
    """The kernels' row evaluator (predicates across two events) fails as
    Spark's ANSI arithmetic does, where a step leaves 64 bits; it answered
    with Python's unbounded integer."""
    rows = [{"x": x} for x in xs]
    try:
        [evaluate(e, {"self": r}) for r in rows]
    except ValueOverflow:
        assert _leaves_64_bits(e, rows), e
        return
    assert not _leaves_64_bits(e, rows), (e, xs)
