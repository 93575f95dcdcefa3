"""Expressions of a query compiled two ways, with the same meaning:

- `to_column`: a Spark Column over one event's columns (vertex predicates, the
  two sides `lval` and `h` of an edge predicate) — runs in the JVM;
- `to_python`: a Python closure over rows bound to roles (`prev`, `next`, or a
  variable's name) — for `other` and `cross` predicates inside the kernels.

Both follow SQL three-valued logic: a null operand makes a comparison null, a
null predicate is false, division by zero is null.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from decimal import Decimal

from cetql import ast as A
from cetql.errors import QuerySemanticError

# Comparators by their spelling, and each one's mirror (a OP b ⇔ b MIRROR[OP] a).
COMPARATORS = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
_CMP = COMPARATORS


def _literal_value(v):
    return float(v) if isinstance(v, Decimal) else v


# ---------------------------------------------------------------- Spark


def to_column(e: A.Expr, column_of: Callable[[A.Attr], str], params: dict):
    """A Spark Column for an expression over a single event; `column_of` maps
    an attribute reference to its column name."""
    from pyspark.sql import functions as F

    def go(x):
        match x:
            case A.Literal(value=v):
                return F.lit(_literal_value(v))
            case A.Name(name=n):
                if n not in params:
                    raise QuerySemanticError(
                        f"unbound parameter '{n}': give it a value with --param {n}=<value>", x.pos
                    )
                return F.lit(_literal_value(params[n]))
            case A.Attr():
                return F.col(column_of(x))
            case A.Neg(operand=y):
                return -go(y)
            case A.BinOp(op=op, left=left, right=right):
                a, b = go(left), go(right)
                if op == "+":
                    return a + b
                if op == "-":
                    return a - b
                if op == "*":
                    return a * b
                if op == "/":
                    return F.try_divide(a, b)
                return F.try_mod(a, b)
            case A.Compare(ops=ops, operands=operands):
                cols = [go(y) for y in operands]
                out = None
                for op, a, b in zip(ops, cols, cols[1:]):
                    c = _spark_cmp(op, a, b)
                    out = c if out is None else out & c
                return out
            case A.And(items=items):
                out = go(items[0])
                for y in items[1:]:
                    out = out & go(y)
                return out
            case A.Or(items=items):
                out = go(items[0])
                for y in items[1:]:
                    out = out | go(y)
                return out
            case A.Not(operand=y):
                return ~go(y)
        raise QuerySemanticError(f"'{type(x).__name__}' cannot be evaluated on one event", getattr(x, "pos", None))

    return go(e)


def _spark_cmp(op, a, b):
    return {
        "=": lambda: a == b,
        "!=": lambda: a != b,
        "<": lambda: a < b,
        "<=": lambda: a <= b,
        ">": lambda: a > b,
        ">=": lambda: a >= b,
    }[op]()


# ---------------------------------------------------------------- Python


def to_python(e: A.Expr, slot_of: Callable[[A.Attr], tuple[str, str]], params: dict) -> Callable[[dict], object]:
    """A closure `f(env)` evaluating `e`, where `env[role][attr]` is a value and
    `slot_of(attr_ref) -> (role, attr)` says where a reference reads from.
    Returns True/False/None (null)."""

    def go(x) -> Callable[[dict], object]:
        match x:
            case A.Literal(value=v):
                val = _literal_value(v)
                return lambda env: val
            case A.Name(name=n):
                if n not in params:
                    raise QuerySemanticError(
                        f"unbound parameter '{n}': give it a value with --param {n}=<value>", x.pos
                    )
                val = _literal_value(params[n])
                return lambda env: val
            case A.Attr():
                role, attr = slot_of(x)
                return lambda env: env[role][attr]
            case A.Neg(operand=y):
                f = go(y)
                return lambda env: None if (v := f(env)) is None else -v
            case A.BinOp(op=op, left=left, right=right):
                fa, fb = go(left), go(right)
                return _py_arith(op, fa, fb)
            case A.Compare(ops=ops, operands=operands):
                fs = [go(y) for y in operands]
                pairs = [(_CMP[op], fs[k], fs[k + 1]) for k, op in enumerate(ops)]

                def cmp(env):
                    result = True
                    for f, fa, fb in pairs:
                        a, b = fa(env), fb(env)
                        if a is None or b is None:
                            result = None
                        else:
                            try:
                                ok = f(a, b)
                            except TypeError:
                                ok = None
                            if ok is False:
                                return False
                            if ok is None:
                                result = None
                    return result

                return cmp
            case A.And(items=items):
                return _connective([go(y) for y in items], absorbing=False)
            case A.Or(items=items):
                return _connective([go(y) for y in items], absorbing=True)
            case A.Not(operand=y):
                f = go(y)
                return lambda env: None if (v := f(env)) is None else not v
        raise QuerySemanticError(f"'{type(x).__name__}' cannot be evaluated here", getattr(x, "pos", None))

    return go(e)


def _connective(fs, absorbing: bool):
    """SQL AND (absorbing False) or OR (absorbing True): the absorbing value
    wins, else a null makes the result null."""

    def f(env):
        result = not absorbing
        for g in fs:
            v = g(env)
            if v is absorbing:
                return absorbing
            if v is None:
                result = None
        return result

    return f


def _py_arith(op, fa, fb):
    def f(env):
        a, b = fa(env), fb(env)
        if a is None or b is None:
            return None
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return None
        return a / b if op == "/" else a % b

    return f
