"""An aggregate over a column of a type it is not defined on is refused at
bind time, naming the column and its type, with the aggregate's position.

SUM, AVG, MIN and MAX return numbers (DECIMAL or DOUBLE), so each takes a
numeric column; text, times and booleans are refused when the input's
schema is known; a column of unknown type (no schema) is left to the run."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import QuerySemanticError
from cetql.planner.semantics.schema import parse_ddl

SOME = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
# DDL types by the class a column of that type is in (written independently of schema.py's table)
TYPES = {
    "numeric": ["int", "bigint", "double", "float", "decimal(10,2)", "smallint"],
    "string": ["string", "varchar", "text"],
    "timestamp": ["timestamp", "date", "timestamp_ntz"],
    "boolean": ["boolean", "bool"],
}
NUMBERS_ONLY = {"SUM", "AVG", "MIN", "MAX"}


@st.composite
def columns(draw):
    cls = draw(st.sampled_from(sorted(TYPES)))
    return cls, draw(st.sampled_from(TYPES[cls]))


@SOME
@given(st.sampled_from(["SUM", "AVG", "MIN", "MAX", "COUNT"]), columns(), st.sampled_from(["a", "A"]),
       st.integers(0, 3))  # fmt: skip
@example("MIN", ("string", "string"), "a", 0)
def test_an_aggregate_takes_the_columns_it_is_defined_on(func, column, var, spaces):
    cls, written = column
    schema = parse_ddl(f"ts bigint, v {written}")
    arg = "a" if func == "COUNT" else f"{var}.v"
    text = f"RETURN {' ' * spaces}{func}({arg}) PATTERN A+ a[] WITHIN 5"
    refused = func in NUMBERS_ONLY and cls != "numeric"
    if not refused:
        cetql.compile(text, schema=schema)
        return
    with pytest.raises(QuerySemanticError) as e:
        cetql.compile(text, schema=schema)
    message = e.value.message
    assert f"column 'v' of type {written}" in message and f"{func}({arg})" in message
    assert (e.value.pos.line, e.value.pos.column) == (1, len(f"RETURN {' ' * spaces}{func}(") + 1)


@pytest.mark.parametrize("func", sorted(NUMBERS_ONLY))
def test_without_a_schema_the_type_is_not_known_and_not_refused(func):
    cetql.compile(f"RETURN {func}(a.v) PATTERN A+ a[] WITHIN 5")


def test_min_of_a_text_column_read_from_parquet_is_refused_before_it_runs(tmp_path):
    """The issue's case, on an input whose schema the reader learns (no Spark)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"ts": [1, 2], "name": ["a", "b"]}), path)
    from cetql.backends.inputs.facts import describe_paths

    inputs = describe_paths({None: str(path)}, "ts")  # as `compile --input` and every engine learn it
    with pytest.raises(QuerySemanticError, match=r"column 'name' of type string: MIN takes a numeric column") as e:
        cetql.compile("RETURN MIN(a.name) PATTERN A+ a[] WITHIN 5", inputs=inputs)
    assert (e.value.pos.line, e.value.pos.column) == (1, 12)
