"""Planning the distributed strategy: every detection the local strategy
plans, the distributed one plans too (no pattern is refused), and the cost
rule picks one or the other from the inputs' statistics, saying why in
--explain."""

from __future__ import annotations

import pytest
from generators import queries
from harness import plan_for
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import QueryError, UsageError
from cetql.base.options import RunOptions, Strategy
from cetql.planner.explain import explain_text
from cetql.planner.logical.plan import InputFacts, Inputs, Prefilter, Resources
from cetql.planner.semantics.schema import Schema
from cetql.planner.semantics.sources import Column, ColumnStats, Source


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.booleans(), st.booleans(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]))
def test_a_query_the_local_strategy_plans_the_distributed_one_plans(data, typed, special, keys, trend_set):
    text = data.draw(queries(False, repeated_types=not typed, special=special, state_keys=keys))
    types = ("A", "B", "C") if typed else ()
    try:
        local = plan_for(text, typed=typed, types=types, options=RunOptions.of(strategy="local", trends=trend_set))
    except QueryError:
        assume(False)
    assert local[1].root.strategy == Strategy.LOCAL
    logical, phys = plan_for(text, typed=typed, types=types,
                             options=RunOptions.of(strategy="distributed", trends=trend_set))  # fmt: skip
    assert phys.root.strategy == Strategy.DISTRIBUTED
    assert phys.root.prefilter is not None
    single = logical.query.template.single_kleene is not None and not logical.root.cross
    assert (phys.root.prefilter == Prefilter.RUNS) == (not single or bool(phys.partition.state_keys)), text


# ---------------------------------------------------------------- the cost rule


def _inputs(rows: int, accounts: int, span: int) -> Inputs:
    cols = (Column("ts", "bigint"), Column("id", "bigint"), Column("src", "string"), Column("dst", "string"))
    stats = (ColumnStats("ts", 0.0, float(span), rows), ColumnStats("id", 0.0, float(rows), rows),
             ColumnStats("src", None, None, accounts), ColumnStats("dst", None, None, accounts))  # fmt: skip
    source = Source("checks.parquet", "parquet", ("/checks.parquet",), cols, rows=rows, stats=stats)
    schema = Schema(tuple((c.name, c.cls, c.type) for c in cols))
    facts = InputFacts(None, "checks.parquet", time_type="bigint", source=source)
    return Inputs(typed=False, schema=schema, time_kind="numeric", names=("checks.parquet",), each=(facts,))


KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100"


def _plan(text: str, inputs: Inputs | None, **options):
    return cetql.compile(text, inputs=inputs, resources=Resources(executor_memory="1g", task_slots=2,
                                                                  assumed=False), **options)  # fmt: skip


def test_a_group_over_the_budget_is_distributed_and_explain_says_why():
    big = _plan(KITING, _inputs(10_000_000, 1_000_000, 100))  # one window of 10M checks among 1M accounts
    root = big.plan.logical.root
    assert root.strategy.choice == Strategy.DISTRIBUTED and root.strategy.reason.startswith("by cost")
    assert root.estimate.choice.events == 10_000_000 and root.estimate.choice.edges == 50_000_000
    text = explain_text(big)
    assert "estimate: 10,000,000 events" in text and "is over one task's budget 256 MiB" in text
    # groups are counted when the plan runs: one within the budget still runs locally, with its memory decision
    assert 0 < root.split.choice < 10_000_000 and f"split: {root.split.choice:,}" in text
    assert root.memory is not None and big.plan.root.split == root.split.choice


def test_a_group_within_the_budget_is_local():
    small = _plan(KITING, _inputs(100_000, 1_000, 10_000))  # 1,000 events a window
    root = small.plan.logical.root
    assert root.strategy.choice == Strategy.LOCAL and "fits one task's budget" in root.strategy.reason
    assert root.estimate.choice.events == 1_000
    assert root.memory is not None


