"""The distributed strategy on Spark for every pattern class — SEQ of single
and Kleene variables, `E?`/`E*`, negation before / between / after, nested
Kleene, per-variable equivalence and cross predicates — in every trend set,
against the brute-force reference (`reference.py`) and the local kernel.

Spark jobs are slow to start, so each example is one query over a batch of
generated streams run as one job: the case id is one more equivalence
attribute (`[case]`, as in test_detect_spark); the reference and the local
kernel (in-process, `harness`) run per stream on the query as written."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest
from cases import detection_with_case
from checks import compile_or_skip, detected, slide, wanted
from generators import DRAWN, queries
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import cetql
from cetql.backends.spark.compiler import compile_plan, partitioned
from cetql.base.options import Strategy
from cetql.planner.logical.plan import Inputs

# shrinking re-runs Spark jobs for minutes: a failing batch is printed whole
SETTINGS = settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.generate])  # fmt: skip
COLUMNS = ["case", "id", "ts", "x", "g", "k", "y"]
SCHEMA = "case int, id long, ts long, x long, g string, k string, y double"


def streams(seed: int, typed: bool, special: bool = False, count: int = 24, size: int = 8) -> list[list[dict]]:
    """`count` streams as `generators.stream` makes them, from a seed: every
    example is a varied batch (hypothesis would begin with empty streams)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        evs = [{"ts": rnd.randint(0, 8), "__type": rnd.choice("ABC") if typed else None,
                "x": rnd.choice([None, 0, 1, 2, 3]), "g": rnd.choice("gh"),
                "k": rnd.choice(["u", "v", None] if special else ["u", "v"]),
                **({"y": rnd.choice(DRAWN)} if special else {})} for _ in range(rnd.randint(0, size))]  # fmt: skip
        out.append([dict(e, id=i) for i, e in enumerate(sorted(evs, key=lambda e: e["ts"]))])
    return out


def _batch(spark, batch: list[list[dict]], typed: bool, types: tuple[str, ...]):
    """(Spark inputs, each stream with ids unique across the batch)."""
    rows, per_case, next_id = [], [], 0
    for c, evs in enumerate(batch):
        evs = [dict(e, id=e["id"] + next_id) for e in evs]
        next_id += len(evs)
        per_case.append(evs)
        rows += [(c, *(e.get(k) for k in COLUMNS[1:]), e.get("__type")) for e in evs]
    df = spark.createDataFrame(rows, SCHEMA + ", type string")
    if not typed:
        return {"data": df.drop("type")}, per_case
    return {t: df.filter(df["type"] == t).drop("type") for t in types}, per_case


def _distributed(text: str, inputs: dict, trend_set: str, split=None) -> dict[int, dict[int, set[tuple]]]:
    """{case: {window index: trends}} of the distributed strategy (`split`:
    with a split between its groups, see `_split`)."""
    types = tuple(k for k in inputs if k != "data")  # typed: planned as typed before the inputs are seen
    compiled = cetql.compile(detection_with_case(text), inputs=Inputs(typed=True, types=types) if types else None)
    run = compiled.execution(**inputs, id_col="id", strategy="distributed", trends=trend_set)
    assert run.plan.root.strategy == Strategy.DISTRIBUTED
    rows = run.dataframe.collect() if split is None else _split(compiled, run, inputs, trend_set, split)
    every = slide(text)
    got: dict = {}
    for r in rows:
        got.setdefault(r["case"], {}).setdefault(r["window_start"] // every, set()).add(tuple(r["events"]))
        assert r["length"] == len(r["events"])
    return got


def _split(compiled, run, inputs: dict, trend_set: str, rnd: random.Random) -> list:
    """The rows of the plan with a split (as the cost rule sets it) at one of
    its groups' sizes other than the largest, drawn by `rnd`: groups of that
    size or less run locally, larger ones distributed, some of each.  The
    local side's memory settings are the local plan's."""
    plan = run.plan
    counts = partitioned(plan, run.inputs).groupBy(*plan.partition.group).count().collect()
    sizes = sorted({r["count"] for r in counts})
    assume(len(sizes) > 1)  # (every group of one size: no split has groups on both sides)
    local = compiled.execution(**inputs, id_col="id", strategy="local", trends=trend_set).plan.root
    root = replace(plan.root, split=rnd.choice(sizes[:-1]), max_edges=local.max_edges, batch_events=local.batch_events)
    return compile_plan(replace(plan, root=root), run.inputs).collect()
def _types(text: str) -> tuple[str, ...]:
    """The event types a generated pattern names (A, B, C)."""
    pattern = text.split("WHERE")[0].split("WITHIN")[0]
    return tuple(sorted(set(re.findall(r"\b([ABC])[+*?]?\s+\w", pattern))))


def check(spark, text: str, batch: list[list[dict]], typed: bool, trend_set: str, split=None) -> None:
    inputs, per_case = _batch(spark, batch, typed, _types(text))
    got = _distributed(text, inputs, trend_set, split)
    for c, evs in enumerate(per_case):
        want = wanted(text, evs, typed, trend_set)
        assert got.get(c, {}) == want, (text, trend_set, c, evs)
        if evs:  # (the local kernel plans typed inputs from the types its events have)
            assert detected(text, evs, typed, trend_set) == want, (text, trend_set, c)


# one query of each pattern class, in a trend set each (the three over the classes); single-type streams
# (typed False) let an event take several states
CLASSES = [
    ("PATTERN SEQ(A a, B+ b[], A c) WHERE b[i].x > b[i-1].x WITHIN 6 SLIDE 3", False, "MAXIMAL"),
    ("PATTERN SEQ(A? a, B* b[], C c) WHERE b[i].x >= b[i-1].x WITHIN 6 SLIDE 6", False, "ALL"),
    ("PATTERN SEQ(NOT C n1, A+ a[], NOT SEQ(B b, C c), B d, NOT C n3) WITHIN 6 SLIDE 3", True, "COMPLETE"),
    ("PATTERN (SEQ(A+ a[], B b))+ WITHIN 6 SLIDE 6", False, "MAXIMAL"),
    ("PATTERN (SEQ(A+ a[], B b))+ WHERE [b.k, a.g] WITHIN 9 SLIDE 9", True, "COMPLETE"),
    ("PATTERN SEQ(A a, B+ b[]) WHERE a.x < b.x AND b[i].x != b[i-1].x WITHIN 6 SLIDE 3", False, "COMPLETE"),
]


@pytest.mark.parametrize("text,typed,trend_set", CLASSES, ids=[f"{t}-{q}" for q, _, t in CLASSES])
@SETTINGS
@given(st.integers(0, 2**32))
def test_each_pattern_class_equals_reference_and_local(spark, text, typed, trend_set, seed):
    check(spark, text, streams(seed, typed, size=10), typed, trend_set)


@settings(SETTINGS, max_examples=4)
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans(), st.integers(0, 2**32))
def test_generated_queries_equal_reference_and_local(spark, data, typed, trend_set, keys, seed):
    text = data.draw(queries(False, repeated_types=not typed, special=True, state_keys=keys))
    compile_or_skip(text, typed=typed)
    check(spark, text, streams(seed, typed, special=True, count=16, size=7), typed, trend_set)


