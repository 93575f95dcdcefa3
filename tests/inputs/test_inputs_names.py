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
