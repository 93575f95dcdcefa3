"""Kernel expressions (`kernels.spec`) built from typed IR expressions: the
one place the physical plan writes them."""

from __future__ import annotations

from ..semantics import ir


def lit(v):
    return ("lit", v)


def col(name: str, slot: str = "self"):
    return ("col", slot, name)


def eq(a, b):
    return ("cmp", "=", a, b)


def when(cond, value):
    return ("when", cond, value)


def conj(items: list):
    """AND of the items (None for none)."""
    if not items:
        return None
    return items[0] if len(items) == 1 else ("and", tuple(items))


def lower(e: ir.IExpr, slot=lambda s: s, column=lambda slot, attr: attr):
    """A typed expression → a kernel expression.  `slot` renames slots,
    `column(slot, attr)` names the column an attribute is read from."""
    match e:
        case ir.Const(value=v):
            return lit(v)
        case ir.Param(name=n):
            return ("param", n)  # shown by --explain; refused where it would run
        case ir.Ref(slot=s, attr=a):
            return col(column(s, a), slot(s))
        case ir.Negate(operand=x):
            return ("neg", lower(x, slot, column))
        case ir.Arith(op=op, left=a, right=b):
            return ("arith", op, lower(a, slot, column), lower(b, slot, column))
        case ir.Cmp(op=op, left=a, right=b):
            return ("cmp", op, lower(a, slot, column), lower(b, slot, column))
        case ir.Logic(op=op, items=items):
            return (op, tuple(lower(x, slot, column) for x in items))
        case ir.Not(operand=x):
            return ("not", lower(x, slot, column))
        case ir.IsNotNull(operand=x):
            return ("notnull", lower(x, slot, column))
    raise TypeError(e)


def of_event(e: ir.IExpr):
    """An expression over one event, read from the input's columns."""
    return lower(e, slot=lambda s: "self")


def columns(e) -> tuple[str, ...]:
    """Every column an expression reads, in order, once each."""
    found: list[str] = []

    def walk(x):
        if x is None:
            return
        if x[0] == "col":
            found.append(x[2])
        elif x[0] in ("and", "or"):
            for y in x[1]:
                walk(y)
        else:
            for y in x[1:]:
                if isinstance(y, tuple):
                    walk(y)

    walk(e)
    return tuple(dict.fromkeys(found))
