"""Detection on Spark, both strategies, against the brute-force reference.

Spark jobs are slow to start, so each hypothesis example is a batch of random
streams run as one job: the case id is one more equivalence attribute
(`[case]` added to the query), and the reference runs per case on the query
as written."""

import datetime as dt
from pathlib import Path

import pytest
from cases import detection_with_case
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from reference import reference_trends

import cetql

SETTINGS = settings(
    max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)  # shrinking re-runs Spark jobs for minutes; a failing batch is printed whole




def stream(max_events=9):
    return st.lists(
        st.fixed_dictionaries(
            {
                "ts": st.integers(0, 14),
                "src": st.sampled_from("ABC"),
                "dst": st.sampled_from("ABC"),
                "price": st.none() | st.integers(0, 5),
                "sym": st.sampled_from("xy"),
                "kind": st.sampled_from("ab"),
            }
        ),
        max_size=max_events,
    )


cases = st.lists(stream(), min_size=15, max_size=25)

COLUMNS = "case int, id long, ts long, src string, dst string, price double, sym string, kind string"


def _frame(spark, batch):
    rows, per_case = [], []
    next_id = 0
    for c, evs in enumerate(batch):
        evs = [dict(e, id=next_id + i) for i, e in enumerate(evs)]
        next_id += len(evs)
        per_case.append(evs)
        rows += [
            (
                c,
                e["id"],
                e["ts"],
                e["src"],
                e["dst"],
                None if e["price"] is None else float(e["price"]),
                e["sym"],
                e["kind"],
            )
            for e in evs
        ]
    return spark.createDataFrame(rows, COLUMNS), per_case


def _spark_trends(df, text, params, strategy, trend_set, **options):
    out = cetql.compile(detection_with_case(text), params).run(df, id_col="id", strategy=strategy, trends=trend_set, **options)
    got: dict = {}
    for r in out.collect():
        got.setdefault(r["case"], set()).add((r["window_start"], tuple(r["events"])))
        assert r["length"] == len(r["events"])
    return got


def _reference(text, per_case, params, trend_set):
    want = {}
    for c, evs in enumerate(per_case):
        for (start, _end), trends in reference_trends(text, evs, params, trend_set).items():
            for t in trends:
                want.setdefault(c, set()).add((start, t))
    return want


KLEENE_QUERIES = [
    ("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 6 SLIDE 3", {}),
    ("PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 5 SLIDE 2", {}),
    ("PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price AND s.kind = 'a' WITHIN 8", {"ratio": 0.5}),
    ("PATTERN Stock+ s[] WHERE s.price <= NEXT(s).price + 1 AND s[i].sym != s[i-1].sym WITHIN 6 SLIDE 2", {}),
    ("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst AND c[i].price >= c[i-1].price WITHIN 7 SLIDE 7", {}),
    ("PATTERN E+ e[] WHERE e[i].price - e[i-1].price > 0 OR e[i].kind = 'b' WITHIN 6 SLIDE 3", {}),
    ("PATTERN E+ e[] WITHIN 3 SLIDE 1", {}),
]


@pytest.mark.parametrize("text,params", KLEENE_QUERIES, ids=[q for q, _ in KLEENE_QUERIES])
@pytest.mark.parametrize("trend_set", ["COMPLETE", "MAXIMAL", "ALL"])
@settings(SETTINGS, max_examples=1)  # 15-25 streams per batch; the distributed strategy runs a job per trend length
@given(batch=cases)
def test_kleene_both_strategies_equal_reference(spark, text, params, trend_set, batch):
    df, per_case = _frame(spark, batch)
    want = _reference(text, per_case, params, trend_set)
    assert _spark_trends(df, text, params, "local", trend_set) == want
    assert _spark_trends(df, text, params, "distributed", trend_set) == want


