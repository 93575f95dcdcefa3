"""Streams on Spark: the same queries over a folder that receives files,
each window answered once when the watermark passes its end.

Spark streams are slow to start and each micro-batch commits its state, so
a test runs one streaming query: several random queries side by side (each
output row as JSON text, tagged with its query), many random streams
through each (the case id is one more equivalence attribute, and a GROUP-BY
column for aggregation).  Files are the micro-batches (one per trigger, in
order); a last file with one far-future event moves the watermark past
every window of the data.

- streaming rows = batch rows on the same data (the very JSON text) = the
  reference (`tests/support/reference.py`, by definition);
- every (query, case, window) is written by one micro-batch;
- events behind the watermark are counted in the progress, dropped, and
  the windows already written are as they were: equal to batch on the
  events that were not late.

Also on Spark Connect (a local server in a subprocess: this process holds
the suite's classic session), and the CLI's own runs (printing, a refused
window) in test_streaming_cli.py.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cases import aggregation_with_case, detection_with_case
from generators import SLIDING, WINDOWS, queries, stream
from harness import plan_for
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates, reference_trends

import cetql
from cetql.backends.spark.streaming import PROVIDER, ROCKSDB
from cetql.base.errors import QueryError, UsageError
from cetql.base.options import RunOptions
from cetql.kernels.stream import OFFSET
from cetql.language.printer import aggregate_to_text
from cetql.surfaces.cli.stream import CHANGELOG, metrics

ONCE = settings(
    max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)
SCHEMA = pa.schema([("case", pa.int64()), ("id", pa.int64()), ("ts", pa.int64()), ("x", pa.int64()),
                    ("g", pa.string()), ("k", pa.string()), ("at", pa.timestamp("us", tz="UTC"))])  # fmt: skip
DDL = "case long, id long, ts long, x long, g string, k string, at timestamp"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# moves the watermark past every window, though no query takes it: its case (a key of every query) is null
FLUSH = {"case": None, "id": 10**9, "ts": 10**6, "x": 0, "g": "g", "k": "u"}


@pytest.fixture(scope="module")
def streams(spark):
    """The suite's session with the state store streams need."""
    before = {k: spark.conf.get(k, None) for k in (PROVIDER, CHANGELOG)}
    spark.conf.set(PROVIDER, ROCKSDB)
    spark.conf.set(CHANGELOG, "true")
    yield spark
    for k, v in before.items():
        spark.conf.unset(k) if v is None else spark.conf.set(k, v)


# ---------------------------------------------------------------- helpers


def write_files(folder: Path, batches: list[list[dict]]) -> None:
    """One Parquet file per micro-batch, oldest first."""
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time() - 10_000
    for i, events in enumerate(batches):
        path = folder / f"part-{i:04d}.parquet"
        pq.write_table(pa.Table.from_pylist([row(e) for e in events], SCHEMA), path)
        os.utime(path, (now + i, now + i))


def row(e: dict) -> dict:
    """An event with its time also as a timestamp (`at`: ts seconds after the epoch)."""
    return {**e, "at": EPOCH + dt.timedelta(seconds=e["ts"])}


def frame(spark, events: list[dict]):
    return spark.createDataFrame([tuple(row(e)[c] for c in SCHEMA.names) for e in events], DDL)


def side_by_side(outputs: list) -> object:
    """Several streaming results as one: (q, the row as JSON text)."""
    from pyspark.sql import functions as F

    tagged = [o.select(F.lit(i).alias("q"), F.to_json(F.struct(*[F.col(f"`{c}`") for c in o.columns])).alias("row"))
              for i, o in enumerate(outputs)]  # fmt: skip
    out = tagged[0]
    for t in tagged[1:]:
        out = out.unionByName(t)
    return out


