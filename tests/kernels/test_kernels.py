"""The kernels against the brute-force reference, through the real compiler
(parse → bind → the logical and physical plans → the kernel spec) and without Spark (`harness`).

Patterns and predicates are generated: SEQ, Kleene `+ * ?`, nested Kleene,
negation before / between / after, repeated types, vertex, equal / range /
other edge predicates, cross predicates and equivalence — over typed and
single-type streams with ties, nulls and sliding windows, for every trend
set.  Detection must return exactly the reference's trends; aggregation the
reference's aggregates over ALL or COMPLETE trends; and COUNT(*) over
COMPLETE trends must equal the number of trends detection returns.
"""

import dataclasses
import math

import pytest
from budget import budget
from checks import aggregates, check_aggregates, compile_or_skip, detected, slide, wanted
from generators import SLIDING, queries, stream
from harness import kernel_table, plan_for, run_local
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import reference_trends

from cetql.base.errors import UsageError
from cetql.base.options import RunOptions
from cetql.kernels import greta, process
from cetql.kernels.errors import TrendLimitExceeded, digits
from cetql.kernels.graph import Graph
from cetql.kernels.runs import trends as kernel_trends
from cetql.planner.logical.plan import Windows
from cetql.planner.physical.kernel import kernel_spec

FAST = settings(max_examples=budget(400), deadline=None, suppress_health_check=list(HealthCheck))

# ---------------------------------------------------------------- detection


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]))
def test_detection_equals_reference(data, typed, trend_set):
    text = data.draw(queries(False, repeated_types=not typed))
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed))
    got = detected(text, events, typed, trend_set)
    assert got == wanted(text, events, typed, trend_set, slide(text)), text


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.sampled_from([1, 200, 2000]))
def test_detection_within_a_memory_budget_equals_reference(data, typed, trend_set, budget):
    """A budget too small for a group's edges (1 byte: none; 200 and 2,000
    bytes: some groups) walks successors found again in the index, and
    fills output batches of a few event ids; the trends are the same."""
    text = data.draw(queries(False, repeated_types=not typed))
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed, max_size=9))
    got = detected(text, events, typed, trend_set, memory_budget=budget)
    assert got == wanted(text, events, typed, trend_set, slide(text)), text


def test_a_budget_keeps_the_graph_out_of_memory():
    """The graph of a dense group: stored, its edges cost what EDGE_BYTES
    says; over the budget, it costs O(n) whatever the edges, and walks the
    same successors."""
    import tracemalloc

    from cetql.base.options import EDGE_BYTES
    from cetql.kernels.graph import Graph

    text = "PATTERN SEQ(A a, B+ b[])\nWHERE b[i].x >= b[i-1].x\nWITHIN 2000"
    events = [{"ts": i, "__type": "A" if i % 50 == 0 else "B", "x": i % 7, "g": "g", "k": "u", "id": i}
              for i in range(1500)]
    plan, phys = plan_for(text, typed=True, types=["A", "B"], options=RunOptions.of(max_trends=0),
                          columns=sorted(events[0]))  # fmt: skip
    ((_, graph),) = process.group_graphs(kernel_spec(phys), kernel_table(plan, phys, events))
    gt = graph.gt

    def measured(**kw):
        tracemalloc.start()
        g = Graph(gt, **kw)
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return g, size

    stored, stored_size = measured()
    lazy, lazy_size = measured(max_edges=stored.edges - 1)
    assert stored.stored and not lazy.stored
    assert stored.edges > 500_000
    assert stored_size / stored.edges <= EDGE_BYTES  # the figure the budget is planned with
    assert lazy_size < stored_size / 50
    for v in range(0, len(stored.succ), 97):
        assert list(lazy.succ[v]) == stored.succ[v]


