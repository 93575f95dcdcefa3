"""Predicate classification (SEMANTICS.md, ABI §3): every conjunct of WHERE
becomes one typed node —

- `VertexPredicate`: one event against constants — filters the stream;
- `EquivalencePredicate`: `[attrs]`, or `a.x = b.x = …` with the same
  attribute linking every variable — partitions the stream;
- `EdgePredicate`: relates consecutive events of a trend, on one template
  transition; written in ABI's form `f(next.lval, h(prev))`: `equal` for `=`,
  `range` for `< <= > >=` when the next event's side and the previous event's
  side separate (the ABI index applies), `other` otherwise;
- `CrossPredicate`: relates variables that are not always consecutive, or a
  single variable to every element of a Kleene part (`a.rate*2 < b.rate`).

Positions inside one Kleene variable (SEMANTICS.md, Predicates): the later
event is `c[i]` or `NEXT(c)`, the earlier one `c[i-1]` (beside `c[i]`) or bare
`c` (beside `NEXT(c)`); `c[i]` with `c[i+1]` means earlier, later; bare `c`
beside `c[i-1]` is `c[i]`, beside `c[i+1]` it is `c[i]` too.  A predicate that
mentions three positions is an error.

Pure: (template, params, conjunct) → predicate node.
"""

from __future__ import annotations

from decimal import Decimal

from cetql.base.errors import QuerySemanticError
from cetql.language import ast as A
from cetql.language.printer import attr_to_text, expr_to_text
from cetql.planner.semantics import ir
from cetql.planner.semantics.ir import Op
from cetql.planner.semantics.template import Template

MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


def conjuncts(e: A.Expr | None) -> list[A.Expr]:
    """Top-level AND items, with a chain `a = b = c` split into `a = b`, `b = c`."""
    if e is None:
        return []
    if isinstance(e, A.And):
        return [c for x in e.items for c in conjuncts(x)]
    if isinstance(e, A.Compare) and len(e.ops) > 1:
        return [A.Compare((op,), (x, y), pos=x.pos) for op, x, y in zip(e.ops, e.operands, e.operands[1:])]
    return [e]


def attr_refs(e) -> list[A.Attr]:
    return [n for n in A.walk(e) if isinstance(n, A.Attr)]


def _op_class(op: str) -> Op:
    return Op.EQUAL if op == "=" else Op.RANGE if op in ("<", "<=", ">", ">=") else Op.OTHER


# ------------------------------------------------------------ AST → IExpr


def lower_expr(e: A.Expr, slot_of, params: dict) -> ir.IExpr:
    """The typed expression of `e`: attribute references read the slot
    `slot_of(attr)`; parameters become constants (unbound ones: `Param`)."""
    match e:
        case A.Literal(value=v):
            return ir.Const(v)
        case A.Name(name=n):
            return ir.Const(params[n]) if n in params else ir.Param(n)
        case A.Attr(attr=a):
            return ir.Ref(slot_of(e), a)
        case A.Neg(operand=x):
            return ir.Negate(lower_expr(x, slot_of, params))
        case A.BinOp(op=op, left=left, right=right):
            return ir.Arith(op, lower_expr(left, slot_of, params), lower_expr(right, slot_of, params))
        case A.Compare(ops=ops, operands=operands):
            xs = [lower_expr(x, slot_of, params) for x in operands]
            cmps = tuple(ir.Cmp(op, a, b) for op, a, b in zip(ops, xs, xs[1:]))
            return cmps[0] if len(cmps) == 1 else ir.Logic("and", cmps)
        case A.And(items=items):
            return ir.Logic("and", tuple(lower_expr(x, slot_of, params) for x in items))
        case A.Or(items=items):
            return ir.Logic("or", tuple(lower_expr(x, slot_of, params) for x in items))
        case A.Not(operand=x):
            return ir.Not(lower_expr(x, slot_of, params))
    raise QuerySemanticError(f"'{expr_to_text(e)}' cannot be evaluated on events", getattr(e, "pos", None))