def run_to_end(df, folder: Path):
    """Run until every file is read, then read back: ([(batch, q, row)],
    progress of each micro-batch)."""
    query = (
        df.writeStream.format("parquet").option("path", str(folder / "out"))
        .option("checkpointLocation", str(folder / "checkpoint")).trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    return written(folder / "out"), list(query.recentProgress)


def written(out: Path) -> list[tuple[int, int, str]]:
    """(micro-batch, q, row) of every row a file sink committed."""
    rows = []
    for log in sorted((out / "_spark_metadata").iterdir()):
        if not log.name.isdigit():
            continue
        for line in log.read_text().splitlines()[1:]:
            path = json.loads(line)["path"].removeprefix("file:")
            rows += [(int(log.name), r["q"], r["row"]) for r in pq.read_table(path).to_pylist()]
    return rows


def micro_batches(rnd: random.Random, events: list[dict], disorder: float, n: int) -> list[list[dict]]:
    arrival = sorted(events, key=lambda e: e["ts"] + rnd.uniform(0, disorder))
    cuts = sorted(rnd.sample(range(1, len(arrival)), n - 1))
    return [arrival[a:z] for a, z in zip([0, *cuts], [*cuts, len(arrival)])]


def late_events(batches: list[list[dict]], delay: int) -> set[int]:
    """Ids of the events at or behind the watermark of their micro-batch, as
    Spark moves it: the largest event time of the earlier micro-batches
    (on the clock: milliseconds from OFFSET) minus the delay."""
    late, watermark, latest = set(), 0, None
    for batch in batches:
        late |= {e["id"] for e in batch if e["ts"] * 1000 + OFFSET <= watermark}
        if batch:
            latest = max([latest or 0, *(e["ts"] * 1000 + OFFSET for e in batch)])
            watermark = max(watermark, latest - delay * 1000)
    return late


def once_per_window(rows, keys_of) -> None:
    """Each (query, window, group) comes from one micro-batch."""
    batches: dict = {}
    for batch, q, row in rows:
        batches.setdefault((q, *keys_of(q, json.loads(row))), set()).add(batch)
    twice = {k: b for k, b in batches.items() if len(b) > 1}
    assert not twice, f"windows written by more than one micro-batch: {twice}"


# ---------------------------------------------------------------- the differential test


def draw_queries(data) -> list[tuple[str, str, dict]]:
    """(query as written, with the case key, options): a detection query
    (any trend set) and an aggregation query, over tumbling, copied or
    blocked windows."""
    out = []
    for aggregation in (False, True):
        text = data.draw(queries(aggregation, repeated_types=True, windows=WINDOWS + SLIDING[:2]))
        options = {"max_trends": 0}
        if not aggregation:
            options["trends"] = data.draw(st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]))
        with_case = (aggregation_with_case if aggregation else detection_with_case)(text)
        try:
            plan_for(with_case, options=RunOptions.of(**options), columns=SCHEMA.names)  # a single-type stream
        except (QueryError, UsageError):
            assume(False)
        out.append((text, with_case, options))
    return out


def draw_cases(data, n: int) -> list[list[dict]]:
    events, next_id = [], 0
    for case in range(n):
        for e in data.draw(stream(False, max_size=7, max_time=20)):
            events.append({"case": case, "id": next_id, "ts": e["ts"], "x": e["x"], "g": e["g"], "k": e["k"]})
            next_id += 1
    return events


def expected(text: str, options: dict, events: list[dict]) -> set:
    """What the reference says, as (case, window start, …) facts."""
    by_case: dict = {}
    for e in events:
        by_case.setdefault(e["case"], []).append(e)
    facts = set()
    for case, evs in by_case.items():
        if "trends" in options:
            for (start, _), trends in reference_trends(text, evs, trend_set=options["trends"]).items():
                facts |= {(case, start, t) for t in trends}
        else:
            for (start, group), values in reference_aggregates(text, evs, typed=False).items():
                facts.add((case, start, group, tuple(sorted((k, _exact(v)) for k, v in values.items()))))
    return facts


