"""A Spark plan's Parquet files written by its kernels' Python workers
(`engine.workers_write`, `backends/spark/written.py`) are the files Spark's
own writer writes: on generated queries and streams, the same rows, the
same footer (names, types, nullability, Spark's schema metadata) and the
same parts (a file a kernel task, the same rows in each).  The plan
chooses the workers only where they share this machine's folders and
the kernels' batches are the result; the writer keeps the files its tasks
named and no other."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from engines import footer, plan, rows, run_to, write_inputs
from generators import queries, stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from cetql.backends.arrow.parquet import part_name, write_part
from cetql.base.errors import QueryError, SchemaError
from cetql.base.options import Engine, OutputFormat, OutputMode, Sink, Strategy
from cetql.planner.physical import engine as E
from cetql.planner.physical.plan import Arithmetic
from cetql.planner.workload.share import workload
from cetql.surfaces.output import FILE, resolve_output, write_result
from cetql.surfaces.output.writers import write_by_workers

SETTINGS = settings(max_examples=budget(15), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip
SPARK_META = b"org.apache.spark.sql.parquet.row.metadata"
SPARK_VERSION = b"org.apache.spark.version"


def parts(folder: Path) -> list[tuple[str, int]]:
    """Each part file's index (`part-00003-…`) and rows."""
    return sorted((p.name[5:10], pq.ParquetFile(p).metadata.num_rows) for p in folder.glob("part-*.parquet"))


def physical(folder: Path) -> list[tuple]:
    """The first part's columns as Parquet stores them (path, physical and logical type)."""
    schema = pq.ParquetFile(sorted(folder.glob("part-*.parquet"))[0]).schema
    return [(c.path, c.physical_type, str(c.logical_type)) for c in (schema.column(i) for i in range(len(schema)))]


def writers(folder: Path) -> set[str]:
    """Who wrote the part files, as their footers say (Spark's writer: parquet-mr; the workers: Arrow's)."""
    return {pq.ParquetFile(p).metadata.created_by.split(" ")[0] for p in folder.glob("part-*.parquet")}


def by_both(spark, text: str, data, by_type: dict, folder: Path, **options) -> dict:
    """{by the workers (the plan's writer): …, by Spark's writer: …} — rows, footer, parts — each checked
    written by the writer it names."""
    compiled = plan(text, data, by_type, Engine.SPARK, id_col="id", **options)
    execution = compiled.execution(data if data is not None else by_type, spark=spark, options=compiled.options)
    assert execution.plan.engine.workers_write, execution.plan.engine.writer  # the plan that runs
    got = {}
    for by_plan, who in ((True, "parquet-cpp-arrow"), (False, "parquet-mr")):
        done = run_to(folder / str(by_plan), text, data, by_type, Engine.SPARK, spark=spark, by_plan=by_plan,
                      id_col="id", **options)  # fmt: skip
        assert writers(done) == {who}, (text, writers(done))
        got[by_plan] = (rows(done), footer(done), parts(done), physical(done))
    return got


def both_writers(spark, text: str, events: list[dict], aggregation: bool, **options) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, by_type = write_inputs(folder, events, False, True, "parquet")
        try:
            plan(text, data, by_type, Engine.SPARK, id_col="id", **options)
        except (QueryError, SchemaError):
            assume(False)
        return by_both(spark, text, data, by_type, folder, **options)


def check_same(got: dict, text: str) -> None:
    (rows_w, footer_w, parts_w, stored_w), (rows_s, footer_s, parts_s, stored_s) = got[True], got[False]
    assert stored_w == stored_s, (text, stored_w, stored_s)
    assert footer_w.remove_metadata() == footer_s.remove_metadata(), (text, footer_w, footer_s)
    assert json.loads(footer_w.metadata[SPARK_META]) == json.loads(footer_s.metadata[SPARK_META]), text
    assert footer_w.metadata[SPARK_VERSION] == footer_s.metadata[SPARK_VERSION], text
    assert rows_w == rows_s, text
    assert parts_w == parts_s, text


