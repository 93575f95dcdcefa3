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
import pytest
from budget import budget
from engines import footer, plan, rows, run_to, text_rows, write_inputs
from generators import queries, stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from cetql.base.errors import QueryError, SchemaError
from cetql.base.options import Engine

SETTINGS = settings(max_examples=budget(25), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip
SPARK_META = b"org.apache.spark.sql.parquet.row.metadata"

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_parquet_integers_are_read_as_spark_reads_them_on_both_engines", "Parquet integers of every width, signed and unsigned, at their limits (as times, ids, values, keys)", "typed as Spark reads them (uint64 a decimal(20,0), run on Spark); the same rows and footer on the engine the plan chooses as on Spark"),
    ("test_a_column_named_in_any_case_is_the_inputs_on_both_engines", "a query naming a column in another case (`price` for `Price`)", "the input's column, on both engines: its rows, and an unreadable value refused (never read as a null)"),
]  # fmt: skip


def both(spark, text: str, events: list[dict], typed: bool, special: bool, fmt: str, out: str = "parquet", **options):
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
        got = {}
        for engine in (Engine.EMBEDDED, Engine.SPARK):
            done = run_to(folder / engine.value, text, data, by_type, engine, spark=spark, fmt=out, id_col="id",
                          **options)  # fmt: skip
            got[engine] = (rows(done), footer(done)) if out == "parquet" else text_rows(done)
        return got


def check_same_text(out: dict, text: str) -> None:
    assert out[Engine.EMBEDDED] == out[Engine.SPARK], text


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
@given(st.data(), st.booleans(), st.sampled_from(["csv", "json"]))
def test_text_files_are_the_same_on_both_engines(spark, data, aggregation, out):
    """CSV and JSON-lines files, as text: doubles as Java writes them (NaN,
    ±infinity, -0.0 among them), the events of a trend, nulls."""
    text = data.draw(queries(aggregation, repeated_types=True, special=True))
    events = data.draw(stream(False, special=True))
    assume(events)
    options = {} if aggregation else {"trends": "ALL", "max_trends": 0}
    check_same_text(both(spark, text, events, False, True, "parquet", out, **options), text)


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


def _checks(n: int = 300) -> list[dict]:
    import csv as _csv

    examples = Path(__file__).resolve().parents[2] / "examples" / "data" / "checks.csv"
    with open(examples, newline="") as f:
        return [dict(r, ts=int(r["ts"]), id=int(r["id"])) for r, _ in zip(_csv.DictReader(f), range(n))]


BASE = 1_700_000_000  # seconds: November 2023


def _iso(t: int, nanos: int, zone: str | None) -> str:
    import datetime as dt

    wall = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=BASE + t)
    text = wall.isoformat(sep="T") + (f".{nanos:09d}" if nanos else "")
    return text + (zone or "")


def _time_inputs(folder: Path, kind: str) -> str:
    """The README's checks with their times as `kind`, written as a file."""
    import pyarrow as pa

    rows = _checks()
    if kind.startswith("csv"):
        zone = {"csv-iso": None, "csv-iso-z": "Z", "csv-iso-offset": "+02:00", "csv-iso-nanos": None}[kind]
        lines = ["ts,id,src,dst,type"] + [
            f"{_iso(r['ts'], 7 * r['id'] + 1 if kind == 'csv-iso-nanos' else 0, zone)},{r['id']},{r['src']},"
            f"{r['dst']},{r['type']}" for r in rows]  # fmt: skip
        (folder / "in.csv").write_text("\n".join(lines) + "\n")
        return str(folder / "in.csv")
    unit, tz = {"parquet-us-utc": ("us", "UTC"), "parquet-ms-naive": ("ms", None), "parquet-ns-utc": ("ns", "UTC"),
                "parquet-ns-naive": ("ns", None), "parquet-s-offset": ("s", "+05:30")}[kind]  # fmt: skip
    scale = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[unit]
    stamps = pa.array([(BASE + r["ts"]) * scale + (r["id"] if unit == "ns" else 0) for r in rows], pa.int64())
    table = pa.table({"ts": stamps.cast(pa.timestamp(unit, tz=tz)), "id": [r["id"] for r in rows],
                      "src": [r["src"] for r in rows], "dst": [r["dst"] for r in rows]})  # fmt: skip
    pq.write_table(table, folder / "in.parquet")
    return str(folder / "in.parquet")


