"""Per-variable equivalence keys in the kernels (`spec.StateKey`, issue 18):
`[b.k]` constrains only the events bound to b — they all share k — and
`[a.g, b.x]` a's events on g and b's on x (SEMANTICS.md, Predicates).

The kernels split a group into one part per combination of the keyed
states' key values (`kernels.parts`).  The plan does so where a variable's
events lie apart in a trend (`KeyMethod.PARTS`); here every variable key is
also split into parts (`state_keys`), which must change no result where
the plan enforces the key otherwise (a filter, an edge predicate).
Generated queries key variables every trend has an event of (`[v.k]`,
several variables, nested Kleene), over keys with nulls, and are compared
with the reference.
"""

import math

import pytest
from budget import budget
from checks import aggregates, check_aggregates, compile_or_skip, detected, wanted
from generators import SLIDING, WINDOWS, queries, stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.base.errors import QuerySemanticError
from cetql.kernels import spec as K
from cetql.kernels.errors import SharedKeyedEvent
from cetql.kernels.parts import parts
from cetql.planner.logical.plan import Partition
from cetql.planner.physical.kernel import kernel_spec

SOME = settings(max_examples=budget(300), deadline=None, suppress_health_check=list(HealthCheck))


def state_keys(plan, phys) -> dict:
    """Every variable key of the plan as a state key of the kernel spec (an
    attribute column as it is read, where the plan has no column for it)."""
    own = kernel_spec(phys).state_keys
    done = {(k.state, k.attr) for k in phys.partition.state_keys}
    more = tuple(K.StateKey(vk.position, vk.attr) for vk in plan.find(Partition).variable_keys
                 if (vk.position, vk.attr) not in done)  # fmt: skip
    return {"state_keys": own + more}


def _events(spec: str, **columns):
    """'a1,b2' → typed events (letter: type, number: time and id), with
    the attribute values given per event."""
    out = []
    for i, x in enumerate(spec.split(",")):
        t = int(x[1:])
        out.append({"id": t, "ts": t, "__type": x[0].upper(), **{k: v[i] for k, v in columns.items()}})
    return out


def test_a_key_of_one_variable_splits_only_its_events():
    """The issue's example: b's events share k, a's do not matter."""
    text = "PATTERN SEQ(A a, B+ b[]) WHERE [b.k] WITHIN 100"
    events = _events("a1,b2,b3,b4", k=[1, 1, 2, 1])
    got = detected(text, events, True, "COMPLETE", spec_changes=state_keys)
    assert got == {0: {(1, 2, 4), (1, 3), (1, 4)}} == wanted(text, events, True, "COMPLETE")
    (row,) = aggregates("RETURN COUNT(*) " + text + " TRENDS COMPLETE", events, True).values()
    assert row["COUNT(*)"] == 3


def test_keys_of_two_variables_on_two_attributes():
    text = "RETURN MAX(b.x), COUNT(*) PATTERN SEQ(A a, B b) WHERE [a.g, b.x] WITHIN 9 SLIDE 5"
    events = _events("a1,b2", x=[2, 3], g=["p", "p"])
    rows = aggregates(text, events, True)
    assert {k: (r["MAX(b.x)"], r["COUNT(*)"]) for k, r in rows.items()} == {-1: (3.0, 1), 0: (3.0, 1)}
    check_aggregates(text, events, True)


@pytest.mark.parametrize("trends", ["ALL", "COMPLETE"])
def test_two_keyed_kleene_variables(trends):
    text = f"RETURN COUNT(*), COUNT(b) PATTERN SEQ(A+ a[], B+ b[]) WHERE [a.h, b.x] WITHIN 20 TRENDS {trends}"
    events = _events("a1,a2,a3,b4,b5,b6", h=["p", "q", "p", None, None, None], x=[None, None, None, 1, 2, 1])
    check_aggregates(text, events, True)
    detect = text.split(" PATTERN ")[1].replace(f" TRENDS {trends}", "")
    got = detected("PATTERN " + detect, events, True, trends, spec_changes=state_keys)
    assert got == wanted("PATTERN " + detect, events, True, trends)


def test_a_key_on_a_nested_kleene_variable():
    text = "PATTERN (SEQ(A+ a[], B b))+ WHERE [b.k] WITHIN 20"
    events = _events("a1,b2,a3,b4,a5,b6", k=["u", "u", "v", "v", "u", "u"])
    for trends in ("ALL", "COMPLETE", "MAXIMAL"):
        got = detected(text, events, True, trends, spec_changes=state_keys)
        assert got == wanted(text, events, True, trends), trends
    assert (1, 2, 5, 6) in detected(text, events, True, "COMPLETE", spec_changes=state_keys)[0]