# ------------------------------------------------------------ h and monotonicity


def _h_text(rval: A.Expr) -> str:
    """`ratio * s[i-1].price` → `h(x) = ratio * x` (x = s[i-1].price)."""
    attrs = {(r.var, r.attr, r.index) for r in attr_refs(rval)}
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
        case A.Literal(value=v) if isinstance(v, (int, Decimal, float)) and not isinstance(v, bool):
            return (v > 0) - (v < 0)
        case A.Name(name=n) if isinstance(params.get(n), (int, Decimal, float)) and not isinstance(params[n], bool):
            v = params[n]
            return (v > 0) - (v < 0)
        case A.Neg(operand=x):
            s = _sign(x, params)
            return None if s is None else -s
    return None


def monotonicity(e: A.Expr, params) -> str:
    """'increasing', 'decreasing', 'constant' or 'unknown' in the one attribute of `e`."""

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

    return {1: "increasing", -1: "decreasing", 0: "constant"}.get(go(e), "unknown")


# ------------------------------------------------------------ positions in one Kleene variable

# The index sets a predicate over one Kleene variable may use, and which of
# them reads the earlier (prev) and the later (next) event of a step.
_PAIR_ROLES: dict[frozenset, dict] = {
    frozenset({"i-1", "i"}): {"i-1": "prev", "i": "next"},
    frozenset({"i", "i+1"}): {"i": "prev", "i+1": "next"},
    frozenset({None, "next"}): {None: "prev", "next": "next"},
    frozenset({"i", "next"}): {"i": "prev", "next": "next"},
    frozenset({None, "i", "next"}): {None: "prev", "i": "prev", "next": "next"},
    frozenset({"i-1", None}): {"i-1": "prev", None: "next"},
    frozenset({"i-1", None, "i"}): {"i-1": "prev", None: "next", "i": "next"},
    frozenset({None, "i+1"}): {None: "prev", "i+1": "next"},
    frozenset({None, "i", "i+1"}): {None: "prev", "i": "prev", "i+1": "next"},
}
_ONE_SIDE = {"i-1": "prev", "i+1": "next", "next": "next"}


_ORDER = ("i-1", None, "i", "i+1", "next")


def _written(indexes, var: str) -> str:
    forms = {None: var, "i": f"{var}[i]", "i-1": f"{var}[i-1]", "i+1": f"{var}[i+1]", "next": f"NEXT({var})"}
    return ", ".join(forms[i] for i in _ORDER if i in indexes)


def pair_roles(indexes: set, e: A.Expr) -> dict:
    """Which references of one Kleene variable read the earlier and the later
    event of a step, per SEMANTICS.md; an error for three positions."""
    key = frozenset(indexes)
    if key in _PAIR_ROLES:
        return _PAIR_ROLES[key]
    later = {"i+1", "next"} & indexes
    earlier = {"i-1"} & indexes
    if earlier and later:
        var = attr_refs(e)[0].var
        raise QuerySemanticError(
            f"'{expr_to_text(e)}' mentions three positions of a Kleene variable ({_written(indexes, var)}); a "
            f"predicate relates two consecutive events: write it with {var}[i-1] and {var}[i] (or {var} and NEXT({var}))",
            e.pos,
        )
    if len(indexes) == 1 and next(iter(indexes)) in _ONE_SIDE:
        (index,) = indexes
        return {index: _ONE_SIDE[index]}
    raise QuerySemanticError(
        f"'{expr_to_text(e)}' mixes positions {_written(indexes, attr_refs(e)[0].var)} that do not name one step "
        "of the Kleene variable",
        e.pos,
    )


# ------------------------------------------------------------ classification


