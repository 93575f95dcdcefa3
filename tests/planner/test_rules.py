"""Each planner rule on its own: a draft as the earlier rules leave it (or
with a fixture's own decisions), the rule applied, its decisions checked.  And the
pipeline: every rule reads only what an earlier one set, so a reordering is
refused by name instead of failing later on a missing value."""

from dataclasses import replace
from decimal import Decimal

import pytest

from cetql.base.errors import QuerySemanticError, UsageError, shared_keyed_event
from cetql.base.options import Algorithm, Completeness, Index, RunOptions, Sharing, Strategy, TrendSet
from cetql.language.parser import parse
from cetql.planner.logical import build as B
from cetql.planner.logical.plan import (
    Decision,
    Delay,
    Inputs,
    InvalidRows,
    KeyMethod,
    LateEvents,
    Numbers,
    Prefilter,
    Resources,
)
from cetql.planner.logical.rules import (
    Draft,
    algorithm,
    capabilities,
    cost,
    guard,
    indexes,
    invalid,
    keys,  # fmt: skip
    memory,
    partitions,
    strategy,
    streaming,
    trend_set,
    windows,
)
from cetql.planner.semantics.bind import bind


def draft(text, inputs=None, resources=None, **options) -> Draft:
    q = bind(parse(text), {}, strict_params=False)
    return Draft(q, RunOptions.of(**options), inputs or Inputs(), resources or Resources())


def given(d: Draft, rule, **fields) -> Draft:
    """`d` as the rules before `rule` leave it, with `fields` (a fixture's
    own decisions) on top."""
    for earlier in B.RULES[: B.RULES.index(rule)]:
        d = earlier.apply(d)
    return replace(d, **fields)


def test_every_rule_reads_what_an_earlier_one_set():
    assert B.order_errors() == []
    wrong = B.order_errors(tuple(reversed(B.RULES)))
    assert wrong and all("reads" in w for w in wrong)


def test_a_reordered_pipeline_is_refused_by_name():
    reordered = (trend_set, windows, capabilities, keys, indexes, algorithm, strategy)
    with pytest.raises(AssertionError, match=r"windows reads \['strategy', 'algorithm', 'variable_keys', 'stream'\]"):
        B.run_rules(draft("PATTERN E+ e[] WITHIN 5 SLIDE 1"), reordered)


def test_trend_set():
    assert trend_set.apply(draft("PATTERN E+ e[] WITHIN 5")).trend_set.choice == TrendSet.COMPLETE
    assert trend_set.apply(draft("RETURN COUNT(*) PATTERN E+ e[] WITHIN 5")).trend_set.choice == TrendSet.ALL
    d = trend_set.apply(draft("PATTERN E+ e[] WITHIN 5 TRENDS ALL", trends="maximal"))
    assert d.trend_set.choice == TrendSet.MAXIMAL and "--trends maximal" in d.trend_set.reason


def test_capabilities():
    with pytest.raises(UsageError, match="with_rows=True"):
        capabilities.apply(draft("RETURN COUNT(*) PATTERN E+ e[] WITHIN 5", with_rows=True))
    with pytest.raises(QuerySemanticError, match="two ways"):
        capabilities.apply(draft("RETURN COUNT(*) PATTERN SEQ(A+ x[], A+ y[]) WITHIN 5"))
    typed = draft("RETURN COUNT(*) PATTERN SEQ(A+ x[], B+ y[]) WITHIN 5", inputs=Inputs(typed=True))
    assert capabilities.apply(typed) is typed


def test_keys():
    d = keys.apply(draft("RETURN g, COUNT(*) PATTERN SEQ(A a, B+ b[]) WHERE [g, h] AND [b.k, a.z] GROUP-BY g WITHIN 5"))
    assert [k.attr for k in d.keys] == ["g"] and [s.attr for s in d.subkeys] == ["h"]
    methods = {(k.position, k.attr): k.method.choice for k in d.variable_keys}
    assert methods == {("b", "k"): KeyMethod.EDGE, ("a", "z"): KeyMethod.FILTER}
    assert {p.text for p in d.key_predicates} == {"b.k IS NOT NULL", "b[i].k = b[i-1].k", "a.z IS NOT NULL"}


