"""Every query printed in the seed papers (examples/queries/*.cet) parses,
prints back to an equal AST, compiles, and is classified as its paper says."""

from pathlib import Path

import pytest

import cetql
from cetql.language import ast as A
from cetql.planner.logical.plan import Partition
from cetql.planner.semantics import ir
from cetql.planner.semantics.template import describe

QUERIES = sorted((Path(__file__).resolve().parents[2] / "examples" / "queries").glob("*.cet"))


def load(name: str) -> str:
    return (QUERIES[0].parent / name).read_text()


def test_every_seed_family_is_present():
    names = {q.name.split("_")[0] for q in QUERIES}
    assert {"abi", "cet", "greta", "aseq"} <= names
    assert len(QUERIES) >= 20


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_seed_query_parses_roundtrips_and_compiles(path):
    text = path.read_text()
    assert text.lstrip().startswith("--"), "each file names its source in a comment"
    ast = cetql.parse(text)
    assert cetql.parse(cetql.to_text(ast)) == ast
    compiled = cetql.compile(text)
    assert type(compiled.plan.logical.operators()[0]).__name__ == "Scan"
    assert compiled.explain(as_string=True).startswith(compiled.kind)


def preds(name, params=None):
    c = cetql.compile(load(name), params)
    return {p.text: P(p) for p in c.predicates}, c


class P:
    """A predicate node with its label, for short assertions."""

    def __init__(self, node):
        self.node = node
        self.label = ir.label(node)

    def __getattr__(self, name):
        return getattr(self.node, name)


def test_abi_q1_classification():
    p, c = preds("abi_q1_kiting.cet")
    assert p["c.type = 'not covered'"].label == "vertex/equal/constant"
    edge = p["c[i].src = c[i-1].dest"]
    assert edge.label == "edge/equal/adjacent"
    assert (edge.source, edge.target, edge.comparator) == ("c", "c", "=")
    assert edge.lval == ir.Ref("next", "src") and edge.h == ir.Ref("prev", "dest")
    assert c.trend_set == "COMPLETE"


def test_abi_q2_classification_with_h():
    p, c = preds("abi_q2_stock.cet", {"ratio": 1})
    assert p["[id]"].label == "equivalence/equal/constant"
    assert p["[id]"].keys == (ir.KeyAttr(None, "id"),)
    edge = p["s[i].price > ratio * s[i-1].price"]
    assert edge.label == "edge/range/adjacent"
    assert edge.h_text == "h(x) = ratio * x"
    assert edge.comparator == ">"
    assert edge.monotone == "increasing"
    assert [k.attr for k in c.plan.logical.find(Partition).keys] == ["id"]


def test_abi_q2_h_monotonicity_follows_the_parameter_sign():
    p, _ = preds("abi_q2_stock.cet", {"ratio": -2})
    assert p["s[i].price > ratio * s[i-1].price"].monotone == "decreasing"
    p, _ = preds("abi_q2_stock.cet")  # unbound: unknown
    assert p["s[i].price > ratio * s[i-1].price"].monotone == "unknown"


def test_cet_q1_next_is_oriented_next_against_previous():
    p, _ = preds("cet_q1_kiting.cet")
    edge = p["c.destination = NEXT(c).source"]
    assert edge.label == "edge/equal/adjacent"
    # written prev.destination = next.source; oriented as next.source = h(prev)
    assert edge.lval == ir.Ref("next", "source") and edge.h == ir.Ref("prev", "destination")


def test_cet_q2_cross_predicate_holds_for_every_element():
    p, c = preds("cet_q2_heartbeat.cet")
    assert p["[personID]"].kind == "equivalence"
    assert p["b.rate < NEXT(b).rate"].label == "edge/range/adjacent"
    assert p["b.rate < NEXT(b).rate"].comparator == ">"  # next.rate > prev.rate
    cross = p["a.rate * 2 < b.rate"]
    assert cross.label == "cross/range/across"
    assert cross.positions == ("a", "b")
    assert p["b.type = 'passive'"].label == "vertex/equal/constant"
    t = c.query.template
    assert t.start == {"a"} and t.end == {"b"}
    assert set(t.pairs) == {("a", "b"), ("b", "b")}


def test_cet_q3_and_greta_q1_ranges_flip_to_next_side():
    p, _ = preds("cet_q3_stock.cet")
    assert p["s.price < NEXT(s).price"].comparator == ">"
    p, c = preds("greta_q1_stock.cet")
    assert p["S.price > NEXT(S).price"].comparator == "<"
    assert p["[company, sector]"].keys == (ir.KeyAttr(None, "company"), ir.KeyAttr(None, "sector"))
    assert c.kind == "aggregation" and c.trend_set == "ALL"
    assert c.plan.logical.root.algorithm.choice == "kleene-count"


def test_greta_q3_negation_before_kleene():
    p, c = preds("greta_q3_traffic.cet")
    t = c.query.template
    assert t.names == ("P",)
    (neg,) = t.negatives
    assert neg.case == "before"
    assert neg.template.names == ("A",) and neg.template.position("A").type == "Accident"
    assert neg.previous == frozenset() and neg.following == {"P"} and neg.starts == {"P"} and not neg.pairs
    assert p["[P.vehicle, segment]"].keys == (ir.KeyAttr("P", "vehicle"), ir.KeyAttr(None, "segment"))
    assert [a.name for a in c.query.aggregates] == ["COUNT(*)", "AVG(P.speed)"]


