"""A kernel's input rows reach it with every column type a row can hold
(`backends.spark.arrow.batch_schema`): timestamps with and without a zone
(the time column among them), dates, nanosecond times read as numbers,
decimals, booleans, text and numbers — carried back unchanged in
`--with-rows`, on both strategies, from the API and the command line.

`to_arrow_schema` without the session's zone failed an assertion on any
TIMESTAMP column ("internal error: AssertionError at types.py:143")."""

import datetime as dt
import json
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

import cetql
from cetql.backends.spark.arrow import batch_schema
from cetql.surfaces.cli.main import main

SPARK = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck),
                 phases=[Phase.explicit, Phase.generate])  # fmt: skip # each example runs Spark jobs; no shrinking
UTC = dt.UTC

# A column type → values of it (None included), as a user's DataFrame holds them.
KINDS = {
    "timestamp": (T.TimestampType(), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1),
                                                 timezones=st.just(UTC))),
    "timestamp_ntz": (T.TimestampNTZType(), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))),
    "date": (T.DateType(), st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))),
    "decimal(38,18)": (T.DecimalType(38, 18), st.decimals(-(10**19), 10**19, places=18, allow_nan=False,
                                                          allow_infinity=False)),
    "decimal(5,2)": (T.DecimalType(5, 2), st.decimals(-999, 999, places=2, allow_nan=False, allow_infinity=False)),
    "boolean": (T.BooleanType(), st.booleans()),
    "string": (T.StringType(), st.text(max_size=5)),
    "double": (T.DoubleType(), st.floats(allow_nan=False)),
    "nanos": (T.LongType(), st.integers(-(2**62), 2**62)),  # a nanosecond time read as a number
    "smallint": (T.ShortType(), st.integers(-(2**15), 2**15 - 1)),
}  # fmt: skip


def test_the_batch_schema_holds_every_column_type_as_spark_gives_it():
    """Without Spark: each type's Arrow form is what the kernel's output
    declares back to Spark, the session's zone on zoned timestamps."""
    fields = [T.StructField(name.replace("(", "_").replace(",", "_").replace(")", ""), t)
              for name, (t, _) in KINDS.items()]  # fmt: skip
    schema = T.StructType([*fields, T.StructField("nested", T.StructType(fields))])
    for zone, large in (("UTC", "false"), ("Europe/Berlin", "true")):
        conf = {"spark.sql.session.timeZone": zone, "spark.sql.execution.arrow.useLargeVarTypes": large}
        df = SimpleNamespace(schema=schema, sparkSession=SimpleNamespace(conf=SimpleNamespace(
            get=lambda key, default=None, conf=conf: conf.get(key, default))))  # fmt: skip
        arrow = batch_schema(df)
        assert arrow.field("timestamp").type.tz == zone and arrow.field("timestamp_ntz").type.tz is None
        assert from_arrow_schema(arrow) == schema  # the kernel's rows go back to Spark as the same types


def _frame(spark, kinds, draw_rows):
    schema = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("ts", T.LongType(), False),
                           T.StructField("k", T.LongType(), False)]
                          + [T.StructField(f"c{i}", KINDS[k][0]) for i, k in enumerate(kinds)])  # fmt: skip
    return spark.createDataFrame(draw_rows, schema)


@st.composite
def batches(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=len(KINDS), unique=True))
    n = draw(st.integers(1, 12))
    rows = [(i, draw(st.integers(0, 9)), draw(st.integers(0, 1)),
             *(draw(st.none() | KINDS[k][1]) for k in kinds)) for i in range(n)]  # fmt: skip
    return kinds, rows


@SPARK
@given(batches(), st.sampled_from(["local", "distributed"]))
def test_with_rows_carries_every_column_type(spark, drawn, strategy):
    kinds, rows = drawn
    df = _frame(spark, kinds, rows)
    want = {r["id"]: r.asDict() for r in df.collect()}  # the input as Spark reads it back
    out = cetql.compile("PATTERN A+ a[] WHERE a[i].k = a[i-1].k WITHIN 10").run(
        df, spark=spark, id_col="id", with_rows=True, strategy=strategy).collect()  # fmt: skip
    assert out and {i for r in out for i in r.events} == set(want)
    for r in out:
        assert [x.asDict() for x in r.rows] == [want[i] for i in r.events]


@pytest.mark.parametrize("strategy", ["local", "distributed"])
def test_the_issues_timestamp_time_column_with_rows(spark, tmp_path, capsys, strategy):
    data = tmp_path / "f.csv"
    data.write_text("id,ts,x\n1,2026-01-01T00:00:00Z,1\n2,2026-01-01T00:00:01Z,2\n")
    query = tmp_path / "q.cet"
    query.write_text("PATTERN A+ a[] WITHIN 5 seconds")
    args = ["run", str(query), "--input", str(data), "--id-col", "id", "--with-rows", "--format", "json",
            "--strategy", strategy, "--no-serve"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    (line,) = capsys.readouterr().out.splitlines()
    got = json.loads(line)
    assert got["events"] == [1, 2] and [r["x"] for r in got["rows"]] == [1, 2]
    assert [r["ts"] for r in got["rows"]] == ["2026-01-01T00:00:00", "2026-01-01T00:00:01"]
    (r,) = cetql.compile("PATTERN A+ a[] WITHIN 5 seconds").run(
        str(data), spark=spark, id_col="id", with_rows=True, strategy=strategy).collect()  # fmt: skip
    read = {x.id: x.asDict() for x in spark.read.csv(str(data), header=True, inferSchema=True).collect()}
    assert [x.asDict() for x in r.rows] == [read[1], read[2]]