def test_a_key_split_into_parts_needs_events_of_its_variable_alone():
    """`[b.k]` on a nested Kleene is split into parts, which is right only
    when no event may be b and another variable: refused on one stream and
    on typed inputs where b's type is another variable's too, with the
    kernel's own message; kept where b's type is b's alone."""
    text = "PATTERN (SEQ(A+ a[], {} b))+ WHERE [b.k] WITHIN 5"
    refusal = shared_keyed_event("b", "a").replace("(", r"\(").replace(")", r"\)")
    for t, inputs in (("B", Inputs()), ("B", Inputs(typed=False)), ("A", Inputs(typed=True))):
        with pytest.raises(QuerySemanticError, match=refusal):
            keys.apply(draft(text.format(t), inputs=inputs))
    d = keys.apply(draft(text.format("B"), inputs=Inputs(typed=True)))
    assert [k.method.choice for k in d.variable_keys] == [KeyMethod.PARTS]
    single = keys.apply(draft("PATTERN SEQ(A+ a[], A b) WHERE [b.k] WITHIN 5"))  # a filter: no parts, no refusal
    assert [k.method.choice for k in single.variable_keys] == [KeyMethod.FILTER]


def test_indexes():
    d = given(draft("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x < b[i-1].x AND [b.k] WITHIN 5"), indexes)
    by = {(t.source, t.target): t.index.choice for t in indexes.apply(d).transitions}
    assert by == {("a", "b"): Index.SCAN, ("b", "b"): Index.HASH}  # the key's equal predicate wins over the range


def test_algorithm():
    d = given(draft("RETURN COUNT(*) PATTERN A+ a[] WHERE a[i].x < a[i-1].x WITHIN 5"), algorithm)
    out = algorithm.apply(d)
    assert out.algorithm.choice == Algorithm.KLEENE_COUNT and out.complete is None
    assert out.numbers.choice == Numbers.EXACT_DECIMAL
    d = given(draft("RETURN COUNT(*) PATTERN SEQ(A a, A+ b[]) TRENDS COMPLETE WITHIN 5", approx=True), algorithm)
    out = algorithm.apply(d)
    assert out.complete.choice == Completeness.DETERMINIZED and out.numbers.choice == Numbers.APPROXIMATE
    assert algorithm.apply(given(draft("PATTERN A+ a[] WITHIN 5"), algorithm)).algorithm is None


def test_strategy_and_prefilter():
    d = given(draft("PATTERN A+ a[] WHERE a[i].x = a[i-1].y WITHIN 5", strategy="distributed"), strategy)
    out = strategy.apply(d)
    assert out.strategy.choice == Strategy.DISTRIBUTED and out.prefilter.choice == Prefilter.EQUAL
    out = strategy.apply(replace(d, resources=Resources(graphframes=True)))
    assert out.prefilter.choice == Prefilter.GRAPHFRAMES
    out = strategy.apply(replace(d, trend_set=Decision(TrendSet.ALL, "fixture")))
    assert out.prefilter.choice == Prefilter.NONE
    nested = strategy.apply(given(draft("PATTERN (SEQ(A+ a[], B b))+ WHERE [b.k] WITHIN 5", Inputs(typed=True),
                                        strategy="distributed"), strategy))  # fmt: skip
    assert nested.strategy.choice == Strategy.DISTRIBUTED and nested.prefilter.choice == Prefilter.RUNS


def test_windows():
    d = given(draft("PATTERN E+ e[] WITHIN 8 SLIDE 1"), windows)
    out = windows.apply(d)
    assert out.sharing.choice == Sharing.BLOCKS and out.block == 8 and out.shared_graph
    out = windows.apply(replace(d, strategy=Decision(Strategy.DISTRIBUTED, "fixture")))
    assert out.sharing.choice == Sharing.COPY and out.block == 0
    assert windows.apply(given(draft("PATTERN E+ e[] WITHIN 8"), windows)).sharing.choice is None
    with pytest.raises(UsageError, match="8 windows, more than max_windows=4"):
        windows.apply(given(draft("PATTERN E+ e[] WITHIN 8 SLIDE 1", max_windows=4), windows))


def test_guard():
    d = given(draft("PATTERN E+ e[] WITHIN 8", max_trends=5), guard)
    assert guard.apply(d).guard.choice == 5
    assert guard.apply(given(draft("PATTERN E+ e[] WITHIN 8", max_trends=0), guard)).guard.choice == 0
    assert guard.apply(given(draft("RETURN COUNT(*) PATTERN E+ e[] WITHIN 8"), guard)).guard is None


def test_memory():
    d = given(draft("PATTERN E+ e[] WITHIN 8", resources=Resources(executor_memory="8g", task_slots=4)), memory)
    out = memory.apply(d)
    assert out.memory.choice == 1 << 30 and "over its 4 task slots" in out.memory.reason
    assert out.max_edges == (1 << 29) // 48


