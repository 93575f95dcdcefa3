"""The semantic stage and the logical plan, without Spark: position rules,
classification into typed nodes, the rules' decisions and refusals, and
what --explain prints being the plan object's own facts."""

import json

import pytest

from cetql.base.errors import QuerySemanticError, UsageError
from cetql.base.options import RunOptions
from cetql.language.parser import parse
from cetql.planner.explain import explain_data
from cetql.planner.logical.build import build
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.semantics import ir
from cetql.planner.semantics.bind import bind


def plan_of(text, params=None, inputs=None, resources=None, **options):
    q = bind(parse(text), params or {}, strict_params=False)
    return build(q, RunOptions.of(**options), inputs, resources)


def preds(text, params=None):
    return {p.text: p for p in bind(parse(text), params or {}, strict_params=False).predicates}


# ---------------------------------------------------------------- positions (SEMANTICS.md, Predicates)


@pytest.mark.parametrize(
    "written,later_is",
    [
        ("s[i-1].x < s.x", "bare"),  # bare c beside c[i-1] is c[i]: the later event
        ("s[i-1].x < s[i].x", "i"),
        ("s.x < NEXT(s).x", "next"),
        ("s[i].x < s[i+1].x", "i+1"),
        ("s.x < s[i+1].x", "i+1"),  # bare beside c[i+1] is c[i]: the earlier event
    ],
)
def test_position_rules_orient_prev_and_next(written, later_is):
    (p,) = preds(f"PATTERN S+ s[] WHERE {written} WITHIN 5").values()
    assert isinstance(p, ir.EdgePredicate) and p.op == ir.Op.RANGE
    # every form says: earlier.x < later.x, i.e. next.x > h(prev) with h(x) = x
    assert p.comparator == ">"
    assert p.lval == ir.Ref("next", "x") and p.h == ir.Ref("prev", "x")


def test_three_positions_in_one_predicate_is_an_error():
    with pytest.raises(QuerySemanticError, match="three positions"):
        preds("PATTERN S+ s[] WHERE s[i-1].x + s[i+1].x > s[i].x WITHIN 5")
    with pytest.raises(QuerySemanticError, match="three positions"):
        preds("PATTERN S+ s[] WHERE s[i-1].x < NEXT(s).x WITHIN 5")


def test_one_side_of_a_step_is_an_other_edge():
    (p,) = preds("PATTERN S+ s[] WHERE s[i-1].x = 1 WITHIN 5").values()
    assert isinstance(p, ir.EdgePredicate) and p.op == ir.Op.OTHER
    assert ir.slots(p.expr) == {"prev"}


def test_parameters_are_resolved_to_constants():
    (p,) = preds("PATTERN S+ s[] WHERE s[i].price > ratio * s[i-1].price WITHIN 5", {"ratio": 2}).values()
    assert p.h == ir.Arith("*", ir.Const(2), ir.Ref("prev", "price"))
    assert p.h_text == "h(x) = ratio * x" and p.monotone == "increasing"


def test_equality_over_every_variable_is_equivalence_even_with_a_kleene_part():
    ps = preds("PATTERN SEQ(A a, B+ b[]) WHERE a.g = b.g WITHIN 5")
    (p,) = ps.values()
    assert isinstance(p, ir.EquivalencePredicate) and p.text == "a.g = b.g" and p.keys == (ir.KeyAttr(None, "g"),)
    plan = plan_of("RETURN COUNT(*) PATTERN SEQ(A a, B+ b[]) WHERE a.g = b.g WITHIN 5")
    assert [s.attr for s in plan.operators()[3].subkeys] == ["g"]
    detect = plan_of("PATTERN SEQ(A a, B+ b[]) WHERE a.g = b.g WITHIN 5")
    assert [k.attr for k in detect.operators()[3].keys] == ["g"]  # the output carries g, as [g] does


def test_equality_is_not_equivalence_beside_a_negation():
    ps = preds("PATTERN SEQ(A a, NOT C c, B b) WHERE a.g = b.g WITHIN 5")
    assert not any(isinstance(p, ir.EquivalencePredicate) for p in ps.values())