def test_parts_take_the_keyed_states_values_and_share_the_others():
    """Events of an unkeyed state are in every part; a keyed state's events
    with a null key in none; NaN is one key and -0.0 is 0.0."""
    template = K.TemplateSpec(states=(K.State("a", "ma"), K.State("b", "mb", True)), start=frozenset("a"),
                              end=frozenset("b"), transitions=(K.Transition("a", "b"), K.Transition("b", "b")))  # fmt: skip
    cols = {"ma": [True, False, False, False, False, True], "mb": [False, True, True, True, True, False],
            "k": [None, math.nan, -0.0, math.nan, 0.0, 5.0]}  # fmt: skip
    found = parts(cols, 0, 6, template, (), (K.StateKey("b", "k"),))
    assert [list(p.rows) for p in found] == [[0, 1, 3, 5], [0, 2, 4, 5]]
    assert [list(p.masks.values()) for p in found] == [[[False, True, True, False]], [[False, True, True, False]]]
    both = parts(cols, 0, 6, template, (), (K.StateKey("b", "k"), K.StateKey("a", "k")))  # a at 0: null, no part
    assert [list(p.rows) for p in both] == [[1, 3, 5], [2, 4, 5]]


def test_an_event_of_a_keyed_state_and_another_is_refused():
    """`SEQ(A* v1[], A v3) WHERE [v3.k]` on one stream: (e0) with e0 as v3
    extends to (e0, e1) with e0 as v1, whatever e1's key, so a part cannot
    tell whether (e0) is complete — the group is refused, not answered.
    The plan itself enforces [v3.k] by a filter (v3 binds one event), which
    is right; where it would split parts (a nested Kleene) it refuses the
    query with the kernel's message."""
    text = "PATTERN SEQ(A* v1[], NOT C v2, A v3) WHERE [g] AND [v3.k] WITHIN 4"
    events = [{"id": 0, "ts": 0, "g": "h", "k": "v"}, {"id": 1, "ts": 1, "g": "h", "k": "u"}]
    with pytest.raises(SharedKeyedEvent, match="may be v3 or v1: bind the inputs to types"):
        detected(text, events, False, "COMPLETE", spec_changes=state_keys)
    assert detected(text, events, False, "COMPLETE") == wanted(text, events, False, "COMPLETE")
    nested = "PATTERN (SEQ(A+ v1[], A v3))+ WHERE [v3.k] WITHIN 4"
    with pytest.raises(QuerySemanticError, match="may be v3 or v1: bind the inputs to types"):
        detected(nested, events, False, "COMPLETE")


def _refused_or(check):
    """Run `check`; where a key the plan enforces otherwise is split into
    parts here, a group whose keyed events may take another state is
    refused."""
    try:
        check()
    except SharedKeyedEvent:
        pass


@SOME
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.sampled_from([WINDOWS, SLIDING]))
def test_detection_with_state_keys_equals_reference(data, typed, trend_set, windows):
    text = data.draw(queries(False, repeated_types=not typed, windows=windows, state_keys=True))
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed, max_size=8, special=True))

    def check():
        got = detected(text, events, typed, trend_set, spec_changes=state_keys)
        assert got == wanted(text, events, typed, trend_set), text

    _refused_or(check)


@SOME
@given(st.data(), st.booleans(), st.sampled_from(["ALL", "COMPLETE"]))
def test_aggregation_with_state_keys_equals_reference(data, typed, trend_set):
    text = data.draw(queries(True, repeated_types=not typed, state_keys=True))
    if trend_set == "COMPLETE":
        text += "\nTRENDS COMPLETE"
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed, max_size=8, special=True))
    _refused_or(lambda: check_aggregates(text, events, typed))


@SOME
@given(st.data(), st.booleans())
def test_complete_count_with_state_keys_equals_detected_rows(data, typed):
    text = data.draw(queries(False, repeated_types=not typed, state_keys=True))
    agg = "RETURN COUNT(*)\n" + text + "\nTRENDS COMPLETE"
    compile_or_skip(agg, typed=typed)
    events = data.draw(stream(typed, max_size=8, special=True))

    def check():
        found = detected(text, events, typed, "COMPLETE", spec_changes=state_keys)
        counted = {k: int(r["COUNT(*)"]) for k, r in aggregates(agg, events, typed).items() if r["COUNT(*)"]}
        assert counted == {k: len(v) for k, v in found.items() if v}, text

    _refused_or(check)
