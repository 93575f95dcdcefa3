"""Kernel expressions (`kernels.spec.Expr`) built from typed IR expressions:
the one place the physical plan writes them."""

from __future__ import annotations

from cetql.kernels import spec as K
from cetql.planner.semantics import ir


def lit(v) -> K.Lit:
    return K.Lit(v)


def col(name: str, slot: str = "self") -> K.Col:
    return K.Col(slot, name)


def eq(a: K.Expr, b: K.Expr) -> K.Cmp:
    return K.Cmp("=", a, b)


def conj(items: list[K.Expr]) -> K.Expr | None:
    """AND of the items (None for none)."""
    if not items:
        return None
    return items[0] if len(items) == 1 else K.And(tuple(items))


def lower(e: ir.IExpr, slot=lambda s: s, column=lambda _slot, attr: attr) -> K.Expr:
    """A typed expression → a kernel expression.  `slot` renames slots,
    `column(slot, attr)` names the column an attribute is read from."""

    def go(x: ir.IExpr) -> K.Expr:
        match x:
            case ir.Const(value=v):
                return K.Lit(v)
            case ir.Param(name=n):
                return K.Param(n)  # shown by --explain; refused where it would run
            case ir.Ref(slot=s, attr=a):
                return K.Col(slot(s), column(s, a))
            case ir.Negate(operand=a):
                return K.Neg(go(a))
            case ir.Arith(op=op, left=a, right=b):
                return K.Arith(op, go(a), go(b))
            case ir.Cmp(op=op, left=a, right=b):
                return K.Cmp(op, go(a), go(b))
            case ir.Logic(op="and", items=items):
                return K.And(tuple(go(i) for i in items))
            case ir.Logic(op="or", items=items):
                return K.Or(tuple(go(i) for i in items))
            case ir.Not(operand=a):
                return K.Not(go(a))
            case ir.IsNotNull(operand=a):
                return K.IsNotNull(go(a))
        raise TypeError(x)

    return go(e)


def of_event(e: ir.IExpr) -> K.Expr:
    """An expression over one event, read from the input's columns."""
    return lower(e, slot=lambda _: "self")


def columns(e: K.Expr | None) -> tuple[str, ...]:
    """Every column an expression reads, in order, once each."""
    return K.columns(e)
