"""On Spark, an input file rewritten after the query was planned is refused
by the job that reads it (`spark.reader.unchanged`, with the one rule of
`inputs.stamps`): Spark lists a path's files when the DataFrame is made and
read a CSV rewritten since by the old header's positions — other columns,
other trends, no error."""

import pytest
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
