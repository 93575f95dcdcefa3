"""The embedded engine reads a text input's values as Spark reads them
(`embedded.reader`, `inputs.casts`): what DuckDB's functions take beyond
what Spark's cast takes is refused, as Spark refuses it, and the reverse.
DuckDB alone: ISO times against the rule `inputs.times` writes in Python
(java.time's, as Spark's cast reads them)."""

from __future__ import annotations

from datetime import datetime

import duckdb
from budget import budget
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cetql.backends.embedded import reader
from cetql.backends.inputs import times

SOME = settings(max_examples=budget(300), deadline=None, suppress_health_check=list(HealthCheck))
EPOCH = datetime(1970, 1, 1)


@st.composite
def iso_like(draw):
    """An ISO-shaped time whose fields may lie outside their ranges (hour
    24, second 60, day 31 of a short month)."""
    y, mo, d = draw(st.integers(1, 9999)), draw(st.integers(0, 13)), draw(st.integers(0, 32))
    h, mi, s = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    frac = draw(st.sampled_from(["", ".5", ".123456789"]))
    zone = draw(st.sampled_from(["", "Z", "+01:00", "-18:00"]))
    return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{zone}"


def _want(text: str) -> int | None:
    parts = times.iso_parts(text)
    if parts is None:
        return None
    wall, nanos, offset = parts
    return ((wall - EPOCH).days * 86400 + (wall - EPOCH).seconds - (offset or 0)) * 10**9 + nanos


@SOME
@given(iso_like())
@example("2020-01-01T24:00:00")  # the next day, to DuckDB's make_timestamp
@example("2020-01-01T00:00:60Z")  # the next minute
@example("2020-02-30T00:00:00")
def test_iso_times_are_read_where_java_time_reads_them(text):
    sql = reader.iso_nanos(f"({reader.iso_parts(reader.L(text))})", "UTC")
    got = duckdb.connect().execute(f"SELECT CAST({sql} AS VARCHAR)").fetchall()[0][0]
    want = _want(text)
    assert (None if got is None else int(got)) == want, (text, got, want)


# What Spark's reader made of these texts (its RLIKE and TRY_CAST, through `casts`): a value, or None where the
# row is refused as unreadable.  A line terminator ending the text: Java's `$` matches before one, RE2's does not.
NAN, INF = float("nan"), float("inf")
SPARK_READS = [
    ("bigint", "5\n", 5), ("bigint", "5\r", 5), ("bigint", "5\r\n", 5), ("bigint", "5\n\n", None),
    ("bigint", "5\u0085", None), ("bigint", "5\u2028", None), ("bigint", "5\u2029", None), ("bigint", "5\x0b", None),
    ("bigint", "5\x0c", None), ("bigint", "\n5", None), ("double", "5\n", 5.0), ("double", "1e3\n", 1000.0),
    ("double", "nan\n", NAN), ("double", "inf\r", INF), ("double", "5\u2028", None),
    ("double", "-nan", None), ("double", "+nan", None), ("double", "-NAN", None), ("double", "+NaN", NAN),
    ("double", "-NaN", NAN), ("double", "NAN", NAN), ("double", "nan", NAN), ("double", "INF", INF),
    ("double", "-inf", -INF), ("double", "+Infinity", INF), ("double", "-INFINITY", -INF), ("double", "1e400", INF),
    ("double", "-1e400", -INF), ("double", "1e-400", 0.0), ("double", "5.", 5.0), ("double", ".5e3", 500.0),
]  # fmt: skip


def test_text_values_are_read_as_spark_reads_them():
    from cetql.backends.inputs import casts
    from cetql.backends.sql.dialects import DUCKDB

    con = duckdb.connect()
    for spark_type, text, want in SPARK_READS:
        sql = casts.typed_text(DUCKDB, "v", spark_type)
        got = con.execute(f"SELECT {sql} FROM (SELECT CAST(? AS VARCHAR) AS v)", [text]).fetchall()[0][0]
        same = got == want or (isinstance(got, float) and isinstance(want, float) and got != got and want != want)
        assert same and type(got) is type(want), (spark_type, text, got, want)


