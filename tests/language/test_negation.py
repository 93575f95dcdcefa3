"""The language refuses what it cannot mean: a negation of a negation.

A negated part says which events exclude a trend; it is never matched, so
negating it again does not give the part back (`NOT NOT E` is not `E`), and
the planner used to read it as one NOT.  It is refused when the text is
parsed, in every spelling (NOT, not, !), through parentheses, at any depth,
with the position of the inner negation."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import QuerySyntaxError

SOME = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
DOUBLE = "a negation of a negation"


@st.composite
def trees(draw, depth=0):
    """A pattern as nested tuples: ("E", type), ("NOT", spelling, parenthesised, sub), ("SEQ", items)."""
    kind = draw(st.sampled_from(["E", "NOT", "SEQ"] if depth < 4 else ["E"]))
    if kind == "E":
        return ("E", draw(st.sampled_from("ABC")))
    if kind == "NOT":
        return ("NOT", draw(st.sampled_from(["NOT ", "not ", "!", "! ", "NoT "])), draw(st.booleans()),
                draw(trees(depth + 1)))  # fmt: skip
    return ("SEQ", tuple(draw(st.lists(trees(depth + 1), min_size=1, max_size=3))))


def render(tree, out: list, inner: list) -> None:
    """The text of a tree, appended to `out`; the offset of each negation
    whose operand is a negation (through parentheses) appended to `inner`."""
    if tree[0] == "E":
        out.append(tree[1])
    elif tree[0] == "SEQ":
        out.append("SEQ(")
        for k, item in enumerate(tree[1]):
            out.append(", " if k else "")
            render(item, out, inner)
        out.append(")")
    else:
        _, spelling, paren, sub = tree
        out.append(spelling + ("(" if paren else ""))
        if sub[0] == "NOT":
            inner.append(len("".join(out)))
        render(sub, out, inner)
        out.append(")" if paren else "")


@SOME
@given(trees())
@example(("SEQ", (("E", "E"), ("NOT", "NOT ", False, ("NOT", "NOT ", False, ("E", "E"))), ("E", "E"))))
def test_a_double_negation_is_refused_where_it_is_written(tree):
    out, inner = ["PATTERN SEQ(A, "], []
    render(tree, out, inner)
    text = "".join(out) + ", B) WITHIN 5"
    if not inner:
        cetql.parse(text)  # every other arrangement parses (the planner judges the rest)
        return
    with pytest.raises(QuerySyntaxError, match=DOUBLE) as e:
        cetql.parse(text)
    assert e.value.pos.line == 1 and e.value.pos.column - 1 in inner, (text, e.value.pos, inner)


def test_the_issues_query_is_refused_with_a_caret():
    text = "PATTERN SEQ(E a,\n  NOT NOT E b, E c) WITHIN 5"
    with pytest.raises(QuerySyntaxError) as e:
        cetql.compile(text)
    shown = e.value.render()
    assert shown.splitlines() == [
        f"syntax error: 2:7: {e.value.message}",
        "   2 |   NOT NOT E b, E c) WITHIN 5",
        "     |       ^",
    ]
    assert e.value.message.startswith(DOUBLE) and "negate once" in e.value.message


def test_one_negation_still_means_what_it_did():
    cetql.compile("PATTERN SEQ(E a, NOT E b, E c) WITHIN 5")
    cetql.compile("PATTERN SEQ(E a, !(SEQ(B, NOT C, D)), E c) WITHIN 5")