def test_partitions():
    assert partitions.apply(draft("PATTERN E+ e[] WITHIN 8", partitions=7)).partitions.choice == 7
    d = partitions.apply(draft("PATTERN E+ e[] WITHIN 8", resources=Resources(parallelism=6)))
    assert d.partitions.choice == 12 and "6" in d.partitions.reason


def test_invalid():
    assert invalid.apply(draft("PATTERN E+ e[] WITHIN 8")).invalid.choice == InvalidRows.REJECT
    assert invalid.apply(draft("PATTERN E+ e[] WITHIN 8", drop_invalid=True)).invalid.choice == InvalidRows.DROP


def test_cost():
    d = given(draft("RETURN COUNT(*) PATTERN A+ a[] WHERE a[i].x < a[i-1].x WITHIN 5"), cost)
    assert cost.apply(d).cost == "per group: O(n log n) (range index)"


def _stream(text, watermark=None, time_kind="numeric", **options):
    inputs = Inputs(typed=False, time_kind=time_kind).as_stream(Delay.parse(watermark))
    return given(draft(text, inputs=inputs, **{"id_col": "id", **options}), streaming)


def test_streaming():
    """Streams: keys of at least 64 windows (a key per window with --sharing
    copy), the watermark in milliseconds of the event-time clock, late events
    counted and dropped; batch inputs get no stream; refusals before any run."""
    assert streaming.apply(given(draft("PATTERN E+ e[] WITHIN 8"), streaming)).stream.choice is None
    s = streaming.apply(_stream("PATTERN E+ e[] WITHIN 100 SLIDE 50")).stream
    assert s.choice.block.choice == streaming.STREAM_BLOCK and "read as a stream" in s.reason
    assert s.choice.late.choice == LateEvents.DROP and s.choice.watermark.choice == 0
    assert streaming.apply(_stream("PATTERN E+ e[] WITHIN 100 SLIDE 1")).stream.choice.block.choice == 100
    assert streaming.apply(_stream("PATTERN E+ e[] WITHIN 9 SLIDE 3", sharing="copy")).stream.choice.block.choice == 0
    for text, kind, unit, ms in (("10 minutes", "numeric", "s", 600_000), ("1.5s", "timestamp", "s", 1500),
                                 ("5", "numeric", "s", 5000), ("5", "numeric", "ms", 5), ("5", "timestamp", "s", 5000),
                                 ("5", "timestamp_ns", "s", 5000), ("0.0004", "numeric", "s", 1)):  # fmt: skip
        s = streaming.apply(_stream("PATTERN E+ e[] WITHIN 8", text, kind, time_unit=unit)).stream.choice
        assert s.watermark.choice == ms, (text, kind, unit)
    clocks = {k: streaming.apply(_stream("PATTERN E+ e[] WITHIN 8", None, k)).stream.choice.clock
              for k in ("numeric", "timestamp", "timestamp_ns")}  # fmt: skip
    assert clocks == {"numeric": 1000, "timestamp": Decimal("0.001"), "timestamp_ns": Decimal("0.000001")}
    with pytest.raises(UsageError, match="needs an id column"):
        streaming.apply(_stream("PATTERN E+ e[] WITHIN 8", id_col=None))
    with pytest.raises(UsageError, match="runs batch joins"):
        streaming.apply(_stream("PATTERN E+ e[] WHERE e[i].x = e[i-1].y WITHIN 8", strategy="distributed"))
    for bad in ("soon", "-3 s", "10 parsecs", "1 2 3", "nan"):
        with pytest.raises(UsageError, match="not a duration"):
            Delay.parse(bad)


def test_windows_take_the_streams_keys():
    """The windows rule keys a stream by its blocks; a block the batch plan
    would choose keeps its shared graph (or one pass), any width."""
    d = windows.apply(given(_stream("PATTERN E+ e[] WITHIN 100 SLIDE 50"), windows))
    assert (d.sharing.choice, d.block, d.shared_graph) == (Sharing.BLOCKS, 64, False)
    d = windows.apply(given(_stream("PATTERN E+ e[] WITHIN 100 SLIDE 1"), windows))
    assert (d.block, d.shared_graph) == (100, True)
    d = windows.apply(given(_stream("RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 10 SLIDE 1"), windows))
    assert d.propagate and d.block == 64
    d = windows.apply(given(_stream("PATTERN E+ e[] WITHIN 10"), windows))
    assert (d.sharing.choice, d.block) == (Sharing.BLOCKS, 64)
    d = windows.apply(given(_stream("PATTERN E+ e[] WITHIN 9 SLIDE 3", sharing="copy"), windows))
    assert (d.sharing.choice, d.block) == (Sharing.COPY, 0)