@pytest.mark.parametrize(
    "text",
    [
        "PATTERN A+ a[] WHERE a[i].x = a[i-1].x WITHIN 99",  # hash, alone
        "PATTERN A+ a[] WHERE a[i].x = a[i-1].x AND a[i].y > a[i-1].y WITHIN 99",  # hash, then a check
        "PATTERN A+ a[] WHERE a[i].y <= a[i-1].y WITHIN 99",  # range
        "PATTERN A+ a[] WHERE a[i].y > a[i-1].y AND a[i].x = a[i-1].x WITHIN 99",  # range, then a check
        "PATTERN A+ a[] WHERE a[i].x < a[i-1].x * 2 WITHIN 99",  # range against h(prev)
        "PATTERN A+ a[] WHERE a[i].y != a[i-1].y WITHIN 99",  # scan, then a check
        "PATTERN SEQ(A+ a[], B b) WHERE a[i].x = a[i-1].x WITHIN 99",  # two transitions from one state, merged
        "PATTERN SEQ(A a, (SEQ(A+ b[], B c))+) WHERE b[i].y > b[i-1].y WITHIN 99",  # nested Kleene
    ],
)
@pytest.mark.parametrize("few", [0, 3, 256])
def test_successors_found_again_equal_the_stored_ones(text, few, monkeypatch):
    """Node by node, in order — and MAXIMAL's split-free successors too —
    over nulls, NaN and ties; a range step by sorting the few targets in
    range, or by checking every later one (`few` 0), or either by turns."""
    from cetql.kernels import graph as G
    from cetql.kernels.walks import split_free

    monkeypatch.setattr(G.StepIndex, "FEW", few)
    rows = [{"ts": i // 2, "__type": "AB"[i % 3 == 2], "x": [0, 1, None, 1][i % 4],
             "y": [2.0, float("nan"), 1.0, None, 3.0][i % 5], "id": i} for i in range(60)]  # fmt: skip
    plan, phys = plan_for(text, typed=True, types=["A", "B"], options=RunOptions.of(max_trends=0),
                          columns=sorted(rows[0]))  # fmt: skip
    for _, stored in process.group_graphs(kernel_spec(phys), kernel_table(plan, phys, rows)):
        lazy = Graph(stored.gt, max_edges=0)
        assert stored.stored and not lazy.stored and stored.edges == lazy.edges > 0
        assert [list(lazy.succ[v]) for v in range(len(lazy.succ))] == stored.succ
        kept, found = split_free(stored), split_free(lazy)
        assert [found[v] for v in range(len(found))] == kept


# ---------------------------------------------------------------- aggregation


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["ALL", "COMPLETE"]))
def test_aggregation_equals_reference(data, typed, trend_set):
    text = data.draw(queries(True, repeated_types=not typed))
    if trend_set == "COMPLETE":
        text += "\nTRENDS COMPLETE"
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed))
    check_aggregates(text, events, typed)


@FAST
@given(st.data(), st.booleans())
def test_complete_count_equals_detected_rows(data, typed):
    """COUNT(*) … TRENDS COMPLETE = the number of rows detection returns, per window."""
    text = data.draw(queries(False, repeated_types=not typed))
    agg = "RETURN COUNT(*)\n" + text + "\nTRENDS COMPLETE"
    compile_or_skip(agg, typed=typed)
    events = data.draw(stream(typed))
    found = detected(text, events, typed, "COMPLETE")
    counted = {k: int(r["COUNT(*)"]) for k, r in aggregates(agg, events, typed).items() if r["COUNT(*)"]}
    assert counted == {k: len(v) for k, v in found.items() if v}, text


# ---------------------------------------------------------------- sliding windows: copies and blocks


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.sampled_from(["copy", "blocks"]))
def test_sliding_detection_equals_reference_both_sharings(data, typed, trend_set, sharing):
    text = data.draw(queries(False, repeated_types=not typed, windows=SLIDING))
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed))
    got = detected(text, events, typed, trend_set, sharing=sharing)
    assert got == wanted(text, events, typed, trend_set, slide(text)), (sharing, text)


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.sampled_from([None, 1, 300]))
def test_windows_walked_on_a_shared_graph_equal_their_own_graphs(data, typed, trend_set, budget):
    """Where the plan shares a block's graph among its windows (CET §5),
    each window's trends walked on it are those of the window's own graph,
    and the reference's: stored edges, none (1 byte) and some (300 bytes)."""
    text = data.draw(queries(False, repeated_types=not typed, windows=SLIDING))
    compile_or_skip(text, typed=typed)
    _, phys = plan_for(text, typed=typed)
    assume(kernel_spec(phys).shared_graph)
    events = data.draw(stream(typed, max_size=10, max_time=14))
    options = {} if budget is None else {"memory_budget": budget}
    shared = detected(text, events, typed, trend_set, **options)
    own = detected(text, events, typed, trend_set, spec_changes={"shared_graph": False}, **options)
    assert shared == own == wanted(text, events, typed, trend_set, slide(text)), text


