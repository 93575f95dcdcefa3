"""The typed intermediate representation between the front end and the plan.

`bind` turns an AST into a `BoundQuery`: every name resolved (variables to
template positions, bare identifiers to parameter values), every WHERE
conjunct classified into a typed predicate node, aggregates resolved to the
positions they read.  All values here are frozen; later stages never look
at the AST again except to print the query's canonical text.

Expressions in predicates are `IExpr` trees whose attribute references say
*which event* they read: `"self"` (the one event of a vertex predicate),
`"prev"` / `"next"` (the earlier / later event of an adjacent step), or a
position name (a cross predicate).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from math import ceil

from cetql.base.options import TrendSet
from cetql.language import ast as A
from cetql.planner.semantics.schema import Schema
from cetql.planner.semantics.template import Template


class Kind(StrEnum):
    DETECTION = "detection"
    AGGREGATION = "aggregation"


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    value: int | Decimal | float | str | bool | None


@dataclass(frozen=True)
class Param:
    """A parameter left unbound at compile time (compile without --param):
    the plan can be shown, not run."""

    name: str


@dataclass(frozen=True)
class Ref:
    """An attribute of one event: `slot` is "self", "prev", "next" or a position."""

    slot: str
    attr: str


@dataclass(frozen=True)
class Arith:
    op: str  # + - * / %
    left: IExpr
    right: IExpr


@dataclass(frozen=True)
class Negate:
    operand: IExpr


@dataclass(frozen=True)
class Cmp:
    op: str  # = != < <= > >=
    left: IExpr
    right: IExpr


@dataclass(frozen=True)
class Logic:
    op: str  # "and" | "or"
    items: tuple[IExpr, ...]


@dataclass(frozen=True)
class Not:
    operand: IExpr


@dataclass(frozen=True)
class IsNotNull:
    """True iff the operand is not null (NaN is not null): never null itself."""

    operand: IExpr


IExpr = Const | Param | Ref | Arith | Negate | Cmp | Logic | Not | IsNotNull


def refs(e: IExpr) -> list[Ref]:
    match e:
        case Ref():
            return [e]
        case Arith(left=a, right=b) | Cmp(left=a, right=b):
            return refs(a) + refs(b)
        case Negate(operand=x) | Not(operand=x) | IsNotNull(operand=x):
            return refs(x)
        case Logic(items=items):
            return [r for x in items for r in refs(x)]
    return []


def slots(e: IExpr) -> set[str]:
    return {r.slot for r in refs(e)}


# ---------------------------------------------------------------- windows


@dataclass(frozen=True)
class Window:
    """`WITHIN length SLIDE slide`: windows [k*slide, k*slide + length)."""

    length: Decimal  # in seconds, or in the time column's own units when `unitless`
    slide: Decimal
    unitless: bool

    @property
    def tumbling(self) -> bool:
        return self.length == self.slide

    @property
    def copies(self) -> int:
        """How many windows an event falls in (at most): ceil(length / slide),
        exactly (a quotient rounded to the context's 28 digits can round down
        onto a whole number: 2 for 19.99999999999999999999999999 / 9.999999999999999999999999994)."""
        return ceil(Fraction(self.length) / Fraction(self.slide))



# ---------------------------------------------------------------- predicates


class Op(StrEnum):
    EQUAL = "equal"
    RANGE = "range"
    OTHER = "other"


@dataclass(frozen=True)
class KeyAttr:
    """An equivalence or GROUP-BY attribute: of every event (`position`
    None, written `[x]`) or of one position's events (`[P.vehicle]`)."""

    position: str | None
    attr: str

    def text(self) -> str:
        return self.attr if self.position is None else f"{self.position}.{self.attr}"


@dataclass(frozen=True)
class VertexPredicate:
    """One event against constants: filters events before anything else.
    `positions` empty: a constant condition on every event."""

    text: str
    expr: IExpr  # slot "self"
    positions: tuple[str, ...]
    reason: str
    pos: A.Pos | None = None
    kind: str = "vertex"
    op: Op = Op.OTHER
    scope: str = "constant"


@dataclass(frozen=True)
class EquivalencePredicate:
    """`[attrs]`, or an equality chain over every variable: partitions."""

    text: str
    keys: tuple[KeyAttr, ...]
    reason: str
    pos: A.Pos | None = None
    kind: str = "equivalence"
    op: Op = Op.EQUAL
    scope: str = "constant"


@dataclass(frozen=True)
class EdgePredicate:
    """Relates consecutive events of a trend, on the transition
    source → target: `lval(next) comparator h(prev)` when the two sides
    separate (op equal or range), else `expr` over prev/next (op other)."""

    text: str
    source: str
    target: str
    op: Op
    expr: IExpr  # slots "prev", "next"
    reason: str
    comparator: str | None = None
    lval: IExpr | None = None  # slot "next"
    h: IExpr | None = None  # slot "prev"
    h_text: str | None = None
    monotone: str | None = None
    pos: A.Pos | None = None
    kind: str = "edge"
    scope: str = "adjacent"


@dataclass(frozen=True)
class CrossPredicate:
    """Relates variables that are not consecutive in a trend: applies once
    every position it names is bound, for every element of a Kleene one."""

    text: str
    positions: tuple[str, ...]
    op: Op
    expr: IExpr  # slots: position names
    reason: str
    pos: A.Pos | None = None
    kind: str = "cross"
    scope: str = "across"


Predicate = VertexPredicate | EquivalencePredicate | EdgePredicate | CrossPredicate


def label(p: Predicate) -> str:
    return f"{p.kind}/{p.op}/{p.scope}"


# ---------------------------------------------------------------- aggregates


@dataclass(frozen=True)
class AggregateRef:
    """COUNT(*) (`position` None), COUNT(E), SUM/MIN/MAX/AVG(E.attr)."""

    func: str
    position: str | None
    attr: str | None
    name: str  # as written: `SUM(M.cpu)`
    pos: A.Pos | None = None


# ---------------------------------------------------------------- the bound query


@dataclass(frozen=True)
class BoundQuery:
    ast: A.Query
    kind: Kind
    template: Template
    predicates: tuple[Predicate, ...]
    window: Window
    params: tuple[tuple[str, object], ...]
    unbound: tuple[str, ...]  # parameters not given (compile without --param)
    group_by: tuple[KeyAttr, ...]
    aggregates: tuple[AggregateRef, ...]
    trends: TrendSet | None  # as written (TRENDS …), None when the query does not say
    approx: bool  # APPROX in the query
    time_col: str
    schema: Schema | None = None

    @property
    def positions(self):
        return self.template.all_positions

    def of_kind(self, cls) -> list:
        return [p for p in self.predicates if isinstance(p, cls)]