def classify(template: Template, params: dict, e: A.Expr, resolve) -> ir.Predicate:
    """The typed node of one WHERE conjunct.  `resolve(name, pos)` maps a
    variable or type name to its position."""
    text = expr_to_text(e)
    if isinstance(e, A.Equivalence):
        keys = tuple(
            ir.KeyAttr(resolve(c.var, c.pos), c.attr) if isinstance(c, A.Attr) else ir.KeyAttr(None, c.name)
            for c in e.columns
        )
        return ir.EquivalencePredicate(text, keys, "[…]: partitions the stream", e.pos)
    rs = attr_refs(e)
    positions = tuple(dict.fromkeys(resolve(r.var, r.pos) for r in rs))
    op = _op_class(e.ops[0]) if isinstance(e, A.Compare) and len(e.ops) == 1 else Op.OTHER

    if not positions:
        expr = lower_expr(e, lambda _: "self", params)
        return ir.VertexPredicate(text, expr, (), "no event attribute: checked once for the whole query", e.pos, op=op)

    if len(positions) == 1:
        return _one_variable(template, params, e, text, positions[0], op)
    if len(positions) == 2:
        return _two_variables(template, params, e, text, positions, op, resolve)
    expr = lower_expr(e, lambda r: resolve(r.var, r.pos), params)
    return ir.CrossPredicate(
        text, positions, Op.OTHER, expr, "relates more than two variables: evaluated when all are bound", e.pos
    )


def _one_variable(template: Template, params: dict, e: A.Expr, text: str, name: str, op: Op) -> ir.Predicate:
    """A conjunct over one variable: a vertex filter, or an edge between its consecutive elements."""
    rs = attr_refs(e)
    p = template.all_positions[name]
    indexes = {r.index for r in rs}
    if indexes <= {None, "i"}:
        what = "each element of" if p.repeated else "the event of"
        return ir.VertexPredicate(
            text,
            lower_expr(e, lambda _: "self", params),
            (name,),
            f"{what} '{name}' against constants: filters before anything else",
            e.pos,
            op=op,
        )
    roles = pair_roles(indexes, e)
    if len(roles) == 1:
        expr = lower_expr(e, lambda a: roles[a.index], params)
        return ir.EdgePredicate(
            text,
            name,
            name,
            Op.OTHER,
            expr,
            "only one side of an adjacent pair is used: evaluated on candidate pairs",
            pos=e.pos,
        )
    return _edge(e, text, name, name, lambda a: roles[a.index], params)


def _two_variables(template: Template, params: dict, e: A.Expr, text: str, positions, op: Op, resolve) -> ir.Predicate:
    """A conjunct over two variables: an edge where they are always consecutive, else a cross predicate."""
    rs = attr_refs(e)
    a, b = positions
    indexed = [r for r in rs if r.index not in (None, "i")]
    if indexed:
        r = indexed[0]
        raise QuerySemanticError(
            f"'{attr_to_text(r)}' in '{text}': a predicate between two variables reads each one's event "
            f"({r.var}.{r.attr}, or {r.var}[i].{r.attr} for every element); neighbours ([i-1], NEXT) belong "
            "to predicates over one Kleene variable",
            r.pos,
        )
    if template.adjacent(b, a) and not template.adjacent(a, b):
        a, b = b, a
    pa, pb = template.all_positions[a], template.all_positions[b]
    role_of = lambda r: "prev" if resolve(r.var, r.pos) == a else "next"  # noqa: E731
    if not pa.negated and not pb.negated and template.always_adjacent(a, b) and not pa.repeated and not pb.repeated:
        return _edge(e, text, a, b, role_of, params)
    kleene = [v for v in (a, b) if template.all_positions[v].repeated]
    why = (f"holds for every element of {', '.join(kleene)}" if kleene else "not consecutive in a trend") + (
        "; evaluated when both are bound"
    )
    expr = lower_expr(e, lambda r: resolve(r.var, r.pos), params)
    return ir.CrossPredicate(text, (a, b), op, expr, why, e.pos)