SEQ_QUERIES = [
    (
        "PATTERN SEQ(Activity a, Activity+ b[]) WHERE b.price < NEXT(b).price AND a.price * 2 < b.price WITHIN 8 SLIDE 4",
        {},
    ),
    ("PATTERN SEQ(Check a, Check+ b[], Check c) WHERE [sym] AND b[i].src = b[i-1].dst AND a.dst = c.src WITHIN 10", {}),
    (
        "PATTERN SEQ(Check a, Check? b, Check+ c[]) WHERE a.kind = 'a' AND c[i].price > c[i-1].price WITHIN 9 SLIDE 3",
        {},
    ),
]


@pytest.mark.parametrize("text,params", SEQ_QUERIES, ids=[q for q, _ in SEQ_QUERIES])
@pytest.mark.parametrize("trend_set", ["COMPLETE", "MAXIMAL"])
@SETTINGS
@given(batch=st.lists(stream(max_events=7), min_size=15, max_size=25))
def test_seq_patterns_equal_reference(spark, text, params, trend_set, batch):
    df, per_case = _frame(spark, batch)
    assert _spark_trends(df, text, params, "local", trend_set) == _reference(text, per_case, params, trend_set)


@pytest.mark.parametrize("text,params", KLEENE_QUERIES[:2] + SEQ_QUERIES[:2], ids=[q for q, _ in KLEENE_QUERIES[:2] + SEQ_QUERIES[:2]])
@settings(SETTINGS, max_examples=1)
@given(batch=cases)
def test_a_memory_budget_too_small_for_any_edge_gives_the_same_trends(spark, text, params, batch):
    """--memory-budget 1 byte: no group stores an edge and output batches hold
    one event id; through Spark, the trends are the reference's.  The plan
    reads the session's executor memory (local: spark.driver.memory) for
    the default."""
    df, per_case = _frame(spark, batch)
    compiled = cetql.compile(detection_with_case(text), params)
    memory = compiled.execution(df, id_col="id").plan.logical.root.memory
    assert f"half the executor memory ({spark.conf.get('spark.driver.memory')}) over its 2 task slots" in memory.reason
    assert compiled.execution(df, id_col="id", memory_budget=1).plan.logical.root.max_edges == 0
    want = _reference(text, per_case, params, "COMPLETE")
    assert _spark_trends(df, text, params, "local", "COMPLETE", memory_budget=1) == want


def test_decimal_against_double_compares_as_doubles_with_any_budget(spark):
    """`p < prev.p * 0.9` with p DECIMAL: the number is a DOUBLE, so is h, and
    0.90 < 1.00 * 0.9 is false in doubles though true exactly.  Stored edges
    (the range index), none (each pair checked) and Spark's own comparison
    of the same pairs agree."""
    from decimal import Decimal

    ps = ["1.00", "0.90", "0.80", "0.72", "0.71", "0.60", "0.54"]
    df = spark.createDataFrame([(i, i, Decimal(p)) for i, p in enumerate(ps)], "id long, ts long, p decimal(5,2)")
    q = "PATTERN S+ s[] WHERE s[i].p < s[i-1].p * 0.9 WITHIN 99"
    runs = [sorted(tuple(r.events) for r in spark.cet(q, df, id_col="id", **kw).collect())
            for kw in ({}, {"memory_budget": 1})]  # fmt: skip
    assert runs[0] == runs[1]
    pairs = {(a.id, b.id) for a, b in [(x, y) for x in df.collect() for y in df.collect()]
             if a.ts < b.ts and spark.sql(f"SELECT CAST({b.p} AS DECIMAL(5,2)) < CAST({a.p} AS DECIMAL(5,2)) * 0.9D").first()[0]}  # fmt: skip
    used = {(t[k], t[k + 1]) for t in runs[0] for k in range(len(t) - 1)}
    assert used <= pairs and (0, 1) not in pairs and (1, 2) in pairs


# Many windows an event: blocks of windows by default, copies when asked; the
# same trends either way, window by window, and the reference's.
SLIDING_QUERIES = [
    ("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 8 SLIDE 1", {}),
    ("PATTERN SEQ(Check a, Check+ b[]) WHERE [sym] AND b[i].price >= b[i-1].price AND a.kind = 'a' WITHIN 7 SLIDE 2",
     {}),
]  # fmt: skip