# ISO times Spark's reader read (epoch nanoseconds, UTC) or refused (None), each in a column of ISO times
T1 = 1577836801 * 10**9
SPARK_TIMES = [
    ("2020-01-01T00:00:01\n", T1), ("2020-01-01T00:00:01\r", T1), ("2020-01-01T00:00:01\r\n", T1),
    ("2020-01-01T00:00:01+01:00\n", T1 - 3600 * 10**9), ("2020-01-01\n", T1 - 10**9),
    ("2020-01-01T00:00:01.123456789\n", T1 + 123456789), ("2020-01-01T00:00:01  ", T1),
    ("2020-01-01T00:00:01\n\n", None), ("\n2020-01-01T00:00:01", None), ("2020-01-01T00:00:01\x0b", None),
    ("2020-01-01T00:00:01\u2028", None), ("2020-01-01T00:00:01\t", None),
]  # fmt: skip


def test_times_are_read_as_spark_reads_them():
    con = duckdb.connect()
    sql = reader.iso_nanos(f"({reader.iso_parts(reader.iso_text('v'))})", "UTC")
    for text, want in SPARK_TIMES:
        (got,) = con.execute(f"SELECT CAST({sql} AS VARCHAR) FROM (SELECT CAST(? AS VARCHAR) AS v)", [text]).fetchone()
        assert (None if got is None else int(got)) == want, (text, got, want)


def test_unsigned_parquet_columns_are_read_as_spark_types(tmp_path):
    """Spark reads a Parquet uint32 as a bigint and a uint16 as an int:
    DuckDB's own unsigned types failed `x - z` below zero (3 - 5) and
    wrote the result's column unsigned."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from engines import footer, rows, run_to

    from cetql.base.options import Engine

    data = tmp_path / "e.parquet"
    pq.write_table(pa.table({"ts": pa.array([1, 2], pa.int64()), "id": pa.array([1, 2], pa.uint32()),
                             "x": pa.array([3, 5], pa.uint32()), "z": pa.array([5, 3], pa.uint16())}), data)  # fmt: skip
    out = run_to(tmp_path / "d", "PATTERN A+ a[] WHERE a.x - a.z < 0 WITHIN 10", str(data), {}, Engine.EMBEDDED,
                 id_col="id", trends="ALL", max_trends=0)  # fmt: skip
    assert rows(out) == [{"window_start": 0, "window_end": 10, "events": [1], "length": 1}]
    assert footer(out).field("events").type == pa.list_(pa.int64())
    query = "RETURN a.x, a.z, COUNT(*) PATTERN A+ a[] GROUP-BY a.x, a.z WITHIN 10"
    out = run_to(tmp_path / "g", query, str(data), {}, Engine.EMBEDDED, id_col="id")
    schema = footer(out)
    assert (schema.field("x").type, schema.field("z").type) == (pa.int64(), pa.int32())


def test_a_text_column_as_a_condition_is_refused_when_planned(tmp_path):
    """`WHERE a.g` on a text column: Spark cast its values to booleans at
    run time ('true\\n' read as true, 'u' failing), DuckDB refused to bind
    the query; neither is a type check, which names the column first."""
    import pytest
    from engines import plan

    from cetql.base.errors import QuerySemanticError
    from cetql.base.options import Engine

    data = tmp_path / "e.csv"
    data.write_text("ts,id,g\n1,1,u\n2,2,true\n")
    with pytest.raises(QuerySemanticError, match="WHERE needs a condition .* 'a.g' is a string value"):
        plan("PATTERN A+ a[] WHERE a.g WITHIN 10", str(data), {}, Engine.AUTO, id_col="id")