def test_a_shared_graph_counts_each_window_when_the_block_has_too_many_paths():
    """The guard bounds every window by the block's start-to-end paths; when
    those pass the limit it counts each window, and refuses only a window
    that has too many trends of its own."""
    text = "PATTERN S+ s[] WITHIN 6 SLIDE 1"
    events = [{"id": i, "ts": i, "x": 0} for i in range(12)]
    _, phys = plan_for(text)
    assert kernel_spec(phys).shared_graph
    want = reference_trends(text, events, trend_set="COMPLETE")
    assert max(map(len, want.values())) == 16  # a window of 6 events: its first, its last, any of the 4 between
    _, _, out = run_local(text, events, max_trends=16)  # the block has far more paths
    assert sorted(r["events"] for r in out) == sorted(list(t) for ts in want.values() for t in ts)
    with pytest.raises(TrendLimitExceeded, match="would return 63 all trends"):
        run_local(text, events, max_trends=62, trends="ALL")


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["ALL", "COMPLETE"]))
def test_sliding_aggregation_blocks_equal_copies(data, typed, trend_set):
    """Every window's aggregates with blocks of windows are the copied
    windows' (and both are the reference's)."""
    text = data.draw(queries(True, repeated_types=not typed, windows=SLIDING))
    if trend_set == "COMPLETE":
        text += "\nTRENDS COMPLETE"
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed))
    blocks = aggregates(text, events, typed, sharing="blocks")
    assert blocks == aggregates(text, events, typed, sharing="copy"), text
    check_aggregates(text, events, typed)


@FAST
@given(st.data(), st.booleans())
def test_count_propagated_over_a_block_equals_each_window(data, approx):
    """COUNT(*) of E+ with blocks of windows is one propagation of per-window
    counts (GRETA §4.2); each window's count is the one its own copy gives —
    with times negative or fractional, partition keys, shared sub-keys, and a
    variable's own key (which splits per window: no propagation then)."""
    op = data.draw(st.sampled_from(["", "=", "<", "<=", ">", ">="]))
    within, slide = data.draw(st.sampled_from(SLIDING))
    where = [f"s[i].x {op} s[i-1].x"] if op else []
    key = data.draw(st.sampled_from(["", "[g]", "[k]", "[s.k]"]))
    where += [key] if key else []
    if data.draw(st.booleans()):
        where.append("s.k = 'u'")
    grouped = key == "[g]" and data.draw(st.booleans())
    text = (f"RETURN {'g, ' if grouped else ''}COUNT(*) PATTERN S+ s[] {'WHERE ' + ' AND '.join(where) if where else ''}"
            f"{' GROUP-BY g' if grouped else ''} WITHIN {within} SLIDE {slide}")  # fmt: skip
    plan, phys = plan_for(text, options=RunOptions.of(approx=approx))
    # [s.k] is an equal predicate on the step s → s: with another predicate, GRETA's general propagation
    assert plan.find(Windows).propagate == kernel_spec(phys).propagate == (key != "[s.k]" or not op), text
    shift, scale = data.draw(st.sampled_from([(0, 1), (-5, 1), (-3, 0.5)]))
    events = [dict(e, ts=(e["ts"] + shift) * scale) for e in data.draw(stream(False, max_size=12))]
    events = [dict(e, k=None) if e["id"] % 3 == 0 else e for e in events]  # null keys: in every part or none
    at = lambda r: (r[next(k for k in r if k.endswith("wk"))], r.get("g"))  # noqa: E731
    blocks = {at(r): r["COUNT(*)"] for r in run_local(text, events, approx=approx)[2]}
    copies = {at(r): r["COUNT(*)"] for r in run_local(text, events, approx=approx, sharing="copy")[2]}
    assert blocks.keys() == copies.keys(), text
    for k, v in copies.items():
        assert (math.isclose(blocks[k], v) if approx else blocks[k] == v), (text, k, blocks[k], v)


@pytest.mark.parametrize("predicate", ["s[i].x > s[i-1].x", "s[i].x = s[i-1].x"])
def test_a_block_too_large_to_propagate_is_counted_window_by_window(predicate):
    events = [{"id": i, "ts": i % 7, "x": (i * 5) % 11} for i in range(30)]
    text = f"RETURN COUNT(*) PATTERN S+ s[] WHERE {predicate} WITHIN 6 SLIDE 1"
    plan, phys = plan_for(text, columns=["id", "ts", "x"])
    table = kernel_table(plan, phys, events)

    def counts(spec):
        return {r["__wk"]: r["COUNT(*)"] for b in process.aggregate_table(spec, table) for r in b.to_pylist()}

    small = dataclasses.replace(kernel_spec(phys), max_shared_cells=1)
    assert counts(small) == counts(kernel_spec(phys))
    assert counts(small) == {r["__wk"]: r["COUNT(*)"] for r in run_local(text, events, sharing="copy")[2]}