def observed(text: str, options: dict, rows: list[dict]) -> set:
    """The same facts from output rows."""
    if "trends" in options:
        return {(r["case"], r["window_start"], tuple(r["events"])) for r in rows}
    q = cetql.parse(text)
    groups = [c.name for c in q.group_by]
    names = [aggregate_to_text(a) for a in q.aggregates]
    return {
        (r["case"], r["window_start"], tuple(r.get(g) for g in groups), tuple(sorted((n, _exact(r.get(n))) for n in names)))
        for r in rows
        if float(r["COUNT(*)"]) != 0  # the reference lists only groups with trends
    }


def _exact(v):
    return None if v is None else round(float(v), 9)


@ONCE
@given(data=st.data())
def test_streams_equal_batch_and_reference(streams, tmp_path_factory, data):
    spark = streams
    folder = tmp_path_factory.mktemp("differential")
    chosen = draw_queries(data)
    events = draw_cases(data, 6)
    assume(len(events) >= 8)
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    batches = micro_batches(rnd, events, disorder=4, n=3)
    write_files(folder / "in", [*batches, [FLUSH]])
    assert not late_events(batches, delay=5)
    source = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(folder / "in"))
    outputs = [spark.cet(with_case, source, id_col="id", watermark=5, **opts) for _, with_case, opts in chosen]
    assert all(o.isStreaming for o in outputs)
    rows, progress = run_to_end(side_by_side(outputs), folder)
    assert sum(metrics(p)["late"] for p in progress) == 0
    static = frame(spark, events)
    for q, (text, with_case, opts) in enumerate(chosen):
        batch = spark.cet(with_case, static, id_col="id", **opts)
        assert outputs[q].schema == batch.schema
        mine = sorted(row for _, i, row in rows if i == q)
        assert mine == sorted(r["row"] for r in side_by_side([batch]).collect()), with_case
        assert observed(text, opts, [json.loads(r) for r in mine]) == expected(text, opts, events), with_case
    once_per_window(rows, lambda q, r: (r["case"], r["window_start"], *([] if "trends" in chosen[q][2] else [r.get("g")])))


# ---------------------------------------------------------------- late data


def test_late_events_are_counted_and_windows_never_change(streams, tmp_path):
    """Events behind the watermark: counted in the progress, dropped; each
    window written once, equal to batch on the events that were in time
    (and not to batch on every event: the late ones would have changed it)."""
    spark = streams
    rnd = random.Random(5)

    def events(ids, times):
        return [{"case": 0, "id": i, "ts": t, "x": rnd.randint(0, 3), "g": rnd.choice("gh"), "k": "u"}
                for i, t in zip(ids, times)]  # fmt: skip

    first = events(range(0, 21), range(0, 21))  # the watermark then stands at 20 - 5 = 15
    late = events([100, 101, 102], [2, 9, 15])  # at or behind it: late, in windows written or not
    in_time = events([103], [16])
    second = events(range(21, 41), range(21, 41))
    batches = [first, [*late, *in_time, *second], events(range(41, 61), range(41, 61))]
    assert late_events(batches, delay=5) == {100, 101, 102}
    write_files(tmp_path / "in", [*batches, [FLUSH]])
    texts = [("RETURN g, COUNT(*), SUM(A.x) PATTERN A+ WHERE [g] AND A.x <= NEXT(A).x GROUP-BY g WITHIN 10", {}),
             ("PATTERN A+ a[] WHERE a[i].x >= a[i-1].x WITHIN 10 seconds SLIDE 5 seconds", {"time_col": "at"})]  # fmt: skip
    source = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    outputs = [spark.cet(t, source, id_col="id", watermark="5 s", **o) for t, o in texts]
    rows, progress = run_to_end(side_by_side(outputs), tmp_path)
    assert [metrics(p)["late"] for p in progress][:3] == [0, 2 * 3, 0]  # each query counts the three once
    kept = [e for b in batches for e in b if e["id"] not in {100, 101, 102}]
    every = [e for b in batches for e in b]
    for q, (text, opts) in enumerate(texts):  # the second on a timestamp column: the same clock
        mine = sorted(r for _, i, r in rows if i == q)
        on_time = side_by_side([spark.cet(text, frame(spark, kept), id_col="id", **opts)])
        assert mine == sorted(r["row"] for r in on_time.collect())
        every_df = side_by_side([spark.cet(text, frame(spark, every), id_col="id", **opts)])
        assert mine != sorted(r["row"] for r in every_df.collect())
    once_per_window(rows, lambda q, r: (r["window_start"], r.get("g")))
    written_in = {json.loads(r)["window_start"]: b for b, q, r in rows if q == 0}
    assert written_in[0] == 1  # [0, 10) closed when the watermark reached 15, before the late events came


