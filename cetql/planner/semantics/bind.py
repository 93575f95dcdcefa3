"""Binding: resolve every name of a query against its pattern, its parameters
and (when known) its input schema, and classify its predicates.

Pure: AST (+ parameters, schema) → `BoundQuery`.  Errors name the thing: an
unknown variable, an unbound parameter, a Kleene index on a single event, an
aggregate over an unknown type, a missing column, a type mismatch.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

from cetql.base.errors import QuerySemanticError, SchemaError
from cetql.base.options import TrendSet
from cetql.base.words import did_you_mean
from cetql.language import ast as A
from cetql.language.printer import aggregate_to_text, attr_to_text, expr_to_text
from cetql.language.units import UNIT_SECONDS
from cetql.planner.semantics import ir
from cetql.planner.semantics.classify import classify, conjuncts, implied_equivalences
from cetql.planner.semantics.parameters import INT64, check_given, check_params, number_range_error
from cetql.planner.semantics.schema import (
    BOOLEAN,
    NUMERIC,
    OTHER,
    STRING,
    TIMESTAMP,
    Schema,
    check_aggregable,
    spelled_as_input,
)
from cetql.planner.semantics.template import Position, build_template, position_names


def resolve_name(positions: dict[str, Position], name: str, pos=None) -> str:
    """A variable or type name → the position it denotes."""
    if name in positions:
        return name
    by_type = [p.name for p in positions.values() if p.type == name]
    if len(by_type) == 1:
        return by_type[0]
    if len(by_type) > 1:
        raise QuerySemanticError(
            f"'{name}' is the type of {len(by_type)} pattern positions ({', '.join(by_type)}); refer to one by its variable",
            pos,
        )
    known = ", ".join(positions) or "nothing"
    near = did_you_mean(name, [*positions, *_unique_types(positions)])
    raise QuerySemanticError(f"unknown variable '{name}'{near}; the pattern binds {known}", pos)


def _unique_types(positions: dict[str, Position]) -> list[str]:
    """The types that name one position each: a variable may be written so."""
    types = [p.type for p in positions.values()]
    return [t for t in dict.fromkeys(types) if types.count(t) == 1]


# Window sizes are decimals computed with Python's 28 significant digits (and normalised in that context): a size
# needing more would be rounded, silently changing the query, so it is refused.
_SIZE_DIGITS = 28


def _seconds(d: A.Duration) -> Decimal:
    with localcontext(prec=100):  # the product of the amount and its unit, unrounded: checked below, before any use
        return Decimal(d.amount) * Decimal(str(UNIT_SECONDS[d.unit])) if d.unit else Decimal(d.amount)


def bind_window(q: A.Query) -> ir.Window:
    if q.within is None:
        if q.slide is not None:
            raise QuerySemanticError("SLIDE needs a WITHIN clause giving the window length", q.slide.pos)
        raise QuerySemanticError("the query has no WITHIN clause; add one, e.g. WITHIN 1 hour", q.pos)
    slide = q.slide or q.within
    if (q.within.unit is None) != (slide.unit is None):
        raise QuerySemanticError(
            "WITHIN and SLIDE must both have a time unit or both have none", (q.slide or q.within).pos
        )
    length, step = _seconds(q.within), _seconds(slide)
    for d, value in ((q.within, length), (slide, step)):
        _check_duration(d, value, "WITHIN" if d is q.within else "SLIDE")
    if step > length:
        raise QuerySemanticError(
            f"SLIDE ({step}) is longer than WITHIN ({length}): events between windows would be ignored", slide.pos
        )
    return ir.Window(length, step, q.within.unit is None)


# Window bounds are computed in 64-bit integers of the time column's units:
# nanoseconds at most for a duration with a unit (timestamps to the
# nanosecond), the column's own units without one.
_MAX_DURATION_SECONDS = Decimal(INT64[1]) / Decimal(10**9)


def _check_duration(d: A.Duration, value: Decimal, clause: str) -> None:
    written = f"{clause} {d.amount}{' ' + d.unit if d.unit else ''}"
    with localcontext(prec=100):
        digits = len(value.normalize().as_tuple().digits)
    if digits > _SIZE_DIGITS:
        raise QuerySemanticError(
            f"{written} has {digits} significant digits; a window's length and slide have at most {_SIZE_DIGITS} "
            "(more would be rounded): round it", d.pos
        )  # fmt: skip
    if value <= 0:
        raise QuerySemanticError(f"{written}: a window's length and slide must be positive", d.pos)
    limit = _MAX_DURATION_SECONDS if d.unit else Decimal(INT64[1])
    if value > limit:
        most = "about 292 years (2^63 nanoseconds)" if d.unit else f"{INT64[1]:,} of the time column's units"
        raise QuerySemanticError(f"{written} is longer than a window can be: at most {most}", d.pos)


def _value_class(v) -> str:
    if isinstance(v, bool):
        return BOOLEAN
    if isinstance(v, (int, Decimal, float)):
        return NUMERIC
    if isinstance(v, str):
        return STRING
    return OTHER


class _Checker:
    """Walks the expressions of a query, resolving names and typing them."""

    def __init__(self, positions, params, strict, schema: Schema | None):
        self.positions = positions
        self.params = params
        self.strict = strict
        self.schema = schema
        self.unbound: list[str] = []  # read without a value, when values may come later
        self.read: list[str] = []  # every name read as a parameter
        self.missing = None  # (name, place) of the first read without a value, when values are required

    def column(self, attr: str, shown: str, pos) -> str:
        if self.schema is None:
            return OTHER
        found = self.schema.lookup(attr)
        if found is None:
            error = SchemaError(
                f"column '{attr}' ({shown}{', ' + str(pos) if pos else ''}) is not in the input"
                f"{did_you_mean(attr, self.schema.names())}; its columns are: {', '.join(self.schema.names())}"
            )
            error.pos = pos
            raise error
        return found[0]

    def attr(self, a: A.Attr) -> str:
        name = resolve_name(self.positions, a.var, a.pos)
        p = self.positions[name]
        if a.index is not None and not p.kleene_self:
            written = attr_to_text(a)
            if p.repeated:
                raise QuerySemanticError(
                    f"'{written}': an index on '{a.var}' inside a nested Kleene pattern is not supported; "
                    "only a variable directly under '+' (E+ v[]) can be indexed",
                    a.pos,
                )
            raise QuerySemanticError(
                f"'{written}': '{a.var}' is a single event, so it has no [i], [i-1] or NEXT(); "
                f"indexes apply to Kleene variables such as '{p.type}+ {a.var}[]'",
                a.pos,
            )
        return self.column(a.attr, attr_to_text(a), a.pos)

    def expr(self, e: A.Expr) -> str:
        match e:
            case A.Literal(value=v):
                problem = number_range_error(v)
                if problem:
                    raise QuerySemanticError(f"the number {problem}", e.pos)
                return _value_class(v)
            case A.Attr():
                return self.attr(e)
            case A.Name(name=n):
                if n in self.positions or any(p.type == n for p in self.positions.values()):
                    raise QuerySemanticError(
                        f"'{n}' is an event variable, not a value; compare one of its attributes, e.g. {n}.x", e.pos
                    )
                if n not in self.read:
                    self.read.append(n)
                if n in self.params:
                    return _value_class(self.params[n])
                if self.strict:
                    self.missing = self.missing or (n, e.pos)  # refused with the parameters given (`check_given`)
                elif n not in self.unbound:
                    self.unbound.append(n)
                return OTHER
            case A.Neg(operand=x):
                self.numeric(x, "'-'")
                return NUMERIC
            case A.BinOp(op=op, left=left, right=right):
                self.numeric(left, f"'{op}'")
                self.numeric(right, f"'{op}'")
                return NUMERIC
            case A.Compare(ops=ops, operands=operands):
                classes = [self.expr(x) for x in operands]
                for op, (a, b), (x, y) in zip(ops, zip(classes, classes[1:]), zip(operands, operands[1:])):
                    if OTHER in (a, b) or a == b:
                        continue
                    raise QuerySemanticError(
                        f"type mismatch: '{expr_to_text(x)} {op} {expr_to_text(y)}' compares {a} with {b}", x.pos
                    )
                return BOOLEAN
            case A.Not(operand=x):
                self.condition(x, "'NOT'")
                return BOOLEAN
            case A.And(items=items) | A.Or(items=items):
                for x in items:
                    self.condition(x, "'AND'" if isinstance(e, A.And) else "'OR'")
                return BOOLEAN
            case A.Equivalence(columns=cols):
                for c in cols:
                    self.key(c)
                return BOOLEAN
        raise TypeError(e)

    def condition(self, e: A.Expr, what: str) -> None:
        """`e` is true or false (a text column is not: Spark would cast its
        values at run time, DuckDB refuse to)."""
        cls = self.expr(e)
        if cls not in (BOOLEAN, OTHER):
            text = expr_to_text(e)
            shown = text if isinstance(e, A.Literal) else f"'{text}'"
            example = {NUMERIC: "0", STRING: "'yes'"}.get(cls, "…")
            raise QuerySemanticError(
                f"{what} needs a condition (true or false), but {shown} is a {cls} value; "
                f"compare it with one, e.g. {text} = {example}", e.pos
            )  # fmt: skip

    def numeric(self, e: A.Expr, what: str) -> None:
        cls = self.expr(e)
        if cls not in (NUMERIC, OTHER):
            shown = expr_to_text(e) if isinstance(e, A.Literal) else f"'{expr_to_text(e)}'"
            raise QuerySemanticError(f"{what} needs numbers, but {shown} is a {cls}", e.pos)

    def key(self, c) -> ir.KeyAttr:
        if isinstance(c, A.Attr):
            if c.index is not None:
                raise QuerySemanticError(
                    f"'{attr_to_text(c)}': an equivalence or grouping attribute takes no index", c.pos
                )
            var = resolve_name(self.positions, c.var, c.pos)
            self.column(c.attr, attr_to_text(c), c.pos)
            return ir.KeyAttr(var, c.attr)
        if c.name in self.positions:
            raise QuerySemanticError(f"'{c.name}' is an event variable; name an attribute here", c.pos)
        self.column(c.name, c.name, c.pos)
        return ir.KeyAttr(None, c.name)


def bind(
    q: A.Query,
    params: dict[str, object] | None = None,
    schema: Schema | None = None,
    *,
    strict_params: bool = True,
    time_col: str = "ts",
) -> ir.BoundQuery:
    """Bind a parsed query.  With `strict_params=False` a missing parameter is
    listed in `unbound` instead of raising (for `compile --explain`)."""
    params = check_params(dict(params or {}))
    q = spelled_as_input(q, schema)  # every column as the input spells it, found without regard to case
    time_col = schema.spelled(time_col) if schema is not None else time_col
    template = build_template(q.pattern, position_names(q.pattern))
    positions = template.all_positions
    checker = _Checker(positions, params, strict_params, schema)

    _check_time_col(schema, time_col)
    if q.where is not None:
        checker.condition(q.where, "WHERE")
    check_given(params, checker.read, checker.missing)
    group_by = tuple(checker.key(c) for c in q.group_by)
    window = bind_window(q)
    kind = ir.Kind.AGGREGATION if q.is_aggregation else ir.Kind.DETECTION

    _check_returns(q, checker, group_by)
    aggregates = tuple(_aggregate(agg, positions, checker) for agg in q.aggregates)

    _check_kind(q, kind)
    resolve = lambda name, pos=None: resolve_name(positions, name, pos)  # noqa: E731
    preds = [classify(template, params, e, resolve) for e in conjuncts(q.where)]
    preds = implied_equivalences(template, preds)

    return ir.BoundQuery(
        ast=q,
        kind=kind,
        template=template,
        predicates=tuple(preds),
        window=window,
        params=tuple(sorted(params.items())),
        unbound=tuple(checker.unbound),
        group_by=group_by,
        aggregates=aggregates,
        trends=TrendSet(q.trends) if q.trends else None,
        approx=q.approx,
        time_col=time_col,
        schema=schema,
    )


def parameters_read(q: A.Query) -> tuple[str, ...]:
    """The names the query reads as parameters (bare names that are no
    variable or type), in the order it reads them."""
    return bind(q, {}, strict_params=False).unbound


def _check_time_col(schema: Schema | None, time_col: str) -> None:
    """The time column is in the input and holds times or numbers."""
    if schema is None:
        return
    found = schema.lookup(time_col)
    if found is None:
        raise SchemaError(
            f"time column '{time_col}' is not in the input{did_you_mean(time_col, schema.names())}; "
            f"name it with --time-col (columns: {', '.join(schema.names())})"
        )
    if found[0] not in (NUMERIC, TIMESTAMP, OTHER):
        raise SchemaError(f"time column '{time_col}' is {found[1]}; it must be a timestamp or a number")


def _check_returns(q: A.Query, checker: _Checker, group_by) -> None:
    """RETURN lists an aggregate, and its other columns are grouped."""
    if q.returns and not q.aggregates:
        raise QuerySemanticError(
            "RETURN lists no aggregate; add COUNT(*), SUM(E.x), … or drop RETURN to get the trends themselves",
            q.returns[0].pos,
        )
    grouped = {k.attr for k in group_by}
    for item in q.returns:
        if isinstance(item, A.Aggregate):
            continue
        key = checker.key(item)
        if key.attr not in grouped:
            raise QuerySemanticError(
                f"RETURN column '{key.attr}' is neither grouped nor aggregated; add it to GROUP-BY", item.pos
            )


def _check_kind(q: A.Query, kind: ir.Kind) -> None:
    """APPROX only for aggregates, TRENDS MAXIMAL only for detection."""
    if kind == ir.Kind.DETECTION and q.approx:
        raise QuerySemanticError("APPROX applies to aggregates; a detection query returns its trends exactly", q.pos)
    if kind == ir.Kind.AGGREGATION and q.trends == "MAXIMAL":
        raise QuerySemanticError(
            "TRENDS MAXIMAL is for detection queries; aggregates are over ALL or COMPLETE trends",
            q.clause_pos("TRENDS"),
        )


def _aggregate(agg: A.Aggregate, positions, checker: _Checker) -> ir.AggregateRef:
    name = aggregate_to_text(agg)
    if agg.arg is None:
        return ir.AggregateRef(agg.func, None, None, name, pos=agg.pos)
    target = agg.arg.name if isinstance(agg.arg, A.Name) else agg.arg.var
    try:
        var = resolve_name(positions, target, agg.arg.pos)
    except QuerySemanticError as e:
        raise QuerySemanticError(
            f"{agg.func}({target}{'.' + agg.arg.attr if isinstance(agg.arg, A.Attr) else ''}) aggregates over "
            f"unknown type or variable '{target}'{did_you_mean(target, [*positions, *_unique_types(positions)])}; "
            f"the pattern has {', '.join(positions)}",
            agg.arg.pos,
        ) from e
    if positions[var].negated:
        raise QuerySemanticError(
            f"{name} aggregates over a negated sub-pattern, whose events are in no trend", agg.arg.pos
        )
    if isinstance(agg.arg, A.Attr):
        check_aggregable(agg, checker.attr(agg.arg), checker.schema)
        return ir.AggregateRef(agg.func, var, agg.arg.attr, name, agg.pos)
    return ir.AggregateRef(agg.func, var, None, name, pos=agg.pos)