@pytest.mark.parametrize("text,params", SLIDING_QUERIES, ids=[q for q, _ in SLIDING_QUERIES])
@settings(SETTINGS, max_examples=1)
@given(batch=cases)
def test_sliding_windows_blocks_equal_copies(spark, text, params, batch):
    df, per_case = _frame(spark, batch)
    compiled = cetql.compile(detection_with_case(text), params)
    windows = compiled.execution(df, id_col="id").plan.logical.root.child.child
    assert windows.sharing.choice == "blocks" and windows.shared_graph == text.startswith("PATTERN Check+")
    assert compiled.execution(df, id_col="id", sharing="copy").plan.logical.root.child.child.sharing.choice == "copy"
    want = _reference(text, per_case, params, "COMPLETE")
    assert _spark_trends(df, text, params, "local", "COMPLETE") == want
    assert _spark_trends(df, text, params, "local", "COMPLETE", sharing="copy") == want


# ------------------------------------------------------------------ worked examples


def _events(spark, rows, schema):
    return spark.createDataFrame(rows, schema)


def test_semantics_worked_examples(spark):
    df = _events(spark, [(1, 1, "A", "B"), (2, 2, "B", "C"), (3, 3, "B", "D"), (4, 4, "D", "E")],
                 "id long, ts long, src string, dst string")  # fmt: skip
    q = cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10")
    for strategy in ("local", "distributed"):
        assert sorted(tuple(r.events) for r in q.run(df, id_col="id", strategy=strategy).collect()) == [
            (1, 2),
            (1, 3, 4),
        ]
    prices = _events(spark, [(1, 1, 1.0), (2, 2, 2.0), (3, 3, 3.0)], "id long, ts long, price double")
    q = "PATTERN S+ s[] WHERE s.price < NEXT(s).price WITHIN 10"
    assert sorted(tuple(r.events) for r in spark.cet(q, prices, id_col="id").collect()) == [(1, 2, 3), (1, 3)]
    got = spark.cet(q + " TRENDS MAXIMAL", prices, id_col="id", strategy="distributed").collect()
    assert [tuple(r.events) for r in got] == [(1, 2, 3)]


def test_abi_figure_2(spark):
    # Three accounts, six checks; a stream consistent with ABI Fig. 2, whose
    # CETs the paper lists: (c1,c2,c6), (c1,c3,c5,c6), (c1,c3,c4).  Q1 slides a
    # week-long window by a day, so the six checks (seconds apart) fall in 7.
    rows = [
        (k + 1, dt.datetime(2024, 1, 1, 0, 0, k + 1), s, d, "not covered")
        for k, (s, d) in enumerate(zip("ABBAAC", "BCABCA"))
    ]
    df = spark.createDataFrame(rows, "id long, ts timestamp, src string, dest string, type string")
    q = cetql.compile((Path(__file__).resolve().parents[2] / "examples/queries/abi_q1_kiting.cet").read_text())
    by_window: dict = {}
    for r in q.run(df, id_col="id").collect():
        by_window.setdefault(r.window_start, set()).add(tuple(r.events))
    assert len(by_window) == 7
    assert all(trends == {(1, 2, 6), (1, 3, 4), (1, 3, 5, 6)} for trends in by_window.values())


def test_cet_table_1(spark):
    # CET (SIGMOD'17) Table 1: c1 A→B, c2 B→C, c3 B→D, c4 D→E under Q1 gives
    # (c1, c2) and (c1, c3, c4); (c4) alone is eliminated as incomplete.
    rows = [(k + 1, k + 1, s, d, "notcovered") for k, (s, d) in enumerate(zip("ABBD", "BCDE"))]
    df = _events(spark, rows, "id long, ts long, source string, destination string, type string")
    text = "PATTERN Check+ c[] WHERE c.type = 'notcovered' AND c.destination = NEXT(c).source WITHIN 1 day"
    got = sorted(tuple(r.events) for r in spark.cet(text, df, id_col="id").collect())
    assert got == [(1, 2), (1, 3, 4)]


