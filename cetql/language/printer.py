"""AST → canonical query text.  `parse(to_text(q)) == q` for every query `q`
(positions aside): clauses come in one order, patterns in the papers' style
(`Check+ c[]`, `(SEQ(A+, B))+`), and parentheses only where precedence needs
them."""

from __future__ import annotations

from decimal import Decimal

from cetql.language import ast as A

# Binding strength of each expression form; a child weaker than its slot is
# parenthesised.
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 9)


def _level(e: A.Expr) -> int:
    if isinstance(e, A.Or):
        return _OR
    if isinstance(e, A.And):
        return _AND
    if isinstance(e, A.Not):
        return _NOT
    if isinstance(e, A.Compare):
        return _CMP
    if isinstance(e, A.BinOp):
        return _ADD if e.op in "+-" else _MUL
    if isinstance(e, A.Neg) or (isinstance(e, A.Literal) and _is_negative(e.value)):
        return _UNARY
    return _ATOM


def _is_negative(v) -> bool:
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool) and v < 0


def _wrap(e: A.Expr, at_least: int) -> str:
    text = expr_to_text(e)
    return f"({text})" if _level(e) < at_least else text


def literal_to_text(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def attr_to_text(a: A.Attr) -> str:
    if a.index is None:
        return f"{a.var}.{a.attr}"
    if a.index == "next":
        return f"NEXT({a.var}).{a.attr}"
    return f"{a.var}[{a.index}].{a.attr}"


def expr_to_text(e: A.Expr) -> str:
    match e:
        case A.Literal(value=v):
            return literal_to_text(v)
        case A.Name(name=n):
            return n
        case A.Attr():
            return attr_to_text(e)
        case A.Equivalence(columns=cols):
            return "[" + ", ".join(expr_to_text(c) for c in cols) + "]"
        case A.Neg(operand=x):
            inner = _wrap(x, _UNARY)
            return f"-({inner})" if inner.startswith("-") else f"-{inner}"
        case A.BinOp(op=op, left=left, right=right):
            lvl = _level(e)
            return f"{_wrap(left, lvl)} {op} {_wrap(right, lvl + 1)}"
        case A.Compare(ops=ops, operands=operands):
            parts = [_wrap(operands[0], _ADD)]
            for op, x in zip(ops, operands[1:]):
                parts += [op, _wrap(x, _ADD)]
            return " ".join(parts)
        case A.Not(operand=x):
            return f"NOT {_wrap(x, _NOT)}"
        case A.And(items=items):
            return " AND ".join(_wrap(x, _NOT) for x in items)
        case A.Or(items=items):
            return " OR ".join(_wrap(x, _AND) for x in items)
    raise TypeError(f"not an expression: {e!r}")


def pattern_to_text(p: A.Pattern) -> str:
    match p:
        case A.EventPattern(type=t, var=v):
            return f"{t} {v}" if v else t
        case A.Kleene(sub=A.EventPattern(type=t, var=v), op=op):
            if v is None:
                return f"{t}{op}"
            return f"{t}{op} {v}[]" if op in "+*" else f"{t}{op} {v}"
        case A.Kleene(sub=sub, op=op):
            return f"({pattern_to_text(sub)}){op}"
        case A.Seq(items=items):
            return "SEQ(" + ", ".join(pattern_to_text(x) for x in items) + ")"
        case A.Negation(sub=sub):
            return f"NOT {pattern_to_text(sub)}"
    raise TypeError(f"not a pattern: {p!r}")


def aggregate_to_text(a: A.Aggregate) -> str:
    if a.arg is None:
        return f"{a.func}(*)"
    return f"{a.func}({expr_to_text(a.arg)})"


def item_to_text(x) -> str:
    return aggregate_to_text(x) if isinstance(x, A.Aggregate) else expr_to_text(x)


def duration_to_text(d: A.Duration) -> str:
    return f"{d.amount} {d.unit}" if d.unit else str(d.amount)


def to_text(q: A.Query) -> str:
    """The canonical text of a query, one clause a line."""
    lines = []
    if q.returns:
        lines.append("RETURN " + ", ".join(item_to_text(x) for x in q.returns))
    lines.append("PATTERN " + pattern_to_text(q.pattern))
    if q.where is not None:
        lines.append("WHERE " + expr_to_text(q.where))
    if q.group_by:
        lines.append("GROUP-BY " + ", ".join(expr_to_text(c) for c in q.group_by))
    if q.agg:
        lines.append("AGG " + ", ".join(aggregate_to_text(a) for a in q.agg))
    if q.within is not None:
        lines.append("WITHIN " + duration_to_text(q.within))
    if q.slide is not None:
        lines.append("SLIDE " + duration_to_text(q.slide))
    if q.trends is not None:
        lines.append("TRENDS " + q.trends)
    if q.approx:
        lines.append("APPROX")
    return "\n".join(lines)