# ---------------------------------------------------------------- the rules


def test_greta_q3_partitions_by_segment_and_splits_by_vehicle():
    plan = plan_of(
        "RETURN segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT Accident A, Position P+) "
        "WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment WITHIN 5 minutes SLIDE 1 minute"
    )
    part = plan.operators()[3]
    assert [k.attr for k in part.keys] == ["segment"] and not part.subkeys
    # P's events are consecutive in a trend: [P.vehicle] is an equal predicate on the step P → P
    ((key),) = part.variable_keys
    assert (key.position, key.attr, key.method.choice) == ("P", "vehicle", "edge")
    (step,) = [t for t in plan.root.transitions if (t.source, t.target) == ("P", "P")]
    assert step.index.choice == "hash" and any(p.text == "P[i].vehicle = P[i-1].vehicle" for p in step.predicates)
    data = explain_data(_compiled(plan))
    (p,) = [o for o in data["plan"] if o["op"] == "Partition"]
    assert p["keys"] == ["segment"] and p["variable_keys"][0]["key"] == "P.vehicle"


def test_aggregation_algorithms():
    assert plan_of("PATTERN SEQ(A, B, !C, D) AGG COUNT WITHIN 10").root.algorithm.choice == "aseq"
    assert plan_of("RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 10").root.algorithm.choice == "kleene-count"
    assert plan_of("RETURN SUM(A.x) PATTERN A+ WITHIN 10").root.algorithm.choice == "greta"
    t = plan_of("RETURN COUNT(*) PATTERN SEQ(A+, B) TRENDS COMPLETE WITHIN 10", inputs=Inputs(typed=True))
    assert t.root.complete.choice == "per-state"
    u = plan_of("RETURN COUNT(*) PATTERN SEQ(A a, A+ b[]) TRENDS COMPLETE WITHIN 10")
    assert u.root.complete.choice == "determinized"


def test_index_per_transition():
    plan = plan_of("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst AND c[i].x > c[i-1].x WITHIN 10")
    (tp,) = plan.root.transitions
    assert tp.index.choice == "hash"
    plan = plan_of("RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 10", kernel="scan")
    assert plan.root.transitions[0].index.choice == "scan"
    plan = plan_of("RETURN COUNT(*) PATTERN SEQ(A+, NOT C, B) WHERE A.x < NEXT(A).x WITHIN 10")
    by = {(t.source, t.target): t.index.choice for t in plan.root.transitions}
    assert by == {("A", "A"): "range", ("A", "B"): "scan"}


@pytest.mark.parametrize(
    "text,options,message",
    [
        ("RETURN COUNT(*) PATTERN A+ WITHIN 5", {"strategy": "local"}, "strategy chooses how detection"),
        ("RETURN COUNT(*) PATTERN A+ WITHIN 5", {"trends": "maximal"}, "not MAXIMAL"),
        ("RETURN COUNT(*) PATTERN A+ WITHIN 5", {"with_rows": True}, "with_rows=True"),
        ("PATTERN A+ WITHIN 5", {"kernel": "scan"}, "kernel chooses"),
        ("PATTERN A+ WITHIN 5", {"approx": True}, "approx=True"),
        ("PATTERN A+ WITHIN 5", {"exact": "string"}, "exact applies"),
        ("RETURN COUNT(*) PATTERN A+ WITHIN 5", {"memory_budget": "1g"}, "memory_budget bounds what a detection"),
        ("PATTERN A+ WITHIN 5", {"memory_budget": "1g", "strategy": "distributed"}, 'use strategy="local"'),
        ("PATTERN A+ WITHIN 5", {"memory_budget": "lots"}, "a size such as 512m"),
        ("PATTERN A+ WITHIN 5", {"memory_budget": 0}, "must be positive"),
    ],
)
def test_usage_refusals_need_no_data(text, options, message):
    with pytest.raises(UsageError, match=message):
        plan_of(text, **options)