def test_timestamp_windows_and_output_schema(spark):
    t0 = dt.datetime(2026, 1, 1, 0, 0, 0)
    rows = [(k, t0 + dt.timedelta(seconds=30 * k), float(p)) for k, p in enumerate([1, 2, 3, 1, 5])]
    df = spark.createDataFrame(rows, "id long, ts timestamp, price double")
    out = spark.cet("PATTERN S+ s[] WHERE s.price < NEXT(s).price WITHIN 1 minute SLIDE 30 s", df, id_col="id")
    assert out.schema.simpleString() == (
        "struct<window_start:timestamp,window_end:timestamp,events:array<bigint>,length:int>"
    )
    got = sorted((r.window_start, tuple(r.events)) for r in out.collect())
    w = lambda s: t0 + dt.timedelta(seconds=s)  # noqa: E731
    # windows [k*30s, k*30s + 60s): event k sits at 30k s
    assert got == [
        (w(-30), (0,)),
        (w(0), (0, 1)),
        (w(30), (1, 2)),
        (w(60), (2,)),
        (w(60), (3,)),
        (w(90), (3, 4)),
        (w(120), (4,)),
    ]


def test_rows_option_carries_the_events(spark):
    df = _events(spark, [(1, 1, "A", "B"), (2, 2, "B", "C")], "id long, ts long, src string, dst string")
    out = spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", df, id_col="id", with_rows=True)
    (r,) = out.collect()
    assert [x.src + x.dst for x in r.rows] == ["AB", "BC"]
    (r,) = spark.cet(
        "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10",
        df,
        id_col="id",
        with_rows=True,
        strategy="distributed",
    ).collect()
    assert [x.src + x.dst for x in r.rows] == ["AB", "BC"]


def test_derived_ids_follow_input_order(spark):
    df = _events(spark, [(1, "A", "B"), (2, "B", "C")], "ts long, src string, dst string").coalesce(1)
    (r,) = spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", df).collect()
    assert list(r.events) == [0, 1]


def test_missing_column_is_named_before_spark_runs(spark):
    df = _events(spark, [(1, 1, "A")], "id long, ts long, src string")
    with pytest.raises(cetql.SchemaError, match=r"column 'dst' \(c\[i-1\]\.dst, 1:37\) is not in the input"):
        spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", df)


def test_null_time_fails_the_query(spark):
    df = _events(spark, [(1, None, "A", "B"), (2, 2, "B", "C")], "id long, ts long, src string, dst string")
    out = spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", df, id_col="id")
    with pytest.raises(Exception, match="time column 'ts' is null, NaN or infinite"):
        out.collect()


def test_nulls_make_predicates_false(spark):
    df = _events(spark, [(1, 1, 1.0), (2, 2, None), (3, 3, 3.0)], "id long, ts long, price double")
    got = sorted(tuple(r.events) for r in spark.cet("PATTERN S+ s[] WHERE s[i].price > s[i-1].price WITHIN 10", df,
                                                    id_col="id").collect())  # fmt: skip
    assert got == [(1, 3), (2,)]


def test_typed_sources(spark):
    a = _events(spark, [(1, 1, 5.0), (4, 4, 1.0)], "id long, ts long, x double")
    b = _events(spark, [(2, 2, 1.0), (3, 3, 2.0)], "id long, ts long, x double")
    out = spark.cet("PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x WITHIN 10", {"A": a, "B": b}, id_col="id")
    # (1, 3) is complete (nothing can be prepended or appended) but not maximal
    assert sorted(tuple(r.events) for r in out.collect()) == [(1, 2, 3), (1, 3)]
    out = spark.cet(
        "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x WITHIN 10 TRENDS MAXIMAL", {"A": a, "B": b}, id_col="id"
    )
    assert sorted(tuple(r.events) for r in out.collect()) == [(1, 2, 3)]
    with pytest.raises(cetql.CetqlError, match="type\\(s\\) C that the pattern does not use"):
        spark.cet("PATTERN SEQ(A a, B+ b[]) WITHIN 10", {"A": a, "C": b})


