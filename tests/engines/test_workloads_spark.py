"""A workload on Spark and on a stream returns, for each query, exactly
the rows that query returns alone (SEMANTICS.md, Engines and workloads):
generated workloads (as in test_workloads) run on Spark — one exchange,
one mapInArrow for the queries that share it — against each query run
alone (on the embedded engine: the parity tests hold both engines to the
same rows and file schema); generated workloads and a fixed one on a
stream (`cetql run q1.cet q2.cet … --stream`) against each query alone."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from engines import footer, rows, write_inputs
from generators import stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from test_workloads import valid
from workloads import alone, compiled, run_workload_to, workloads

from cetql.base.options import Engine

SETTINGS = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip
SPARK_META = b"org.apache.spark.sql.parquet.row.metadata"


@SETTINGS
@given(st.data(), st.booleans())
def test_each_query_of_a_workload_on_spark_gives_its_rows_alone(spark, data, typed):
    texts = data.draw(workloads(typed, detection=True))
    events = data.draw(stream(typed, max_size=14).filter(lambda evs: len(evs) >= 3))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        given_data, by_type = write_inputs(folder, events, typed, False, "parquet")
        texts = valid(texts, given_data, by_type)
        assume(len(texts) >= 2)
        cw = compiled(texts, given_data, by_type, engine=Engine.SPARK, id_col="id")
        done = run_workload_to(folder / "shared", cw, given_data, by_type, spark=spark)
        apart = alone(folder, texts, given_data, by_type, Engine.EMBEDDED, id_col="id")
        for name, (want, want_footer) in apart.items():
            got_footer = footer(done[name])
            assert got_footer.remove_metadata() == want_footer.remove_metadata(), (name, texts[name])
            assert json.loads(got_footer.metadata[SPARK_META]) == json.loads(want_footer.metadata[SPARK_META])
            assert rows(done[name]) == want, (name, texts[name], cw.explain(as_string=True))


STREAMED = {
    "ab": "PATTERN SEQ(Stock a, Stock b) WHERE a.type = 'A' AND a.k = 'u' AND b.type = 'B' AGG COUNT(*) WITHIN 6 SLIDE 3",
    "abc": "PATTERN SEQ(Stock a, Stock b, !Stock n, Stock c) WHERE a.type = 'A' AND a.k = 'u' AND b.type = 'B' AND "
           "n.type = 'C' AND c.type = 'A' AGG COUNT(*) WITHIN 6 SLIDE 3",
    "rise": "PATTERN Stock+ a[] WHERE a.type = 'A' AND a[i].x > a[i-1].x WITHIN 6 SLIDE 3",
    # one shared GRETA propagation (the B → B edge), heads and aggregates of their own
    "sums": "RETURN SUM(b.x) PATTERN SEQ(Stock a, Stock+ b[]) WHERE a.type = 'A' AND b.type = 'B' AND "
            "b[i].x > b[i-1].x WITHIN 6 SLIDE 3",
    "maxes": "RETURN MAX(b.x), COUNT(*) PATTERN SEQ(Stock a, Stock+ b[]) WHERE a.type = 'C' AND b.type = 'B' AND "
             "b[i].x > b[i-1].x WITHIN 6 SLIDE 3",
}


def test_a_workload_on_a_stream_writes_each_query_its_batch_rows(spark, tmp_path):
    """Five queries on one stream (one streaming query, one checkpoint):
    each query's folder holds exactly the rows it gives alone in batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    events = [{"id": t, "ts": t, "type": "ABC"[t * 7 % 3], "x": t * 5 % 7, "k": "uv"[t % 3 % 2]} for t in range(60)]
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("type", pa.string()), ("x", pa.int64()),
                        ("k", pa.string())])  # fmt: skip
    folder, batch = tmp_path / "in", tmp_path / "batch"
    folder.mkdir()
    batch.mkdir()
    pq.write_table(pa.Table.from_pylist(events[:30], schema=schema), folder / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(events[30:], schema=schema), folder / "part-1.parquet")
    # moves the watermark past every window, though no query takes it (a type none reads, a null key)
    flush = {"id": 10**6, "ts": 10**6, "type": "D", "x": 0, "k": None}
    pq.write_table(pa.Table.from_pylist([flush], schema=schema), folder / "part-2.parquet")
    pq.write_table(pa.Table.from_pylist(events, schema=schema), batch / "all.parquet")
    assert run_stream_workload(spark, tmp_path, STREAMED, folder) == 0
    for name, text in STREAMED.items():
        want = rows(run_to_embedded(tmp_path / f"alone-{name}", text, str(batch / "all.parquet")))
        assert want and streamed_rows(tmp_path / "out" / name) == want, name