@pytest.mark.parametrize(
    "text,message",
    [
        ("RETURN COUNT(*) PATTERN SEQ(A+ x[], A+ y[]) WITHIN 5", "match one sequence of events in two ways"),
        ("RETURN COUNT(*) PATTERN SEQ(A x, A? y, A+ z[]) WITHIN 5", "two ways"),
        ("RETURN COUNT(*) PATTERN SEQ(Activity a, Activity+ b[]) WHERE a.x * 2 < b.x WITHIN 5", "not adjacent"),
        ("PATTERN SEQ(A a, NOT C c, B b) WHERE a.x = c.x WITHIN 5", "negated event"),
        ("PATTERN S+ s[] WHERE [length] WITHIN 5", "output already has a column 'length'"),
    ],
)
def test_semantic_refusals(text, message):
    with pytest.raises(QuerySemanticError, match=message):
        plan_of(text)


def test_unambiguous_repeated_types_aggregate():
    # a single first event, then a Kleene part: one run per sequence
    plan_of("RETURN COUNT(*) PATTERN SEQ(A a, A+ b[]) WITHIN 5")
    plan_of("RETURN COUNT(*) PATTERN SEQ(A a1, A a2, A+ a3[]) WITHIN 5")
    plan_of("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WITHIN 5")
    # on typed inputs, different types are different letters
    plan_of("RETURN COUNT(*) PATTERN SEQ(A+ x[], B+ y[]) WITHIN 5", inputs=Inputs(typed=True))
    with pytest.raises(QuerySemanticError, match="two ways"):  # one single-type stream: A and B are one letter
        plan_of("RETURN COUNT(*) PATTERN SEQ(A+ x[], B+ y[]) WITHIN 5", inputs=Inputs(typed=False))


@pytest.mark.parametrize(
    "options,resources,budget,source",
    [
        ({}, None, 512 << 20, "Spark's default executor memory"),
        ({}, Resources(executor_memory="6g"), 3 << 30, "half the executor memory (6g), per task"),
        ({}, Resources(executor_memory="6g", task_slots=3), 1 << 30, "half the executor memory (6g) over its 3 task"),
        ({}, Resources(executor_memory="4096"), 2 << 30, "(4096)"),  # Spark reads a bare number as MiB
        ({"memory_budget": "64m"}, Resources(executor_memory="6g"), 64 << 20, "--memory-budget"),
        ({"memory_budget": 1}, None, 1, "--memory-budget"),
    ],
)
def test_memory_budget_is_planned_and_explained(options, resources, budget, source):
    """The budget comes from --memory-budget, else half the session's
    executor memory, else half of Spark's default; half of it bounds the
    stored edges (at the planned bytes an edge), the other half the batch."""
    from cetql.base.options import BATCH_EVENT_BYTES, EDGE_BYTES

    plan = plan_of("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100", resources=resources, **options)
    d = plan.root
    assert d.memory.choice == budget and source in d.memory.reason
    assert d.max_edges == budget // 2 // EDGE_BYTES
    assert d.batch_events == max(1, min(1_000_000, budget // 2 // BATCH_EVENT_BYTES))
    (op,) = [o for o in explain_data(_compiled(plan))["plan"] if o["op"] == "Detect"]
    assert op["max_edges"] == d.max_edges and op["memory"]["choice"] == budget
    # MAXIMAL keeps a set of successors per node beside the edges; --with-rows copies each event's row
    maximal = plan_of("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100", resources=resources, trends="maximal",
                      with_rows=True, **options).root  # fmt: skip
    assert maximal.max_edges == budget // 2 // (2 * EDGE_BYTES)
    assert maximal.batch_events == max(1, min(1_000_000, budget // 2 // (4 * BATCH_EVENT_BYTES)))


def test_explain_json_has_numbers_as_numbers():
    plan = plan_of("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 1.5 hours SLIDE 30 minutes")
    data = explain_data(_compiled(plan))
    (w,) = [o for o in data["plan"] if o["op"] == "Windows"]
    assert w["length"] == 5400 and w["slide"] == 1800
    json.dumps(data)


def _compiled(plan):
    from types import SimpleNamespace

    from cetql.planner.physical.build import physical

    return SimpleNamespace(ast=plan.query.ast, plan=physical(plan))