def test_aggregation_over_maximal_trends_is_refused_clearly(spark):
    df = _events(spark, [(1, 1)], "id long, ts long")
    with pytest.raises(cetql.CetqlError, match="aggregates are over ALL or COMPLETE trends, not MAXIMAL"):
        spark.cet("RETURN COUNT(*) PATTERN A+ WITHIN 10", df, trends="maximal")


def test_distributed_runs_seq_patterns_as_local_does(spark):
    """A SEQ runs as template runs (`spark.runs`); test_distributed.py checks every pattern class."""
    df = _events(spark, [(1, 1, 1.0), (2, 2, 3.0), (3, 3, 2.0), (4, 4, 5.0)], "id long, ts long, rate double")
    text = "PATTERN SEQ(Activity a, Activity+ b[]) WHERE a.rate < b.rate WITHIN 10"
    got = {strategy: sorted(tuple(r["events"]) for r in spark.cet(text, df, id_col="id", strategy=strategy).collect())
           for strategy in ("local", "distributed")}  # fmt: skip
    assert got["distributed"] == got["local"] == [(1, 2, 3, 4), (1, 2, 4), (1, 3, 4), (1, 4)]  # inserting is not appending


def test_graphframes_prefilter_is_the_plans_choice(spark):
    """The distributed pre-filter uses GraphFrames' degrees only where the plan
    saw its JVM package on the session's classpath, and says so either way;
    where it runs (it cannot be downloaded here), its flags are the ABI
    pre-filter's."""
    from cetql.backends.spark.distributed import SNK, SRC, prefilter
    from cetql.backends.spark.resources import session_resources
    from cetql.planner.logical.plan import Prefilter, Resources

    text = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
    q = cetql.compile(text, strategy="distributed")
    assert q.plan.root.prefilter == Prefilter.EQUAL
    assert "GraphFrames' JVM package is not on the classpath" in q.plan.logical.root.prefilter.reason
    wanted = cetql.compile(text, strategy="distributed", resources=Resources(graphframes=True))
    assert wanted.plan.root.prefilter == Prefilter.GRAPHFRAMES
    if not session_resources(spark).graphframes:
        return  # the rest needs the JVM package
    df = _events(spark, [(1, 1, "A", "B"), (2, 2, "B", "C"), (3, 3, "B", "D"), (4, 4, "D", "E")],
                 "id long, ts long, src string, dst string")  # fmt: skip
    execution = q.execution(df, spark=spark, id_col="id")
    from cetql.backends.spark.compiler import kernel_input

    ev = kernel_input(execution.plan, execution.inputs)
    flags = [sorted(prefilter(m, execution.spec, ev).select("__id", SRC, SNK).collect())
             for m in (Prefilter.GRAPHFRAMES, Prefilter.EQUAL)]  # fmt: skip
    assert flags[0] == flags[1]


def test_table_and_view_inputs(spark):
    df = _events(spark, [(1, 1, "A", "B"), (2, 2, "B", "C")], "id long, ts long, src string, dst string")
    df.createOrReplaceTempView("checks_view")
    out = cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10").run("checks_view", id_col="id")
    assert [tuple(r.events) for r in out.collect()] == [(1, 2)]
    with pytest.raises(cetql.CetqlError, match="neither a file nor a table or view"):
        cetql.compile("PATTERN A+ WITHIN 10").run("no_such_view")