def test_the_budget_decides_and_strategy_forces():
    inputs = _inputs(100_000, 2_000, 100)  # one window: 100,000 events, 2.5M edges (~140 MiB)
    assert _plan(KITING, inputs).plan.root.strategy == Strategy.LOCAL  # within 256 MiB
    tight = _plan(KITING, inputs, memory_budget=1 << 20).plan  # the same group, a 1 MiB budget
    assert tight.root.strategy == Strategy.DISTRIBUTED  # (--memory-budget is what it was over: not refused)
    assert _plan(KITING, inputs, memory_budget=1 << 20, strategy="local").plan.root.strategy == Strategy.LOCAL
    assert _plan(KITING, inputs, strategy="distributed").plan.root.split is None  # forced: every group distributed
    with pytest.raises(UsageError, match="memory.budget bounds the local strategy"):
        _plan(KITING, inputs, memory_budget=1 << 20, strategy="distributed")


def test_a_key_splits_the_estimate_and_no_statistics_stays_local():
    keyed = _plan(KITING.replace("WHERE", "WHERE [src] AND"), _inputs(10_000_000, 1_000_000, 100)).plan.logical.root
    assert keyed.estimate.choice.events == 10 and keyed.strategy.choice == Strategy.LOCAL
    unknown = _plan(KITING, None).plan.logical.root
    assert unknown.estimate.choice is None and unknown.strategy.choice == Strategy.LOCAL
    assert "no estimate" in unknown.strategy.reason


def test_parquet_footers_and_a_sample_give_the_estimate(tmp_path):
    """Rows and the time range from the footers, distinct accounts from a
    sample of the first rows (within a factor of the truth), read without
    an engine; `compile --input` plans with them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cetql.backends.inputs.facts import describe_paths

    rng = np.random.default_rng(3)
    n, accounts = 60_000, 6_000
    src = rng.integers(0, accounts, n)
    table = pa.table({"ts": np.arange(n, dtype=np.int64), "id": np.arange(n, dtype=np.int64),
                      "src": src.astype(str), "dst": ((src + 1) % accounts).astype(str)})  # fmt: skip
    pq.write_table(table, tmp_path / "checks.parquet", row_group_size=20_000)
    inputs = describe_paths({None: str(tmp_path / "checks.parquet")}, "ts")
    source = inputs.each[0].source
    assert source.rows == n and (source.stat("ts").lo, source.stat("ts").hi) == (0, n - 1)
    assert accounts / 2 < source.stat("src").distinct < accounts * 2
    root = _plan(KITING.replace("100", "1000000"), inputs, memory_budget=1 << 20).plan.logical.root
    assert root.estimate.choice.events == n and root.strategy.choice == Strategy.DISTRIBUTED


def test_explain_says_how_template_runs_extract():
    text = explain_text(cetql.compile("PATTERN SEQ(A a, B+ b[]) WHERE a.x < b.x WITHIN 5", strategy="distributed",
                                      trends="maximal"))  # fmt: skip
    assert "pre-filter: template runs" in text and "(START, POISON, PENDING, INSERTED)" in text
    kleene = explain_text(cetql.compile(KITING, strategy="distributed"))
    assert "pre-filter: equal-index" in kleene and "template runs" not in kleene


@settings(max_examples=20, deadline=None)
@given(st.floats(0.05, 0.9), st.integers(2, 400))
def test_a_skewed_key_gives_its_heavy_value_as_the_largest_group(tmp_path_factory, heavy, keys):
    """One key value holds a `heavy` share of the rows, the rest spread over
    `keys` others: the largest group is estimated at about the most
    frequent value's rows (from the sample), never at rows / distinct
    values."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cetql.backends.inputs.facts import describe_paths

    rng = np.random.default_rng(keys)
    n = 40_000
    key = np.where(rng.random(n) < heavy, "heavy", rng.integers(0, keys, n).astype(str))
    folder = tmp_path_factory.mktemp("skew")
    pq.write_table(pa.table({"ts": np.arange(n, dtype=np.int64), "id": np.arange(n, dtype=np.int64), "k": key,
                             "src": key, "dst": key}), folder / "checks.parquet")  # fmt: skip
    inputs = describe_paths({None: str(folder / "checks.parquet")}, "ts")
    true = int(np.unique(key, return_counts=True)[1].max())  # the heavy value's rows, or another's if larger
    plan = _plan(KITING.replace("WHERE", "WHERE [k] AND").replace("WITHIN 100", f"WITHIN {n}"), inputs)
    est = plan.plan.logical.root.estimate.choice
    assert 0.8 * true <= est.events <= 1.25 * true, (est, true)  # the sample is the first half of the rows
    assert "the most frequent in" in explain_text(plan)
