"""Spec expressions (plain tuples, see `kernels.spec`) as Spark columns.

The same tuples are evaluated in Python by `kernels.expr`; both follow SQL
three-valued logic (null operands give null, division by zero gives null).
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from cetql.errors import ParameterError


def _lit(v):
    return F.lit(float(v) if isinstance(v, Decimal) else v)


def column(e, resolve=lambda slot, name: F.col(f"`{name}`")) -> Column:
    """`resolve(slot, column)` gives the Spark column a reference reads."""
    tag = e[0]
    if tag == "lit":
        return _lit(e[1])
    if tag == "col":
        return resolve(e[1], e[2])
    if tag == "neg":
        return -column(e[1], resolve)
    if tag == "arith":
        op, a, b = e[1], column(e[2], resolve), column(e[3], resolve)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return F.try_divide(a, b)
        return F.try_mod(a, b)
    if tag == "cmp":
        op, a, b = e[1], column(e[2], resolve), column(e[3], resolve)
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if tag in ("and", "or"):
        items = [column(x, resolve) for x in e[1]]
        out = items[0]
        for x in items[1:]:
            out = (out & x) if tag == "and" else (out | x)
        return out
    if tag == "not":
        return ~column(e[1], resolve)
    if tag == "when":
        return F.when(column(e[1], resolve), column(e[2], resolve))
    if tag == "notnull":
        return column(e[1], resolve).isNotNull()
    if tag == "param":
        raise ParameterError(f"unbound parameter '{e[1]}': give it a value with --param {e[1]}=<value>")
    raise ValueError(f"not a spec expression: {e!r}")
