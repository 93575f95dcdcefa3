"""One meaning, two engines (SEMANTICS.md, Engines and workloads): every
generated case — queries of every pattern class over generated streams,
read from CSV and from Parquet, detection in every trend set and
aggregation — gives the same rows, the same column types and the same
Parquet footer (names, types, nullability, Spark's schema metadata) on
the embedded engine and on Spark."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from budget import budget
from engines import footer, plan, rows, run_to, write_inputs
from generators import queries, stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from cetql.base.errors import QueryError, SchemaError
from cetql.base.options import Engine

SETTINGS = settings(max_examples=budget(25), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip
SPARK_META = b"org.apache.spark.sql.parquet.row.metadata"


def both(spark, text: str, events: list[dict], typed: bool, special: bool, fmt: str, **options):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, by_type = write_inputs(folder, events, typed, special, fmt)
        try:
            types = plan(text, data, by_type, Engine.AUTO, id_col="id", **options).types
            by_type = {t: p for t, p in by_type.items() if t in types}  # as `cetql run` refuses others
            assume(data is not None or by_type)
            chosen = plan(text, data, by_type, Engine.AUTO, id_col="id", **options).plan.engine
        except (QueryError, SchemaError):
            assume(False)
        assert chosen.engine == Engine.EMBEDDED, chosen.reason
        out = {}
        for engine in (Engine.EMBEDDED, Engine.SPARK):
            done = run_to(folder / engine.value, text, data, by_type, engine, spark=spark, id_col="id", **options)
            out[engine] = (rows(done), footer(done))
        return out


def check_same(out: dict, text: str) -> None:
    (rows_e, footer_e), (rows_s, footer_s) = out[Engine.EMBEDDED], out[Engine.SPARK]
    assert footer_e.remove_metadata() == footer_s.remove_metadata(), (text, footer_e, footer_s)
    assert json.loads(footer_e.metadata[SPARK_META]) == json.loads(footer_s.metadata[SPARK_META]), text
    assert rows_e == rows_s, text


@SETTINGS
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans(),
       st.sampled_from(["csv", "parquet"]))  # fmt: skip
def test_detection_is_the_same_on_both_engines(spark, data, typed, trend_set, special, fmt):
    text = data.draw(queries(False, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events)
    check_same(both(spark, text, events, typed, special, fmt, trends=trend_set, max_trends=0), text)


@SETTINGS
@given(st.data(), st.booleans(), st.booleans(), st.sampled_from(["csv", "parquet"]))
def test_aggregation_is_the_same_on_both_engines(spark, data, typed, special, fmt):
    text = data.draw(queries(True, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events)
    check_same(both(spark, text, events, typed, special, fmt), text)


def test_the_readme_example_is_the_same_on_both_engines(spark, tmp_path):
    examples = Path(__file__).resolve().parents[2] / "examples"
    text = (examples / "kiting.cet").read_text()
    data = str(examples / "data" / "checks.csv")
    out = {}
    for engine in (Engine.EMBEDDED, Engine.SPARK):
        done = run_to(tmp_path / engine.value, text, data, {}, engine, spark=spark, id_col="id")
        out[engine] = (rows(done), footer(done))
    check_same(out, text)
    assert len(out[Engine.EMBEDDED][0]) == 3771
    assert pq.read_table(tmp_path / "embedded").num_rows == 3771
