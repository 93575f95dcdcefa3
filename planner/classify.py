"""Predicate classification (SEMANTICS.md, ABI §3): every conjunct of WHERE is
tagged

    kind     vertex | equivalence | edge | cross
    op       equal | range | other
    scope    constant | adjacent | across

- vertex/constant: one event against constants — filters the stream.
- equivalence: `[attrs]`, or `a.x = b.y = …` linking every positive variable —
  partitions the stream.
- edge/adjacent: relates consecutive events of a trend.  Written in ABI's form
  `f(next.lval, h(prev))`: `equal` for `=`, `range` for `< <= > >=` when the
  next event's side and the previous event's side separate (ABI's attribute
  index applies), `other` otherwise (evaluated on candidate pairs).
- cross/across: relates two variables that are not consecutive, or a single
  variable to every element of a Kleene part (`a.rate*2 < b.rate`); evaluated
  when both are bound.

Pure: `Bound` → list of `Predicate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from cetql import ast as A
from cetql.printer import expr_to_text

from .analyze import Bound
from .exprs import MIRROR as _MIRROR

VERTEX, EQUIVALENCE, EDGE, CROSS = "vertex", "equivalence", "edge", "cross"
EQUAL, RANGE, OTHER = "equal", "range", "other"
CONSTANT, ADJACENT, ACROSS = "constant", "adjacent", "across"


@dataclass
class Predicate:
    expr: A.Expr
    kind: str
    op: str
    scope: str
    variables: tuple[str, ...]
    reason: str
    # equivalence: variable (None for every variable) → attributes
    keys: tuple[tuple[str | None, str], ...] = ()
    # edge: oriented `lval(next) comparator h(prev)`
    prev_var: str | None = None
    next_var: str | None = None
    comparator: str | None = None
    lval: A.Expr | None = None
    rval: A.Expr | None = None
    h: str | None = None
    monotone: str | None = None
    # edge/cross: (var as written, index) of each reference -> "prev" / "next"
    roles: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return expr_to_text(self.expr)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.op}/{self.scope}"


def conjuncts(e: A.Expr | None) -> list[A.Expr]:
    """Top-level AND items, with a chain `a = b = c` split into `a = b`, `b = c`."""
    if e is None:
        return []
    if isinstance(e, A.And):
        return [c for x in e.items for c in conjuncts(x)]
    if isinstance(e, A.Compare) and len(e.ops) > 1:
        return [A.Compare((op,), (x, y), pos=x.pos) for op, x, y in zip(e.ops, e.operands, e.operands[1:])]
    return [e]


def refs(e) -> list[A.Attr]:
    return [n for n in A.walk(e) if isinstance(n, A.Attr)]


def _params(e) -> list[str]:
    return [n.name for n in A.walk(e) if isinstance(n, A.Name)]


def _op_class(op: str) -> str:
    return EQUAL if op == "=" else RANGE if op in ("<", "<=", ">", ">=") else OTHER


# ------------------------------------------------------------ h and monotonicity


def _h_text(rval: A.Expr, prev_refs: list[A.Attr]) -> str:
    """`ratio * s[i-1].price` → `h(x) = ratio * x` (x = s[i-1].price)."""
    attrs = {(r.var, r.attr, r.index) for r in prev_refs}
    if len(attrs) != 1:
        return f"h = {expr_to_text(rval)}"
    var, attr, index = next(iter(attrs))

    def sub(e):
        match e:
            case A.Attr(var=v, attr=a, index=i) if (v, a, i) == (var, attr, index):
                return A.Name("x")
            case A.BinOp(op=op, left=left, right=right):
                return A.BinOp(op, sub(left), sub(right))
            case A.Neg(operand=x):
                return A.Neg(sub(x))
        return e

    return f"h(x) = {expr_to_text(sub(rval))}"


def _sign(e: A.Expr, params) -> int | None:
    """Sign of an expression free of event attributes (None: unknown)."""
    match e:
        case A.Literal(value=v) if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            return (v > 0) - (v < 0)
        case A.Name(name=n) if isinstance(params.get(n), (int, Decimal, float)):
            v = params[n]
            return (v > 0) - (v < 0)
        case A.Neg(operand=x):
            s = _sign(x, params)
            return None if s is None else -s
    return None


def monotonicity(e: A.Expr, params) -> str:
    """'increasing', 'decreasing' or 'unknown' in the one attribute of `e`."""

    def go(x) -> int | None:  # +1 increasing, -1 decreasing, 0 constant
        match x:
            case A.Attr():
                return 1
            case A.Literal() | A.Name():
                return 0
            case A.Neg(operand=y):
                d = go(y)
                return None if d is None else -d
            case A.BinOp(op=op, left=left, right=right):
                dl, dr = go(left), go(right)
                if dl is None or dr is None:
                    return None
                if op == "+":
                    return dl if dr == 0 else dr if dl == 0 else (dl if dl == dr else None)
                if op == "-":
                    return dl if dr == 0 else -dr if dl == 0 else (dl if dl == -dr else None)
                if op in ("*", "/"):
                    if dl != 0 and dr == 0:
                        s = _sign(right, params)
                        return None if s is None else dl * s if s else 0
                    if op == "*" and dl == 0 and dr != 0:
                        s = _sign(left, params)
                        return None if s is None else dr * s if s else 0
                    return 0 if dl == dr == 0 else None
                return None if dl or dr else 0
        return None

    d = go(e)
    return {1: "increasing", -1: "decreasing", 0: "constant"}.get(d, "unknown")


# ------------------------------------------------------------ classification


def _roles(bound: Bound, rs: list[A.Attr]) -> dict[tuple[str, str | None], str] | None:
    """For a predicate over one Kleene variable, which refs are `prev` and which
    `next`: {i-1, i} → prev, next; {i, i+1} → prev, next; {bare, NEXT} → prev, next."""
    indexes = {r.index for r in rs}
    for prev, nxt in (("i-1", "i"), ("i", "i+1"), (None, "next"), ("i", "next"), ("i-1", None)):
        if indexes <= {prev, nxt} and indexes == {prev, nxt}:
            return {prev: "prev", nxt: "next"}
    return None


def _side(e: A.Expr, role_of) -> set[str]:
    return {role_of(r) for r in refs(e)}


def _always_adjacent(bound: Bound, a: str, b: str) -> bool:
    """a → b is a transition and no longer path leads from a to b: whenever
    both are in a trend they are consecutive (SEQ(A, B?, C): A, C are not)."""
    t = bound.template
    if not t.adjacent(a, b):
        return False
    seen, todo = set(), [q for (p, q) in t.transitions if p == a and q != b]
    while todo:
        x = todo.pop()
        if x == b:
            return False
        if x in seen:
            continue
        seen.add(x)
        todo += [q for (p, q) in t.transitions if p == x]
    return True


def _edge(bound: Bound, e: A.Expr, prev_var: str, next_var: str, role_of, scope: str) -> Predicate:
    variables = tuple(dict.fromkeys([prev_var, next_var]))
    roles = {(r.var, r.index): role_of(r) for r in refs(e)}
    base = dict(
        roles=roles,
        expr=e,
        kind=EDGE if scope == ADJACENT else CROSS,
        scope=scope,
        variables=variables,
        prev_var=prev_var,
        next_var=next_var,
    )
    if isinstance(e, A.Compare) and len(e.ops) == 1:
        (op,) = e.ops
        left, right = e.operands
        ls, rs_ = _side(left, role_of), _side(right, role_of)
        if ls == {"prev"} and rs_ <= {"next"} and rs_:
            left, right, op = right, left, _MIRROR[op]
            ls, rs_ = rs_, ls
        if ls == {"next"} and rs_ == {"prev"}:
            prev_refs = [r for r in refs(right)]
            h = _h_text(right, prev_refs)
            mono = monotonicity(right, bound.params) if len({(r.var, r.attr) for r in prev_refs}) == 1 else "unknown"
            cls = _op_class(op)
            if scope == ACROSS:
                reason = f"'{op}' between '{prev_var}' and '{next_var}': evaluated when both are bound"
            elif cls == EQUAL:
                reason = "'=' between the next event's value and h(previous): ABI attribute vertex per value (hash)"
            elif cls == RANGE:
                reason = (
                    f"'{op}' with the next event's side apart from h(previous): ABI range to-edges over "
                    "sorted h values, O(n log n)"
                )
            else:
                reason = f"'{op}' is neither equal nor range: evaluated on candidate pairs"
            return Predicate(op=cls, reason=reason, comparator=op, lval=left, rval=right, h=h, monotone=mono, **base)
        return Predicate(
            op=OTHER, reason="sides mix the previous and the next event: evaluated on candidate pairs", **base
        )
    return Predicate(op=OTHER, reason="not a single comparison: evaluated on candidate pairs", **base)


def classify_one(bound: Bound, e: A.Expr) -> Predicate:
    if isinstance(e, A.Equivalence):
        keys = tuple(
            (
                bound.resolve(c.var, c.pos) if isinstance(c, A.Attr) else None,
                c.attr if isinstance(c, A.Attr) else c.name,
            )
            for c in e.columns
        )
        return Predicate(
            e, EQUIVALENCE, EQUAL, CONSTANT, tuple(v for v, _ in keys if v), "[…]: partitions the stream", keys=keys
        )
    rs = refs(e)
    variables = tuple(dict.fromkeys(bound.resolve(r.var, r.pos) for r in rs))
    op = _op_class(e.ops[0]) if isinstance(e, A.Compare) and len(e.ops) == 1 else OTHER

    if not variables:
        return Predicate(e, VERTEX, op, CONSTANT, (), "no event attribute: checked once for the whole query")

    if len(variables) == 1:
        (var,) = variables
        indexes = {r.index for r in rs}
        if indexes <= {None, "i"}:
            what = "each element of" if bound.positions[var].repeated else "the event of"
            return Predicate(
                e, VERTEX, op, CONSTANT, variables, f"{what} '{var}' against constants: filters before anything else"
            )
        roles = _roles(bound, rs)
        if roles is None:
            # e.g. `c[i-1].x = 1` alone: reads one side of each adjacent pair
            later = {"i+1", "next"} | ({"i"} if indexes & {"i-1", None} else set())
            return Predicate(
                e,
                EDGE,
                OTHER,
                ADJACENT,
                variables,
                "only one side of an adjacent pair is used: evaluated on candidate pairs",
                prev_var=var,
                next_var=var,
                roles={(r.var, r.index): "next" if r.index in later else "prev" for r in rs},
            )
        return _edge(bound, e, var, var, lambda r: roles[r.index], ADJACENT)

    if len(variables) == 2:
        a, b = variables
        pa, pb = bound.positions[a], bound.positions[b]
        if any(r.index is not None for r in rs):
            return Predicate(
                e, CROSS, OTHER, ACROSS, variables, "indexed and other variables mixed: evaluated when both are bound"
            )
        # order the two variables as they occur in a trend
        if bound.template.adjacent(b, a) and not bound.template.adjacent(a, b):
            a, b = b, a
        adjacent = _always_adjacent(bound, a, b) and not pa.repeated and not pb.repeated
        role_of = lambda r: "prev" if bound.resolve(r.var) == a else "next"  # noqa: E731
        if adjacent:
            return _edge(bound, e, a, b, role_of, ADJACENT)
        p = _edge(bound, e, a, b, role_of, ACROSS)
        kleene = [v for v in (a, b) if bound.positions[v].repeated]
        p.reason = (
            f"holds for every element of {', '.join(kleene)}; " if kleene else "not consecutive in a trend; "
        ) + p.reason
        return p

    return Predicate(
        e, CROSS, OTHER, ACROSS, variables, "relates more than two variables: evaluated when all are bound"
    )


def _implied_equivalences(bound: Bound, preds: list[Predicate]) -> None:
    """`a.x = b.y = c.z` over every positive variable is an equivalence key
    (A-Seq's `Kindle.userId=KindleCase.userId=Stylus.userId`)."""
    positive = [n for n, p in bound.positions.items() if not p.negated]
    candidates = [
        p
        for p in preds
        if p.op == EQUAL
        and p.kind in (EDGE, CROSS)
        and isinstance(p.expr, A.Compare)
        and all(isinstance(x, A.Attr) and x.index is None for x in p.expr.operands)
        and not any(bound.positions[v].repeated for v in p.variables)
    ]
    if len(positive) < 2 or not candidates:
        return
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for p in candidates:
        x, y = p.expr.operands
        parent[find((bound.resolve(x.var), x.attr))] = find((bound.resolve(y.var), y.attr))
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    for members in groups.values():
        vars_ = [v for v, _ in members]
        if sorted(vars_) == sorted(positive) and len(set(vars_)) == len(vars_):
            keys = tuple(sorted(members))
            for p in candidates:
                x, y = p.expr.operands
                if (bound.resolve(x.var), x.attr) in members and (bound.resolve(y.var), y.attr) in members:
                    p.kind, p.scope, p.keys = EQUIVALENCE, CONSTANT, keys
                    p.h = p.monotone = p.comparator = p.lval = p.rval = p.prev_var = p.next_var = None
                    p.reason = "equal attributes across every variable: partitions the stream"


def classify(bound: Bound) -> list[Predicate]:
    preds = [classify_one(bound, e) for e in conjuncts(bound.query.where)]
    _implied_equivalences(bound, preds)
    return preds
