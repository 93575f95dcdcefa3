"""Malformed and meaningless queries: each gets its exact position and message.

The expected messages were reviewed one by one: each names the offending
token or thing and what would be right instead."""

import pytest
from budget import budget
from generators import queries
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import QuerySemanticError, QuerySyntaxError
from cetql.language.grammar import keywords, lark_parser

CASES = [
    ("PATTERN", "1:8", "unexpected end of query; expected '!', '(', '<', NOT, SEQ or a name"),
    ("WHERE a.x = 1", "1:1", "unexpected keyword WHERE; expected PATTERN or RETURN"),
    (
        "PATTERN A+ WHERE a.x > ) WITHIN 5",
        "1:24",
        "unexpected ')'; expected '(', '-', '[', FALSE, NEXT, TRUE, a name, a number or a string",
    ),
    ("PATTERN SEQ(A, B WITHIN 3", "1:18", "unexpected keyword WITHIN; expected ')' or ','"),
    (
        "PATTERN A+ WHERE a.x # 3 WITHIN 1",
        "1:22",
        "unexpected character '#'; expected '*', '/' or '%', '+' or '-', '[', AGG, AND, APPROX, GROUP-BY, OR, SLIDE, TRENDS, WHERE, WITHIN, a comparison (= != < <= > >=) or the end of the query",
    ),
    ("PATTERN A+ WHERE a.x > 3 WITHIN", "1:32", "unexpected end of query; expected a number"),
    ("PATTERN A+ a[] WHERE a.x > WITHIN 3", "1:26", "comparison '>' has no right-hand side"),
    (
        "PATTERN A+ WITHIN 5 fortnights",
        "1:21",
        "unknown time unit 'fortnights'; expected one of ms, s, sec, second(s), min, minute(s), h, hour(s), day(s), week(s)",
    ),
    ("PATTERN A+ WITHIN 0", "1:19", "a duration must be positive, not 0"),
    ("PATTERN A+ c WITHIN 3\nWITHIN 4", "2:1", "WITHIN is given twice; a query has at most one WITHIN clause"),
    ("PATTERN A c[] WITHIN 1", "1:12", "'c[]' declares a Kleene array, but 'A' has no '+' or '*': write 'A+ c[]'"),
    ("PATTERN A+ c[]+ WITHIN 1", "1:15", "'A' has two quantifiers ('+' and '+'); write one"),
    (
        "PATTERN A+ a[] WHERE a[i].x > a[i-2].x WITHIN 3",
        "1:35",
        "index 'i-2' is not supported: a predicate relates an element to its neighbour, written [i], [i-1] or [i+1]",
    ),
    ("RETURN SUM(*) PATTERN A+ WITHIN 3", "1:8", "SUM(*) is not an aggregate; only COUNT(*) counts trends"),
    ("RETURN SUM(A) PATTERN A+ WITHIN 3", "1:12", "SUM needs an attribute, as in SUM(A.attr)"),
    (
        "RETURN COUNT(A.x) PATTERN A+ WITHIN 3",
        "1:8",
        "COUNT takes * or an event variable (COUNT(*), COUNT(A)), not an attribute",
    ),
    ("PATTERN A+ WITHIN 3 TRENDS SOME", "1:28", "unknown trend set 'SOME'; expected ALL, COMPLETE or MAXIMAL"),
    ("PATTERN A+ WHERE a.x = 'open WITHIN 3", "1:24", "unterminated string: no closing ' on this line"),
    ("PATTERN SEQ() WITHIN 3", "1:13", "unexpected ')'; expected '!', '(', NOT, SEQ or a name"),
    # WHERE is read as the keyword here: no hint that it was read as a name
    ("PATTERN A+ WHERE [] WITHIN 3", "1:19", "unexpected ']'; expected NEXT or a name"),
    (
        "PATTERN A+ WHERE a.x = 1 AND WITHIN 3",
        "1:37",
        "unexpected number 3; expected '*', '/' or '%', '+' or '-', '.', '[', AGG, AND, APPROX, GROUP-BY, OR, SLIDE, TRENDS, WHERE, WITHIN, a comparison (= != < <= > >=) or the end of the query (the keyword WITHIN was read as a name: is something missing before it?)",
    ),
    (
        "PATTERN A+ GROUP-BY WITHIN 3",
        "1:28",
        "unexpected number 3; expected ',', '.', '[', AGG, APPROX, GROUP-BY, SLIDE, TRENDS, WHERE, WITHIN or the end of the query (the keyword WITHIN was read as a name: is something missing before it?)",
    ),
    ("PATTERN A+ WHERE NEXT(a) > 1 WITHIN 3", "1:26", "unexpected '>'; expected '.'"),
    (
        "PATTERN A+\nWHERE a.x = 1\n  AND a.y = = 2\nWITHIN 3",
        "3:13",
        "unexpected '='; expected '(', '-', '[', FALSE, NEXT, TRUE, a name, a number or a string",
    ),
    ("PATTERN Check+ c[] WHERE d.x = 1 WITHIN 3", "1:26", "unknown variable 'd'; the pattern binds c"),
    (
        "PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price WITHIN 3",
        "1:39",
        "unbound parameter 'ratio': give it a value with --param ratio=<value> (or, if it is meant to be an attribute, write it as var.attr)",
    ),
    (
        "PATTERN SEQ(Activity a, Activity+ b[]) WHERE a[i].rate < b.rate WITHIN 3",
        "1:46",
        "'a[i].rate': 'a' is a single event, so it has no [i], [i-1] or NEXT(); indexes apply to Kleene variables such as 'Activity+ a[]'",
    ),
    (
        "PATTERN SEQ(Activity a, Activity+ b[]) WHERE NEXT(a).rate < b.rate WITHIN 3",
        "1:46",
        "'NEXT(a).rate': 'a' is a single event, so it has no [i], [i-1] or NEXT(); indexes apply to Kleene variables such as 'Activity+ a[]'",
    ),
    (
        "RETURN COUNT(X) PATTERN SEQ(A+, B) WITHIN 3",
        "1:14",
        "COUNT(X) aggregates over unknown type or variable 'X'; the pattern has A, B",
    ),
    (
        "RETURN SUM(X.y) PATTERN SEQ(A+, B) WITHIN 3",
        "1:12",
        "SUM(X.y) aggregates over unknown type or variable 'X'; the pattern has A, B",
    ),
    (
        "RETURN COUNT(Accident) PATTERN SEQ(NOT Accident a, Position+ p[]) WITHIN 3",
        "1:14",
        "COUNT(Accident) aggregates over a negated sub-pattern, whose events are in no trend",
    ),
    ("PATTERN A+", "1:1", "the query has no WITHIN clause; add one, e.g. WITHIN 1 hour"),
    ("PATTERN A+ SLIDE 3", "1:18", "SLIDE needs a WITHIN clause giving the window length"),
    (
        "PATTERN A+ WITHIN 3 SLIDE 5",
        "1:27",
        "SLIDE (5) is longer than WITHIN (3): events between windows would be ignored",
    ),
    ("PATTERN A+ WITHIN 3 min SLIDE 5", "1:31", "WITHIN and SLIDE must both have a time unit or both have none"),
    ("PATTERN SEQ(A a, B a) WITHIN 3", "1:18", "variable 'a' is bound twice in the pattern"),
    (
        "PATTERN SEQ(Activity, Activity+) WHERE Activity.rate > 1 WITHIN 3",
        "1:40",
        "'Activity' is the type of 2 pattern positions (Activity_1, Activity_2); refer to one by its variable",
    ),
    (
        "PATTERN A* WITHIN 3",
        "1:9",
        "the pattern can match an empty trend (every part is optional); make at least one part required, e.g. A+ instead of A*",
    ),
    (
        "PATTERN NOT A WITHIN 3",
        "1:9",
        "a pattern cannot be only a negation: NOT needs a positive sub-pattern beside it",
    ),
    (
        "PATTERN SEQ(A, NOT B, NOT C, D) WITHIN 3",
        "1:23",
        "two negations in a row: write NOT SEQ(P, Q) instead of NOT P, NOT Q",
    ),
    ("PATTERN SEQ(NOT B) WITHIN 3", "1:13", "a SEQ needs at least one positive (not negated) sub-pattern"),
    (
        "RETURN sector PATTERN A+ WITHIN 3",
        "1:8",
        "RETURN lists no aggregate; add COUNT(*), SUM(E.x), … or drop RETURN to get the trends themselves",
    ),
    (
        "RETURN sector, COUNT(*) PATTERN A+ WITHIN 3",
        "1:8",
        "RETURN column 'sector' is neither grouped nor aggregated; add it to GROUP-BY",
    ),
    ("PATTERN A+ WITHIN 3 APPROX", "1:1", "APPROX applies to aggregates; a detection query returns its trends exactly"),
    (
        "RETURN COUNT(*) PATTERN A+ WITHIN 3 TRENDS MAXIMAL",
        "1:37",
        "TRENDS MAXIMAL is for detection queries; aggregates are over ALL or COMPLETE trends",
    ),
    ("PATTERN A+ a[] WHERE a.x + 'text' > 1 WITHIN 3", "1:28", "'+' needs numbers, but 'text' is a string"),
    (
        "PATTERN A+ a[] WHERE a.x > 1 AND a.x * 2 WITHIN 3",
        "1:34",
        "'AND' needs a condition (true or false), but 'a.x * 2' is a numeric value; compare it with one, e.g. a.x * 2 = 0",
    ),
    (
        "PATTERN (SEQ(A a, B b))+ WHERE a[i].x = 1 WITHIN 3",
        "1:32",
        "'a[i].x': an index on 'a' inside a nested Kleene pattern is not supported; only a variable directly under '+' (E+ v[]) can be indexed",
    ),
    (
        "PATTERN A+ a[] WHERE a > 1 WITHIN 3",
        "1:22",
        "'a' is an event variable, not a value; compare one of its attributes, e.g. a.x",
    ),
    ("PATTERN A+ a[] WHERE [a[i].x] WITHIN 3", "1:23", "'a[i].x': an equivalence or grouping attribute takes no index"),
    (
        "PATTERN S+ s[] WHERE s[i-1].x + s[i+1].x > s[i].x WITHIN 3",
        "1:22",
        "'s[i-1].x + s[i+1].x > s[i].x' mentions three positions of a Kleene variable (s[i-1], s[i], s[i+1]); "
        "a predicate relates two consecutive events: write it with s[i-1] and s[i] (or s and NEXT(s))",
    ),
    (
        "PATTERN SEQ(A a, B+ b[]) WHERE a.x < b[i-1].x WITHIN 3",
        "1:38",
        "'b[i-1].x' in 'a.x < b[i-1].x': a predicate between two variables reads each one's event (b.x, or b[i].x "
        "for every element); neighbours ([i-1], NEXT) belong to predicates over one Kleene variable",
    ),
    (
        "PATTERN (SEQ(NOT C, A))+ WITHIN 3",
        "1:14",
        "a negation inside a nested or repeated SEQ needs a required part before and after it in that SEQ (so its "
        "neighbours are clear); move it between required parts, or to the whole pattern",
    ),
    (
        "PATTERN SEQ(A, (B?)+) WITHIN 3",
        "1:16",
        "'+' repeats a part that can match no event (every part of it is optional or negated); make one of its "
        "parts required",
    ),
    (  # rounded to 28 digits it was WITHIN 1, silently
        "PATTERN A+ WITHIN 1.0000000000000000000000000000001",
        "1:19",
        "WITHIN 1.0000000000000000000000000000001 has 32 significant digits; a window's length and slide have at "
        "most 28 (more would be rounded): round it",
    ),
]