@settings(SETTINGS, max_examples=3)
@given(st.data())
def test_each_query_of_a_generated_workload_on_a_stream_gives_its_rows_alone(spark, data):
    """Generated workloads (as on the embedded engine) on one stream: the
    events in one file, then one far later that moves the watermark past
    every window they are in — one no query takes (its values null: no
    condition holds, no key), which moves time on all the same; each query's
    rows are those it gives alone."""
    texts = data.draw(workloads(False, detection=True))
    events = data.draw(stream(False, max_size=14).filter(lambda evs: len(evs) >= 3))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        given_data, _ = write_inputs(folder, events, False, False, "parquet")
        texts = valid(texts, given_data, {})
        assume(len(texts) >= 2)
        flush = dict(dict.fromkeys(events[-1]), __type=events[-1]["__type"], ts=10**6, id=len(events))
        for sub, evs in (("in", events), ("later", [flush])):
            (folder / sub).mkdir()
            write_inputs(folder / sub, evs, False, False, "parquet")
        (folder / "later" / "events.parquet").rename(folder / "in" / "later.parquet")
        assert run_stream_workload(spark, folder, texts, folder / "in") == 0
        apart = alone(folder, texts, given_data, {}, Engine.EMBEDDED, id_col="id")
        for name, (want, _) in apart.items():
            assert streamed_rows(folder / "out" / name) == want, (name, texts[name])


def run_stream_workload(spark, folder: Path, texts: dict, stream_in: Path) -> int:
    """`cetql run q1.cet … --stream --input STREAM_IN --output folder/out`
    until idle, the session's stream settings as they were before."""
    from cetql.backends.spark.streaming import PROVIDER
    from cetql.surfaces.cli.main import main
    from cetql.surfaces.cli.stream import CHANGELOG

    files = []
    for name, text in texts.items():
        (folder / f"{name}.cet").write_text(text)
        files.append(str(folder / f"{name}.cet"))
    before = {k: spark.conf.get(k, None) for k in (PROVIDER, CHANGELOG)}
    try:
        return main(["run", *files, "--stream", "--input", str(stream_in), "--id-col", "id", "--output",
                     str(folder / "out"), "--checkpoint", str(folder / "ck"), "--until-idle", "3"])  # fmt: skip
    finally:
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def streamed_rows(folder: Path) -> list:
    """A query's rows written by the stream (none: no folder written)."""
    return rows(folder) if any(folder.glob("part-*")) else []


def run_to_embedded(folder: Path, text: str, data: str) -> Path:
    from engines import run_to

    return run_to(folder, text, data, {}, Engine.EMBEDDED, id_col="id")


def test_the_repl_holds_queries_and_runs_them_as_one_workload(spark):
    """`:add` holds queries by name, `:workload explain` says what they
    share, `:workload run` prints each under its name, as alone."""
    import io

    from cetql.surfaces.repl import Shell

    checks = Path(__file__).resolve().parents[2] / "examples" / "data" / "checks.csv"
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(out=out, err=err, limit=0)
    shell._spark = spark
    count = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50 AGG COUNT(*)"
    for entry in (f":input {checks}", f"{count};", ":add kite", ":add pairs PATTERN SEQ(Check a, Check b) WHERE "
                  "a.type = 'notcovered' AGG COUNT(*) WITHIN 100 SLIDE 50", ":workload", ":workload explain",
                  ":workload run"):  # fmt: skip
        shell.handle(entry)
    text = out.getvalue()
    assert not err.getvalue().strip() or "Traceback" not in err.getvalue()
    assert "held 2: kite, pairs" in text and "workload of 2 queries: 2 of them shared" in text
    alone = text.split("answered in")[0]
    workload = text.split("== kite ==")[1].split("== pairs ==")[0]
    assert [line for line in alone.splitlines() if line.startswith("│")] == \
        [line for line in workload.splitlines() if line.startswith("│")]  # fmt: skip
    assert "answered 2 queries in" in text and workload.count("│") > 10, text