TIME_KINDS = ["csv-iso", "csv-iso-z", "csv-iso-offset", "csv-iso-nanos", "parquet-us-utc", "parquet-ms-naive",
              "parquet-ns-utc", "parquet-ns-naive", "parquet-s-offset"]  # fmt: skip


@pytest.mark.parametrize("zone", ["UTC", "+05:30"])
@pytest.mark.parametrize("kind", TIME_KINDS)
def test_every_time_kind_is_read_alike_by_both_engines(spark, tmp_path, kind, zone):
    """Times as ISO text (a zone, an offset, none; digits below the
    microsecond) and as Parquet timestamps (every unit, zoned and naive),
    read in UTC and in a fixed offset: the same windows, trends, types and
    footers on both engines."""
    data = _time_inputs(tmp_path, kind)
    text = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 seconds SLIDE 50 seconds"
    out = {}
    for engine in (Engine.EMBEDDED, Engine.SPARK):
        done = run_to(tmp_path / engine.value, text, data, {}, engine, spark=spark, id_col="id", time_zone=zone)
        out[engine] = (rows(done), footer(done))
    check_same(out, f"{kind} in {zone}")
    assert len(out[Engine.EMBEDDED][0]) > 100
    texts = {}
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)  # as the session `cetql run --time-zone` starts has it
    try:
        for engine in (Engine.EMBEDDED, Engine.SPARK):
            for out_format in ("csv", "json"):
                done = run_to(tmp_path / f"{engine.value}-{out_format}", text, data, {}, engine, spark=spark,
                              fmt=out_format, id_col="id", time_zone=zone)  # fmt: skip
                texts.setdefault(out_format, {})[engine] = text_rows(done)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    for got in texts.values():
        check_same_text(got, f"{kind} in {zone}")


TEXTS = ["plain", "with,comma", 'q"uote', "new\nline", " lead", "trail ", "", "é", "back\\slash", 'both\\"', None]


def test_text_values_are_written_alike(spark, tmp_path):
    """Keys of every awkward text (a comma, a quote, a line break, blanks
    around, empty, non-ASCII, a backslash, null) in CSV and JSON files, and
    an aggregate's doubles: the same text from both engines."""
    import pyarrow as pa

    n = 40
    table = pa.table({"ts": list(range(n)), "id": list(range(n)), "k": [TEXTS[i % len(TEXTS)] for i in range(n)],
                      "x": [float(i % 7) / 3 for i in range(n)]})  # fmt: skip
    pq.write_table(table, tmp_path / "in.parquet")
    data = str(tmp_path / "in.parquet")
    for text in ("PATTERN E+ e[] WHERE [k] WITHIN 20 SLIDE 10",
                 "RETURN k, COUNT(*), AVG(e.x), MAX(e.x) PATTERN E+ e[] WHERE [k] GROUP-BY k WITHIN 20"):  # fmt: skip
        for out_format in ("csv", "json"):
            got = {e: text_rows(run_to(tmp_path / f"{e.value}-{out_format}-{len(text)}", text, data, {}, e, spark=spark,
                                       fmt=out_format, id_col="id"))  # fmt: skip
                   for e in (Engine.EMBEDDED, Engine.SPARK)}
            check_same_text(got, f"{text} as {out_format}")