# Which of the cases above are syntax (not semantic) errors: the first 24.
N_SYNTAX = 24


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize(("query", "pos", "message"), CASES, ids=[c[0][:40] for c in CASES])
def test_error_position_and_message(query, pos, message):
    with pytest.raises(cetql.QueryError) as info:
        cetql.compile(query, {}, strict_params=True)
    assert str(info.value.pos) == pos
    assert info.value.message == message


@pytest.mark.parametrize("query", [c[0] for c in CASES[:N_SYNTAX]])
def test_syntax_errors_are_syntax_errors(query):
    with pytest.raises(QuerySyntaxError):
        cetql.compile(query, {}, strict_params=True)


@pytest.mark.parametrize("query", [c[0] for c in CASES[N_SYNTAX:]])
def test_semantic_errors_are_semantic_errors(query):
    with pytest.raises(QuerySemanticError):
        cetql.compile(query, {}, strict_params=True)


def test_render_shows_line_and_caret():
    text = "PATTERN A+\nWHERE a.x = 1\n  AND a.y = = 2\nWITHIN 3"
    with pytest.raises(cetql.QueryError) as info:
        cetql.compile(text)
    lines = info.value.render().splitlines()
    assert lines[0].startswith("syntax error: 3:13: unexpected '='")
    assert lines[1] == "   3 |   AND a.y = = 2"
    assert lines[2] == "     |             ^"
    # the caret sits under the offending character
    assert lines[1][lines[2].index("^")] == "="


