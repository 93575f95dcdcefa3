"""Kernel expressions (`spec.Expr`) evaluated in Python — the one evaluator
of the kernels and of the tests, as Spark evaluates the same expression
(`cetql.planner.spark.exprs`).

`compile_expr(e)` turns an expression into a function `f(env)`, where
`env[slot]` is the row an attribute of that slot is read from
(`env[slot][column]`); `evaluate(e, env)` evaluates one.  SQL three-valued
logic: a null operand makes a comparison or an arithmetic result null,
values that cannot be compared compare as null, division and modulo by zero
are null, AND and OR are absorbing; comparisons are Spark SQL's (`compare`:
NaN = NaN, NaN above every number, decimals against doubles as doubles).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal

from cetql.base.errors import OVERFLOW_MESSAGE, ParameterError
from cetql.base.options import MAX_LONG
from cetql.kernels import spec as K
from cetql.kernels.compare import compare
from cetql.kernels.errors import ValueOverflow


def _mixed(a, b):
    """Decimal with float: both as float (as Spark does)."""
    if isinstance(a, Decimal) and isinstance(b, float):
        return float(a), b
    if isinstance(b, Decimal) and isinstance(a, float):
        return a, float(b)
    return a, b


def _modulo(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.fmod(a, b)
        except ValueError:  # an infinite dividend: Spark gives NaN
            return math.nan
    r = abs(a) % abs(b)  # SQL: the sign of the dividend
    return -r if a < 0 else r


def whole(v):
    """A 64-bit integer result as Spark's ANSI arithmetic gives it: past 64
    bits it fails the query (`ValueOverflow`)."""
    if type(v) is int and not -MAX_LONG - 1 <= v <= MAX_LONG:
        raise ValueOverflow(OVERFLOW_MESSAGE)
    return v


def arith(op: str, a, b):
    """`a OP b` for op in + - * / %, as Spark computes it (null for a null
    operand or a zero divisor; an integer result past 64 bits fails)."""
    if a is None or b is None:
        return None
    a, b = _mixed(a, b)
    try:
        if op == "+":
            return whole(a + b)
        if op == "-":
            return whole(a - b)
        if op == "*":
            return whole(a * b)
        if b == 0:
            return None
        return a / b if op == "/" else _modulo(a, b)
    except (TypeError, OverflowError):
        return None


def _null(e: K.Expr) -> bool:
    """Whether `e` is null whatever the row: a null literal, or a step or
    comparison over one (Spark's optimizer folds them so, as DuckDB's does)."""
    match e:
        case K.Lit(value=v):
            return v is None
        case K.Neg(operand=x):
            return _null(x)
        case K.Arith(left=a, right=b) | K.Cmp(left=a, right=b):
            return _null(a) or _null(b)
    return False


def _connective(fs: list, absorbing: bool):
    def connective(env):
        result = not absorbing
        for g in fs:
            v = g(env)
            if v is absorbing:
                return absorbing
            if v is None:
                result = None
        return result

    return connective


def compile_expr(e: K.Expr) -> Callable[[dict], object]:
    """The expression as a function of `env` (see the module)."""
    match e:
        case K.Lit(value=v):
            v = float(v) if isinstance(v, Decimal) else v
            return lambda _env: v
        case K.Col(slot=slot, column=col):
            return lambda env: env[slot][col]
        case K.Param(name=n):
            raise ParameterError(K.unbound(n))
        case K.Neg(operand=x):
            f = compile_expr(x)

            def neg(env):
                v = f(env)
                return None if v is None else whole(-v)

            return neg
        case K.Neg() | K.Arith() | K.Cmp() if _null(e):
            return lambda _env: None  # null whatever the row: nothing evaluated (Spark folds it)
        case K.Arith(op=op, left=a, right=b):  # a null left side: null, the right one not evaluated (as Spark)
            fa, fb = compile_expr(a), compile_expr(b)
            return lambda env: None if (x := fa(env)) is None else arith(op, x, fb(env))
        case K.Cmp(op=op, left=a, right=b):
            fa, fb = compile_expr(a), compile_expr(b)
            return lambda env: None if (x := fa(env)) is None else compare(op, x, fb(env))
        case K.And(items=xs):
            return _connective([compile_expr(x) for x in xs], absorbing=False)
        case K.Or(items=xs):
            return _connective([compile_expr(x) for x in xs], absorbing=True)
        case K.Not(operand=x):
            f = compile_expr(x)

            def negate(env):
                v = f(env)
                return None if v is None else not v

            return negate
        case K.IsNotNull(operand=x):
            f = compile_expr(x)
            return lambda env: f(env) is not None
    raise TypeError(f"not a kernel expression: {e!r}")


def evaluate(e: K.Expr, env: dict):
    """One expression over one environment (see `compile_expr`)."""
    return compile_expr(e)(env)


class Row:
    """`row[column]` for event `i` of a group's column lists, without building a dict."""

    __slots__ = ("cols", "i")

    def __init__(self, cols: dict, i: int):
        self.cols, self.i = cols, i

    def __getitem__(self, column):
        return self.cols[column][self.i]