def test_cli_run_prints_and_writes(spark, tmp_path, capsys):
    from cetql.surfaces.cli.main import main

    csv = tmp_path / "checks.csv"
    csv.write_text("id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,B,D\n4,4,D,E\n")
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10")
    assert main(["run", str(q), "--input", str(csv), "--id-col", "id", "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "2 trends" in out and "A → B → D → E" in out  # the chain of accounts of trend (1, 3, 4)
    assert main(["run", str(q), "--input", str(csv), "--id-col", "id"]) == 0  # piped: CSV, the summary on stderr
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["window_start,window_end,events,length", "0,10,1;2,2", "0,10,1;3;4,3"]
    assert captured.err.startswith("2 trends")
    for fmt in ("parquet", "json", "csv"):
        dest = tmp_path / f"out-{fmt}"
        assert main(["run", str(q), "--input", str(csv), "--id-col", "id", "--output", str(dest), "--format", fmt]) == 0
        back = (
            sorted(r.events for r in spark.read.format(fmt).option("header", False).load(str(dest)).collect())
            if fmt != "csv"
            else None
        )
        if fmt == "parquet":
            assert [list(x) for x in back] == [[1, 2], [1, 3, 4]]
    assert "wrote 2 trends" in capsys.readouterr().out
    # typed inputs and an unknown type
    assert main(["run", str(q), "--input", f"Check={csv}", "--id-col", "id"]) == 0
    capsys.readouterr()
    assert main(["run", str(q), "--input", f"Debit={csv}"]) == 2
    assert "type(s) Debit that the pattern does not use" in capsys.readouterr().err


def test_cli_null_time_is_counted(spark, tmp_path, capsys):
    from cetql.surfaces.cli.main import main

    csv = tmp_path / "checks.csv"
    csv.write_text("id,ts,src,dst\n1,,A,B\n2,2,B,C\n3,,B,D\n")
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10")
    assert main(["run", str(q), "--input", str(csv), "--id-col", "id"]) == 1
    err = capsys.readouterr().err
    assert "time column 'ts': 2 row(s) have no time (null, NaN or infinite)" in err
    assert "Traceback" not in err


def test_compile_explain_plans_for_the_input(tmp_path, capsys):
    from cetql.surfaces.cli.main import main

    csv = tmp_path / "checks.csv"
    csv.write_text("id,ts,src,dst\n1,1,A,B\n")
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10")
    assert main(["compile", str(q), "--explain", "--input", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "a single-type stream" in out and "time ts (numeric)" in out


def test_cet_figure_2(spark):
    # CET (SIGMOD'17) Fig. 2 lists (c1, c2), (c1, c4, c5, c7), (c1, c4, c6) under
    # Q1, with a cash withdrawal w3 in the stream.  A stream consistent with it:
    rows = [
        (1, 1, "A", "B", "notcovered"),
        (2, 2, "B", "C", "notcovered"),
        (3, 3, "A", None, "withdrawal"),  # w3: not a check, filtered by the vertex predicate
        (4, 4, "B", "D", "notcovered"),
        (5, 5, "D", "E", "notcovered"),
        (6, 6, "D", "F", "notcovered"),
        (7, 7, "E", "G", "notcovered"),
    ]
    df = _events(spark, rows, "id long, ts long, source string, destination string, type string")
    text = (Path(__file__).resolve().parents[2] / "examples/queries/cet_q1_kiting.cet").read_text()
    by_window: dict = {}
    for r in cetql.compile(text).run(df, id_col="id").collect():
        by_window.setdefault(r.window_start, set()).add(tuple(r.events))
    assert by_window and all(t == {(1, 2), (1, 4, 5, 7), (1, 4, 6)} for t in by_window.values())


def test_empty_inputs_give_no_rows(spark, tmp_path):
    csv = tmp_path / "empty.csv"
    csv.write_text("id,ts,src,dst\n")
    assert cetql.compile("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10").run(str(csv)).count() == 0
    assert cetql.compile("RETURN COUNT(*) PATTERN A+ WHERE A.src < NEXT(A).src WITHIN 10").run(str(csv)).count() == 0
    empty = spark.createDataFrame([], "id long, ts long, src string, dst string")
    for strategy in ("local", "distributed"):
        assert (
            spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", empty, strategy=strategy).count() == 0
        )
