"""Exact time: ISO times read at their own precision (nanoseconds
included) in an explicit zone (UTC unless --time-zone), whatever the
session's or the machine's zone; Parquet timestamps of two precisions are
one kind.  Results are compared with the reference on times parsed here,
independently of the reader (epoch nanoseconds as exact fractions of a
second)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from processes import spark_env
from reference import reference_trends

import cetql
from cetql.backends.inputs import sources
from cetql.backends.inputs.times import is_time
from cetql.backends.spark import times
from cetql.base.errors import UsageError
from cetql.base.options import RunOptions
from cetql.surfaces.cli.main import main

CHAIN = "PATTERN S+ s[] WITHIN 1 s"  # every strictly later event may follow: ties are never adjacent
RISING = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"

# (test name, the input, what cetql does) — rows for docs/reliability.md's table.
CASES = [
    ("test_iso_nanoseconds_in_csv", "ISO times in a CSV one nanosecond apart (`…00.000000001Z`)", "read to the nanosecond: ordered, never tied"),
    ("test_iso_nanoseconds_in_json", "ISO times in JSON lines one nanosecond apart", "read to the nanosecond: ordered, never tied"),
    ("test_time_a_type_cannot_hold", "a nanosecond time in year 2300, or a nanosecond digit in a microsecond column", "exit 1 naming the column, the number of rows and a sample; never rounded"),
    ("test_offsets_and_naive_times", "ISO times with offsets (`+02:00`, `-0530`, `Z`) beside times without one", "each the instant it names; times without a zone are UTC, or in `--time-zone`"),
    ("test_session_zone_changes_nothing", "a Spark session whose own time zone is not UTC", "the same trends: the reader gives Spark its zone explicitly"),
    ("test_naive_times_in_a_zone_are_the_same_in_every_session_zone", "a Spark session in any of four zones, naive ISO times read in any of them, around six daylight-saving changes", "the instants Python's zoneinfo gives, whatever the session's zone (a UTC wall clock in the session zone's gap once moved an hour)"),
    ("test_machine_zone_changes_nothing", "`TZ=Europe/Berlin` and a time in its daylight-saving gap", "the same result as under UTC"),
    ("test_unknown_time_zone", "`--time-zone Mars/Olympus`", "exit 2: give a zone name such as UTC or Europe/Berlin"),
    ("test_iso_reader_against_an_independent_parse", "generated ISO times: 1900–2200, 0–9 fraction digits, offsets, none, daylight-saving gaps and overlaps, several zones", "the epoch nanoseconds this test computes itself, every one"),
    ("test_parquet_precisions_are_one_kind", "Parquet inputs with nanosecond (pandas) and microsecond timestamps", "one kind, nanoseconds: the reference's trends"),
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?$")


def iso_seconds(text: str, zone: str = "UTC") -> Fraction:
    """Seconds since the epoch of an ISO time, exactly (this test's own parse)."""
    m = _ISO.match(text)
    wall = datetime.fromisoformat(m.group(1))
    if m.group(3) in (None, ""):
        # fold=0: in a daylight-saving gap, the offset from before it (as java.time moves such a time forward)
        at = wall.replace(tzinfo=ZoneInfo(zone))
    else:
        z = m.group(3)
        offset = timedelta(0) if z == "Z" else (1 if z[0] == "+" else -1) * timedelta(
            hours=int(z[1:3]), minutes=int(z[-2:]))  # fmt: skip
        at = wall.replace(tzinfo=timezone(offset))
    whole = int((at - EPOCH).total_seconds())
    return Fraction(whole) + Fraction(int((m.group(2) or "0").ljust(9, "0")), 10**9)


def _key(v) -> Fraction:
    if isinstance(v, datetime):
        return Fraction(int((v if v.tzinfo else v.astimezone()).timestamp() * 1_000_000), 1_000_000)
    return Fraction(v)


def trends_of(df) -> dict:
    out: dict = {}
    for r in df.collect():
        out.setdefault((_key(r.window_start), _key(r.window_end)), set()).add(tuple(r.events))
    return out


def expected(query: str, events: list[dict], typed: bool = False, window: int = 3600) -> dict:
    """The reference's trends, its windows in exact seconds.  Times are
    shifted by a whole number of windows first, so its float arithmetic
    sees small numbers (near 1.8e9 s a double cannot tell nanoseconds apart)."""
    base = min(e["ts"] for e in events) // window * window
    shifted = [{**e, "ts": e["ts"] - base} for e in events]
    exact = lambda v: Fraction(v).limit_denominator(10**9) + base  # noqa: E731
    return {(exact(a), exact(b)): v for (a, b), v in reference_trends(query, shifted, typed=typed).items()}


def test_iso_nanoseconds_in_csv(spark, tmp_path):
    times = ["2026-01-01T00:00:00.000000001Z", "2026-01-01T00:00:00.000000002Z", "2026-01-01T00:00:00.5Z"]
    data = tmp_path / "ns.csv"
    data.write_text("id,ts\n" + "".join(f"{i},{t}\n" for i, t in enumerate(times, 1)))
    got = trends_of(cetql.compile(CHAIN).run(str(data), spark=spark, id_col="id"))
    assert got == expected(CHAIN, [{"id": i, "ts": iso_seconds(t)} for i, t in enumerate(times, 1)])
    assert (1, 2, 3) in next(iter(got.values()))  # 1 and 2 are one nanosecond apart, not tied


def test_iso_nanoseconds_in_json(spark, tmp_path):
    times = ["2026-03-01T10:00:00.123456789+01:00", "2026-03-01T09:00:00.12345679Z", "2026-03-01T09:00:00.1234568Z"]
    data = tmp_path / "ns.jsonl"
    data.write_text("".join(json.dumps({"id": i, "ts": t}) + "\n" for i, t in enumerate(times, 1)))
    got = trends_of(cetql.compile(CHAIN).run(str(data), spark=spark, id_col="id"))
    assert got == expected(CHAIN, [{"id": i, "ts": iso_seconds(t)} for i, t in enumerate(times, 1)])


def test_time_a_type_cannot_hold(spark, capsys, tmp_path, monkeypatch):
    q = tmp_path / "q.cet"
    q.write_text(CHAIN)
    late = tmp_path / "late.csv"  # nanoseconds: 2300 is past what 64 bits of them hold
    late.write_text("ts\n2026-01-01T00:00:00.000000001Z\n2300-01-01T00:00:00.000000001Z\n")
    code = main(["run", str(q), "--input", str(late)])
    err = capsys.readouterr().err
    assert code == 1 and "column 'ts' holds 1 value(s) that cannot be read as a time" in err and "2300-01-01" in err
    micro = tmp_path / "micro.csv"  # the sample decides microseconds; a later nanosecond digit is refused
    monkeypatch.setattr(sources, "SAMPLE_ROWS", 3)
    micro.write_text("ts\n" + "2026-01-01T00:00:00.000001Z\n" * 4 + "2026-01-01T00:00:00.000001001Z\n")
    code = main(["run", str(q), "--input", str(micro)])
    err = capsys.readouterr().err
    assert code == 1 and "1 value(s) that cannot be read as a time (e.g. '2026-01-01T00:00:00.000001001Z')" in err
    assert len(err.strip().splitlines()) == 1


def test_offsets_and_naive_times(spark, tmp_path):
    times = ["2026-01-01T10:00:00+02:00", "2026-01-01T08:00:00.5Z", "2026-01-01T03:30:00.75-0530",
             "2026-01-01T09:00:00.9"]  # fmt: skip
    data = tmp_path / "zones.csv"
    data.write_text("id,ts\n" + "".join(f"{i},{t}\n" for i, t in enumerate(times, 1)))
    for zone in ("UTC", "Europe/Berlin"):
        events = [{"id": i, "ts": iso_seconds(t, zone)} for i, t in enumerate(times, 1)]
        got = trends_of(cetql.compile(CHAIN).run(str(data), spark=spark, id_col="id", time_zone=zone))
        assert got == expected(CHAIN, events), zone


ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney"]
CHANGES = [(2026, 3, 29), (2026, 10, 25), (2026, 3, 8), (2026, 11, 1), (2026, 4, 5), (2026, 10, 4)]  # their 2026 DST


def test_naive_times_in_a_zone_are_the_same_in_every_session_zone(spark):
    """A naive ISO time read in a zone (--time-zone) is the instant Python's
    zoneinfo gives (a time in a gap moves forward, one in an overlap is the
    earlier), whatever the session's zone: quarter hours around every 2026
    daylight-saving change of four zones, read in each, in sessions of each.
    (Spark's timestamp_diff read the UTC wall time in the session's zone:
    02:59 UTC on 2026-03-29 lies in Berlin's gap and moved an hour.)"""
    from pyspark.sql import functions as F

    walls = [datetime(y, m, d) + timedelta(days=k, minutes=15 * q) for y, m, d in CHANGES for k in (-1, 0, 1)
             for q in range(96)]  # fmt: skip
    texts = [w.strftime("%Y-%m-%dT%H:%M:%S") + ".000000123" for w in walls]
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    want = {z: [(w.replace(tzinfo=ZoneInfo(z)) - epoch) // timedelta(microseconds=1) * 1000 + 123 for w in walls]
            for z in ZONES}  # fmt: skip
    df = spark.createDataFrame([(t,) for t in texts], "t string")
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        for session in ZONES:
            spark.conf.set("spark.sql.session.timeZone", session)
            rows = df.select(*[times.iso_nanos(F.col("t"), z).alias(z) for z in ZONES]).collect()
            for z in ZONES:
                got = [r[z] for r in rows]
                bad = [(t, g, w) for t, g, w in zip(texts, got, want[z]) if g != w]
                assert not bad, (session, z, bad[:3])
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_session_zone_changes_nothing(spark, tmp_path):
    times = ["2026-03-29T01:59:59", "2026-03-29T02:30:00", "2026-03-29T03:00:01"]  # around Berlin's gap
    data = tmp_path / "naive.csv"
    data.write_text("id,ts\n" + "".join(f"{i},{t}\n" for i, t in enumerate(times, 1)))
    ntz = tmp_path / "ntz.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "ts": pa.array([datetime.fromisoformat(t) for t in times],
                                                               pa.timestamp("us"))}), ntz)  # fmt: skip
    events = [{"id": i, "ts": iso_seconds(t)} for i, t in enumerate(times, 1)]
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        for path in (data, ntz):
            got = trends_of(cetql.compile(CHAIN).run(str(path), spark=spark, id_col="id"))
            assert got == expected(CHAIN, events), path
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_machine_zone_changes_nothing(spark, tmp_path):
    """A process of its own, as a user runs it, on a machine in Berlin: the
    same trends and windows, printed in UTC."""
    times = ["2026-03-29T01:59:59", "2026-03-29T02:30:00", "2026-03-29T02:59:59.999999999", "2026-03-29T03:00:00"]
    data = tmp_path / "gap.csv"
    data.write_text("id,ts\n" + "".join(f"{i},{t}\n" for i, t in enumerate(times, 1)))
    q = tmp_path / "q.cet"
    q.write_text("PATTERN S+ s[] WITHIN 30 min")
    proc = subprocess.run([sys.executable, "-m", "cetql", "run", str(q), "--input", str(data), "--id-col", "id",
                           "--format", "json"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=spark_env(TZ="Europe/Berlin", CETQL_DRIVER_MEMORY="1g"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    got: dict = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        start = datetime.fromisoformat(r["window_start"]).replace(tzinfo=UTC)
        got.setdefault(Fraction(int((start - EPOCH).total_seconds())), set()).add(tuple(r["events"]))
    events = [{"id": i, "ts": iso_seconds(t)} for i, t in enumerate(times, 1)]
    assert got == {a: v for (a, _), v in expected(q.read_text(), events).items()}


def test_unknown_time_zone(capsys, tmp_path):
    q = tmp_path / "q.cet"
    q.write_text(CHAIN)
    assert main(["compile", str(q), "--time-zone", "Mars/Olympus"]) == 2
    err = capsys.readouterr().err
    assert "--time-zone 'Mars/Olympus': unknown time zone" in err
    for bad in ("localtime", "", "+25:00", "Europe/Nowhere", 7):
        with pytest.raises(UsageError):
            RunOptions.of(time_zone=bad)
    assert RunOptions.of(time_zone="+05:30").time_zone == "+05:30"


@st.composite
def iso_texts(draw):
    """An ISO time of the documented grammar, near a daylight-saving change
    often, with its exact instant in each zone computed here."""
    day = draw(st.sampled_from([datetime(2026, 3, 29), datetime(2026, 10, 25), datetime(2026, 3, 8), datetime(2026, 11, 1)])
               | st.datetimes(datetime(1900, 1, 1), datetime(2200, 12, 31)))  # fmt: skip
    wall = day.replace(hour=draw(st.integers(0, 23)), minute=draw(st.integers(0, 59)), second=draw(st.integers(0, 59)))
    digits = draw(st.text("0123456789", min_size=0, max_size=9))
    offset = draw(st.sampled_from(["", "", "Z", "+02:00", "-05:30", "+0545", "-03", "+14:00"]))
    sep = draw(st.sampled_from(["T", " "]))
    space = draw(st.sampled_from(["", " "])) if offset else ""
    return wall.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + (f".{digits}" if digits else "") + space + offset


def _nanos(text: str, zone: str) -> int:
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d).(\d\d:\d\d:\d\d)(?:\.(\d+))? ?(Z|[+-]\d\d(?::?\d\d)?)?", text)
    wall = datetime.fromisoformat(f"{m[1]}T{m[2]}")
    if m[4] is None and zone[0] in "+-":
        at = wall.replace(tzinfo=timezone(timedelta(hours=int(zone[:3]), minutes=int(zone[0] + zone[4:]))))
    elif m[4] is None:
        at = wall.replace(tzinfo=ZoneInfo(zone))  # fold=0: a gap takes the offset before it, as java.time
    elif m[4] == "Z":
        at = wall.replace(tzinfo=UTC)
    else:
        digits = m[4][1:].replace(":", "")
        size = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        at = wall.replace(tzinfo=timezone(size if m[4][0] == "+" else -size))
    return (at - EPOCH) // timedelta(seconds=1) * 10**9 + int((m[3] or "").ljust(9, "0"))


@settings(max_examples=3, deadline=None)
@given(texts=st.lists(iso_texts(), min_size=50, max_size=150))
def test_iso_reader_against_an_independent_parse(spark, texts):
    from pyspark.sql import functions as F

    zones = ("UTC", "Europe/Berlin", "America/New_York", "+05:30")
    df = spark.createDataFrame([(t,) for t in texts], "t string")
    got = df.select(*[times.iso_nanos(F.col("t"), z).alias(f"z{i}") for i, z in enumerate(zones)]).collect()
    for text, row in zip(texts, got):
        for i, z in enumerate(zones):
            assert row[f"z{i}"] == _nanos(text, z), (text, z)
    assert all(is_time(t) for t in texts)


def test_parquet_precisions_are_one_kind(spark, tmp_path):
    base = 1_767_225_600_000_000_000  # 2026-01-01 in nanoseconds
    ns = [base + 1, base + 3, base + 2_000_000_000]  # pandas' nanoseconds (Check)
    us = [base + 2_000, base + 1_000_000]  # Spark's microseconds (Debit)
    pq.write_table(pa.table({"id": [1, 2, 3], "ts": pa.array(ns, pa.timestamp("ns"))}), tmp_path / "ns.parquet")
    pq.write_table(pa.table({"id": [4, 5], "ts": pa.array([t // 1000 for t in us], pa.timestamp("us"))}),
                   tmp_path / "us.parquet")  # fmt: skip
    query = "PATTERN SEQ(Check+ c[], Debit d) WITHIN 10 s"
    got = trends_of(cetql.compile(query).run(spark=spark, id_col="id", Check=str(tmp_path / "ns.parquet"),
                                             Debit=str(tmp_path / "us.parquet")))  # fmt: skip
    events = [{"id": i, "ts": Fraction(t, 10**9), "__type": "Check"} for i, t in enumerate(ns, 1)]
    events += [{"id": i, "ts": Fraction(t, 10**9), "__type": "Debit"} for i, t in enumerate(us, 4)]
    assert got == expected(query, events, typed=True) and got
