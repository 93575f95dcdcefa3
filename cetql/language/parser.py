"""Query text → AST.  The grammar is `cetql.lark`; this module turns
Lark's parse tree into `cetql.ast` nodes, and Lark's errors into
`QuerySyntaxError`s (`syntax_errors`) that say where and what was expected."""

from __future__ import annotations

from decimal import Decimal

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

from cetql.base.errors import QueryError, QuerySyntaxError
from cetql.base.words import nearest
from cetql.language import ast as A
from cetql.language.grammar import lark_parser
from cetql.language.syntax_errors import CLAUSE_KEYWORDS, misspelt, syntax_error
from cetql.language.units import UNIT_ALIASES

# The clauses that may follow a duration: a word there that is no unit may be one misspelt.
_AFTER_DURATION = tuple(k for k in CLAUSE_KEYWORDS if k not in ("PATTERN", "RETURN"))
_DOUBLE_NEGATION = ("a negation of a negation (NOT NOT …) has no meaning: a negated part only excludes trends, it is "
                    "never matched, so negating it again is not the part itself; negate once, or write it without NOT")


def _pos_of(meta_or_token) -> A.Pos | None:
    line = getattr(meta_or_token, "line", None)
    column = getattr(meta_or_token, "column", None)
    if line is None or column is None:
        return None
    return A.Pos(line, column)


def _fail(message: str, where) -> None:
    raise QuerySyntaxError(message, _pos_of(where))


def _number(token: Token) -> int | Decimal:
    text = str(token)
    if any(c in text for c in ".eE"):
        value = Decimal(text)
        return (
            int(value) if value == value.to_integral_value() and "." not in text and "e" not in text.lower() else value
        )
    return int(text)


