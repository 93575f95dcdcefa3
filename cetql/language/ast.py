"""The cetql abstract syntax tree: frozen dataclasses, one per construct.

Every node carries its source position (`pos`, line and column, 1-based); the
position takes no part in equality, so a query and its printed-then-reparsed
form compare equal.  Surface variants are normalised here: `E v+` and
`E+ v[]` give the same node, `!E` and `NOT E` too, `==` and `<>` become `=` and
`!=`, `GROUP BY` and `GROUP-BY` are one clause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from cetql.base.errors import Pos


def _pos() -> Pos | None:
    return field(default=None, compare=False, repr=False)


class Node:
    """Base of every AST node."""

    pos: Pos | None


# ------------------------------------------------------------------ patterns


@dataclass(frozen=True)
class EventPattern(Node):
    """One event of type `type`, bound to `var` (None: referred to by type)."""

    type: str
    var: str | None = None
    pos: Pos | None = _pos()

    @property
    def name(self) -> str:
        return self.var or self.type


@dataclass(frozen=True)
class Kleene(Node):
    """`P+` (op '+'), `P*` ('*') or `P?` ('?')."""

    sub: Pattern
    op: str = "+"
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Seq(Node):
    items: tuple[Pattern, ...]
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Negation(Node):
    """`NOT P` or `!E`, only meaningful inside a SEQ."""

    sub: Pattern
    pos: Pos | None = _pos()


Pattern = EventPattern | Kleene | Seq | Negation


# ------------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Literal(Node):
    """A number (int or Decimal), string or boolean constant."""

    value: int | Decimal | str | bool
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Name(Node):
    """A bare identifier: an attribute (in `[..]`, GROUP-BY, RETURN), a
    variable or type (in `COUNT(A)`), or a query parameter (in WHERE)."""

    name: str
    pos: Pos | None = _pos()


# The position of an attribute reference inside a Kleene part:
#   None  `c.x`      every element (or the only event of a single variable)
#   "i"   `c[i].x`   the current element
#   "i-1" `c[i-1].x` the previous element
#   "i+1" `c[i+1].x` the next element
#   "next" `NEXT(c).x` the next element
INDEXES = (None, "i", "i-1", "i+1", "next")


@dataclass(frozen=True)
class Attr(Node):
    var: str
    attr: str
    index: str | None = None
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class BinOp(Node):
    """Arithmetic: + - * / %."""

    op: str
    left: Expr
    right: Expr
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Neg(Node):
    operand: Expr
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Compare(Node):
    """A comparison chain `a op1 b op2 c …` (= != < <= > >=)."""

    ops: tuple[str, ...]
    operands: tuple[Expr, ...]
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class And(Node):
    items: tuple[Expr, ...]
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Or(Node):
    items: tuple[Expr, ...]
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Not(Node):
    operand: Expr
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Equivalence(Node):
    """`[a, b.x]`: every event of a trend has equal values of these."""

    columns: tuple[Name | Attr, ...]
    pos: Pos | None = _pos()


Expr = Literal | Name | Attr | BinOp | Neg | Compare | And | Or | Not | Equivalence


# ------------------------------------------------------------------ query


@dataclass(frozen=True)
class Aggregate(Node):
    """COUNT(*) (arg None), COUNT(A) (arg Name), SUM/MIN/MAX/AVG(A.x) (Attr)."""

    func: str
    arg: Name | Attr | None = None
    pos: Pos | None = _pos()


@dataclass(frozen=True)
class Duration(Node):
    """`amount unit`; unit None means the time column's own units."""

    amount: int | Decimal
    unit: str | None = None
    pos: Pos | None = _pos()


TREND_SETS = ("ALL", "COMPLETE", "MAXIMAL")


@dataclass(frozen=True)
class Query(Node):
    pattern: Pattern
    where: Expr | None = None
    group_by: tuple[Name | Attr, ...] = ()
    # RETURN items (columns and aggregates) or AGG items (aggregates only).
    returns: tuple[Name | Attr | Aggregate, ...] = ()
    agg: tuple[Aggregate, ...] = ()
    within: Duration | None = None
    slide: Duration | None = None
    trends: str | None = None
    approx: bool = False
    # where each clause starts, for messages: (("PATTERN", Pos), ("WHERE", Pos), …)
    clauses: tuple[tuple[str, Pos | None], ...] = field(default=(), compare=False, repr=False)
    pos: Pos | None = _pos()

    def clause_pos(self, name: str) -> Pos | None:
        return next((p for k, p in self.clauses if k == name), self.pos)

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(x for x in self.returns if isinstance(x, Aggregate)) + self.agg

    @property
    def is_aggregation(self) -> bool:
        return bool(self.returns or self.agg)


def walk(node):
    """Yield `node` and every node below it, depth first, in source order."""
    yield node
    for f in getattr(node, "__dataclass_fields__", {}):
        if f == "pos":
            continue
        value = getattr(node, f)
        children = value if isinstance(value, tuple) else (value,)
        for child in children:
            if isinstance(child, Node):
                yield from walk(child)
