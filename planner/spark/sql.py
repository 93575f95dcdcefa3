"""Kernel expressions as Spark SQL text, for the one place a query is
written in SQL: the distributed strategy's recursive query.  The same
semantics as `exprs.column` (three-valued logic, null on division by zero)."""

from __future__ import annotations

import math
from decimal import Decimal

from cetql.errors import ParameterError

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


def to_sql(e, resolve) -> str:
    """`resolve(slot, column)` gives the SQL a reference reads."""
    tag = e[0]
    if tag == "lit":
        return literal(e[1])
    if tag == "col":
        return resolve(e[1], e[2])
    if tag == "neg":
        return f"(-{to_sql(e[1], resolve)})"
    if tag == "arith":
        a, b = to_sql(e[2], resolve), to_sql(e[3], resolve)
        if e[1] == "/":
            return f"try_divide({a}, {b})"
        if e[1] == "%":
            return f"try_mod({a}, {b})"
        return f"({a} {e[1]} {b})"
    if tag == "cmp":
        return f"({to_sql(e[2], resolve)} {OPS[e[1]]} {to_sql(e[3], resolve)})"
    if tag in ("and", "or"):
        return "(" + f" {tag.upper()} ".join(to_sql(x, resolve) for x in e[1]) + ")"
    if tag == "not":
        return f"(NOT {to_sql(e[1], resolve)})"
    if tag == "when":
        return f"(CASE WHEN {to_sql(e[1], resolve)} THEN {to_sql(e[2], resolve)} END)"
    if tag == "param":
        raise ParameterError(f"unbound parameter '{e[1]}': give it a value with --param {e[1]}=<value>")
    if tag == "notnull":
        return f"({to_sql(e[1], resolve)} IS NOT NULL)"
    raise ValueError(f"not a kernel expression: {e!r}")
