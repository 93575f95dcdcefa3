"""Kernel expressions (`kernels.spec.Expr`) evaluated over a whole Arrow
table at once, as Spark SQL evaluates them (`spark.exprs` spells the same
expressions for Spark, `kernels.expr` evaluates them one row at a time):

- three-valued logic: a null operand gives null, AND and OR are Kleene's;
- comparisons: NaN equals NaN and is above every number, -0.0 equals 0.0,
  an integer against a double is compared as doubles, text byte by byte;
- arithmetic: integers checked for overflow (Spark's ANSI mode fails the
  query: `ArithmeticOverflow`), `/` in doubles, `/` and `%` by zero null
  (`try_divide`, `try_mod`), `%` with the dividend's sign.

Only the expressions `physical.engine.kind` types reach here (the plan
sends the others to Spark).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.base.errors import OVERFLOW_MESSAGE, CetqlError
from cetql.kernels import spec as K


class ArithmeticOverflow(CetqlError):
    """An integer went past 64 bits (Spark's ANSI mode fails the query)."""

    exit_code = 1


def evaluate(e: K.Expr, table: pa.Table) -> pa.Array:
    """`e` over every row of `table` (slot "self"), as one array."""
    out = _eval(e, table)
    if isinstance(out, pa.Scalar):
        return pa.array([out.as_py()] * table.num_rows, type=out.type if out.is_valid else pa.null())
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _eval(e: K.Expr, t: pa.Table):
    match e:
        case K.Lit(value=v):
            if isinstance(v, Decimal):
                v = float(v)
            if v is None:
                return pa.scalar(None, pa.null())
            if isinstance(v, bool):
                return pa.scalar(v, pa.bool_())
            if isinstance(v, int):
                return pa.scalar(v, pa.int64())
            if isinstance(v, float):
                return pa.scalar(v, pa.float64())
            return pa.scalar(v, pa.string())
        case K.Col(column=c):
            col = t.column(c)
            if pa.types.is_integer(col.type) and col.type != pa.int64():
                return pc.cast(col, pa.int64())
            if pa.types.is_float32(col.type):
                return pc.cast(col, pa.float64())
            return col
        case K.Neg(operand=x):
            v = _eval(x, t)
            if v.type == pa.null():
                return v
            return checked(pc.negate_checked, v) if _is_int(v) else pc.negate(v)
        case K.Arith(op=op, left=a, right=b):
            return _arith(op, _eval(a, t), _eval(b, t), t.num_rows)
        case K.Cmp(op=op, left=a, right=b):
            return compare(op, _eval(a, t), _eval(b, t))
        case K.And(items=xs):
            out = _eval(xs[0], t)
            for x in xs[1:]:
                out = pc.and_kleene(_bool(out), _bool(_eval(x, t)))
            return out
        case K.Or(items=xs):
            out = _eval(xs[0], t)
            for x in xs[1:]:
                out = pc.or_kleene(_bool(out), _bool(_eval(x, t)))
            return out
        case K.Not(operand=x):
            return pc.invert(_bool(_eval(x, t)))
        case K.IsNotNull(operand=x):
            v = _eval(x, t)
            if isinstance(v, pa.Scalar):
                return pa.scalar(v.is_valid, pa.bool_())
            return pc.is_valid(v)
    raise TypeError(f"not an expression the in-process engine evaluates: {e!r}")


def _bool(v):
    return pc.cast(v, pa.bool_()) if v.type == pa.null() else v


def _is_int(v) -> bool:
    return pa.types.is_integer(v.type)


def _is_float(v) -> bool:
    return pa.types.is_floating(v.type)


def checked(f, *args):
    """`f(*args)`, an Arrow kernel that checks for overflow; overflow fails the query as Spark's ANSI mode does."""
    try:
        return f(*args)
    except pa.ArrowInvalid as e:
        if "overflow" not in str(e).lower():
            raise
        raise ArithmeticOverflow(OVERFLOW) from None


OVERFLOW = OVERFLOW_MESSAGE


def _as_float(v):
    return v if _is_float(v) or v.type == pa.null() else pc.cast(v, pa.float64(), safe=False)  # as Spark: 2**62+1 rounds


def _arith(op: str, a, b, n: int):
    if a.type == pa.null() or b.type == pa.null():
        return pa.scalar(None, pa.null())
    if op == "/":
        a, b = _as_float(a), _as_float(b)
        return pc.if_else(pc.equal(b, 0.0), pa.scalar(None, pa.float64()), pc.divide(a, b))
    if _is_int(a) and _is_int(b):
        if op == "%":
            return _modulo(a, b, n, integer=True)
        return checked({"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op], a, b)
    a, b = _as_float(a), _as_float(b)
    if op == "%":
        return _modulo(a, b, n, integer=False)
    return {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[op](a, b)


def _numpy(v, n: int, dtype):
    """(values, valid) of an array or a scalar broadcast to n rows."""
    if isinstance(v, pa.Scalar):
        if not v.is_valid:
            return np.zeros(n, dtype=dtype), np.zeros(n, dtype=bool)
        return np.full(n, v.as_py(), dtype=dtype), np.ones(n, dtype=bool)
    if isinstance(v, pa.ChunkedArray):
        v = v.combine_chunks()
    valid = np.asarray(pc.is_valid(v).to_numpy(zero_copy_only=False), dtype=bool)
    values = np.asarray(pc.fill_null(v, pa.scalar(0, v.type)).to_numpy(zero_copy_only=False), dtype=dtype)
    return values, valid


def _modulo(a, b, n: int, integer: bool):
    """SQL's `%`: the dividend's sign, null for a zero divisor (try_mod);
    for doubles C's fmod (an infinite dividend gives NaN)."""
    dtype = np.int64 if integer else np.float64
    x, xv = _numpy(a, n, dtype)
    y, yv = _numpy(b, n, dtype)
    valid = xv & yv & (y != 0)
    safe = np.where(valid, y, 1)
    with np.errstate(all="ignore"):
        r = np.fmod(x, safe)
    return pa.array(r, mask=~valid, type=pa.int64() if integer else pa.float64())


def compare(op: str, a, b):
    """`a OP b` with Spark SQL's comparison (see the module)."""
    if a.type == pa.null() or b.type == pa.null():
        return pa.scalar(None, pa.bool_())
    if _is_float(a) or _is_float(b):
        return _compare_doubles(op, _as_float(a), _as_float(b))
    f = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
         ">=": pc.greater_equal}[op]  # fmt: skip
    return f(a, b)


def _compare_doubles(op: str, a, b):
    """Doubles in Spark's order: NaN = NaN, NaN above every number."""
    an, bn = pc.is_nan(a), pc.is_nan(b)
    both, neither = pc.and_(an, bn), pc.and_(pc.invert(an), pc.invert(bn))
    if op in ("=", "!="):
        eq = pc.or_(both, pc.and_(neither, pc.equal(a, b)))
        return eq if op == "=" else pc.invert(eq)
    # a < b: b is NaN and a is not, or neither is and a < b; a <= b: also both NaN
    lt = pc.or_(pc.and_(pc.invert(an), bn), pc.and_(neither, pc.less(a, b)))
    gt = pc.or_(pc.and_(an, pc.invert(bn)), pc.and_(neither, pc.greater(a, b)))
    if op == "<":
        return lt
    if op == ">":
        return gt
    if op == "<=":
        return pc.or_(lt, pc.or_(both, pc.and_(neither, pc.equal(a, b))))
    return pc.or_(gt, pc.or_(both, pc.and_(neither, pc.equal(a, b))))
