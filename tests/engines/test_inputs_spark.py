"""On Spark, an input file rewritten after the query was planned is refused
by the job that reads it (`spark.reader.unchanged`, with the one rule of
`inputs.stamps`): Spark lists a path's files when the DataFrame is made and
read a CSV rewritten since by the old header's positions — other columns,
other trends, no error."""

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from reference import reference_trends

import cetql
from cetql.backends.spark.failures import describe

KITING = "PATTERN C+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
PLANNED = "id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,C,D\n"
REWRITTEN = "id,ts,dst,src\n1,1,X,B\n2,2,B,C\n3,3,C,D\n4,4,D,E\n"  # other columns in other places, one more row


def _trends(rows):
    return sorted(tuple(r.events) for r in rows)


def test_a_csv_rewritten_after_planning_is_refused_when_read(spark, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(PLANNED)
    df = cetql.compile(KITING).run(str(path), spark=spark, id_col="id")  # planned, not read yet
    path.write_text(REWRITTEN)
    with pytest.raises(Exception) as e:
        df.collect()
    message = describe(e.value).text("cli")
    assert message.startswith(f"input '{path}': file {path.resolve()} changed since the query was planned")
    assert message.endswith("; run the query again to plan it for the input as it is now")
    again = cetql.compile(KITING).run(str(path), spark=spark, id_col="id").collect()  # planned for it as it is
    events = [dict(zip(("id", "ts", "dst", "src"), (int(a), int(b), c, d)))
              for a, b, c, d in (line.split(",") for line in REWRITTEN.splitlines()[1:])]  # fmt: skip
    want = {t for ts in reference_trends(KITING, events).values() for t in ts}
    assert set(_trends(again)) == want


def test_an_unchanged_input_is_read(spark, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(PLANNED)
    df = cetql.compile(KITING).run(str(path), spark=spark, id_col="id")
    assert _trends(df.collect()) == [(1, 2, 3)]


# Inputs the earlier hunt found ending in "internal error", a raw Spark or Py4J error, or rows with null or
# wrapped windows: each ends in one line of cetql naming the column or the input.
def _decimals(path, values, scale=0):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": list(range(1, len(values) + 1)),
                             "ts": pa.array([Decimal(v) for v in values], pa.decimal128(38, scale))}), path)  # fmt: skip


YEAR_ONE = "id,ts,x\n1,0001-01-01T00:00:00Z,1\n2,0001-01-01T00:00:01Z,2\n"
OUTSIDE = "time column 'ts': 2 row(s) have a time outside the range its windows can be computed in"
HOSTILE = [
    ("year-0001 times", "PATTERN A+ a[] WITHIN 5 seconds", lambda p: p.with_suffix(".csv").write_text(YEAR_ONE),
     ".csv", OUTSIDE + " (from 0001-01-02 to 9999-12-30"),
    ("decimal times near 10^37", "PATTERN A+ a[] WITHIN 5", lambda p: _decimals(p, ["1e37", "10000000000000000000000000000000000001"]),
     ".parquet", OUTSIDE),
    ("… with SLIDE (their windows wrapped)", "PATTERN A+ a[] WITHIN 5 SLIDE 1",
     lambda p: _decimals(p, ["1e37", "10000000000000000000000000000000000001"]), ".parquet", OUTSIDE),
    ("… with a decimal window (null windows)", "PATTERN A+ a[] WITHIN 0.5",
     lambda p: _decimals(p, ["1e37", "10000000000000000000000000000000000001"]), ".parquet", OUTSIDE),
    ("doubles near 10^33 (null windows)", "PATTERN A+ a[] WITHIN 5",
     lambda p: p.with_suffix(".csv").write_text("id,ts\n1,1e33\n2,1.5e33\n"), ".csv", OUTSIDE),
]  # fmt: skip


@pytest.mark.parametrize("what,query,write,suffix,said", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_times_end_in_one_line(spark, tmp_path, capsys, what, query, write, suffix, said):
    from cetql.surfaces.cli.main import main

    path = (tmp_path / "in").with_suffix(suffix)
    write(path)
    q = tmp_path / "q.cet"
    q.write_text(query)
    code = main(["run", str(q), "--input", str(path), "--id-col", "id", "--format", "csv", "--no-serve"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and err[0].startswith("error: " + said), (what, err)
    assert main(["run", str(q), "--input", str(path), "--id-col", "id", "--drop-invalid", "--no-serve"]) == 0
    assert "dropped 2 input row(s)" in capsys.readouterr().err


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
@given(st.lists(st.text(st.sampled_from("ab`. \"é,"), min_size=1, max_size=4).filter(lambda s: s.strip() == s),
                min_size=1, max_size=4, unique_by=str.lower))  # fmt: skip
@example(["`x", "a.b", "e`f`g"])  # a backtick in a column name was Spark's PARSE_SYNTAX_ERROR
def test_any_column_name_is_read_and_carried(spark, tmp_path_factory, names):
    import csv
    import io

    names = [n for n in names if n.lower() not in ("id", "ts")] or ["x"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "ts", *names])
    w.writerows([[1, 1, *range(len(names))], [2, 2, *range(10, 10 + len(names))]])
    path = tmp_path_factory.mktemp("names") / "in.csv"
    path.write_text(out.getvalue())
    (r,) = cetql.compile("PATTERN A+ a[] WITHIN 5").run(str(path), spark=spark, id_col="id", with_rows=True).collect()
    assert [x.asDict() for x in r.rows] == [dict(zip(["id", "ts", *names], [1, 1, *range(len(names))])),
                                            dict(zip(["id", "ts", *names], [2, 2, *range(10, 10 + len(names))]))]