def test_render_with_file_name():
    with pytest.raises(cetql.QueryError) as info:
        cetql.compile("PATTERN A+ WITHIN 5 fortnights")
    assert info.value.render("q.cet").startswith("q.cet:1:21: syntax error: unknown time unit 'fortnights'")


def test_unbound_parameter_is_only_noted_when_not_strict():
    c = cetql.compile("PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price WITHIN 3")
    assert c.query.unbound == ("ratio",)
    c = cetql.compile("PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price WITHIN 3", {"ratio": 2})
    assert c.query.unbound == ()


# ---------------------------------------------------------------- a misspelt keyword: the one meant


def test_a_misspelt_keyword_is_answered_with_the_keyword():
    """The issue's example: one suggestion, where a list of fourteen was."""
    with pytest.raises(QuerySyntaxError) as info:
        cetql.compile("PATTERN A+ a[] WITHN 3")
    assert info.value.render().splitlines() == [
        "syntax error: 1:16: expected WITHIN here (found 'WITHN')",
        "   1 | PATTERN A+ a[] WITHN 3",
        "     |                ^",
    ]


@pytest.mark.parametrize(("query", "pos", "message"), [
    ("PATTERN A+ WITHN 3", "1:12", "expected WITHIN here (found 'WITHN')"),  # WITHN read as A's variable
    ("PATTERN A+ a[] WITHIN 3 SLDE 1", "1:25", "expected SLIDE here (found 'SLDE')"),  # SLDE read as a unit
    ("PATTERN A+ a[] WITHIN 3 APROX", "1:25", "expected APPROX here (found 'APROX')"),  # … and the query ends
    ("PATTERN A+ a[] WITHIN 3 minuts", "1:25", "expected minutes here (found 'minuts')"),
    ("PATTERN A+ a[] WITHIN 3 TRENDS MAXIMA", "1:32", "expected MAXIMAL here (found 'MAXIMA')"),
    ("PATTERN SEQ(A a, NT C c, B b) WITHIN 3", "1:18", "expected NOT here (found 'NT')"),
    ("RETURN AG(a.x) PATTERN A+ a[] WITHIN 3", "1:8", "expected AVG here (found 'AG')"),  # AGG would not parse
    ("RETURN COUNT(*) PATTERN A+ a[] GROPU-BY a.g WITHIN 3", "1:32", "expected GROUP-BY here (found 'GROPU-BY')"),
    ("PATTERN A+ a[] WHERE a.x = 1 O a.y = 2 WITHIN 3", "1:30", "expected OR here (found 'O')"),
])  # fmt: skip
def test_misspelt_keywords_where_the_parser_stops_later(query, pos, message):
    with pytest.raises(QuerySyntaxError) as info:
        cetql.compile(query)
    assert (str(info.value.pos), info.value.message) == (pos, message)


