"""The printer's output parses back to an equal AST, for generated queries."""

from decimal import Decimal

from budget import budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cetql
from cetql.language import ast as A
from cetql.language.units import UNIT_SECONDS as TIME_UNITS

KEYWORDS = {
    "PATTERN", "WHERE", "RETURN", "AGG", "WITHIN", "SLIDE", "TRENDS", "APPROX", "SEQ", "NOT", "AND", "OR",
    "NEXT", "TRUE", "FALSE", "COUNT", "SUM", "MIN", "MAX", "AVG", "GROUP", "BY",
}  # fmt: skip

# a name is a letter or `_` then letters, digits and `_`, in any script (columns are named in many)
letters = st.characters(whitelist_categories=("Lu", "Ll", "Lo"))
unicode_names = st.builds(str.__add__, letters, st.text(letters | st.characters(whitelist_categories=("Nd",)), max_size=5))
names = (st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True) | unicode_names).filter(
    lambda s: s.upper() not in KEYWORDS
)

# ---------------------------------------------------------------- patterns

event = st.builds(A.EventPattern, names, st.none() | names)
leaf = event | st.builds(A.Kleene, event, st.sampled_from("+*?"))


def _extend(children):
    return (
        st.builds(A.Kleene, children, st.sampled_from("+*?"))
        | st.builds(A.Seq, st.lists(children, min_size=1, max_size=4).map(tuple))
        | st.builds(A.Negation, children.filter(lambda p: not isinstance(p, A.Negation)))  # NOT NOT: refused
    )


patterns = st.recursive(leaf, _extend, max_leaves=6)

# ---------------------------------------------------------------- expressions

numbers = st.integers(-1000, 1000) | st.decimals(
    min_value=Decimal("-1000"), max_value=Decimal("1000"), places=2, allow_nan=False, allow_infinity=False
)
strings = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6)
literals = st.builds(A.Literal, numbers | strings | st.booleans())
attrs = st.builds(A.Attr, names, names, st.sampled_from(A.INDEXES))
columns = st.builds(A.Name, names) | st.builds(A.Attr, names, names)
atoms = (
    literals
    | st.builds(A.Name, names)
    | attrs
    | st.builds(A.Equivalence, st.lists(columns, min_size=1, max_size=3).map(tuple))
)


def _not_numeric_literal(e):
    # the parser folds `-5` into the literal -5, so Neg never wraps a number
    return not (isinstance(e, A.Literal) and isinstance(e.value, (int, Decimal)) and not isinstance(e.value, bool))


def _compound(children):
    pair = st.lists(children, min_size=2, max_size=3).map(tuple)
    return (
        st.builds(A.BinOp, st.sampled_from("+-*/%"), children, children)
        | st.builds(A.Neg, children.filter(_not_numeric_literal))
        | st.integers(1, 3).flatmap(
            lambda n: st.builds(
                A.Compare,
                st.lists(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), min_size=n, max_size=n).map(tuple),
                st.lists(children, min_size=n + 1, max_size=n + 1).map(tuple),
            )
        )
        | st.builds(A.And, pair)
        | st.builds(A.Or, pair)
        | st.builds(A.Not, children)
    )


exprs = st.recursive(atoms, _compound, max_leaves=6)

# ---------------------------------------------------------------- queries

aggregates = (
    st.just(A.Aggregate("COUNT"))
    | st.builds(A.Aggregate, st.just("COUNT"), st.builds(A.Name, names))
    | st.builds(A.Aggregate, st.sampled_from(["SUM", "MIN", "MAX", "AVG"]), attrs)
)
durations = st.builds(
    A.Duration,
    st.integers(1, 10**6) | st.decimals(min_value=Decimal("0.01"), max_value=Decimal("1000"), places=2),
    st.none() | st.sampled_from(sorted(TIME_UNITS)),
)
queries = st.builds(
    A.Query,
    pattern=patterns,
    where=st.none() | exprs,
    group_by=st.lists(columns, max_size=3).map(tuple),
    returns=st.lists(columns | aggregates, max_size=3).map(tuple),
    agg=st.lists(aggregates, max_size=2).map(tuple),
    within=st.none() | durations,
    slide=st.none() | durations,
    trends=st.none() | st.sampled_from(A.TREND_SETS),
    approx=st.booleans(),
)


@settings(max_examples=budget(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries)
def test_printed_query_parses_to_equal_ast(q):
    text = cetql.to_text(q)
    assert cetql.parse(text) == q, text


@settings(max_examples=budget(200), deadline=None)
@given(queries)
def test_printing_is_a_fixed_point(q):
    text = cetql.to_text(q)
    assert cetql.to_text(cetql.parse(text)) == text


@settings(max_examples=budget(200), deadline=None)
@given(queries)
def test_every_node_of_a_parsed_query_has_a_position(q):
    parsed = cetql.parse(cetql.to_text(q))
    for node in A.walk(parsed):
        assert node.pos is not None, node