# ---------------------------------------------------------------- docs/streams.md


def test_docs_stream_snippet_runs(streams, tmp_path, monkeypatch, capsys):
    """docs/streams.md's Python stream, as written, on the first half of the
    kiting example: the rows of the windows its watermark closed (999 - 10)
    are the batch rows."""
    root = Path(__file__).resolve().parents[2]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", (root / "docs" / "streams.md").read_text(), flags=re.S | re.M)
    (snippet,) = [b for lang, b in blocks if not lang and "readStream" in b and "incoming" in b]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(root / "examples")
    (tmp_path / "incoming").mkdir()
    lines = (root / "examples" / "data" / "checks.csv").read_text().splitlines()
    (tmp_path / "incoming" / "checks-1.csv").write_text("\n".join(lines[:1001]) + "\n")
    for name in ("incoming", "chains.ckpt", "chains"):  # Spark's JVM resolves paths from where it started
        snippet = snippet.replace(f'"{name}"', f'"{tmp_path / name}"')
    scope: dict = {}
    exec(compile(snippet, "docs/streams.md", "exec"), scope)
    scope["query"].stop()
    assert "windows=" in capsys.readouterr().out
    got = sorted((r["window_start"], tuple(r["events"])) for r in streams.read.parquet(str(tmp_path / "chains")).collect())
    checks = streams.read.option("header", True).schema("ts long, id long, src string, dst string, type string").csv(
        str(tmp_path / "incoming"))
    batch = streams.cet(open("examples/kiting.cet").read(), checks, id_col="id").filter("window_end <= 989")
    assert got and got == sorted((r["window_start"], tuple(r["events"])) for r in batch.collect())


# ---------------------------------------------------------------- refusals


def test_a_session_without_rocksdb_is_told_the_setting(spark, tmp_path):
    write_files(tmp_path / "in", [[FLUSH]])
    before = spark.conf.get(PROVIDER, None)
    spark.conf.unset(PROVIDER)
    try:
        source = spark.readStream.schema(DDL).parquet(str(tmp_path / "in"))
        with pytest.raises(UsageError, match=f"{PROVIDER}={ROCKSDB}"):
            spark.cet("RETURN COUNT(*) PATTERN A+ WITHIN 10", source)
    finally:
        if before is not None:
            spark.conf.set(PROVIDER, before)


def test_what_a_stream_cannot_run_is_refused(streams, tmp_path):
    write_files(tmp_path / "in", [[FLUSH]])
    source = streams.readStream.schema(DDL).parquet(str(tmp_path / "in"))
    with pytest.raises(UsageError, match="needs an id column"):
        streams.cet("PATTERN A+ WITHIN 10", source)
    with pytest.raises(UsageError, match="distributed"):
        streams.cet("PATTERN A+ WITHIN 10", source, id_col="id", strategy="distributed")
    with pytest.raises(UsageError, match="watermark"):
        streams.cet("RETURN COUNT(*) PATTERN A+ WITHIN 10", source, watermark="soon")
    static = frame(streams, [FLUSH])
    with pytest.raises(UsageError, match="for streaming inputs"):
        streams.cet("RETURN COUNT(*) PATTERN A+ WITHIN 10", static, watermark="5 s")