def _edge(e, text, prev_pos, next_pos, role_of, params) -> ir.EdgePredicate:
    """An adjacent predicate, oriented as ABI writes it when its sides separate."""
    expr = lower_expr(e, role_of, params)
    if isinstance(e, A.Compare) and len(e.ops) == 1:
        (op,) = e.ops
        left, right = e.operands
        ls = {role_of(r) for r in attr_refs(left)}
        rs_ = {role_of(r) for r in attr_refs(right)}
        if ls == {"prev"} and rs_ <= {"next"} and rs_:
            left, right, op = right, left, MIRROR[op]
            ls, rs_ = rs_, ls
        if ls == {"next"} and rs_ == {"prev"}:
            cls = _op_class(op)
            mono = monotonicity(right, params) if len({(r.var, r.attr) for r in attr_refs(right)}) == 1 else "unknown"
            if cls == Op.EQUAL:
                reason = "'=' between the next event's value and h(previous): ABI attribute vertex per value (hash)"
            elif cls == Op.RANGE:
                reason = f"'{op}' with the next event's side apart from h(previous): ABI range index over sorted values"
            else:
                reason = f"'{op}' is neither equal nor range: evaluated on candidate pairs"
            return ir.EdgePredicate(
                text,
                prev_pos,
                next_pos,
                cls,
                expr,
                reason,
                comparator=op,
                lval=lower_expr(left, role_of, params),
                h=lower_expr(right, role_of, params),
                h_text=_h_text(right),
                monotone=mono,
                pos=e.pos,
            )
        return ir.EdgePredicate(
            text,
            prev_pos,
            next_pos,
            Op.OTHER,
            expr,
            "sides mix the previous and the next event: evaluated on candidate pairs",
            pos=e.pos,
        )
    return ir.EdgePredicate(
        text, prev_pos, next_pos, Op.OTHER, expr, "not a single comparison: evaluated on candidate pairs", pos=e.pos
    )


def implied_equivalences(template: Template, preds: list[ir.Predicate]) -> list[ir.Predicate]:
    """An equality chain `a.x = b.x = …` with one attribute linking every
    variable is an equivalence on x (SEMANTICS.md: A-Seq's
    `Kindle.userId=KindleCase.userId=Stylus.userId`, or `a.g = b.g` with b a
    Kleene part): its conjuncts are replaced by one `[x]`, whichever optional
    variables (`E?`, `E*`) match nothing.  With a negation, the chain must
    link the negated variables too: a negated event blocks whatever its
    attributes unless the query says otherwise, and partitioning by x would
    hide the blocking events of other values."""
    positive = set(template.all_positions) if template.negatives else {p.name for p in template.positions}
    candidates = [
        p
        for p in preds
        if isinstance(p, (ir.EdgePredicate, ir.CrossPredicate))
        and p.op == Op.EQUAL
        and isinstance(p.expr, ir.Cmp)
        and isinstance(p.expr.left, ir.Ref)
        and isinstance(p.expr.right, ir.Ref)
        and p.expr.left.attr == p.expr.right.attr
        and (isinstance(p, ir.CrossPredicate) or p.source != p.target)
    ]
    if len(positive) < 2 or not candidates:
        return preds
    by_attr: dict[str, list] = {}
    for p in candidates:
        by_attr.setdefault(p.expr.left.attr, []).append(p)
    out = list(preds)
    for attr, ps in by_attr.items():
        # union the variables the equalities link, per attribute
        parent: dict[str, str] = {}
        for p in ps:
            a, b = (p.source, p.target) if isinstance(p, ir.EdgePredicate) else p.positions
            parent[_find(parent, a)] = _find(parent, b)
        groups: dict[str, set] = {}
        for v in list(parent):
            groups.setdefault(_find(parent, v), set()).add(v)
        if any(g == positive for g in groups.values()):
            first = out.index(ps[0])
            text = " AND ".join(p.text for p in ps)
            key = ir.EquivalencePredicate(
                text,
                (ir.KeyAttr(None, attr),),
                f"equal '{attr}' across every variable: partitions the stream, as [{attr}]",
                ps[0].pos,
            )
            out = [p for p in out if p not in ps]
            out.insert(min(first, len(out)), key)
    return out


def _find(parent: dict, x):
    while parent.setdefault(x, x) != x:
        x = parent[x]
    return x