@v_args(meta=True)
class _ToAst(Transformer):
    # ---------------------------------------------------------- patterns
    def event_pattern(self, meta, children):
        type_tok, *rest = children
        quants = [t for t in rest if t.type == "QUANT"]
        names = [t for t in rest if t.type == "NAME"]
        arrays = [t for t in rest if t.type == "ARRAY"]
        if len(quants) > 1:
            _fail(f"'{type_tok}' has two quantifiers ('{quants[0]}' and '{quants[1]}'); write one", quants[1])
        var = str(names[0]) if names else None
        node = A.EventPattern(str(type_tok), var, pos=_pos_of(meta))
        quant = str(quants[0]) if quants else None
        if arrays and quant not in ("+", "*"):
            _fail(
                f"'{var}[]' declares a Kleene array, but '{type_tok}' has no '+' or '*': write '{type_tok}+ {var}[]'",
                arrays[0],
            )
        return A.Kleene(node, quant, pos=_pos_of(meta)) if quant else node

    def _quantified(self, meta, node, children):
        quants = [t for t in children if isinstance(t, Token) and t.type == "QUANT"]
        return A.Kleene(node, str(quants[0]), pos=_pos_of(meta)) if quants else node

    def group_pattern(self, meta, children):
        return self._quantified(meta, children[0], children)

    def bare_seq_pattern(self, meta, children):
        items = tuple(c for c in children if not isinstance(c, Token))
        return self._quantified(meta, A.Seq(items, pos=_pos_of(meta)), children)

    def seq_pattern(self, meta, children):
        items = tuple(c for c in children if not isinstance(c, Token))
        return self._quantified(meta, A.Seq(items, pos=_pos_of(meta)), children)

    def negated_pattern(self, meta, children):
        if isinstance(children[-1], A.Negation):  # NOT NOT P, NOT (!P), … in any spelling, at any depth
            _fail(_DOUBLE_NEGATION, children[-1].pos)
        return A.Negation(children[-1], pos=_pos_of(meta))

    # ---------------------------------------------------------- expressions
    def _items(self, children):
        return tuple(c for c in children if not isinstance(c, Token))

    def or_(self, meta, children):
        items = self._items(children)
        return items[0] if len(items) == 1 else A.Or(items, pos=_pos_of(meta))

    def and_(self, meta, children):
        items = self._items(children)
        return items[0] if len(items) == 1 else A.And(items, pos=_pos_of(meta))

    def not_(self, meta, children):
        return A.Not(children[-1], pos=_pos_of(meta))

    def compare(self, meta, children):
        if len(children) == 1:
            return children[0]
        operands = children[0::2]
        ops = tuple({"==": "=", "<>": "!="}.get(str(t), str(t)) for t in children[1::2])
        return A.Compare(ops, tuple(operands), pos=_pos_of(meta))

    def arith(self, meta, children):
        node = children[0]
        for op, right in zip(children[1::2], children[2::2]):
            node = A.BinOp(str(op), node, right, pos=node.pos)
        return node

    def neg(self, meta, children):
        (operand,) = children
        if (
            isinstance(operand, A.Literal)
            and isinstance(operand.value, (int, Decimal))
            and not isinstance(operand.value, bool)
        ):
            return A.Literal(-operand.value, pos=_pos_of(meta))
        return A.Neg(operand, pos=_pos_of(meta))

    def number(self, meta, children):
        return A.Literal(_number(children[0]), pos=_pos_of(meta))

    def string(self, meta, children):
        text = str(children[0])
        quote = text[0]
        return A.Literal(text[1:-1].replace(quote * 2, quote), pos=_pos_of(meta))

    def true(self, meta, children):
        return A.Literal(True, pos=_pos_of(meta))

    def false(self, meta, children):
        return A.Literal(False, pos=_pos_of(meta))

    def name(self, meta, children):
        return A.Name(str(children[0]), pos=_pos_of(meta))

    def equivalence(self, meta, children):
        return A.Equivalence(tuple(children), pos=_pos_of(meta))

    def attr_plain(self, meta, children):
        var, attr = children
        return A.Attr(str(var), str(attr), None, pos=_pos_of(meta))

    def attr_indexed(self, meta, children):
        var, index, attr = children
        return A.Attr(str(var), str(attr), index, pos=_pos_of(meta))

    def attr_next(self, meta, children):
        _, var, attr = children
        return A.Attr(str(var), str(attr), "next", pos=_pos_of(meta))

    def index(self, meta, children):
        return "i"

    def index_offset(self, meta, children):
        name, op, number = children
        if str(number) != "1":
            _fail(
                f"index '{name}{op}{number}' is not supported: a predicate relates an element to its "
                f"neighbour, written [{name}], [{name}-1] or [{name}+1]",
                number,
            )
        return "i-1" if str(op) == "-" else "i+1"

    # ---------------------------------------------------------- aggregates
    def agg_func(self, meta, children):
        return children[0]

    def agg_star(self, meta, children):
        (func,) = children
        if str(func).upper() != "COUNT":
            _fail(f"{str(func).upper()}(*) is not an aggregate; only COUNT(*) counts trends", func)
        return A.Aggregate("COUNT", None, pos=_pos_of(meta))

    def agg_var(self, meta, children):
        func, name = children
        f = str(func).upper()
        if f != "COUNT":
            _fail(f"{f} needs an attribute, as in {f}({name}.attr)", name)
        return A.Aggregate("COUNT", A.Name(str(name), pos=_pos_of(name)), pos=_pos_of(meta))

    def agg_attr(self, meta, children):
        func, attr = children
        f = str(func).upper()
        if f == "COUNT":
            _fail(f"COUNT takes * or an event variable (COUNT(*), COUNT({attr.var})), not an attribute", func)
        return A.Aggregate(f, attr, pos=_pos_of(meta))

    def bare_count(self, meta, children):
        (func,) = children
        if str(func).upper() != "COUNT":
            _fail(f"{str(func).upper()} needs an argument, as in {str(func).upper()}(A.attr)", func)
        return A.Aggregate("COUNT", None, pos=_pos_of(meta))

    # ---------------------------------------------------------- clauses
    def duration(self, meta, children):
        amount = _number(children[0])
        unit = None
        if len(children) > 1:
            spelled = str(children[1])
            unit = UNIT_ALIASES.get(spelled.lower())
            if unit is None:
                # a misspelt unit, or a misspelt clause after the duration (`WITHIN 3 SLDE`): the nearer
                near = nearest(spelled, [*UNIT_ALIASES, *_AFTER_DURATION])
                if near:
                    _fail(misspelt(spelled, near[0]), children[1])
                _fail(
                    f"unknown time unit '{spelled}'; expected one of ms, s, sec, second(s), min, minute(s), "
                    "h, hour(s), day(s), week(s)",
                    children[1],
                )
        if amount <= 0:
            _fail(f"a duration must be positive, not {children[0]}", children[0])
        return A.Duration(amount, unit, pos=_pos_of(meta))

    def return_clause(self, meta, children):
        return ("RETURN", tuple(children[1:]), meta)

    def pattern_clause(self, meta, children):
        return ("PATTERN", children[1], meta)

    pattern_clause_angle = pattern_clause

    def where_clause(self, meta, children):
        return ("WHERE", children[1], meta)

    where_clause_angle = where_clause

    def group_clause(self, meta, children):
        return ("GROUP-BY", tuple(c for c in children if not isinstance(c, Token)), meta)

    group_clause_angle = group_clause

    def agg_clause(self, meta, children):
        return ("AGG", tuple(children[1:]), meta)

    def within_clause(self, meta, children):
        return ("WITHIN", children[1], meta)

    def slide_clause(self, meta, children):
        return ("SLIDE", children[1], meta)

    def trends_clause(self, meta, children):
        name = children[1]
        value = str(name).upper()
        if value not in A.TREND_SETS:
            near = nearest(value, A.TREND_SETS)
            if near:
                _fail(misspelt(str(name), near[0]), name)
            _fail(f"unknown trend set '{name}'; expected ALL, COMPLETE or MAXIMAL", name)
        return ("TRENDS", value, meta)

    def approx_clause(self, meta, children):
        return ("APPROX", True, meta)

    def bracketed_clause(self, meta, children):
        return children[1]

    def query(self, meta, children):
        fields: dict[str, object] = {}
        clause_pos = []
        for kind, value, where in children:
            if kind in fields:
                _fail(f"{kind} is given twice; a query has at most one {kind} clause", where)
            fields[kind] = value
            clause_pos.append((kind, _pos_of(where)))
        return A.Query(
            pattern=fields["PATTERN"],
            where=fields.get("WHERE"),
            group_by=fields.get("GROUP-BY", ()),
            returns=fields.get("RETURN", ()),
            agg=fields.get("AGG", ()),
            within=fields.get("WITHIN"),
            slide=fields.get("SLIDE"),
            trends=fields.get("TRENDS"),
            approx=bool(fields.get("APPROX", False)),
            clauses=tuple(clause_pos),
            pos=_pos_of(meta),
        )

    def start(self, meta, children):
        return children[0]


def parse(text: str) -> A.Query:
    """Parse query text into a `Query`, or raise `QuerySyntaxError`."""
    try:
        tree = lark_parser().parse(text)
    except (UnexpectedCharacters, UnexpectedEOF, UnexpectedToken) as e:
        raise syntax_error(e, text) from None
    try:
        return _ToAst().transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, QueryError):
            raise e.orig_exc.with_source(text) from None
        raise
