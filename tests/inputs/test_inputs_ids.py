"""Ids given by the user identify events: null (an empty CSV field) or
repeated ids fail the query with the id and its count, or are dropped and
counted with --drop-invalid; an id column of a type ids cannot have is
refused before Spark runs.

`checks.check_ids` is a function of the scan, applied wherever the plan's
scan has a user's id column."""

from __future__ import annotations

import pytest
from reference import reference_trends

from cetql.backends.spark import checks
from cetql.backends.spark.failures import describe
from cetql.base.errors import SchemaError
from cetql.surfaces.cli.main import main

KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_repeated_id_is_refused", "`--id-col id` where two rows share an id", "exit 1, one line: the id, how many rows hold it, and what to do"),
    ("test_empty_id_is_refused", "`--id-col id` with an empty id field", "exit 1: a row has no id"),
    ("test_drop_invalid_drops_bad_ids", "null or repeated ids with `--drop-invalid`", "every such row dropped and counted; the reference's trends on the rest"),
    ("test_text_ids_are_checked", "a text id column with a repeated id", "exit 1: the id and how many rows hold it; with `--drop-invalid` its rows dropped"),
    ("test_id_column_of_a_type_ids_cannot_have", "`--id-col` naming a timestamp (or a double) column", "exit 2 before Spark runs: ids must be whole numbers or text"),
]


def _files(tmp_path, body: str):
    q = tmp_path / "q.cet"
    q.write_text(KITING)
    data = tmp_path / "in.csv"
    data.write_text("id,ts,src,dst\n" + body)
    return q, data


def _events(body: str) -> list[dict]:
    out = []
    for line in body.strip().splitlines():
        i, t, s, d = line.split(",")
        out.append({"id": int(i) if i else None, "ts": int(t), "src": s, "dst": d})
    return out


def test_repeated_id_is_refused(spark, capsys, tmp_path):
    q, data = _files(tmp_path, "1,1,A,B\n2,2,B,C\n2,3,B,D\n4,4,D,E\n")
    assert main(["run", str(q), "--input", str(data), "--id-col", "id"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("error: invalid id: id 2 of id column 'id' is on 2 rows; every event needs its own id: fix the "
                   "input, or run with --drop-invalid to drop such rows")  # fmt: skip


def test_empty_id_is_refused(spark, capsys, tmp_path):
    q, data = _files(tmp_path, "1,1,A,B\n,2,B,C\n3,3,B,D\n")
    assert main(["run", str(q), "--input", str(data), "--id-col", "id"]) == 1
    err = capsys.readouterr().err.strip()
    assert "a row of id column 'id' has no id" in err and len(err.splitlines()) == 1


def test_drop_invalid_drops_bad_ids(spark, capsys, tmp_path):
    body = "1,1,A,B\n,2,B,C\n3,3,B,D\n3,4,D,E\n5,5,B,F\n6,6,F,G\n6,7,B,H\n"
    q, data = _files(tmp_path, body)
    code = main(["run", str(q), "--input", str(data), "--id-col", "id", "--drop-invalid", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0 and "dropped 5 input row(s)" in out.err
    import json

    got: dict = {}
    for line in out.out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            got.setdefault((r["window_start"], r["window_end"]), set()).add(tuple(r["events"]))
    kept = [e for e in _events(body) if e["id"] in (1, 5)]  # no copy of a repeated id is kept
    assert got == reference_trends(KITING, kept)


def test_text_ids_are_checked(spark):
    strings = spark.createDataFrame([("a",), ("b",), ("a",)], "id string")
    with pytest.raises(Exception) as failed:
        checks.check_ids(strings, "id", drop=False).collect()
    assert str(describe(failed.value)).startswith("invalid id: id a of id column 'id' is on 2 rows")
    assert checks.check_ids(strings, "id", drop=True).count() == 1


def test_id_column_of_a_type_ids_cannot_have(spark, capsys, tmp_path):
    q, data = _files(tmp_path, "1,2026-01-01T00:00:01Z,A,B\n2,2026-01-01T00:00:02Z,B,C\n")
    assert main(["run", str(q), "--input", str(data), "--id-col", "ts", "--time-col", "ts"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: id column 'ts' is a timestamp; ids must be whole numbers or text")
    for spark_type, cls in (("double", "numeric"), ("timestamp", "timestamp"), ("bigint", "timestamp"),
                            ("array<int>", "other"), ("boolean", "boolean")):  # fmt: skip
        with pytest.raises(SchemaError):
            checks.check_id_type("x", spark_type, cls)
    for spark_type in ("bigint", "int", "string", "decimal(20,0)"):
        checks.check_id_type("x", spark_type, "numeric")