def test_greta_fig5_template_is_the_papers():
    _, c = preds("greta_fig5_nested.cet")
    t = c.query.template
    assert t.start == {"A"} and t.end == {"B"}
    assert {(a, b): set(v) for a, b, v in t.transitions} == {
        ("A", "A"): {"+"},
        ("A", "B"): {"SEQ"},
        ("B", "A"): {"+"},
    }
    # GRETA: P.predTypes(A) = {A, B}, P.predTypes(B) = {A}
    before = {q: sorted(p for p, r, _ in t.transitions if r == q) for q in ("A", "B")}
    assert before == {"A": ["A", "B"], "B": ["A"]}


def test_greta_fig6d_nested_negation():
    _, c = preds("greta_fig6d_negation.cet")
    lines = describe(c.query.template)
    assert "NOT (between: after A, before B):" in lines
    assert "  NOT (between: after C, before D):" in lines
    (outer,) = c.query.template.negatives
    (inner,) = outer.template.negatives
    assert inner.template.names == ("E",)


def test_greta_fig7_negation_after_and_before():
    _, after = preds("greta_fig7b_negation_after.cet")
    _, before = preds("greta_fig7c_negation_before.cet")
    assert after.query.template.negatives[0].case == "after"
    assert before.query.template.negatives[0].case == "before"


def test_star_and_optional_are_sugar():
    _, c = preds("greta_s9_star_optional.cet")
    t = c.query.template
    # SEQ(A*, B?, C): a trend may start at A, B or C; A loops
    assert t.start == {"A", "B", "C"} and t.end == {"C"}
    assert ("A", "A") in t.pairs and ("A", "C") in t.pairs


def test_aseq_queries_are_fixed_length_and_use_aseq():
    for name in ("aseq_ecommerce.cet", "aseq_fig4_prefix.cet", "aseq_fig7_negation.cet"):
        _, c = preds(name)
        assert c.kind == "aggregation", name
        assert c.plan.logical.root.algorithm.choice == "aseq", name
    # a predicate between two events needs each event's value: GRETA, not prefix counters
    _, c = preds("aseq_security.cet")
    assert c.plan.logical.root.algorithm.choice == "greta" and "predicates between events" in c.plan.logical.root.algorithm.reason
    p, c = preds("aseq_ecommerce.cet")
    # Kindle.userId = KindleCase.userId = Stylus.userId links every variable
    assert {x.kind for x in p.values()} == {"equivalence"}
    p, _ = preds("aseq_security.cet")
    assert p["TypePassword.value != TypeUsername.Password"].label == "edge/other/adjacent"


def test_aseq_notation_equals_plain_notation():
    plain = "PATTERN SEQ(Kindle, KindleCase, Stylus) WHERE Kindle.userId = KindleCase.userId = Stylus.userId AGG COUNT(*) WITHIN 1 hour"
    assert cetql.parse(load("aseq_ecommerce.cet")) == cetql.parse(plain)


def test_surface_variants_normalise():
    assert cetql.parse("PATTERN Stock S+ WITHIN 1") == cetql.parse("PATTERN Stock+ S[] WITHIN 1")
    assert cetql.parse("PATTERN SEQ(A, !B, C) WITHIN 1") == cetql.parse("pattern seq(A, not B, C) within 1")
    assert cetql.parse("RETURN x, COUNT(*) PATTERN A+ GROUP BY x WITHIN 1 minute") == cetql.parse(
        "RETURN x, COUNT(*) PATTERN A+ GROUP-BY x WITHIN 60 s".replace("60 s", "1 min")
    )
    assert cetql.parse("PATTERN A+ a[] WHERE a[i].x == a[i-1].y WITHIN 1") == cetql.parse(
        "PATTERN A+ a[] WHERE a[i].x = a[i-1].y WITHIN 1"
    )


def test_keywords_may_name_attributes_and_some_variables():
    # Attributes may take any keyword's name; variables any but the clause
    # keywords (WHERE, AGG, WITHIN, …), which could follow a pattern directly.
    q = cetql.parse(
        "PATTERN SEQ(Event group, Event+ count[]) WHERE group.count > count.within AND count[i].type >= count[i-1].min "
        "AND count.x > group.y GROUP-BY group.pattern WITHIN 3"
    )
    assert cetql.parse(cetql.to_text(q)) == q
    where = q.where.items
    assert where[0] == A.Compare((">",), (A.Attr("group", "count"), A.Attr("count", "within")))
    assert where[2] == A.Compare((">",), (A.Attr("count", "x"), A.Attr("group", "y")))
    assert q.group_by == (A.Attr("group", "pattern"),)


def test_variables_are_adjacent_only_if_nothing_can_come_between():
    c = cetql.compile("PATTERN SEQ(A a, B? b, C c) WHERE a.k = c.k AND a.x < b.x WITHIN 10")
    p = {x.text: ir.label(x) for x in c.predicates}
    assert p["a.k = c.k"] == "cross/equal/across"  # b may stand between them
    assert p["a.x < b.x"] == "edge/range/adjacent"
    with pytest.raises(cetql.QuerySemanticError, match="relates variables that are not adjacent"):
        cetql.compile("RETURN COUNT(*) PATTERN SEQ(A a, B? b, C c) WHERE a.k = c.k WITHIN 10")  # refused at compile time