def test_a_stream_with_a_watermark_of_its_own_is_refused_with_the_delay_to_give(streams, tmp_path):
    """withWatermark on the input: Spark would hold the operator to the
    lower of its watermark and cetql's (whose clock starts 2^50 ms later),
    so no window would close; refused when planned, saying what to give."""
    from pyspark.sql.connect import plan as P

    from cetql.backends.spark.streaming import _watermark_in_plan

    write_files(tmp_path / "in", [[FLUSH]])
    source = streams.readStream.schema(DDL).parquet(str(tmp_path / "in"))
    text = "RETURN COUNT(*) PATTERN A+ WITHIN 10 seconds"
    with pytest.raises(UsageError, match=r"withWatermark on 'at', 2\.5 s\).*watermark='2\.5 s'"):
        streams.cet(text, source.withWatermark("at", "2500 milliseconds"), time_col="at")
    with pytest.raises(UsageError, match=r"withWatermark\);.*watermark=DELAY"):  # its column no longer selected
        streams.cet("RETURN COUNT(*) PATTERN A+ WITHIN 10", source.withWatermark("at", "1 minute").drop("at"))
    assert streams.cet(text, source, time_col="at", watermark="2.5 s").isStreaming
    # on Spark Connect the client's plan says it (a join's or a union's other side too)
    assert _watermark_in_plan(SimpleNamespace(_plan=P.SetOperation(P.Read("a"), P.WithWatermark(P.Read("b"), "at", "1 s"), "union")))
    assert not _watermark_in_plan(SimpleNamespace(_plan=P.Project(P.Read("a"), [])))


def test_a_stream_has_the_batch_schema_for_every_kind_of_window(streams, tmp_path):
    """Tumbling, copied and blocked windows (a stream keys them all by
    blocks), detection and aggregation: the streaming DataFrame's schema is
    the batch one, nullability included (no job runs)."""
    write_files(tmp_path / "in", [[FLUSH]])
    source = streams.readStream.schema(DDL).parquet(str(tmp_path / "in"))
    static = frame(streams, [FLUSH])
    for window in ("WITHIN 9", "WITHIN 6 SLIDE 3", "WITHIN 9 SLIDE 3"):
        for text in (f"PATTERN A+ a[] WHERE [k] {window}", f"RETURN g, COUNT(*) PATTERN A+ WHERE [g] GROUP-BY g {window}"):
            assert streams.cet(text, source, id_col="id").schema == streams.cet(text, static, id_col="id").schema, text


