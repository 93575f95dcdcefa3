"""Kernel expressions (`kernels.spec.Expr`) as Spark columns.

The same expressions are evaluated in Python by `kernels.expr`; both follow
SQL three-valued logic (null operands give null, division by zero gives
null) and Spark SQL's comparisons (NaN = NaN, NaN above every number).
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from cetql.backends.spark.sql import quote
from cetql.base.errors import ParameterError
from cetql.kernels import spec as K


def _lit(v):
    return F.lit(float(v) if isinstance(v, Decimal) else v)


def _arith(op: str, a: Column, b: Column) -> Column:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return F.try_divide(a, b)
    return F.try_mod(a, b)


def _compare(op: str, a: Column, b: Column) -> Column:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def column(e: K.Expr, resolve=lambda _slot, name: F.col(quote(name))) -> Column:
    """`resolve(slot, column)` gives the Spark column a reference reads."""

    def spell(x: K.Expr) -> Column:
        match x:
            case K.Lit(value=v):
                return _lit(v)
            case K.Col(slot=slot, column=name):
                return resolve(slot, name)
            case K.Param(name=n):
                raise ParameterError(K.unbound(n))
            case K.Neg(operand=a):
                return -spell(a)
            case K.Arith(op=op, left=a, right=b):
                return _arith(op, spell(a), spell(b))
            case K.Cmp(op=op, left=a, right=b):
                return _compare(op, spell(a), spell(b))
            case K.And(items=xs):
                out = spell(xs[0])
                for item in xs[1:]:
                    out = out & spell(item)
                return out
            case K.Or(items=xs):
                out = spell(xs[0])
                for item in xs[1:]:
                    out = out | spell(item)
                return out
            case K.Not(operand=a):
                return ~spell(a)
            case K.IsNotNull(operand=a):
                return spell(a).isNotNull()
        raise TypeError(f"not a kernel expression: {x!r}")

    return spell(e)