@SETTINGS
@given(st.data(), st.booleans())
def test_the_workers_write_the_files_sparks_writer_writes(spark, data, aggregation):
    text = data.draw(queries(aggregation, repeated_types=True, special=True))
    events = data.draw(stream(False, special=True))
    assume(events)
    options = {} if aggregation else {"trends": data.draw(st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"])),
                                      "max_trends": 0}  # fmt: skip
    check_same(both_writers(spark, text, events, aggregation, **options), text)


def test_a_file_target_gets_every_part_in_one_file(spark, tmp_path):
    events = [{"ts": t, "id": t, "__type": None, "x": t % 3, "g": "gh"[t % 2], "k": "uv"[t % 2], "y": t % 5}
              for t in range(40)]  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, False, False, "parquet")
    text = "RETURN g, COUNT(*) PATTERN E+ e[] WHERE [g] AND e[i].x >= e[i-1].x GROUP-BY g WITHIN 6 SLIDE 3"
    compiled = plan(text, data, by_type, Engine.SPARK, id_col="id", partitions=3)
    execution = compiled.execution(data, spark=spark, options=compiled.options)
    assert execution.plan.engine.workers_write, execution.plan.engine.writer
    one = resolve_output(str(tmp_path / "one.parquet"), OutputMode.ERROR, kind=FILE)
    assert write_result(execution, one, OutputFormat.PARQUET) > 0
    spark_folder = run_to(tmp_path / "spark", text, data, by_type, Engine.SPARK, spark=spark, id_col="id",
                          partitions=3)  # fmt: skip
    assert len(parts(spark_folder)) > 1  # the file gathers several parts
    assert (tmp_path / "one.parquet").is_file()
    assert rows(tmp_path / "one.parquet") == rows(spark_folder)
    assert pq.read_schema(tmp_path / "one.parquet").remove_metadata() == footer(spark_folder).remove_metadata()


@pytest.mark.parametrize("zone", ["UTC", "+05:30"])
@pytest.mark.parametrize("kind", ["csv-iso-offset", "csv-iso-nanos", "parquet-ms-naive", "parquet-ns-utc"])
def test_time_bounds_are_written_alike(spark, tmp_path, kind, zone):
    """Window bounds as timestamps (to the microsecond, from nanosecond
    times too), read in UTC and in a fixed offset, in a session of that zone."""
    from test_parity import _time_inputs

    data = _time_inputs(tmp_path, kind)
    text = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 seconds SLIDE 50 seconds"
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)  # as the session `cetql run --time-zone` starts has it
    try:
        check_same(by_both(spark, text, data, {}, tmp_path, time_zone=zone), f"{kind} in {zone}")
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


KEYS = {"bool": pa.bool_(), "short": pa.int16(), "float": pa.float32(), "date": pa.date32(),
        "decimal": pa.decimal128(10, 2), "wide decimal": pa.decimal128(30, 3), "bytes": pa.binary(),
        "time": pa.timestamp("us", tz="UTC")}  # fmt: skip


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("key", sorted(KEYS))
def test_keys_of_every_type_are_written_alike(spark, tmp_path, key, large):
    """Keys of the types only Spark reads (decimals stored as integers up to
    18 digits, bytes, dates…), and text and bytes in Arrow's large types
    (`spark.sql.execution.arrow.useLargeVarTypes`): Spark's files."""
    n = 30
    values = pa.array([i % 3 for i in range(n)], pa.int64())
    keyed = values.cast(pa.string()).cast(pa.binary()) if key == "bytes" else \
        values.cast(pa.int32()).cast(pa.date32()) if key == "date" else \
        values.cast(pa.timestamp("us", tz="UTC")) if key == "time" else \
        values.cast(pa.bool_()) if key == "bool" else pa.array([Decimal(i % 3) / 4 for i in range(n)], KEYS[key]) \
        if "decimal" in key else values.cast(KEYS[key])  # fmt: skip
    table = pa.table({"ts": list(range(n)), "id": list(range(n)), "k": keyed, "s": [f"s{i % 4}" for i in range(n)],
                      "x": [i % 5 for i in range(n)]})  # fmt: skip
    pq.write_table(table, tmp_path / "in.parquet")
    data = str(tmp_path / "in.parquet")
    conf = "spark.sql.execution.arrow.useLargeVarTypes"
    before = spark.conf.get(conf, "false")
    spark.conf.set(conf, str(large).lower())
    try:
        for text in ("PATTERN E+ e[] WHERE [k] AND e[i].x >= e[i-1].x WITHIN 8 SLIDE 4",
                     "RETURN k, COUNT(*), MAX(e.x) PATTERN E+ e[] WHERE [k] GROUP-BY k WITHIN 8 SLIDE 4"):  # fmt: skip
            options = {} if text.startswith("RETURN") else {"max_trends": 0}
            (tmp_path / str(len(text))).mkdir()
            check_same(by_both(spark, text, data, {}, tmp_path / str(len(text)), **options), f"{text} ({key})")
    finally:
        spark.conf.set(conf, before)


