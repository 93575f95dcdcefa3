"""Binding: resolve every name of a query against its pattern, its parameters
and (when known) its input schema.  Pure: AST (+ params, schema) → `Bound`.

Errors name the thing: an unknown variable, an unbound parameter, a Kleene
index on a single event, an aggregate over an unknown type, a missing column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from cetql import ast as A
from cetql.errors import QuerySemanticError, SchemaError
from cetql.parser import TIME_UNITS
from cetql.printer import aggregate_to_text, attr_to_text

from .schema import BOOLEAN, NUMERIC, OTHER, STRING, TIMESTAMP, Schema
from .template import Position, Template, all_positions, build_template, position_names

DETECTION, AGGREGATION = "detection", "aggregation"


@dataclass(frozen=True)
class Window:
    length: Decimal  # in seconds, or in the time column's units when unitless
    slide: Decimal
    unitless: bool

    @property
    def tumbling(self) -> bool:
        return self.length == self.slide

    def __str__(self) -> str:
        unit = "" if self.unitless else " s"
        kind = "tumbling" if self.tumbling else "sliding"
        return f"{kind} [k*{self.slide}{unit}, k*{self.slide}{unit} + {self.length}{unit})"


@dataclass
class Bound:
    query: A.Query
    template: Template
    positions: dict[str, Position]  # every position, negated ones included
    kind: str  # DETECTION or AGGREGATION
    trend_set: str
    trend_set_reason: str
    window: Window
    params: dict[str, object]
    unbound_params: list[str]
    group_by: tuple[tuple[str | None, str], ...]  # (variable or None for all, attribute)
    aggregates: tuple[A.Aggregate, ...]
    aggregate_vars: dict[int, str] = field(default_factory=dict)  # id(Aggregate) -> position
    schema: Schema | None = None
    time_col: str = "ts"

    def resolve(self, name: str, pos=None) -> str:
        return resolve_name(self.positions, name, pos)


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
    raise QuerySemanticError(f"unknown variable '{name}'; the pattern binds {known}", pos)


def parse_param(text: str) -> tuple[str, object]:
    """`k=v` from the command line; v is a number, TRUE/FALSE, or a string."""
    if "=" not in text:
        from cetql.errors import ParameterError

        raise ParameterError(f"--param '{text}' is not of the form name=value")
    k, v = text.split("=", 1)
    k, v = k.strip(), v.strip()
    if v.lower() in ("true", "false"):
        return k, v.lower() == "true"
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return k, v[1:-1]
    try:
        return k, int(v)
    except ValueError:
        pass
    try:
        return k, Decimal(v)
    except Exception:
        return k, v


def _seconds(d: A.Duration) -> Decimal:
    return Decimal(d.amount) * Decimal(str(TIME_UNITS[d.unit])) if d.unit else Decimal(d.amount)


def _window(q: A.Query) -> Window:
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
    if step > length:
        raise QuerySemanticError(
            f"SLIDE ({step}) is longer than WITHIN ({length}): events between windows would be ignored", slide.pos
        )
    return Window(length, step, q.within.unit is None)


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
        self.unbound: list[str] = []

    def column(self, attr: str, shown: str, pos) -> str:
        if self.schema is None:
            return OTHER
        found = self.schema.lookup(attr)
        if found is None:
            raise SchemaError(
                f"column '{attr}' ({shown}{', ' + str(pos) if pos else ''}) is not in the input; "
                f"its columns are: {', '.join(self.schema.names())}"
            )
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
                return _value_class(v)
            case A.Attr():
                return self.attr(e)
            case A.Name(name=n):
                if n in self.positions or any(p.type == n for p in self.positions.values()):
                    raise QuerySemanticError(
                        f"'{n}' is an event variable, not a value; compare one of its attributes, e.g. {n}.x", e.pos
                    )
                if n in self.params:
                    return _value_class(self.params[n])
                if self.strict:
                    raise QuerySemanticError(
                        f"unbound parameter '{n}': give it a value with --param {n}=<value> "
                        "(or, if it is meant to be an attribute, write it as var.attr)",
                        e.pos,
                    )
                if n not in self.unbound:
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
                    from cetql.printer import expr_to_text

                    raise QuerySemanticError(
                        f"type mismatch: '{expr_to_text(x)} {op} {expr_to_text(y)}' compares {a} with {b}", x.pos
                    )
                return BOOLEAN
            case A.Not(operand=x):
                self.expr(x)
                return BOOLEAN
            case A.And(items=items) | A.Or(items=items):
                for x in items:
                    self.expr(x)
                return BOOLEAN
            case A.Equivalence(columns=cols):
                for c in cols:
                    self.equivalence_column(c)
                return BOOLEAN
        raise TypeError(e)

    def numeric(self, e: A.Expr, what: str) -> None:
        cls = self.expr(e)
        if cls not in (NUMERIC, OTHER):
            from cetql.printer import expr_to_text

            shown = expr_to_text(e) if isinstance(e, A.Literal) else f"'{expr_to_text(e)}'"
            raise QuerySemanticError(f"{what} needs numbers, but {shown} is a {cls}", e.pos)

    def equivalence_column(self, c) -> tuple[str | None, str]:
        if isinstance(c, A.Attr):
            if c.index is not None:
                raise QuerySemanticError(
                    f"'{attr_to_text(c)}': an equivalence or grouping attribute takes no index", c.pos
                )
            var = resolve_name(self.positions, c.var, c.pos)
            self.column(c.attr, attr_to_text(c), c.pos)
            return var, c.attr
        if c.name in self.positions:
            raise QuerySemanticError(f"'{c.name}' is an event variable; name an attribute here", c.pos)
        self.column(c.name, c.name, c.pos)
        return None, c.name


def analyze(
    q: A.Query,
    params: dict[str, object] | None = None,
    schema: Schema | None = None,
    *,
    strict_params: bool = True,
    time_col: str = "ts",
) -> Bound:
    """Bind a parsed query.  With `strict_params=False` a missing parameter is
    listed in `unbound_params` instead of raising (for `compile --explain`)."""
    params = dict(params or {})
    names = position_names(q.pattern)
    template = build_template(q.pattern, names)
    positions = all_positions(template)
    checker = _Checker(positions, params, strict_params, schema)

    if schema is not None:
        found = schema.lookup(time_col)
        if found is None:
            raise SchemaError(
                f"time column '{time_col}' is not in the input (columns: {', '.join(schema.names())}); "
                "name it with --time-col"
            )
        if found[0] not in (NUMERIC, TIMESTAMP, OTHER):
            raise SchemaError(f"time column '{time_col}' is {found[1]}; it must be a timestamp or a number")

    if q.where is not None:
        checker.expr(q.where)
    group_by = tuple(checker.equivalence_column(c) for c in q.group_by)
    window = _window(q)

    kind = AGGREGATION if q.is_aggregation else DETECTION
    aggregates = q.aggregates
    agg_vars: dict[int, str] = {}
    if q.returns and not aggregates:
        raise QuerySemanticError(
            "RETURN lists no aggregate; add COUNT(*), SUM(E.x), … or drop RETURN to get the trends themselves",
            q.returns[0].pos,
        )
    grouped = {attr for _, attr in group_by}
    for item in q.returns:
        if isinstance(item, A.Aggregate):
            continue
        var, attr = checker.equivalence_column(item)
        if attr not in grouped:
            raise QuerySemanticError(
                f"RETURN column '{attr}' is neither grouped nor aggregated; add it to GROUP-BY", item.pos
            )
    for agg in aggregates:
        if agg.arg is None:
            continue
        target = agg.arg.name if isinstance(agg.arg, A.Name) else agg.arg.var
        try:
            var = resolve_name(positions, target, agg.arg.pos)
        except QuerySemanticError as e:
            raise QuerySemanticError(
                f"{agg.func}({target}{'.' + agg.arg.attr if isinstance(agg.arg, A.Attr) else ''}) aggregates over "
                f"unknown type or variable '{target}'; the pattern has {', '.join(positions)}",
                agg.arg.pos,
            ) from e
        if positions[var].negated:
            raise QuerySemanticError(
                f"{aggregate_to_text(agg)} aggregates over a negated sub-pattern, whose events are in no trend",
                agg.arg.pos,
            )
        if isinstance(agg.arg, A.Attr):
            cls = checker.attr(agg.arg)
            if agg.func in ("SUM", "AVG") and cls not in (NUMERIC, OTHER):
                raise QuerySemanticError(
                    f"{agg.func}({attr_to_text(agg.arg)}) needs a numeric attribute, but it is a {cls}", agg.arg.pos
                )
        agg_vars[id(agg)] = var

    if kind == DETECTION:
        if q.approx:
            raise QuerySemanticError(
                "APPROX applies to aggregates; a detection query returns its trends exactly", q.pos
            )
        trend_set = q.trends or "COMPLETE"
        reason = "asked for by TRENDS" if q.trends else "default for detection: complete event trends (ABI, CET)"
    else:
        if q.trends == "MAXIMAL":
            raise QuerySemanticError(
                "TRENDS MAXIMAL is for detection queries; aggregates are over ALL or COMPLETE trends",
                q.clause_pos("TRENDS"),
            )
        trend_set = q.trends or "ALL"
        reason = "asked for by TRENDS" if q.trends else "default for aggregation: all trends (GRETA, A-Seq)"

    return Bound(
        query=q,
        template=template,
        positions=positions,
        kind=kind,
        trend_set=trend_set,
        trend_set_reason=reason,
        window=window,
        params=params,
        unbound_params=checker.unbound,
        group_by=group_by,
        aggregates=aggregates,
        aggregate_vars=agg_vars,
        schema=schema,
        time_col=time_col,
    )