def test_a_name_near_no_keyword_keeps_the_list():
    with pytest.raises(QuerySyntaxError) as info:
        cetql.compile("PATTERN A+ a[] zebra 3")
    assert info.value.message.startswith("unexpected name 'zebra'; expected '+', '*' or '?', '[', AGG, APPROX")


@st.composite
def queries_with_keywords(draw):
    """Generated queries, with the clauses the generator leaves out added."""
    aggregation = draw(st.booleans())
    text = draw(queries(aggregation))
    if " AND " in text and draw(st.booleans()):
        text = text.replace(" AND ", " OR ", 1)
    if aggregation and draw(st.booleans()):
        text = text.replace("SUM(", "AVG(", 1)
    if aggregation and draw(st.booleans()):
        text += "\nGROUP-BY g"
    if draw(st.booleans()):
        text += "\nTRENDS " + draw(st.sampled_from(["ALL", "COMPLETE"] if aggregation else ["COMPLETE", "MAXIMAL"]))
    if aggregation and draw(st.booleans()):
        text += "\nAPPROX"
    return text


def _keyword_tokens(text: str) -> list[tuple[object, str]]:
    """(token, the keyword as written) for each keyword of `text`, trend sets included."""
    parser = lark_parser().parse_interactive(text)
    tokens = list(parser.iter_parse())
    out = [(t, keywords()[t.type]) for t in tokens if t.type in keywords()]
    out += [(t, str(t)) for before, t in zip(tokens, tokens[1:]) if before.type == "TRENDS"]
    return out


@settings(max_examples=budget(300), deadline=None)
@given(queries_with_keywords(), st.data())
def test_every_misspelt_keyword_of_generated_queries(text, data):
    try:
        cetql.compile(text)
    except cetql.QueryError:  # OR beside an equivalence ([g]): not a query
        assume(False)
    token, keyword = data.draw(st.sampled_from(_keyword_tokens(text)))
    word = str(token)
    at = data.draw(st.integers(0, len(word) - 1))
    how = data.draw(st.sampled_from(["drop", "double", "swap"]))
    assume(how != "swap" or at + 1 < len(word))
    typo = {"drop": word[:at] + word[at + 1 :], "double": word[:at] + word[at] + word[at:],
            "swap": word[:at] + word[at + 1 : at + 2] + word[at] + word[at + 2 :]}[how]  # fmt: skip
    assume(typo.upper() != word.upper() and typo.strip("-"))
    with pytest.raises(QuerySyntaxError) as info:
        cetql.compile(text[: token.start_pos] + typo + text[token.end_pos :])
    message = info.value.message
    assert message.startswith(f"expected {keyword} here (found '"), (typo, message)
    found = message.split("(found '", 1)[1][:-2]
    assert found == typo or (keyword == "GROUP-BY" and (typo.startswith(found) or found.startswith(typo))), message
    assert str(info.value.pos) == f"{token.line}:{token.column}" and "\n" not in message
    head, line, caret = info.value.render().splitlines()
    assert head == f"syntax error: {token.line}:{token.column}: {message}"
    assert caret.endswith("^") and line[caret.index("^") :].startswith(found)  # the caret under the word