@settings(SETTINGS, max_examples=3)
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans(), st.integers(0, 2**32))
def test_a_split_plan_equals_reference_and_local(spark, data, typed, trend_set, keys, seed):
    """Distributed by cost with a split: the groups at or under it walked by
    the local kernel, the larger ones by joins, in one plan; small streams
    beside a few dense ones (events in a narrow span of time) give groups
    on both sides."""
    text = data.draw(queries(False, repeated_types=not typed, special=True, state_keys=keys))
    compile_or_skip(text, typed=typed)
    rnd = random.Random(seed)
    batch = streams(seed, typed, special=True, count=12, size=3)
    for dense in streams(seed + 1, typed, special=True, count=3, size=12):
        dense = sorted((dict(e, ts=rnd.randint(0, 2)) for e in dense), key=lambda e: (e["ts"], e["id"]))
        batch.append([dict(e, id=i) for i, e in enumerate(dense)])
    check(spark, text, batch, typed, trend_set, rnd)


def test_big_groups_distributed_the_rest_local_in_one_plan(spark, tmp_path):
    """Parquet inputs give the cost rule its statistics: over a budget the
    average group is too large for, the plan is distributed with a split —
    each group's events counted, the few large groups extended by joins,
    the small ones by the local kernel — and the rows are the local
    strategy's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(5)
    inside = [f"a{i}" for i in range(40)]  # a selective equal predicate: most checks leave the stream
    rows = [("big", rnd.choice(inside), rnd.choice(inside) if rnd.random() < 0.2 else "out") for _ in range(300)]
    rows += [(f"small{i}", rnd.choice("AB"), rnd.choice("AB")) for i in range(20) for _ in range(5)]
    rnd.shuffle(rows)
    table = pa.table({"ts": list(range(len(rows))), "id": list(range(len(rows))), "k": [r[0] for r in rows],
                      "src": [r[1] for r in rows], "dst": [r[2] for r in rows]})  # fmt: skip
    pq.write_table(table, tmp_path / "checks.parquet")
    text = "PATTERN Check+ c[] WHERE [k] AND c[i].src = c[i-1].dst WITHIN 100000"
    compiled = cetql.compile(text)
    split = compiled.execution(str(tmp_path / "checks.parquet"), spark=spark, id_col="id", memory_budget=2000)
    assert split.plan.root.strategy == Strategy.DISTRIBUTED and 5 <= split.plan.root.split < 300
    local = compiled.execution(str(tmp_path / "checks.parquet"), spark=spark, id_col="id", strategy="local")
    got = {s: sorted((r["k"], tuple(r["events"])) for r in e.dataframe.collect()) for s, e in
           (("split", split), ("local", local))}  # fmt: skip
    assert got["split"] == got["local"] and {k for k, _ in got["local"]} == {"big", *(f"small{i}" for i in range(20))}