@pytest.mark.parametrize("text,typed,why", [
    ("PATTERN S+ s[] WHERE s[i].x < s[i-1].x WITHIN 8 SLIDE 1", False, None),
    ("PATTERN SEQ(A a, B+ b[], !C c, D d) WITHIN 8 SLIDE 1", True, None),
    ("PATTERN SEQ(A a, B b) WITHIN 8 SLIDE 1", False, "inputs not bound to types"),
    ("PATTERN SEQ(A a, A+ b[]) WITHIN 8 SLIDE 1", True, "two variables of one type"),
    ("PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x WITHIN 8 SLIDE 1", True, "cross predicates"),
    ("PATTERN SEQ(!C c, A a, B b) WITHIN 8 SLIDE 1", True, "a negation before or after"),
    ("PATTERN SEQ(A a, B b, !C c) WITHIN 8 SLIDE 1", True, "a negation before or after"),
])  # fmt: skip
def test_a_shared_graph_is_planned_where_no_trend_depends_on_its_window(text, typed, why):
    plan, phys = plan_for(text, typed=typed)
    w = plan.find(Windows)
    assert w.sharing.choice == "blocks"
    assert w.shared_graph == kernel_spec(phys).shared_graph == (why is None)
    assert ("each block's graph is built once" in w.sharing.reason) == (why is None)
    if why:
        assert f"its graph built on its own ({why}" in w.sharing.reason


def test_blocks_are_planned_for_many_windows_only():
    many, plan_many = plan_for("PATTERN S+ s[] WITHIN 8 SLIDE 1")
    assert many.find(Windows).sharing.choice == "blocks" and kernel_spec(plan_many).columns.block == 8
    two, plan_two = plan_for("PATTERN S+ s[] WITHIN 8 SLIDE 4")
    assert two.find(Windows).sharing.choice == "copy" and kernel_spec(plan_two).columns.block == 0
    forced, _ = plan_for("PATTERN S+ s[] WITHIN 8 SLIDE 1", options=RunOptions.of(sharing="copy"))
    assert forced.find(Windows).sharing.choice == "copy"
    dist, _ = plan_for("PATTERN S+ s[] WITHIN 8 SLIDE 1", options=RunOptions.of(strategy="distributed"))
    assert dist.find(Windows).sharing.choice == "copy"
    with pytest.raises(UsageError, match='sharing="blocks"'):
        plan_for("PATTERN S+ s[] WITHIN 8 SLIDE 1", options=RunOptions.of(strategy="distributed", sharing="blocks"))


# ---------------------------------------------------------------- the repros, derived by hand


def _typed(spec):
    """'a1,b2' → typed events (letter: type, number: time)."""
    return [{"id": i, "ts": int(x[1:]), "__type": x[0].upper(), "x": None, "g": "g", "k": "u"}
            for i, x in enumerate(spec.split(","))]  # fmt: skip


def test_repeated_type_complete():
    # A@3, A@4, A@5: the complete trends are (3,5) and (3,4,5); (4,5) is not
    # complete (@3 can be prepended): COUNT(*) 2, COUNT(b) 3.
    events = [{"id": t, "ts": t} for t in (3, 4, 5)]
    (row,) = aggregates("PATTERN SEQ(A a, A b+) AGG COUNT(*), COUNT(b) WITHIN 10 TRENDS COMPLETE", events, False).values()
    assert (row["COUNT(*)"], row["COUNT(b)"]) == (2, 3)
    assert detected("PATTERN SEQ(A a, A b+) WITHIN 10", events, False, "COMPLETE") == {0: {(3, 5), (3, 4, 5)}}


def test_nested_kleene_complete():
    # a1 b2 a3 b4: trends (a1,b2) (a1,b4) (a3,b4) (a1,a3,b4) (a1,b2,a3,b4);
    # only (a3,b4) is incomplete (a1 can be prepended): 4.
    (row,) = aggregates("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WITHIN 10 TRENDS COMPLETE", _typed("a1,b2,a3,b4"),
                         True).values()  # fmt: skip
    assert row["COUNT(*)"] == 4


def test_event_in_no_trend_does_not_suppress_one():
    # window [36, 45): B36, A41, B44 — (A41, B44) is complete; B36 cannot be prepended.
    rows = aggregates("RETURN COUNT(*) PATTERN (SEQ(A+ a[], B b+))+ WITHIN 9 SLIDE 9 TRENDS COMPLETE",
                       _typed("b36,a41,b44"), True)  # fmt: skip
    assert {k: r["COUNT(*)"] for k, r in rows.items()} == {4: 1}


