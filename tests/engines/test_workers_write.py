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


def parts(folder: Path) -> list[tuple[str, int]]:
    """Each part file's index (`part-00003-…`) and rows."""
    return sorted((p.name[5:10], pq.ParquetFile(p).metadata.num_rows) for p in folder.glob("part-*.parquet"))


def both_writers(spark, text: str, events: list[dict], aggregation: bool, **options) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, by_type = write_inputs(folder, events, False, True, "parquet")
        try:
            chosen = plan(text, data, by_type, Engine.SPARK, id_col="id", **options).plan.engine
        except (QueryError, SchemaError):
            assume(False)
        assert chosen.workers_write, chosen.writer
        got = {}
        for spark_writer in (False, True):
            done = run_to(folder / str(spark_writer), text, data, by_type, Engine.SPARK, spark=spark,
                          spark_writer=spark_writer, id_col="id", **options)  # fmt: skip
            got[spark_writer] = (rows(done), footer(done), parts(done))
        return got


def check_same(got: dict, text: str) -> None:
    (rows_w, footer_w, parts_w), (rows_s, footer_s, parts_s) = got[False], got[True]
    assert footer_w.remove_metadata() == footer_s.remove_metadata(), (text, footer_w, footer_s)
    assert json.loads(footer_w.metadata[SPARK_META]) == json.loads(footer_s.metadata[SPARK_META]), text
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
    assert compiled.plan.engine.workers_write, compiled.plan.engine.writer
    execution = compiled.execution(data, spark=spark, options=compiled.options)
    one = resolve_output(str(tmp_path / "one.parquet"), OutputMode.ERROR, kind=FILE)
    assert write_result(execution, one, OutputFormat.PARQUET) > 0
    spark_folder = run_to(tmp_path / "spark", text, data, by_type, Engine.SPARK, spark=spark, spark_writer=True,
                          id_col="id", partitions=3)  # fmt: skip
    assert len(parts(spark_folder)) > 1  # the file gathers several parts
    assert (tmp_path / "one.parquet").is_file()
    assert rows(tmp_path / "one.parquet") == rows(spark_folder)
    assert pq.read_schema(tmp_path / "one.parquet").remove_metadata() == footer(spark_folder).remove_metadata()


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
    ({"arithmetic": Arithmetic.DECIMAL}, "decimal"),
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
