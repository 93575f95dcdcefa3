"""Column names as Spark resolves them (without case): an input whose
columns Spark cannot tell apart (`id` twice in a Parquet file, `x` beside
`X` in a CSV header or a JSON object) is refused when it is described,
naming the input and both columns — never Spark's COLUMN_ALREADY_EXISTS.
Any other name, backticks, dots and spaces included, is a column (read on
Spark in tests/engines/test_inputs_spark.py)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cetql.backends.inputs.sources import describe
from cetql.base.errors import SchemaError

SOME = settings(max_examples=budget(60), deadline=None, suppress_health_check=list(HealthCheck))

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_one_column_named_two_ways_by_two_inputs_is_refused", "typed inputs that name one column two ways (`Price`, `price`)", "refused when the inputs are described, naming both columns and inputs"),
    ("test_the_time_column_in_any_case_is_read_as_the_inputs", "`--time-col TS` for a column `ts` (nanosecond times too)", "the same time kind and plan as `--time-col ts`"),
    ("test_a_variable_in_brackets_stays_a_variable_beside_a_column_of_its_name_in_another_case", "`[c]` for the variable `c` beside a column `C`", "refused as a variable, not read as the column"),
]  # fmt: skip
names = st.text(st.sampled_from("aAbB`. _é"), min_size=1, max_size=3).filter(lambda s: s.strip() == s)


def _write(folder, fmt: str, columns: list[str]):
    if fmt == "parquet":
        path = folder / "in.parquet"
        pq.write_table(pa.Table.from_arrays([pa.array([i, i + 1]) for i in range(len(columns))], names=columns), path)
    elif fmt == "json":
        path = folder / "in.json"
        path.write_text("".join("{" + ", ".join(f"{json.dumps(c)}: {r}" for c in columns) + "}\n" for r in (1, 2)))
    else:
        path = folder / "in.csv"
        path.write_text(",".join('"' + c.replace('"', '""') + '"' for c in columns) + "\n"
                        + "".join(",".join(str(r) for _ in columns) + "\n" for r in (1, 2)))  # fmt: skip
    return path


@SOME
@given(st.lists(names, min_size=1, max_size=5), st.sampled_from(["parquet", "csv", "json"]))
@example(["id", "ts", "id"], "parquet")  # the duplicate Parquet columns
def test_columns_spark_cannot_tell_apart_are_refused(tmp_path_factory, columns, fmt):
    folder = tmp_path_factory.mktemp(fmt)
    if fmt == "json" and len(set(columns)) != len(columns):
        columns = list(dict.fromkeys(columns))  # a JSON object keeps one of two equal keys
    path = _write(folder, fmt, ["ts", *columns])
    lowered = [c.lower() for c in ["ts", *columns]]
    clash = next((c for i, c in enumerate(lowered) if c in lowered[:i]), None)
    if clash is None:
        assert [c.name for c in describe(str(path)).columns] == ["ts", *columns]
        return
    with pytest.raises(SchemaError) as e:
        describe(str(path))
    text = str(e.value)
    assert text.startswith(f"input '{path}' has ") and "Spark cannot tell apart" in text and "\n" not in text
    assert f"'{clash}'" in text.lower()


@SOME
@given(st.builds(str.__add__, st.characters(whitelist_categories=("Lu", "Ll", "Lo")),
                 st.text(st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nd")), max_size=4)))  # fmt: skip
def test_a_column_named_in_any_script_is_read_as_an_ascii_one(tmp_path_factory, name):
    """A query names a column in any script (letters then letters, digits,
    `_`): the same counts as the same column named `x`."""
    from cetql.surfaces.cli.main import main

    if name.lower() in ("id", "ts", "x", "g") or name.upper() in ("SEQ", "NOT", "AND", "OR", "NEXT", "TRUE"):
        return
    folder = tmp_path_factory.mktemp("named")
    got = []
    for column in (name, "x"):
        data = folder / f"{'x' if column == 'x' else 'named'}.csv"
        data.write_text(f"id,ts,{column},g\n1,1,5,a\n2,2,6,a\n3,3,4,b\n4,4,7,a\n5,5,8,b\n", encoding="utf-8")
        query = folder / f"{data.stem}.cet"
        query.write_text(f"RETURN g, COUNT(*) PATTERN E+ e[] WHERE e[i].{column} > e[i-1].{column} AND [g] "
                         "GROUP-BY g WITHIN 10", encoding="utf-8")  # fmt: skip
        out = folder / f"{data.stem}-out"
        assert main(["run", str(query), "--input", str(data), "--id-col", "id", "--output", str(out),
                     "--format", "csv", "--engine", "embedded"]) == 0  # fmt: skip
        got.append(sorted("".join(p.read_text() for p in out.glob("*.csv")).splitlines()))
    assert got[0] == got[1] and len(got[0]) > 1


def test_one_column_named_two_ways_by_two_inputs_is_refused(tmp_path):
    """Typed inputs that spell one column two ways (`Price`, `price`): a
    query cannot tell them apart, and each input's rules (its casts, which
    values are checked) would key them apart — an unreadable value was read
    as a null; refused when the inputs are described, naming both."""
    from cetql.backends.inputs.facts import describe_paths

    (tmp_path / "a.csv").write_text("ts,id,Price\n1,1,1\n2,2,x7\n")
    (tmp_path / "b.csv").write_text("ts,id,price\n3,3,1\n")
    with pytest.raises(SchemaError, match="column 'Price' of input Check and 'price' of input Pay are one column"):
        describe_paths({"Check": str(tmp_path / "a.csv"), "Pay": str(tmp_path / "b.csv")}, "ts")


@SOME
@given(st.sampled_from(["ts", "TS", "tS", "Ts"]), st.sampled_from(["parquet", "csv"]))
def test_the_time_column_in_any_case_is_read_as_the_inputs(tmp_path_factory, time_col, fmt):
    """`--time-col TS` for a column `ts` of nanosecond times: the same time
    kind and plan as `--time-col ts` (the nanoseconds were looked up by the
    exact name: the plan read them as microseconds, and the embedded engine
    failed with DuckDB's binder error)."""
    import cetql
    from cetql.backends.inputs.facts import describe_paths

    folder = tmp_path_factory.mktemp("nanos")
    stamps = ["2024-01-01T00:00:00.000000001", "2024-01-01T00:00:00.000000002"]
    if fmt == "parquet":
        path = folder / "in.parquet"
        pq.write_table(pa.table({"ts": pa.array([1, 2], pa.timestamp("ns")), "id": [1, 2]}), path)
    else:
        path = folder / "in.csv"
        path.write_text("ts,id\n" + "".join(f"{s},{i}\n" for i, s in enumerate(stamps)))
    text = "PATTERN E+ e[] WITHIN 10 seconds"
    plans = [cetql.compile(text, inputs=describe_paths({None: str(path)}, col), time_col=col, id_col="id").plan
             for col in ("ts", time_col)]  # fmt: skip
    assert plans[0].scan.inputs[0].time_cast == plans[1].scan.inputs[0].time_cast
    assert plans[0].scan == plans[1].scan and plans[0].windows == plans[1].windows


def test_a_variable_in_brackets_stays_a_variable_beside_a_column_of_its_name_in_another_case():
    """`[c]` names the variable c even where the input has a column `C`:
    refused as a variable, not read as the column (names are respelled as
    the input's columns only where they are columns)."""
    import cetql
    from cetql.base.errors import QueryError
    from cetql.planner.semantics.schema import parse_ddl

    with pytest.raises(QueryError, match="'c' is an event variable"):
        cetql.compile("PATTERN S+ c[] WHERE [c] WITHIN 10", schema=parse_ddl("ts bigint, id bigint, C bigint"))