def test_spark_cet_takes_a_workload_and_returns_a_dataframe_a_query(spark):
    import cetql

    cetql.install(spark)
    checks = str(Path(__file__).resolve().parents[2] / "examples" / "data" / "checks.csv")
    texts = {"kite": "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50 AGG COUNT(*)",
             "pairs": "PATTERN SEQ(Check a, Check b) WHERE a.type = 'notcovered' AGG COUNT(*) WITHIN 100 SLIDE 50"}  # fmt: skip
    frames = spark.cet(texts, checks, id_col="id")
    try:
        assert list(frames) == ["kite", "pairs"] and frames.plan.groups
        for name, text in texts.items():
            alone = spark.cet(text, checks, id_col="id")
            assert frames[name].schema == alone.schema
            assert sorted(frames[name].collect()) == sorted(alone.collect())
    finally:
        frames.unpersist()


def test_cetql_run_of_a_workload_on_spark_writes_each_query_its_rows(spark, tmp_path, capsys):
    """`cetql run examples/workload.cetw --engine spark --output DIR`: each
    DIR/<name> holds what the embedded engine writes for it."""
    from cetql.surfaces.cli.main import main

    root = Path(__file__).resolve().parents[2]
    base = ["run", str(root / "examples" / "workload.cetw"), "--input", str(root / "examples" / "data" / "stock.csv"),
            "--id-col", "id"]  # fmt: skip
    assert main([*base, "--engine", "spark", "--no-serve", "--output", str(tmp_path / "spark")]) == 0
    assert main([*base, "--engine", "embedded", "--output", str(tmp_path / "embedded")]) == 0
    said = capsys.readouterr().out
    for name in ("up", "down", "rising"):
        assert f"{name}: wrote" in said
        assert rows(tmp_path / "spark" / name) == rows(tmp_path / "embedded" / name), name
        assert footer(tmp_path / "spark" / name).remove_metadata() == footer(tmp_path / "embedded" / name).remove_metadata()


def test_a_workload_stopped_part_way_says_what_was_written(spark, tmp_path, capsys):
    """A Spark workload whose second query fails as it is written (its guard):
    the first query's result is in place, whole, and the run says which
    queries' results are there and which are not, before the error."""
    from cetql.surfaces.cli.main import main

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "agg.cet").write_text("RETURN sym, COUNT(*) PATTERN Stock+ s[] WHERE [sym] GROUP-BY sym WITHIN 100")
    (tmp_path / "det.cet").write_text("PATTERN Stock+ s[] WITHIN 100")
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "agg.cet"), str(tmp_path / "det.cet"), "--input",
                 str(root / "examples" / "data" / "stock.csv"), "--id-col", "id", "--max-trends", "10",
                 "--engine", "spark", "--no-serve", "--output", str(out)]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert f"the workload stopped: agg written ({out / 'agg'}); det not written" in err, err
    assert err.index("the workload stopped") < err.index("more than --max-trends 10")
    assert sorted(p.name for p in out.iterdir()) == ["agg"] and rows(out / "agg")


def test_chopped_queries_on_spark_give_their_rows_alone(spark, tmp_path):
    """Chop-Connect's spec (suffix counters, chops) reaches Spark's
    mapInArrow: two queries sharing a suffix of three positions."""
    events = [{"ts": t // 2, "__type": "ABC"[t * 7 % 3], "x": t % 4, "g": "gh"[t % 2], "k": "uv"[t % 3 % 2], "id": t}
              for t in range(40)]  # fmt: skip
    texts = {"a": "PATTERN SEQ(A a, B b, !A n, C c, B d) WHERE n.x = 3 AND [g] AGG COUNT(*) WITHIN 8 SLIDE 4",
             "c": "PATTERN SEQ(C a, B b, !A n, C c, B d) WHERE n.x = 3 AND [g] AGG COUNT(*) WITHIN 8 SLIDE 4"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    cw = compiled(texts, data, by_type, engine=Engine.SPARK, id_col="id")
    assert [len(t.chops) for ex in cw.plan.groups[0].exchanges for t in ex.trees] == [2]
    done = run_workload_to(tmp_path / "shared", cw, data, by_type, spark=spark)
    apart = alone(tmp_path, texts, data, by_type, Engine.EMBEDDED, id_col="id")
    for name, (want, _) in apart.items():
        assert any(r["COUNT(*)"] for r in want) and rows(done[name]) == want, name