class _Named:
    """A job's result as the workers' tasks give it: (file, rows) rows; running it writes the files."""

    def __init__(self, write):
        self.write = write

    def collect(self):
        return self.write()


SCHEMA = pa.schema([pa.field("window_start", pa.int64(), nullable=False), pa.field("n", pa.int64())])


@pytest.mark.parametrize("counts", [(2, 0, 3), (0, 0, 0), (0, 4), (None, 4, 0), (None,)])
def test_the_writer_keeps_the_files_its_tasks_named_as_spark_keeps_parts(tmp_path, counts):
    """A failed attempt's file (named for its attempt) goes; the first
    partition's file stays, with rows or without (made when its task gave
    none: None here), another partition's only with rows — as Spark's writer
    keeps them."""

    def frame(folder: str, job: str):
        def write():
            named = []
            for i, n in enumerate(counts):
                if n is None:
                    continue
                batch = pa.record_batch([pa.array(range(n), pa.int64()), pa.array([7] * n, pa.int64())], schema=SCHEMA)
                write_part(SCHEMA, [batch], Path(folder) / part_name(i, job))
                named.append({"file": part_name(i, job), "rows": n})
            write_part(SCHEMA, [], Path(folder) / f".{part_name(9, job)}.0.123")  # an attempt that failed
            return named

        return _Named(write)

    target = resolve_output(str(tmp_path / "out"), OutputMode.ERROR)
    total = sum(n or 0 for n in counts)
    assert write_by_workers(None, SCHEMA, frame, target) == total
    left = sorted(p.name for p in (tmp_path / "out").iterdir())
    kept = [0] + [i for i, n in enumerate(counts) if n and i]
    assert left[0] == "_SUCCESS" and [int(n[5:10]) for n in left[1:]] == kept
    assert pq.read_table(tmp_path / "out").num_rows == total
    assert pq.read_schema(tmp_path / "out" / left[1]).remove_metadata() == SCHEMA