def test_explain_prints_the_stream_plan_that_runs(streams, tmp_path, monkeypatch, capsys):
    """`cetql compile --stream --explain` on a folder prints the physical
    plan a stream of that folder runs — the stateful operator with its key,
    clock, watermark, state, timers and late-event policy — field for field,
    and its JSON reads back as the very plan."""
    from cetql.backends.spark import resources as spark_resources
    from cetql.planner.physical.data import from_data, to_data
    from cetql.surfaces.cli.main import main
    from cetql.surfaces.cli.stream import stream_inputs

    write_files(tmp_path / "in", [[FLUSH]])
    folder = str(tmp_path / "in")
    resources = spark_resources.session_resources(streams)
    monkeypatch.setattr(spark_resources, "local_resources", lambda: (resources.executor_memory, resources.task_slots))
    text = "RETURN k, COUNT(*) PATTERN A+ a[] WHERE [k] GROUP-BY k WITHIN 10 SLIDE 2"
    (tmp_path / "q.cet").write_text(text)
    args = ["compile", str(tmp_path / "q.cet"), "--input", folder, "--stream", "--watermark", "3 s", "--id-col", "id"]
    assert main([*args, "--explain", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)["physical"]
    execution = cetql.compile(text).execution(stream_inputs(streams, folder, {}), spark=streams, id_col="id",
                                              watermark="3 s")  # fmt: skip
    # compile assumed the resources, and plans for `cetql run` (its engine: Spark, the input a stream)
    ran = {k: v for k, v in to_data(execution.plan).items() if k not in ("assumed", "engine")}
    assert execution.streaming and ran == {k: v for k, v in printed.items() if k not in ("assumed", "engine")}
    assert printed["engine"]["reason"] == "not the embedded engine (DuckDB): the input is a stream"
    assert from_data(printed).stream == execution.plan.stream
    op = execution.plan.stream
    assert (op.key, op.watermark_ms, op.clock) == (execution.plan.partition.group, 3000, 1000)
    assert main([*args, "--explain"]) == 0
    shown = capsys.readouterr().out
    assert "Stateful   transformWithStateInPandas" in shown and "watermark 3,000 ms" in shown
    assert "Stream     streaming" in shown and "late events: counted and dropped" in shown
    assert main(["compile", str(tmp_path / "q.cet"), "--input", folder, "--explain"]) == 0
    assert "Stateful" not in capsys.readouterr().out


# ---------------------------------------------------------------- Spark Connect


def connect_job(spec_path: str) -> None:
    """In a subprocess: the differential run on a local Spark Connect server."""
    spec = json.loads(Path(spec_path).read_text())
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote("local[2]").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    spark.conf.set(PROVIDER, ROCKSDB)
    spark.conf.set(CHANGELOG, "true")
    folder = Path(spec["folder"])
    source = spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(folder / "in"))
    outputs = [spark.cet(q, source, id_col="id", watermark=5, **opts) for q, opts in spec["queries"]]
    assert all(o.isStreaming for o in outputs)
    rows, progress = run_to_end(side_by_side(outputs), folder)
    static = spark.createDataFrame(spec["events"], DDL.removesuffix(", at timestamp"))
    batch = [sorted(r["row"] for r in side_by_side([spark.cet(q, static, id_col="id", **opts)]).collect())
             for q, opts in spec["queries"]]  # fmt: skip
    (folder / "result.json").write_text(json.dumps({"rows": rows, "batch": batch,
                                                    "late": sum(metrics(p)["late"] for p in progress)}))  # fmt: skip
    spark.stop()


@pytest.mark.spark  # a Connect server in a subprocess
@pytest.mark.slow
@ONCE
@given(data=st.data())
def test_streams_on_spark_connect(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("connect")
    chosen = draw_queries(data)
    events = draw_cases(data, 5)
    assume(len(events) >= 8)
    batches = micro_batches(random.Random(data.draw(st.integers(0, 2**32))), events, disorder=4, n=3)
    write_files(folder / "in", [*batches, [FLUSH]])
    rows_in = [[e[c] for c in SCHEMA.names if c != "at"] for e in events]
    spec = {"folder": str(folder), "queries": [(w, o) for _, w, o in chosen], "events": rows_in}
    (folder / "spec.json").write_text(json.dumps(spec))
    tests = Path(__file__).parents[1]  # the script imports the suite's support and engine modules
    path = os.pathsep.join(str(tests / d) for d in ("support", "streams"))
    # SPARK_TESTING: pyspark's local Connect server takes a free port, not 15002 (SPARK-42272), so that a
    # second suite on the machine, or a `cetql serve` on its default port, does not take this run's server
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": path, "SPARK_TESTING": "1"}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, __file__, str(folder / "spec.json")], env=env, capture_output=True,
                          text=True, timeout=900, cwd=Path(__file__).parent)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((folder / "result.json").read_text())
    assert result["late"] == 0
    for q, (text, with_case, opts) in enumerate(chosen):
        mine = sorted(row for _, i, row in result["rows"] if i == q)
        assert mine == result["batch"][q], with_case
        assert observed(text, opts, [json.loads(r) for r in mine]) == expected(text, opts, events), with_case


if __name__ == "__main__":
    connect_job(sys.argv[1])