# every integer type a Parquet file may hold, as Arrow writes it
PARQUET_INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("kind", PARQUET_INTEGERS)
def test_parquet_integers_are_read_as_spark_reads_them_on_both_engines(spark, tmp_path, kind):
    """A Parquet column of each integer type is typed as Spark's reader
    types it (`sources.arrow_to_spark`: uint64 is a decimal(20,0)), and its
    extreme values — as times, ids, values and keys — give the same rows on
    the engine the plan chooses as on Spark (a uint64 beyond 2^63 failed the
    embedded engine's read; an int's windows near its limits overflowed 32
    bits on Spark)."""
    import numpy as np
    import pyarrow as pa

    from cetql.backends.embedded.capabilities import CAPABILITIES
    from cetql.backends.inputs.sources import _parquet_columns

    t = getattr(pa, kind)()
    lo, hi = int(np.iinfo(t.to_pandas_dtype()).min), int(np.iinfo(t.to_pandas_dtype()).max)
    ids = [lo, lo + 1, lo + 2, hi - 2, hi - 1, hi]
    first, last = max(lo, -(2**62)), min(hi, 2**62)  # times: where windows are exact (wider ones are refused)
    times = [first, first + 1, first + 2, last - 2, last - 1, last]
    data = tmp_path / "e.parquet"
    pq.write_table(pa.table({"ts": pa.array(times, t), "id": pa.array(ids[::-1], t),
                             "x": pa.array([hi, lo, hi - 1, lo, hi, lo + 1], t)}), data)  # fmt: skip
    read = {f.name: f.dataType.simpleString() for f in spark.read.parquet(str(data)).schema.fields}
    assert {c.name: c.type for c in _parquet_columns([data])} == read
    for text in ("PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 100 SLIDE 50",
                 "RETURN x, COUNT(*) PATTERN E+ e[] WHERE [x] GROUP-BY x WITHIN 100 SLIDE 50"):  # fmt: skip
        options = {"id_col": "id", "max_trends": 0} if text.startswith("PATTERN") else {"exact": "string"}
        chosen = plan(text, str(data), {}, Engine.AUTO, **options).plan.engine.engine
        got = {e: run_to(tmp_path / f"{e.value}-{len(text)}", text, str(data), {}, e, spark=spark, **options)
               for e in {chosen, Engine.SPARK}}  # fmt: skip
        assert rows(got[chosen]) == rows(got[Engine.SPARK]) and rows(got[chosen]), (kind, text)
        assert footer(got[chosen]).remove_metadata() == footer(got[Engine.SPARK]).remove_metadata(), (kind, text)
        # the embedded engine where its table declares the column types (uint64's decimal(20,0) is Spark's)
        assert (chosen == Engine.EMBEDDED) == (set(read.values()) <= CAPABILITIES.column_types), (kind, text, read)


@st.composite
def _cased(draw, name: str) -> str:
    """`name` with each letter's case drawn (one letter for one: `ß` stays,
    as Spark compares names letter by letter)."""
    return "".join(c.upper() if len(c.upper()) == 1 and draw(st.booleans()) else c.lower() for c in name)


CASED_QUERIES = ("PATTERN S+ s[] WHERE s[i].{price} > s[i-1].{price} AND [{grp}] WITHIN 10 SLIDE 5",
                 "RETURN {grp}, COUNT(*) PATTERN S+ s[] WHERE [{grp}] AND s.{price} > 1 GROUP-BY {grp} WITHIN 10 SLIDE 5")  # fmt: skip


@settings(SETTINGS, max_examples=budget(6))
@given(st.sampled_from(CASED_QUERIES), _cased("price"), _cased("größe"), st.sampled_from(["ts", "TS", "Ts"]))
def test_a_column_named_in_any_case_is_the_inputs_on_both_engines(spark, tmp_path_factory, capsys, text, price,
                                                                   grp, time_col):  # fmt: skip
    """A query names a column without regard to case (docs/language.md),
    and every rule keyed by the column's name finds it: the same rows as
    the input's own spelling, on both engines (the embedded engine refused
    `price` for `Price`), and an unreadable value refused (Spark read it as
    a null where the query spelled the column otherwise); a result column
    is named as the input names it."""
    from cetql.surfaces.cli.main import main

    folder = tmp_path_factory.mktemp("cased")
    good = folder / "good.csv"
    good.write_text("ts,id,Price,Größe\n" + "".join(f"{t},{t},{t * 7 % 5},g{t % 2}\n" for t in range(1, 13)))
    bad = folder / "bad.csv"
    bad.write_text(good.read_text() + "13,13,x7,g1\n")
    query = folder / "q.cet"

    def run(written: str, data: Path, engine: str, col: str = "ts") -> tuple[int, list[str], str]:
        query.write_text(written)
        code = main(["run", str(query), "--input", str(data), "--id-col", "id", "--time-col", col, "--engine", engine,
                     "--format", "csv", "--no-serve"])  # fmt: skip
        out, err = capsys.readouterr()
        return code, sorted(out.splitlines()), err

    want = run(text.format(price="Price", grp="Größe"), good, "embedded")
    assert want[0] == 0 and len(want[1]) > 1, want
    for engine in ("embedded", "spark"):
        got = run(text.format(price=price, grp=grp), good, engine, time_col)
        assert got[:2] == want[:2], (engine, text, price, grp, got[2])
        code, _, err = run(text.format(price=price, grp=grp), bad, engine, time_col)
        assert code == 1 and "column 'Price' holds 1 value(s) that cannot be read" in err, (engine, err)