def test_a_long_trend_is_not_a_recursion():
    events = [{"id": i, "ts": i, "x": i} for i in range(5000)]
    out = detected("PATTERN S+ s[] WHERE s[i].x = s[i-1].x + 1 WITHIN 100000", events, False, "COMPLETE")
    assert out == {0: {tuple(range(5000))}}
    # A single-type stream: each event may be `a` or in `b`, so the walk carries
    # sets of runs.  Only event 0 can be `a`; any later event may follow it as
    # b[0], then b rises by one: (0, f, f+1, …, n-1) for every f ≥ 1, each complete
    # (nothing precedes event 0, nothing follows n-1).
    n = 1200
    seq = detected("PATTERN SEQ(S a, S+ b[]) WHERE a.x = 0 AND b[i].x = b[i-1].x + 1 WITHIN 100000",
                    events[:n], False, "COMPLETE")  # fmt: skip
    assert seq == {0: {(0, *range(f, n)) for f in range(1, n)}}


@pytest.mark.parametrize("batch", [1, 2, 3, 7])
def test_groups_straddling_arrow_batches(batch):
    """A group that straddles Arrow batches gives what one whole table gives."""
    events = [{"id": i, "ts": t, "x": x} for i, (t, x) in enumerate([(0, 1), (1, 2), (1, 0), (2, 3), (4, 1), (5, 2),
                                                                    (7, 0), (8, 4)])]  # fmt: skip
    text = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 4 SLIDE 2"
    _, _, whole = run_local(text, events)
    _, _, parts = run_local(text, events, batch_size=batch)
    key = lambda r: (r[next(k for k in r if k.endswith("wk"))], tuple(r["events"]))  # noqa: E731
    assert sorted(map(key, parts)) == sorted(map(key, whole))


# ---------------------------------------------------------------- the runaway guard


@FAST
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]))
def test_guard_count_equals_detected_rows(data, typed, trend_set):
    """What the guard counts for a group (before building any trend) is the
    number of trends detection then returns for it — or, when the count is
    marked as a bound, at least that many."""
    text = data.draw(queries(False, repeated_types=not typed))
    compile_or_skip(text, typed=typed)
    events = data.draw(stream(typed))
    types = sorted({e["__type"] for e in events if e.get("__type")}) if typed else ()
    cols = sorted({k for e in events for k in e})
    options = RunOptions.of(trends=trend_set, max_trends=0)
    plan, phys = plan_for(text, typed=typed, types=types, options=options, columns=cols)
    spec = kernel_spec(phys)
    for _, graph in process.group_graphs(spec, kernel_table(plan, phys, events)):
        count, exact = greta.count_trends(graph.gt, spec.template, spec.trend_set)
        found = sum(1 for _ in kernel_trends(graph.gt, spec.trend_set, spec.template))
        assert count == found if exact else count >= found, (text, count, exact, found)
        lazy = Graph(graph.gt, max_edges=0)  # no stored edge: counted from the index
        assert greta.count_trends(graph.gt, spec.template, spec.trend_set, graph=lazy) == (count, exact), text


# ---------------------------------------------------------------- counts past Python's 4,300-digit limit


def test_counts_of_any_length_are_printed_and_refused_with_their_size():
    """2^n - 1 trends of n events at distinct times (every non-empty subset):
    --exact string gives every digit, also past the 4,300 Python prints by
    default; and a detection guard over a count that long names its size."""
    n = 15_000
    events = [{"id": i, "ts": i, "y": i} for i in range(n)]
    _, _, out = run_local("RETURN COUNT(*) PATTERN S+ s[] WITHIN 100000", events, exact="string")
    (row,) = out
    with_digits = row["COUNT(*)"]
    assert len(with_digits) == 4516 and with_digits == digits(2**n - 1)
    # each event extends to the next two (y <= y_prev + 2): Fibonacci-many paths, ~10^4,390 of them
    text = "PATTERN S+ s[] WHERE s[i].y <= s[i-1].y + 2 WITHIN 100000"
    plan, phys = plan_for(text, options=RunOptions.of(trends="ALL", max_trends=10), columns=["id", "ts", "y"])
    table = kernel_table(plan, phys, [{"id": i, "ts": i, "y": i} for i in range(21_000)])
    with pytest.raises(TrendLimitExceeded, match=r"would return \d\.\d{3}e4\d{3} \(4,\d{3} digits\) all trends"):
        list(process.detect_table(kernel_spec(phys), table))
