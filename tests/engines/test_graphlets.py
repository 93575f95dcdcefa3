"""GRETA's propagation shared by several aggregation queries (Hamlet's
shared graphlets, in GRETA's form): generated workloads of 2-6 queries
with a Kleene part `B+ b[]` under heads of their own (none, an A with or
without a vertex predicate, a C), now and then a tail, one edge predicate
most share and some do not, several aggregates, an equivalence sub-key
now and then, sliding and tumbling windows, ties in time — give, query by
query, the rows each gives alone and the brute-force reference's values;
and the plan shares one propagation where two queries walk the same edge."""

from __future__ import annotations

import tempfile
from pathlib import Path

from budget import budget
from checks import same_value
from engines import write_inputs
from generators import WINDOWS, stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates
from test_workloads import check
from workloads import compiled, shared_and_alone_embedded

from cetql.base.options import Algorithm, Engine

SETTINGS = settings(max_examples=budget(25), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip

HEADS = ["", "A a", "A a", "C a"]
HEAD_PREDICATES = ["", "a.k = 'u'", "a.x > 1"]
EDGES = ["b[i].x >= b[i-1].x", "b[i].x > b[i-1].x", "b[i].k = b[i-1].k", ""]
AGGREGATES = ["SUM(b.x)", "MIN(b.x)", "MAX(b.x)", "AVG(b.x)", "COUNT(b)", "COUNT(*)"]


def kleene(head: str, head_pred: str, edge: str, tail: bool, aggregate: str, keyed: bool, window) -> str:
    items = [x for x in (head, "B+ b[]", "C c" if tail else "") if x]
    where = [x for x in (head_pred if head else "", edge, "[g]" if keyed else "") if x]
    aggregates = "COUNT(*)" if aggregate == "COUNT(*)" else f"COUNT(*), {aggregate}"
    text = f"RETURN {aggregates} PATTERN SEQ({', '.join(items)})" if len(items) > 1 else \
        f"RETURN {aggregates} PATTERN B+ b[]"  # fmt: skip
    text += f"\nWHERE {' AND '.join(where)}" if where else ""
    return f"{text}\nWITHIN {window[0]} SLIDE {window[1]}"


@st.composite
def graph_workloads(draw):
    """({name: query}, {name: (its edge predicate, whether keyed)})."""
    edge, keyed, window = draw(st.sampled_from(EDGES)), draw(st.booleans()), draw(st.sampled_from(WINDOWS))
    texts, shapes = {}, {}
    for i in range(draw(st.integers(2, 6))):
        own_edge = edge if draw(st.integers(0, 4)) else draw(st.sampled_from(EDGES))
        own_keyed = keyed if draw(st.integers(0, 5)) else not keyed
        head, pred = draw(st.sampled_from(HEADS)), draw(st.sampled_from(HEAD_PREDICATES))
        tail, aggregate = draw(st.integers(0, 4)) == 0, draw(st.sampled_from(AGGREGATES))
        texts[f"q{i}"] = kleene(head, pred, own_edge, tail, aggregate, own_keyed, window)
        shapes[f"q{i}"] = (own_edge, own_keyed)
    return texts, shapes




def graphs(cw):
    return [g for grp in cw.plan.groups for ex in grp.exchanges for g in ex.graphs]


def unshared_alike(cw, shapes: dict) -> list[str]:
    """Names of GRETA queries of one exchange that walk the same B → B edge
    alike and are in no shared propagation (none, when the planner shares
    them; a COUNT(*) of `B+` alone counts by its own numbers, KLEENE_COUNT)."""
    out = []
    for grp in cw.plan.groups:
        for ex in grp.exchanges:
            names = [cw.plan.queries[m.query].name for m in ex.members if m.spec.algorithm == Algorithm.GRETA]
            shared = {cw.plan.queries[ex.members[gm.member].query].name for g in ex.graphs for gm in g.members}
            seen = [shapes[n] for n in names]
            out += [n for n in names if seen.count(shapes[n]) > 1 and n not in shared]
    return out


def by_window(text: str, got_rows: list[dict], events: list[dict]) -> tuple[dict, dict]:
    """(the query's values, the reference's) by (window start, key), windows with trends."""
    got = {(r["window_start"], r.get("g")): r for r in got_rows if int(r["COUNT(*)"]) != 0}
    want = {(start, key[0] if key else None): v for (start, key), v in reference_aggregates(text, events).items()}
    return got, want


@SETTINGS
@given(graph_workloads(), stream(True, max_size=12, max_time=6).filter(lambda evs: len(evs) >= 3))
def test_shared_propagations_give_each_query_its_rows_alone_and_the_reference(workload, events):
    texts, shapes = workload
    assume({e["__type"] for e in events} >= {"A", "B", "C"})  # every query has an input of each of its types
    with tempfile.TemporaryDirectory() as tmp:
        cw, shared, apart = shared_and_alone_embedded(texts, events, Path(tmp))
    assert cw.plan.engine.engine == Engine.EMBEDDED
    # two queries of one kernel input walking the same edge share one propagation
    assert not unshared_alike(cw, shapes), cw.explain(as_string=True)
    check(cw, shared, apart)
    for name, text in texts.items():
        got, want = by_window(text, shared[name][0], events)
        assert got.keys() == want.keys(), (name, text)
        for k, row in want.items():
            for n, v in row.items():
                g = float(got[k][n]) if isinstance(got[k][n], str) else got[k][n]  # `rows` gives a double's text
                assert same_value(g, v), (name, text, k, n, got[k][n], v)


def test_one_pattern_under_several_aggregates_is_one_propagation(tmp_path):
    """Three queries of one pattern, each its own aggregates, and a fourth
    whose head and edge differ: one graph of the three, every state and edge
    shared, the fourth alone — each query's rows as alone."""
    events = [{"ts": t // 2, "__type": "AB"[t % 3 % 2], "x": t * 7 % 5, "g": "gh"[t % 2], "k": "uv"[t % 3 % 2], "id": t}
              for t in range(40)]  # fmt: skip
    base = "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x >= b[i-1].x AND [g] WITHIN 6 SLIDE 3"
    texts = {"count": f"RETURN COUNT(*) {base}", "sum": f"RETURN SUM(b.x) {base}", "max": f"RETURN MAX(b.x) {base}",
             "other": base.replace(">=", "<").replace("WHERE", "WHERE a.k = 'v' AND").replace("PATTERN", "RETURN COUNT(*) PATTERN")}  # fmt: skip
    cw, shared, apart = shared_and_alone_embedded(texts, events, tmp_path)
    (g,) = graphs(cw)
    assert len(g.members) == 3 and len(g.template.states) == 2 and len(g.template.transitions) == 2
    text = cw.explain(as_string=True)
    assert "2 state(s) and 2 edge(s) for 3 queries (6 and 6 apart)" in text, text
    assert "other propagates alone: no edge (predecessor index) in common" in text, text
    check(cw, shared, apart)


def test_a_transition_carries_only_its_queries_values(tmp_path):
    """Rising and falling runs after an A: one A state, one B state, the
    edge A → B shared, and two B → B edges, one each.  Were a query's
    values carried along the other's edge, both would count every run
    (7): each count is checked by hand, against the reference and against
    its run alone."""
    at = [(0, "A", 0), (1, "B", 1), (2, "B", 2), (4, "B", 0)]
    events = [{"ts": t, "__type": k, "x": x, "g": "g", "k": "u", "id": i} for i, (t, k, x) in enumerate(at)]
    texts = {"up": "RETURN COUNT(*) PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x WITHIN 10",
             "down": "RETURN COUNT(*) PATTERN SEQ(A a, B+ b[]) WHERE b[i].x < b[i-1].x WITHIN 10"}  # fmt: skip
    cw, shared, apart = shared_and_alone_embedded(texts, events, tmp_path)
    (g,) = graphs(cw)
    assert len(g.template.states) == 2 and len(g.template.transitions) == 3
    check(cw, shared, apart)
    for name, t in texts.items():
        got, want = by_window(t, shared[name][0], events)
        assert {k: int(r["COUNT(*)"]) for k, r in got.items()} == {k: v["COUNT(*)"] for k, v in want.items()}
    # by hand: A0 then B1, B2, B4 alone (3), and up: B1 B2 (4); down: B1 B4, B2 B4 (5)
    assert [int(shared[q][0][0]["COUNT(*)"]) for q in ("up", "down")] == [4, 5]


def test_no_sharing_propagates_each_query_alone(tmp_path):
    events = [{"ts": t, "__type": "AB"[t % 2], "x": t % 3, "g": "g", "k": "u", "id": t} for t in range(10)]
    texts = {"s": "RETURN SUM(b.x) PATTERN SEQ(A a, B+ b[]) WITHIN 10",
             "m": "RETURN MAX(b.x) PATTERN SEQ(A a, B+ b[]) WITHIN 10"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    assert graphs(compiled(texts, data, by_type, id_col="id"))
    cw = compiled(texts, data, by_type, sharing="none", id_col="id")
    assert not cw.plan.groups and "shared propagation" not in cw.explain(as_string=True)
