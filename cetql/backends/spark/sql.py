"""Kernel expressions (`kernels.spec.Expr`) as Spark SQL text, for the one
place a query is written in SQL: the distributed strategy's recursive query.
The same semantics as `exprs.column` (three-valued logic, null on division
by zero, Spark SQL's comparisons)."""

from __future__ import annotations

import math
from decimal import Decimal

from cetql.base.errors import ParameterError
from cetql.kernels import spec as K

OPS = {"=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return f"{v}L" if abs(v) < 2**63 else f"{v}BD"
    if isinstance(v, Decimal):
        return f"CAST({float(v)!r} AS DOUBLE)"  # as `exprs.column` and the kernels: a decimal literal is a double
    if isinstance(v, float):
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}Infinity' AS DOUBLE)"
        return f"CAST({v!r} AS DOUBLE)"
    return "'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _arith(op: str, a: str, b: str) -> str:
    if op == "/":
        return f"try_divide({a}, {b})"
    if op == "%":
        return f"try_mod({a}, {b})"
    return f"({a} {op} {b})"


def to_sql(e: K.Expr, resolve) -> str:
    """`resolve(slot, column)` gives the SQL a reference reads."""

    def spell(x: K.Expr) -> str:
        match x:
            case K.Lit(value=v):
                return literal(v)
            case K.Col(slot=slot, column=name):
                return resolve(slot, name)
            case K.Param(name=n):
                raise ParameterError(K.unbound(n))
            case K.Neg(operand=a):
                return f"(-{spell(a)})"
            case K.Arith(op=op, left=a, right=b):
                return _arith(op, spell(a), spell(b))
            case K.Cmp(op=op, left=a, right=b):
                return f"({spell(a)} {OPS[op]} {spell(b)})"
            case K.And(items=xs):
                return "(" + " AND ".join(spell(i) for i in xs) + ")"
            case K.Or(items=xs):
                return "(" + " OR ".join(spell(i) for i in xs) + ")"
            case K.Not(operand=a):
                return f"(NOT {spell(a)})"
            case K.IsNotNull(operand=a):
                return f"({spell(a)} IS NOT NULL)"
        raise TypeError(f"not a kernel expression: {x!r}")

    return spell(e)
