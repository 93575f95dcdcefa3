"""Equivalence of one variable's events (`[b.k]`, `[a.g, b.x]`) and equality
chains through optional and negated variables (SEMANTICS.md, Predicates),
through the real compiler and the kernels, against the brute-force
reference — the worked examples of the issue, then generated queries, where
`COUNT(*) … TRENDS COMPLETE` must also equal the rows detection returns.
"""

import pytest
from budget import budget
from harness import plan_for, run_local
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates, reference_trends

import cetql
from cetql.base.errors import QueryError
from cetql.planner.logical.plan import KeyMethod, Partition

SETTINGS = settings(max_examples=budget(250), deadline=None, suppress_health_check=list(HealthCheck))


def _trends(text, events, typed=True, **options):
    _, _, out = run_local(text, events, typed=typed, max_trends=0, **options)
    got = {}
    for r in out:
        got.setdefault(_window(r), set()).add(tuple(r["events"]))
    assert len(out) == sum(map(len, got.values())), "a trend returned twice"
    return got


def _aggregates(text, events, typed=True):
    _, _, out = run_local(text, events, typed=typed)
    return {_window(r): {k: v for k, v in r.items() if not k.startswith("__")} for r in out}


def _window(row):
    return row[next(k for k in row if k.endswith("wk"))]


def _wanted(text, events, typed=True, trend_set=None):
    q = cetql.parse(text)
    slide = (q.slide or q.within).amount
    return {start // slide: set(t) for (start, _), t in reference_trends(text, events, trend_set=trend_set,
                                                                         typed=typed).items() if t}  # fmt: skip


def ev(i, t, ts, **attrs):
    return {"id": i, "__type": t, "ts": ts, "x": None, "g": None, "k": None, "h": None, **attrs}


B_K = [ev(1, "A", 1, k=1), ev(2, "B", 2, k=1), ev(3, "B", 3, k=2), ev(4, "B", 4, k=1)]


def test_b_k_gives_exactly_its_complete_trends():
    text = "PATTERN SEQ(A a, B+ b[]) WHERE [b.k] WITHIN 100"
    assert _trends(text, B_K) == {0: {(1, 2, 4), (1, 3), (1, 4)}} == _wanted(text, B_K)
    count = _aggregates("RETURN COUNT(*) PATTERN SEQ(A a, B+ b[]) WHERE [b.k] TRENDS COMPLETE WITHIN 100", B_K)
    assert count == {0: {"COUNT(*)": 3}}


def test_a_key_per_variable_counts_its_trend():
    one = [ev(1, "A", 1, x=2, g="p"), ev(2, "B", 2, x=3, g="p")]
    got = _aggregates("RETURN MAX(b.x), COUNT(*) PATTERN SEQ(A a, B b) WHERE [a.g, b.x] WITHIN 9 SLIDE 5", one)
    assert got == {-1: {"MAX(b.x)": 3.0, "COUNT(*)": 1}, 0: {"MAX(b.x)": 3.0, "COUNT(*)": 1}}  # both windows hold it
    # a's events share h, b's share x: one A of two (h 1, 2) times one B of two (x 5, 6) — 4 trends
    two = [ev(1, "A", 1, h=1), ev(2, "A", 2, h=2), ev(3, "B", 3, x=5), ev(4, "B", 4, x=6)]
    text = "RETURN COUNT(*) PATTERN SEQ(A+ a[], B+ b[]) WHERE [a.h, b.x] WITHIN 9"
    assert _aggregates(text, two) == {0: {"COUNT(*)": 4}}
    assert reference_aggregates(text, two, typed=True)[(0, ())]["COUNT(*)"] == 4


def test_a_chain_through_an_absent_optional_variable_is_an_equivalence():
    events = [ev(0, "A", 0, g="q"), ev(2, "C", 2, g="p")]
    text = "PATTERN SEQ(A* a[], B? b, C c) WHERE a.g = b.g AND b.g = c.g WITHIN 10"
    got = _trends(text, events)
    assert (0, 2) not in got.get(0, set())
    assert got == _wanted(text, events)


def test_how_each_key_is_enforced():
    methods = {
        "PATTERN SEQ(A a, B+ b[]) WHERE [a.k] WITHIN 5": KeyMethod.FILTER,
        "PATTERN SEQ(A a, B+ b[]) WHERE [b.k] WITHIN 5": KeyMethod.EDGE,
        "PATTERN (SEQ(A+ a[], B b))+ WHERE [b.k] WITHIN 5": KeyMethod.PARTS,
    }
    for text, method in methods.items():
        logical, physical = plan_for(text, typed=True, types=["A", "B"])
        (key,) = logical.find(Partition).variable_keys
        assert key.method.choice == method, text
        assert bool(physical.partition.state_keys) == (method == KeyMethod.PARTS)
    with pytest.raises(QueryError, match="some trends bind no event"):
        plan_for("PATTERN (SEQ(A+ a[], B? b))+ WHERE [b.k] WITHIN 5", typed=True, types=["A", "B"])


