"""Messages from causes: every refusal is one line chosen from the
exception's type or Spark's error class, and says what to do; nothing
reaches the terminal from Spark, the JVM or Python's traceback machinery."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JError

import cetql
from cetql.backends.spark.failures import describe
from cetql.base.errors import CetqlError, ParameterError, QuerySemanticError
from cetql.surfaces.arguments import QueryTextError
from cetql.surfaces.cli.main import main

KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
CHECKS = "id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,B,D\n4,4,D,E\n"

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_malformed_remote", "`--remote sc://:x`, `sc://host:99999` or `http://…`", "exit 2, one line: not a Spark Connect address, or the port's range; no traceback"),
    ("test_malformed_spark_remote", "`SPARK_REMOTE` set to a malformed address", "exit 2, one line naming SPARK_REMOTE"),
    ("test_query_that_is_not_text", "`cetql.compile(None)` (or bytes, or a number)", "a cetql error that is also a `TypeError`"),
    ("test_huge_literal", "a 42-digit literal, or `1e400`", "exit 2 before Spark starts, naming the number and its place"),
    ("test_huge_parameter", "`--param r=` a 42-digit number", "exit 2 before Spark starts, naming the parameter"),
    ("test_window_too_long", "`WITHIN 1e30`", "exit 2 before Spark starts: longer than a window can be"),
    ("test_times_near_the_int64_limits", "integer times near ±9.2e18", "exit 1, one line: a number past its type's range; no JVM log record, never 'a predicate'"),
    ("test_limit_past_32_bits", "`--limit 3000000000`", "exit 2: at most 2,147,483,647"),
    ("test_failures_by_type_and_class", "a JVM call that fails while Spark runs on; Python's own assertion while a plan is built", "a value Spark cannot take, never 'Spark stopped'; an internal error with its place, never an empty message"),
]


@pytest.fixture
def files(tmp_path):
    def make(query=KITING, data=CHECKS):
        q = tmp_path / "q.cet"
        q.write_text(query)
        d = tmp_path / "in.csv"
        d.write_text(data)
        return q, d

    return make


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("remote, says", [
    ("sc://:x", "is not a Spark Connect address"),
    ("sc://host:99999", "the port must be a number from 1 to 65535"),
    ("sc://host:", "the port must be a number from 1 to 65535"),
    ("http://localhost:15002", "unknown Spark Connect address"),
    ("sc://host name:15002", "is not a Spark Connect address"),
])  # fmt: skip
def test_malformed_remote(capfd, files, remote, says):
    q, d = files()
    assert main(["run", str(q), "--input", str(d), "--remote", remote]) == 2
    assert says in _one_line(capfd.readouterr().err)


def test_malformed_spark_remote(capfd, files, monkeypatch):
    q, d = files()
    monkeypatch.setenv("SPARK_REMOTE", "sc://:x")
    assert main(["run", str(q), "--input", str(d)]) == 2
    assert "SPARK_REMOTE='sc://:x' is not a Spark Connect address" in _one_line(capfd.readouterr().err)


def test_query_that_is_not_text():
    for value in (None, 42, b"PATTERN A a WITHIN 1"):
        with pytest.raises(TypeError) as raised:
            cetql.compile(value)
        assert isinstance(raised.value, CetqlError) and isinstance(raised.value, QueryTextError)


def test_huge_literal(capfd, files):
    q, d = files("PATTERN S+ s[] WHERE s[i].ts > s[i-1].ts + 123456789012345678901234567890123456789012 WITHIN 10")
    assert main(["run", str(q), "--input", str(d)]) == 2
    err = capfd.readouterr().err
    assert "1:44: error: the number 1234567890…789012 (42 digits) does not fit a 64-bit integer" in err
    with pytest.raises(QuerySemanticError, match="not a finite number a double can hold"):
        cetql.compile("PATTERN S+ s[] WHERE s[i].ts > 1e400 WITHIN 10")


def test_huge_parameter(capfd, files):
    q, d = files("PATTERN S+ s[] WHERE s[i].ts > s[i-1].ts * r WITHIN 10")
    assert main(["run", str(q), "--input", str(d), "--param", "r=" + "9" * 42]) == 2
    assert "parameter r: 9999999999…999999 (42 digits) does not fit a 64-bit integer" in _one_line(
        capfd.readouterr().err)  # fmt: skip
    with pytest.raises(ParameterError):
        cetql.compile("PATTERN S+ s[] WHERE s[i].ts > r WITHIN 10", {"r": -(2**63) - 1})
    assert cetql.compile("PATTERN S+ s[] WHERE s[i].ts > r WITHIN 10", {"r": -(2**63)}).kind == "detection"


def test_window_too_long(capfd, files):
    q, d = files("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 1e30")
    assert main(["run", str(q), "--input", str(d)]) == 2
    assert "is longer than a window can be" in capfd.readouterr().err
    with pytest.raises(QuerySemanticError, match="292 years"):
        cetql.compile("PATTERN S+ s[] WITHIN 300 week SLIDE 1 s".replace("300 week", "20000 week"))


def test_times_near_the_int64_limits(spark, capfd, files):
    q, d = files("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100",
                 "id,ts,src,dst\n1,9223372036854775800,A,B\n2,9223372036854775806,B,C\n3,-9223372036854775807,B,D\n")
    code = main(["run", str(q), "--input", str(d), "--id-col", "id"])
    line = _one_line(capfd.readouterr().err)
    assert code == 1 and line.startswith("error: time column 'ts': 3 row(s) have a time outside the range its windows "
                                          "can be computed in (from -9,223,372,036,854,775,") and "Spark stopped" not in line


def test_limit_past_32_bits(capfd, files):
    q, d = files()
    assert main(["run", str(q), "--input", str(d), "--limit", "3000000000"]) == 2
    assert "--limit 3000000000: must be at most 2,147,483,647" in capfd.readouterr().err


def test_failures_by_type_and_class(spark):
    from pyspark.sql import functions as F

    with pytest.raises(Py4JError) as raised:  # a Python int past 64 bits, handed to the JVM
        spark.range(1).select(F.lit(2**70)).collect()
    said = str(describe(raised.value))
    assert "Spark cannot take a value of this query (NumberFormatException" in said and "stopped" not in said
    with pytest.raises(Exception) as raised:  # Spark's error class, not its text, picks the message
        spark.range(1).selectExpr("9223372036854775807L + id + 1").collect()
    said = str(describe(raised.value))
    assert "past what its type holds" in said and "predicate" not in said
    assert spark.range(3).count() == 3  # and Spark still runs
    try:  # Python's own exception while a query is built: a bug, said with its place, never an empty message
        assert False  # noqa: B011, PT015
    except AssertionError as e:
        said = str(describe(e))
    assert said.startswith("internal error: AssertionError at test_inputs_messages.py:") and "report it" in said
