"""Kernel expressions (`kernels.spec.Expr`) as SQL text in a dialect: the
one compiler both backends spell their filters, masks and derived columns
with (Spark through `F.expr`, the embedded engine in DuckDB's SQL).

Meaning (`kernels.spec`): SQL three-valued logic, Spark SQL's comparisons
(NaN equals NaN and is above every number, -0.0 equals 0.0), division and
modulo by zero null, 64-bit overflow an error.  The kernels' row evaluator
(`kernels.expr`) evaluates the same trees; tests compare the three."""

from __future__ import annotations

from collections.abc import Callable

from cetql.backends.sql.dialects import Dialect
from cetql.base.errors import ParameterError
from cetql.kernels import spec as K

Resolve = Callable[[str, str], str]  # (slot, column) → the SQL that reads it


def to_sql(e: K.Expr, dialect: Dialect, resolve: Resolve | None = None) -> str:
    """`e` in `dialect`; `resolve(slot, column)` gives the SQL a column
    reference reads (by default the quoted column name)."""
    resolve = resolve or (lambda _slot, name: dialect.quote(name))

    def spell(x: K.Expr) -> str:
        match x:
            case K.Lit(value=v):
                return dialect.literal(v)
            case K.Col(slot=slot, column=name):
                return resolve(slot, name)
            case K.Param(name=n):
                raise ParameterError(K.unbound(n))
            case K.Neg(operand=a):
                return dialect.negate.format(a=spell(a))
            case K.Arith(op="/", left=a, right=b):
                return dialect.try_divide.format(a=spell(a), b=spell(b))
            case K.Arith(op="%", left=a, right=b):
                return dialect.try_mod.format(a=spell(a), b=spell(b))
            case K.Arith(op=op, left=a, right=b):
                template = {"+": dialect.add, "-": dialect.subtract, "*": dialect.multiply}[op]
                return template.format(a=spell(a), b=spell(b))
            case K.Cmp(op=op, left=a, right=b):
                return f"({spell(a)} {op} {spell(b)})"
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


def condition(e: K.Expr | None, dialect: Dialect, resolve: Resolve | None = None) -> str:
    """A predicate that holds only where `e` is true (null: false)."""
    return "TRUE" if e is None else f"coalesce({to_sql(e, dialect, resolve)}, FALSE)"
