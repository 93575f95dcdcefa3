"""Spec expressions evaluated in a worker, as closures.

`compile_expr(e)` turns a plain expression tuple (see `spec`) into a
function `f(env)`, where `env[slot]` is the row an attribute of that slot is
read from (`env[slot][column]`).  SQL three-valued logic, exactly as Spark
evaluates the same tuple (`cetql.planner.spark.exprs`): a null operand makes
a comparison or an arithmetic result null, a comparison of values that cannot
be compared is null, division and modulo by zero are null, AND and OR are
absorbing.  Decimals meet floats as floats.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from decimal import Decimal

COMPARATORS = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def _mixed(a, b):
    """Decimal with float: both as float (Spark would do the same)."""
    if isinstance(a, Decimal) and isinstance(b, float):
        return float(a), b
    if isinstance(b, Decimal) and isinstance(a, float):
        return a, float(b)
    return a, b


def compare(op: str, a, b):
    """SQL comparison: None when either side is null or they cannot be compared."""
    if a is None or b is None:
        return None
    a, b = _mixed(a, b)
    try:
        return COMPARATORS[op](a, b)
    except TypeError:
        return None


def _arith(op: str, a, b):
    if a is None or b is None:
        return None
    a, b = _mixed(a, b)
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return None
        if op == "/":
            return a / b
        if isinstance(a, float) or isinstance(b, float):
            return math.fmod(a, b)
        r = abs(a) % abs(b)  # SQL: the sign of the dividend
        return -r if a < 0 else r
    except TypeError:
        return None


def compile_expr(e) -> Callable[[dict], object]:
    tag = e[0]
    if tag == "lit":
        v = float(e[1]) if isinstance(e[1], Decimal) else e[1]
        return lambda env: v
    if tag == "col":
        slot, col = e[1], e[2]
        return lambda env: env[slot][col]
    if tag == "neg":
        f = compile_expr(e[1])

        def neg(env):
            v = f(env)
            return None if v is None else -v

        return neg
    if tag == "arith":
        op, fa, fb = e[1], compile_expr(e[2]), compile_expr(e[3])
        return lambda env: _arith(op, fa(env), fb(env))
    if tag == "cmp":
        op, fa, fb = e[1], compile_expr(e[2]), compile_expr(e[3])
        return lambda env: compare(op, fa(env), fb(env))
    if tag in ("and", "or"):
        fs = [compile_expr(x) for x in e[1]]
        absorbing = tag == "or"

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
    if tag == "not":
        f = compile_expr(e[1])

        def negate(env):
            v = f(env)
            return None if v is None else not v

        return negate
    if tag == "when":
        fc, fx = compile_expr(e[1]), compile_expr(e[2])
        return lambda env: fx(env) if fc(env) is True else None
    raise ValueError(f"not a spec expression: {e!r}")


class Row:
    """`row[column]` for event `i` of a group's column lists, without building a dict."""

    __slots__ = ("cols", "i")

    def __init__(self, cols: dict, i: int):
        self.cols, self.i = cols, i

    def __getitem__(self, column):
        return self.cols[column][self.i]