def _need(text: str = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10 SLIDE 5"):
    p = plan(text, None, {}, Engine.SPARK).plan
    return E.requirements(p.logical, p.names, p.scan, p.filter, p.windows, p.root, p.stream), p.engine


@pytest.mark.parametrize("change, why", [
    ({"spark_asked": "--master"}, "--master"), ({"spark_asked": "--remote"}, "--remote"),
    ({"spark_asked": "SPARK_REMOTE"}, "SPARK_REMOTE"), ({"stream": True}, "stream"),
    ({"strategy": Strategy.DISTRIBUTED}, "distributed"), ({"with_rows": True}, "--with-rows"),
    ({"arithmetic": Arithmetic.DECIMAL}, "decimal"), ({"master": "spark://h:7077"}, "spark://h:7077"),
    ({"parquet": "spark.sql.parquet.compression.codec=zstd"}, "compression.codec=zstd"),
])  # fmt: skip
def test_the_plan_chooses_sparks_writer_where_the_workers_cannot_write(change, why):
    need, choice = _need()
    assert choice.workers_write and "Python workers" in choice.writer  # the case the changes start from
    assert E.with_writer(replace(choice, workers_write=False, writer=""), need).workers_write
    other = E.with_writer(replace(choice, workers_write=False, writer=""), replace(need, **change))
    assert not other.workers_write and why in other.writer and other.writer.startswith("Spark's Parquet writer")


@pytest.mark.parametrize("sink", [Sink.DATAFRAME, Sink.PRINTED, Sink.TEXT_FILES, Sink.URI])
def test_only_parquet_files_have_a_writer_to_choose(sink):
    need, choice = _need()
    other = E.with_writer(replace(choice, workers_write=False, writer=""), replace(need, sink=sink))
    assert not other.workers_write and other.writer == ""


def test_a_workload_is_written_by_spark():
    p = plan("PATTERN Check+ c[] WITHIN 10 SLIDE 5", None, {}, Engine.SPARK).plan
    assert p.engine.workers_write
    w = workload([("a", p), ("b", p)])
    assert not w.engine.workers_write and "workload" in w.engine.writer
    assert all(not q.plan.engine.workers_write for q in w.queries)


def test_a_session_that_changes_sparks_parquet_settings_is_written_by_spark(spark, tmp_path):
    """The session's own settings of Spark's writer (here its codec) are
    Spark's to honour: the plan that runs there chooses Spark's writer, and says why."""
    data, by_type = write_inputs(tmp_path, [{"ts": t, "id": t, "x": 1, "g": "g", "k": "u"} for t in range(6)], False,
                                 False, "parquet")  # fmt: skip
    text = "PATTERN E+ e[] WITHIN 4 SLIDE 2"
    codec = "spark.sql.parquet.compression.codec"
    before = spark.conf.get(codec)
    spark.conf.set(codec, "zstd")
    try:
        compiled = plan(text, data, by_type, Engine.SPARK, id_col="id", max_trends=0)
        execution = compiled.execution(data, spark=spark, options=compiled.options)
        assert not execution.plan.engine.workers_write and "compression.codec=zstd" in execution.plan.engine.writer
        done = run_to(tmp_path / "out", text, data, by_type, Engine.SPARK, spark=spark, by_plan=True, id_col="id",
                      max_trends=0)  # fmt: skip
        assert writers(done) == {"parquet-mr"}
        assert pq.ParquetFile(next(done.glob("part-*"))).metadata.row_group(0).column(0).compression == "ZSTD"
    finally:
        spark.conf.set(codec, before)


_WRITER_SETTINGS = {"spark.sql.parquet.compression.codec": ["snappy", "zstd", "gzip"],
                    "spark.sql.parquet.outputTimestampType": ["INT96", "TIMESTAMP_MICROS"],
                    "spark.sql.files.maxRecordsPerFile": ["0", "7"], "spark.sql.parquet.writeLegacyFormat": ["false", "true"]}  # fmt: skip


@settings(SETTINGS, max_examples=budget(12))
@given(st.fixed_dictionaries({k: st.one_of(st.none(), st.sampled_from(v)) for k, v in _WRITER_SETTINGS.items()}))
def test_a_sessions_settings_read_at_once_are_those_read_one_by_one(spark, chosen):
    """The plan's resources read the session's settings in one call
    (`getAll`: one round trip to a Connect server); a session that does
    not list them is asked key by key: both read the same resources,
    whichever of Spark's writer settings the session sets (None: unset)."""
    from types import SimpleNamespace

    from cetql.backends.spark.resources import PARQUET_DEFAULTS, session_resources

    before = {k: spark.conf.get(k, None) for k in _WRITER_SETTINGS}
    try:
        for k, v in chosen.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
        one_by_one = SimpleNamespace(conf=SimpleNamespace(get=spark.conf.get))  # no getAll

        def asked(*_key):
            raise AssertionError("a key read on its own")  # (read as None where `getAll` was not used)

        at_once = session_resources(SimpleNamespace(conf=SimpleNamespace(getAll=spark.conf.getAll, get=asked)))
        assert at_once == session_resources(one_by_one) == session_resources(spark)
        changed = [k for k, v in chosen.items() if v is not None and v.lower() != PARQUET_DEFAULTS[k].lower()]
        assert (at_once.parquet is None) == (not changed), (at_once.parquet, changed)
    finally:
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


@pytest.mark.parametrize("flags, asked", [(["--partitions", "3"], "SPARK_REMOTE"), (["--master", "local[2]"], "--master"),
                                          (["--partitions", "3"], None)])  # fmt: skip
def test_a_remote_server_is_asked_before_partitions(monkeypatch, flags, asked):
    """SPARK_REMOTE with --partitions gives the run to that server: the plan
    must not take its Spark for this machine's."""
    from cetql.surfaces.cli.flags import run_options
    from cetql.surfaces.cli.main import build_parser, parse

    if asked is not None:
        monkeypatch.setenv("SPARK_REMOTE", "sc://elsewhere:15002")
    else:
        monkeypatch.delenv("SPARK_REMOTE", raising=False)
    args = parse(build_parser(), ["run", "q.cet", "--input", "x.parquet", "--output", "o", *flags])
    assert run_options(args).spark_asked == (asked or "--partitions")