def test_a_chain_over_a_negated_variable_is_an_equivalence():
    q = "PATTERN SEQ(A a, !C c, B b) WHERE a.g = b.g AND b.g = c.g WITHIN 10"
    logical, _ = plan_for(q, typed=True, types=["A", "B", "C"])
    assert [k.attr for k in logical.find(Partition).keys] == ["g"]
    events = [ev(0, "A", 0, g="p"), ev(1, "C", 1, g="q"), ev(2, "B", 2, g="p"), ev(3, "C", 3, g="p"), ev(4, "B", 4, g="p")]
    assert _trends(q, events) == _wanted(q, events) == {0: {(0, 2)}}


# ---------------------------------------------------------------- generated


def stream(max_size=7):
    return st.lists(st.fixed_dictionaries({
        "ts": st.integers(0, 8), "__type": st.sampled_from("ABC"), "x": st.none() | st.integers(0, 2),
        "g": st.none() | st.sampled_from("gh"), "k": st.sampled_from("uv"), "h": st.none() | st.integers(0, 1),
    }), max_size=max_size).map(lambda evs: [dict(e, id=i) for i, e in enumerate(sorted(evs, key=lambda e: e["ts"]))])  # fmt: skip


PATTERNS = [
    ("SEQ(A a, B+ b[])", ["a", "b"]),
    ("SEQ(A+ a[], B+ b[])", ["a", "b"]),
    ("SEQ(A* a[], B? b, C c)", ["a", "b", "c"]),
    ("SEQ(A a, !C n, B+ b[])", ["a", "b", "n"]),
    ("(SEQ(A+ a[], B b))+", ["a", "b"]),
    ("SEQ(A a, (SEQ(B b, C+ c[]))+)", ["a", "b", "c"]),
    ("A+ a[]", ["a"]),
]


@st.composite
def keyed_queries(draw, aggregation: bool):
    pattern, variables = draw(st.sampled_from(PATTERNS))
    positive = [v for v in variables if v != "n"]
    conjuncts = []
    keyed = draw(st.lists(st.sampled_from(positive), unique=True, max_size=2))
    if keyed:
        conjuncts.append("[" + ", ".join(f"{v}.{draw(st.sampled_from(['k', 'g', 'h']))}" for v in keyed) + "]")
    if draw(st.booleans()):  # an equality chain over every variable (or over some: then it is a predicate)
        chain = variables if draw(st.booleans()) else variables[:-1]
        if len(chain) >= 2:
            conjuncts += [f"{a}.g = {b}.g" for a, b in zip(chain, chain[1:])]
    if draw(st.booleans()):
        conjuncts.append("a.x >= 1" if draw(st.booleans()) else "b.k = 'u'" if "b" in positive else "a.k = 'u'")
    assume(conjuncts)
    text = f"PATTERN {pattern} WHERE {' AND '.join(conjuncts)} WITHIN {draw(st.sampled_from(['9', '6 SLIDE 3']))}"
    if aggregation:
        text = "RETURN COUNT(*) " + text + " TRENDS " + draw(st.sampled_from(["ALL", "COMPLETE"]))
    return text


def _plan_or_skip(text):
    try:
        plan_for(text, typed=True, types=["A", "B", "C"])
    except QueryError:
        assume(False)


@SETTINGS
@given(st.data(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]))
def test_keyed_detection_equals_reference(data, trend_set):
    text = data.draw(keyed_queries(False))
    _plan_or_skip(text)
    events = data.draw(stream())
    assert _trends(text, events, trends=trend_set) == _wanted(text, events, trend_set=trend_set), text


@SETTINGS
@given(st.data())
def test_keyed_aggregation_equals_reference_and_complete_counts_detection(data):
    text = data.draw(keyed_queries(True))
    _plan_or_skip(text)
    events = data.draw(stream())
    got = {k: v["COUNT(*)"] for k, v in _aggregates(text, events).items() if v["COUNT(*)"]}
    q = cetql.parse(text)
    slide = (q.slide or q.within).amount
    want = {start // slide: r["COUNT(*)"] for (start, _), r in reference_aggregates(text, events, typed=True).items()
            if r["COUNT(*)"]}  # fmt: skip
    assert got == want, text
    if text.endswith("COMPLETE"):
        detection = text.replace("RETURN COUNT(*) ", "").replace(" TRENDS COMPLETE", "")
        rows = {k: len(v) for k, v in _trends(detection, events).items()}
        assert got == rows, text
