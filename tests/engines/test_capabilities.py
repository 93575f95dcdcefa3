"""The engines' capability tables (`planner.physical.engine`): every entry of
the table is walked, every value of every entry is either run by the
embedded engine — its rule exists, and a plan that needs it runs there —
or declared unsupported, and then the plan goes to Spark with the reason
and `--engine embedded` is refused naming it.  Nothing but the planner
chooses: a plan the table refuses never reaches the embedded compiler."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from engines import plan

from cetql.backends.arrow import result as output
from cetql.backends.embedded import reader
from cetql.backends.embedded.capabilities import CAPABILITIES as EMBEDDED
from cetql.backends.embedded.run import execute
from cetql.backends.spark.capabilities import CAPABILITIES as SPARK
from cetql.base.errors import UsageError
from cetql.base.options import Engine, Sink, Strategy
from cetql.planner.physical import engine as E
from cetql.planner.physical.plan import Arithmetic, Bounds, TimeCast

ENUM_ENTRIES = {"sinks": Sink, "time_casts": TimeCast, "arithmetic": Arithmetic, "bounds": Bounds,
                "strategies": Strategy}  # fmt: skip
OTHER_ENTRIES = {"engine", "name", "formats", "streams", "spark_session", "with_rows", "ids_from_order",
                 "column_types", "named_zones", "expressions", "max_bytes"}  # fmt: skip


def test_every_entry_is_walked():
    assert set(ENUM_ENTRIES) | OTHER_ENTRIES == set(E.capability_fields())


def test_spark_runs_every_variant():
    for entry, enum in ENUM_ENTRIES.items():
        taken = getattr(SPARK, entry)
        assert taken is E.ANY or set(enum) <= taken, entry


@pytest.mark.parametrize("cast", list(TimeCast))
def test_a_time_cast_is_read_exactly_when_declared(cast):
    if cast in EMBEDDED.time_casts:
        assert reader.time_sql(cast, "ts")
    else:
        with pytest.raises(ValueError, match="no rule"):
            reader.time_sql(cast, "ts")


@pytest.mark.parametrize("bounds", list(Bounds))
def test_window_bounds_have_a_type_exactly_when_declared(bounds):
    assert (bounds in output.BOUND_TYPES) == (bounds in EMBEDDED.bounds)


def test_the_embedded_engine_makes_only_its_sinks():
    assert EMBEDDED.sinks == {Sink.PARQUET, Sink.PRINTED, Sink.TEXT_FILES}
    assert EMBEDDED.strategies == {Strategy.LOCAL} and EMBEDDED.arithmetic == {Arithmetic.INTEGER}


# ---------------------------------------------------------------- a grid of plans, walked

QUERIES = {
    "detect": "PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN {w}",
    "seq": "PATTERN SEQ(E a, NOT E n, E+ b[]) WHERE a.x < b.x WITHIN {w}",
    "aggregate": "RETURN COUNT(*), SUM(e.x), MIN(e.x) PATTERN E+ e[] WHERE e[i].x >= e[i-1].x WITHIN {w}",
}
TIMES = {
    "int": (pa.array([1, 2, 3], pa.int64()), "10 SLIDE 5"),
    "double": (pa.array([1.0, 2.5, 3.0]), "10"),
    "timestamp_us": (pa.array([1, 2, 3], pa.int64()).cast(pa.timestamp("us", tz="UTC")), "10 seconds"),
    "timestamp_ns": (pa.array([1, 2, 3], pa.int64()).cast(pa.timestamp("ns", tz="UTC")), "10 seconds"),
    "naive_ms": (pa.array([1, 2, 3], pa.int64()).cast(pa.timestamp("ms")), "10 seconds SLIDE 5 seconds"),
}
COLUMNS = {"int64": pa.array([1, 2, 3], pa.int64()), "int32": pa.array([1, 2, 3], pa.int32()),
           "double": pa.array([1.0, 2.0, 3.0]), "decimal": pa.array([1, 2, 3], pa.decimal128(5, 0))}  # fmt: skip
OPTIONS = [{}, {"with_rows": True}, {"strategy": "distributed"}, {"time_zone": "Europe/Berlin"}]


@pytest.mark.parametrize(("query", "time", "column", "options"),
                         list(itertools.product(QUERIES, TIMES, COLUMNS, range(len(OPTIONS)))))  # fmt: skip
def test_every_plan_runs_embedded_or_goes_to_spark_with_its_reason(tmp_path, query, time, column, options):
    times, within = TIMES[time]
    table = pa.table({"ts": times, "id": pa.array([1, 2, 3], pa.int64()), "x": COLUMNS[column]})
    pq.write_table(table, tmp_path / "e.parquet")
    text = QUERIES[query].format(w=within)
    opts = dict(OPTIONS[options], id_col="id")
    if query == "aggregate" and ("with_rows" in opts or "strategy" in opts):
        pytest.skip("detection options")
    try:
        p = plan(text, str(tmp_path / "e.parquet"), {}, Engine.AUTO, **opts).plan
    except UsageError as e:  # an option the query refuses whatever the engine (the distributed strategy on a SEQ)
        assert "distributed strategy" in str(e)
        return
    if p.engine.engine == Engine.EMBEDDED:
        result = execute(p)  # it runs: no variant it took lacks a rule
        assert pa.Table.from_batches(list(result.batches), schema=result.schema).schema == result.schema
        return
    assert p.engine.reason.startswith("not the embedded engine (DuckDB): "), p.engine.reason
    with pytest.raises(UsageError, match="embedded.* cannot run this query: "):
        plan(text, str(tmp_path / "e.parquet"), {}, Engine.EMBEDDED, **opts)
