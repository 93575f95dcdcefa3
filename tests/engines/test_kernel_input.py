"""The embedded engine's kernel input where events are copied into sliding
windows (`compiler.kernel_input`): the events sorted once and placed in
window order by their places (`in_windows`) give the same table — rows,
order, types — as every (event, window) copy sorted by DuckDB
(`kernel_input_sql`, the spelling blocks and tumbling windows still use),
on generated events in any order: negative and repeated times, keys that
are null, NaN, -0.0 beside 0.0, slides that do not divide the window, and
the warm-up's first few events, rows taken in several pieces.  And ids
from input order (no `--id-col`) are the rows' places as read, also where
an input has its own column `rowid`."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from engines import plan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.backends.embedded import compiler
from cetql.base.options import Engine, Sharing

QUERIES = [
    "PATTERN E+ e[] WHERE e[i].x <= e[i-1].x WITHIN {w} SLIDE {s}",
    "PATTERN E+ e[] WHERE [k] AND e[i].x = e[i-1].x WITHIN {w} SLIDE {s}",
    "PATTERN E+ e[] WHERE [y, k] WITHIN {w} SLIDE {s}",
    "RETURN k, COUNT(*) PATTERN E+ e[] WHERE [k] AND e.x < NEXT(e).x GROUP-BY k WITHIN {w} SLIDE {s}",
    "RETURN y, COUNT(*), SUM(e.x) PATTERN E+ e[] WHERE [y] AND e.x > 0 GROUP-BY y WITHIN {w} SLIDE {s}",
]
WINDOWS = [(4, 2), (6, 3), (7, 3), (9, 2), (5, 4), (10, 1)]  # copies (--sharing copy past 2 windows an event)


@st.composite
def events(draw):
    n = draw(st.integers(0, 30))
    ids = draw(st.permutations(range(n)))
    row = st.fixed_dictionaries({
        "ts": st.integers(-20, 20),
        "x": st.none() | st.integers(0, 3),
        "k": st.sampled_from(["u", "v", None]),
        "y": st.sampled_from([None, math.nan, -0.0, 0.0, 1.5, math.inf]),
    })  # fmt: skip
    return [dict(draw(row), id=i) for i in ids]


def _tables(tmp_path, text: str, rows: list[dict], events: int | None):
    data = tmp_path / "events.parquet"
    schema = pa.schema([("ts", pa.int64()), ("id", pa.int64()), ("x", pa.int64()), ("k", pa.string()),
                        ("y", pa.float64())])  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), data)
    p = plan(text, str(data), {}, Engine.EMBEDDED, id_col="id", max_trends=0, sharing=Sharing.COPY).plan
    assert p.windows.sharing is not None and not p.windows.block, p.windows
    con = compiler.connect()
    try:
        compiler.scan(con, p)
        got = compiler.kernel_input(con, p, events)
        sql, same = compiler.kernel_input_sql(p, events)
        copies = con.sql(sql).to_arrow_table()
        order = compiler.kernel_columns(p)
        return got, pa.table([copies.column(same.get(c, c)) for c in order], names=order)
    finally:
        compiler.close(con)


@settings(max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(events(), st.sampled_from(QUERIES), st.sampled_from(WINDOWS), st.sampled_from([None, None, 3]),
       st.sampled_from([compiler.TAKE_ROWS, 1, 7]))  # fmt: skip
def test_events_placed_in_windows_equal_the_copies_sorted(tmp_path_factory, rows, query, window, first, take):
    was, compiler.TAKE_ROWS = compiler.TAKE_ROWS, take  # rows taken at once: several takes too
    try:
        got, copies = _tables(tmp_path_factory.mktemp("ki"), query.format(w=window[0], s=window[1]), rows, first)
    finally:
        compiler.TAKE_ROWS = was
    assert got.schema == copies.schema
    assert _exact(got) == _exact(copies)


def _exact(table: pa.Table) -> dict[str, list[str]]:
    """Each column's values as their reprs: NaN equal to NaN, -0.0 apart from 0.0."""
    return {name: [repr(v) for v in column.to_pylist()] for name, column in zip(table.column_names, table.columns)}


@pytest.mark.parametrize("window", [(4, 2), (7, 3)])
def test_no_event_no_row(tmp_path, window):
    got, copies = _tables(tmp_path, QUERIES[0].format(w=window[0], s=window[1]), [], None)
    assert got.num_rows == copies.num_rows == 0 and got.schema == copies.schema


@pytest.mark.parametrize("name", ["x", "rowid", "RowId"])
def test_ids_from_input_order_are_the_places_read(tmp_path, name):
    n = 50
    pq.write_table(pa.table({"ts": pa.array([(i * 7) % 11 for i in range(n)], pa.int64()),
                             name: pa.array([f"v{i % 3}" for i in range(n)])}), tmp_path / "a.parquet")  # fmt: skip
    pq.write_table(pa.table({"ts": pa.array(range(n), pa.int64()), name: pa.array(["w"] * n)}), tmp_path / "b.parquet")
    text = f"RETURN COUNT(*) PATTERN E+ e[] WHERE e.{name} = NEXT(e).{name} WITHIN 10 SLIDE 5"
    p = plan(text, str(tmp_path), {}, Engine.EMBEDDED).plan
    con = compiler.connect()
    try:
        compiler.scan(con, p)
        ids = con.sql(f'SELECT "{p.names.id}" FROM {compiler.EVENTS}').to_arrow_table().column(0)
    finally:
        compiler.close(con)
    assert ids.type == pa.int64() and sorted(ids.to_pylist()) == list(range(2 * n))


@settings(max_examples=budget(10), deadline=None, suppress_health_check=list(HealthCheck))
@given(events(), st.sampled_from(QUERIES), st.sampled_from(WINDOWS))
def test_the_spark_kernels_input_put_back_is_what_its_exchange_would_move(spark, tmp_path_factory, rows, query, window):
    """Spark's local kernels get their input without the columns that are
    another's expression or a mask true for every event, put back in the
    workers (`spark.compiler.moved`): the same batches — columns, order,
    types, values — as the whole kernel input sorted by the same exchange."""
    from cetql.backends.spark import compiler as spark_compiler
    from cetql.backends.spark.arrow import batch_schema
    from cetql.backends.spark.exchange import sorted_groups

    folder = tmp_path_factory.mktemp("moved")
    schema = pa.schema([("ts", pa.int64()), ("id", pa.int64()), ("x", pa.int64()), ("k", pa.string()),
                        ("y", pa.float64())])  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "events.parquet")
    compiled = plan(query.format(w=window[0], s=window[1]), str(folder / "events.parquet"), {}, Engine.SPARK,
                    id_col="id", max_trends=0)  # fmt: skip
    execution = compiled.execution(str(folder / "events.parquet"), spark=spark, options=compiled.options)
    p, full = execution.plan, spark_compiler.kernel_input(execution.plan, execution.inputs)
    slim, put_back, restored_schema = spark_compiler.moved(p, full)
    whole = sorted_groups(p, full)  # the same exchange: the same partitions, each in the same order
    moved_rows = slim.toArrow()
    got = list(put_back(iter(moved_rows.to_batches(max_chunksize=7))))  # in several batches, as a worker reads them
    assert restored_schema == batch_schema(whole)
    want = whole.toArrow()
    assert [c for c in want.column_names] == [f.name for f in restored_schema]
    assert _exact(pa.Table.from_batches(got) if got else want.slice(0, 0)) == _exact(want)
