"""Hostile inputs, generated: CSV, JSON lines and Parquet files with NaN,
±Infinity, -0.0, nulls, duplicate and empty ids, byte-order marks, quoted
newlines, commas and quotes, extreme integers, nanosecond and zoned ISO
times around a daylight-saving gap, folders whose files order their columns
differently, and option sets (--id-col, --drop-invalid, --time-zone,
--strategy, --output).  Each case runs `cetql run` in this process on the
suite's Spark session and checks:

- the exit status is 0, 1, 2 or 130; stderr is at most a few lines, with no
  traceback and no log record;
- nothing but the output path changed in the folder around the inputs;
- the outcome is the one the data calls for: a refusal (exit 1) when a row
  is invalid and --drop-invalid is not given (or a time is so near the
  64-bit limit that its windows cannot be computed), else a result equal to
  tests/support/reference.py computed on the rows this module parses itself, with
  the number of dropped rows it counts.

The rows are modelled here independently of the reader: each value's
meaning (its exact time as a fraction of a second, its number, null) is
decided from what was written, by SEMANTICS.md's rules.

A fixed seed, 25 cases and a 30-second budget keep it short in the suite;
`CETQL_FUZZ_EXAMPLES=2000 CETQL_FUZZ_SECONDS=0` runs a long campaign
(`CETQL_FUZZ_SEED` picks another seed; `CETQL_FUZZ_LOG=file` records each
case's outcome).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from reference import reference_aggregates, reference_trends

import cetql
from cetql.surfaces.cli.main import main

EXAMPLES = int(os.environ.get("CETQL_FUZZ_EXAMPLES", "25"))
SECONDS = float(os.environ.get("CETQL_FUZZ_SECONDS", "30"))  # 0: no budget
SEED = int(os.environ.get("CETQL_FUZZ_SEED", "20261124"))
LOG = os.environ.get("CETQL_FUZZ_LOG")

# (test name, the input, what cetql does) — a row for docs/reliability.md's table.
CASES = [
    ("test_hostile_inputs", "generated CSV, JSON-lines and Parquet inputs: NaN, ±Infinity, -0.0, nulls, duplicate and empty ids, BOMs, quoted newlines, extreme integers, nanosecond and zoned times, DST gaps, option sets", "exit 0, 1 or 2 with at most a few lines and no traceback; nothing outside the output changed; a result equals the reference on the same rows"),
]

INT64 = 2**63
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KITE = "PATTERN S+ s[] WHERE s[i].src = s[i-1].dst WITHIN {w}"
RISE = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN {w}"
COUNT = "RETURN COUNT(*) PATTERN S+ s[] WHERE s[i].src = s[i-1].dst WITHIN {w}"
USES = {KITE: ("src", "dst"), RISE: ("x",), COUNT: ("src", "dst")}
NAN = ("NaN",)  # a written NaN, kept apart from numbers until the model orders it


# ---------------------------------------------------------------- the model


@dataclass
class Row:
    n: int  # the row's own number: a clean id
    id: object  # the hostile id: an int, or None (empty)
    ts: object  # as written: int, float, ISO text, None
    src: object
    dst: object
    x: object  # int, float, "n/a" or None
    at: Fraction | None = None  # the row's exact time (seconds, or the column's units), None: invalid
    bad_value: bool = False  # a used column holds a value its type cannot read


@dataclass
class Case:
    fmt: str  # csv, json, parquet
    mode: str  # int, float, iso
    rows: list[Row]
    query: str
    window: str
    id_col: str | None
    drop: bool
    zone: str | None
    strategy: str | None
    output: bool
    bom: bool
    spaced: bool
    split: bool
    order: list[str]
    parquet_time: str = "ns"  # iso mode in Parquet: ns, ns-utc, us, us-utc
    notes: list[str] = field(default_factory=list)


def _iso(wall: datetime, digits: str, zone: str) -> str:
    return wall.strftime("%Y-%m-%dT%H:%M:%S") + (f".{digits}" if digits else "") + zone


def _tz(zone: str):
    if zone[0] in "+-":
        sign = 1 if zone[0] == "+" else -1
        return timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    return ZoneInfo(zone)


def _instant(text: str, zone: str) -> Fraction | None:
    """An ISO time's exact instant, by this module's own reading: a written
    offset, else `zone` (fold=0: a time in a daylight-saving gap takes the
    offset from before it, as java.time moves it forward)."""
    date, _, rest = text.partition("T")
    clock, frac, off = rest[:8], "", rest[8:]
    if off.startswith("."):
        end = 1
        while end < len(off) and off[end].isdigit():
            end += 1
        frac, off = off[1:end], off[end:]
    wall = datetime.fromisoformat(f"{date}T{clock}")
    if off == "":
        at = wall.replace(tzinfo=_tz(zone))
    elif off == "Z":
        at = wall.replace(tzinfo=UTC)
    else:
        sign = 1 if off[0] == "+" else -1
        digits = off[1:].replace(":", "")
        at = wall.replace(tzinfo=timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))))
    seconds = (at - EPOCH) // timedelta(seconds=1)
    return Fraction(seconds) + Fraction(int(frac.ljust(9, "0") or 0), 10**9)


@st.composite
def times(draw, mode: str, fmt: str):
    if mode == "int":
        kind = draw(st.sampled_from(["small"] * 8 + ["high", "low", "past"]))
        if kind == "small":
            return draw(st.integers(0, 30))
        if kind == "high":
            return INT64 - 1 - draw(st.integers(0, 40))
        if kind == "low":
            return -INT64 + draw(st.integers(0, 40))
        return INT64 + draw(st.integers(0, 40)) if fmt != "parquet" else draw(st.integers(0, 30))
    if mode == "float":
        return draw(st.sampled_from([math.nan, math.inf, -math.inf, -0.0, None] + [float(i) / 4 for i in range(0, 120, 7)]))
    if fmt != "parquet" and draw(st.integers(0, 40)) == 0:
        return "2300-01-01T00:00:00.000000001Z"  # nanoseconds 64 bits cannot hold
    wall = datetime(2026, 3, 29, draw(st.integers(0, 4)), draw(st.sampled_from([0, 15, 30, 59])),
                    draw(st.sampled_from([0, 1, 59])))  # fmt: skip
    digits = draw(st.sampled_from(["", "5", "123", "000001", "999999999", "000000001"]))
    zone = "" if fmt == "parquet" else draw(st.sampled_from(["", "", "Z", "+02:00", "-0530"]))
    return _iso(wall, digits, zone)


VALUES = ["A", "B", "C", "B", "A", "B\nX", "A,B", 'say "hi"', " A", "", None]
XS = [1, 2, 3, 5, 8, -1, 0, -0.0, 0.5, 2.5, math.nan, math.inf, -math.inf, None, INT64 - 1, -INT64, INT64 + 7, "n/a"]


@st.composite
def cases(draw):
    fmt = draw(st.sampled_from(["csv", "csv", "json", "parquet"]))
    mode = draw(st.sampled_from(["int", "int", "float", "iso", "iso"]))
    size = draw(st.integers(1, 9))
    rows = []
    for n in range(1, size + 1):
        ident = draw(st.sampled_from([n, n, n, n, n - 1 or 1, None]))
        rows.append(Row(n, ident, draw(times(mode, fmt)), draw(st.sampled_from(VALUES)), draw(st.sampled_from(VALUES)),
                        draw(st.sampled_from(XS))))  # fmt: skip
    numbers = [r for r in rows if r.x is not None and r.x != "n/a"]
    hostile = [r for r in rows if r.x == "n/a"]
    for r in hostile[(1 if len(numbers) >= 3 else 0) :]:  # one unreadable value among numbers, never a text column
        r.x = None
    query = draw(st.sampled_from([KITE, KITE, RISE, COUNT]))
    window = draw(st.sampled_from(["30 min", "1 h SLIDE 30 min"] if mode == "iso" else ["10", "10 SLIDE 5"]))
    detect = query is not COUNT
    return Case(
        fmt, mode, rows, query, window,
        id_col=draw(st.sampled_from(["id", "n", None])) if detect else None,
        drop=draw(st.booleans()),
        zone=draw(st.sampled_from([None, None, "Europe/Berlin", "+05:30"])) if mode == "iso" else None,
        strategy=draw(st.sampled_from([None, None, "distributed"])) if detect else None,
        output=draw(st.booleans()),
        bom=draw(st.booleans()) and fmt != "parquet",
        spaced=draw(st.booleans()) and fmt == "csv",
        split=draw(st.booleans()) and fmt != "parquet" and size > 1,
        order=draw(st.permutations(["n", "id", "ts", "src", "dst", "x"])),
        parquet_time=draw(st.sampled_from(["ns", "ns-utc", "us", "us-utc"])),
    )  # fmt: skip


def x_type(case: Case) -> str:
    """The type the reader gives column x, by its documented rules (a
    sample that is the whole file): whole numbers → bigint (decimal past 64
    bits), other numbers → double; Parquet as the writer typed it."""
    vals = [r.x for r in case.rows if r.x is not None]
    if case.fmt == "parquet":
        return "bigint" if vals and all(isinstance(v, int) and -INT64 <= v < INT64 for v in vals) else "double"
    numbers = [v for v in vals if v != "n/a"]
    if not vals:
        return "string"
    if len(numbers) == len(vals) and all(isinstance(v, int) for v in numbers):
        return "bigint" if all(-INT64 <= v < INT64 for v in numbers) else "decimal"
    if numbers and len(numbers) * 2 > len(vals):
        return "bigint" if all(isinstance(v, int) for v in numbers) else "double"
    return "string"


def normalise(case: Case) -> None:
    """What each written value means: nulls per format, the exact time, an
    unreadable value in a used column."""
    zone = case.zone or "UTC"
    xt = x_type(case)
    if case.fmt == "parquet":
        for r in case.rows:
            r.x = None if r.x == "n/a" else r.x
        xt = x_type(case)
    for r in case.rows:
        if case.fmt == "csv":  # an empty field is null
            r.src, r.dst = (None if v == "" else v for v in (r.src, r.dst))
        if isinstance(r.ts, float) and not math.isfinite(r.ts) or r.ts is None:
            r.at = None
        elif case.mode == "iso":
            r.at = _parquet_instant(case, r.ts, zone) if case.fmt == "parquet" else _instant(r.ts, zone)
            if r.ts.startswith("2300") and case.fmt != "parquet" and _nanos_column(case):
                r.at = None  # past what 64 bits of nanoseconds hold
        else:
            r.at = Fraction(r.ts)
        if "x" in USES[case.query]:
            r.bad_value = r.x == "n/a" and xt != "string"
        r.x = _x_value(r.x, xt)


def _nanos_column(case: Case) -> bool:
    """Whether a written time has a digit below the microsecond (the column
    is then read to the nanosecond)."""
    for r in case.rows:
        if isinstance(r.ts, str) and "." in r.ts:
            digits = "".join(c for c in r.ts.split(".")[1][:9] if c.isdigit())
            if int(digits.ljust(9, "0")[6:]):
                return True
    return False


def _parquet_instant(case: Case, text: str, zone: str) -> Fraction | None:
    at = _instant(text, "UTC")
    if case.parquet_time.startswith("us"):
        at = Fraction(math.floor(at * 10**6), 10**6)
    if case.parquet_time.endswith("utc"):
        return at
    return _instant(_wall_text(at), zone)  # a wall-clock time, read in the zone


def _wall_text(at: Fraction) -> str:
    whole = math.floor(at)
    wall = datetime(1970, 1, 1) + timedelta(seconds=whole)
    return _iso(wall, str(int((at - whole) * 10**9)).rjust(9, "0"), "")


def _x_value(v, xt: str):
    if v is None or v == "n/a":
        return None
    if xt == "double" or isinstance(v, float):
        v = float(v)
        return NAN if math.isnan(v) else v + 0.0  # -0.0 equals 0.0
    return v


# ---------------------------------------------------------------- writing the files


def _fields(case: Case, r: Row, order) -> list:
    out = []
    for c in order:
        v = getattr(r, c)
        out.append("" if v is None else (repr(v) if isinstance(v, float) and math.isfinite(v) else
                                         str(v).lower().replace("infinity", "inf") if isinstance(v, float) else v))
    return out


def write_inputs(case: Case, folder: Path) -> Path:
    parts = [case.rows[: len(case.rows) // 2], case.rows[len(case.rows) // 2 :]] if case.split else [case.rows]
    target = folder / "in" if case.split else folder / f"in.{ {'csv': 'csv', 'json': 'jsonl'}.get(case.fmt, 'parquet')}"
    if case.split:
        target.mkdir()
    for k, rows in enumerate(parts):
        order = case.order if k == 0 else list(reversed(case.order))
        path = target / f"part-{k}.{'csv' if case.fmt == 'csv' else 'jsonl'}" if case.split else target
        if case.fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(order)
            for r in rows:
                w.writerow(_fields(case, r, order))
            text = buf.getvalue()
            if case.spaced:
                first, _, rest = text.partition("\n")
                text = ", ".join(first.split(",")) + "\n" + rest
        elif case.fmt == "json":
            text = "".join(json.dumps({c: getattr(r, c) for c in order}) + "\n" for r in rows)
        else:
            _write_parquet(case, rows, path)
            continue
        path.write_text(("\ufeff" if case.bom and k == 0 else "") + text, encoding="utf-8")
    return target


def _write_parquet(case: Case, rows: list[Row], path: Path) -> None:
    xs = [None if r.x == "n/a" else r.x for r in rows]
    ints = all(isinstance(v, int) and -INT64 <= v < INT64 for v in xs if v is not None) and any(v is not None for v in xs)
    cols = {"n": pa.array([r.n for r in rows], pa.int64()), "id": pa.array([r.id for r in rows], pa.int64()),
            "src": pa.array([r.src for r in rows], pa.string()), "dst": pa.array([r.dst for r in rows], pa.string()),
            "x": pa.array(xs if ints else [None if v is None else float(v) for v in xs],
                          pa.int64() if ints else pa.float64())}  # fmt: skip
    if case.mode == "iso":
        unit, tz = case.parquet_time.split("-")[0], "UTC" if case.parquet_time.endswith("utc") else None
        values = []
        for r in rows:
            at = None if r.ts is None else _instant(r.ts, "UTC")
            values.append(None if at is None else math.floor(at * (10**9 if unit == "ns" else 10**6)))
        cols["ts"] = pa.array(values, pa.timestamp(unit, tz=tz))
    else:
        cols["ts"] = pa.array([r.ts for r in rows], pa.int64() if case.mode == "int" else pa.float64())
    pq.write_table(pa.table({c: cols[c] for c in case.order}), path)


# ---------------------------------------------------------------- what the data calls for


@dataclass
class Expected:
    kept: list[Row]  # the rows a result is computed on
    dropped: int  # rows --drop-invalid drops (or whose presence refuses the query)
    text_time: bool  # every time is null in a text input: the time column is text (exit 2)
    extreme: bool  # a time near the 64-bit limit: its windows may be refused


def expect(case: Case) -> Expected:
    normalise(case)
    bad = [r for r in case.rows if r.at is None or r.bad_value]
    if case.mode == "int":  # a time whose windows' indexes or bounds pass 64 bits is invalid (tests/planner/test_time_range.py)
        times = cetql.compile(case.query.format(w=case.window)).plan.windows.times
        bad += [r for r in case.rows if r not in bad and not times.lo <= r.at <= times.hi]
    kept = [r for r in case.rows if r not in bad]
    if case.id_col == "id":  # ids are checked on the rows that are otherwise valid
        seen: dict = {}
        for r in kept:
            seen[r.id] = seen.get(r.id, 0) + 1
        ids_bad = [r for r in kept if r.id is None or seen[r.id] > 1]
        bad += ids_bad
        kept = [r for r in kept if r not in ids_bad]
    text_time = case.fmt != "parquet" and all(r.ts is None for r in case.rows)
    extreme = case.mode == "int" and any(r.ts is not None and abs(r.ts) > INT64 // 2 for r in case.rows)
    return Expected(kept, len(bad), text_time, extreme)


def _seconds(v, case: Case) -> Fraction:
    """A printed window bound as an exact number (seconds for timestamps)."""
    if isinstance(v, str):
        at = datetime.fromisoformat(v)
        at = at if at.tzinfo else at.replace(tzinfo=_tz(case.zone or "UTC"))  # printed in --time-zone
        return Fraction((at - EPOCH) // timedelta(microseconds=1), 10**6)
    return Fraction(v)


def reference(case: Case, exp: Expected):
    """The reference's result on the kept rows: {window start: set of id
    tuples} (or a count of (start, length) without ids; counts for COUNT)."""
    query = case.query.format(w=case.window)
    base = min((r.at for r in exp.kept), default=0) // 3600 * 3600 if case.mode == "iso" else 0
    events = [{"id": (r.n if case.id_col in (None, "n") else r.id), "ts": r.at - base, "src": r.src, "dst": r.dst,
               "x": None if r.x is None else ((1, 0) if r.x is NAN else (0, r.x))} for r in exp.kept]  # fmt: skip
    exact = lambda v: Fraction(v).limit_denominator(10**9) + base  # noqa: E731
    if case.query is COUNT:
        return {exact(start): row["COUNT(*)"] for (start, _), row in reference_aggregates(query, events, typed=False).items()}
    trends = {exact(a): v for (a, _), v in reference_trends(query, events).items()}
    return trends if case.id_col else _lengths(trends)


def _lengths(trends: dict) -> dict:
    out: dict = {}
    for start, found in trends.items():
        for t in found:
            out[(start, len(t))] = out.get((start, len(t)), 0) + 1
    return out


def result(case: Case, records: list[dict]):
    """cetql's result in the reference's shape."""
    if case.query is COUNT:
        return {_seconds(r["window_start"], case): int(r["COUNT(*)"]) for r in records if int(r["COUNT(*)"])}
    trends: dict = {}
    for r in records:
        trends.setdefault(_seconds(r["window_start"], case), set()).add(tuple(r["events"]))
    return trends if case.id_col else _lengths(trends)


# ---------------------------------------------------------------- running a case


def snapshot(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if rel.parts[0] == "out":
            continue
        out[str(rel)] = (p.is_dir(), p.stat().st_size if p.is_file() else 0, p.stat().st_mtime_ns if p.is_file() else 0)
    return out


def arguments(case: Case, data: Path, query: Path) -> list[str]:
    args = ["run", str(query), "--input", str(data), "--max-trends", "0"]
    if case.id_col:
        args += ["--id-col", case.id_col]
    if case.drop:
        args.append("--drop-invalid")
    if case.zone:
        args += ["--time-zone", case.zone]
    if case.strategy:
        args += ["--strategy", case.strategy]
    args += ["--output", "out", "--format", "json"] if case.output else ["--format", "json", "--limit", "0"]
    return args


def records(case: Case, folder: Path, stdout: str) -> list[dict]:
    if case.output:
        return [json.loads(line) for f in sorted((folder / "out").glob("*.json")) for line in f.read_text().splitlines()]
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def judge(case: Case, exp: Expected, code: int, out: str, err: str, folder: Path, before: dict) -> str | None:
    """What is wrong with this run, or None."""
    lines = [line for line in err.splitlines() if line.strip()]
    if code not in (0, 1, 2, 130):
        return f"exit {code}"
    if "Traceback" in err or '"level"' in err or any(" ERROR " in line or " WARN " in line for line in lines):
        return f"a traceback or log record on stderr: {err[-600:]}"
    if len(lines) > 3:
        return f"{len(lines)} lines on stderr: {err[-600:]}"
    if snapshot(folder) != before:
        return "files around the output changed"
    said = lines[-1] if lines else ""
    if exp.text_time:
        return None if code == 2 and "time column 'ts' is text" in said else f"all times null: exit {code}: {said}"
    if code == 1 and exp.extreme and "past what its type holds" in said:
        return None  # windows of a time at the 64-bit limit cannot be computed: refused, with why
    if exp.dropped and not case.drop:
        ok = code == 1 and any(w in said for w in ("invalid id", "cannot be read", "have no time", "no id",
                                                   "outside the range its windows can be computed in"))  # fmt: skip
        return None if ok else f"{exp.dropped} invalid row(s), no --drop-invalid: exit {code}: {said}"
    if code != 0:
        return f"exit {code}: {said}"
    if case.drop and exp.dropped and f"dropped {exp.dropped:,} input row(s)" not in err:
        return f"expected 'dropped {exp.dropped}' on stderr: {err[-300:]}"
    got, want = result(case, records(case, folder, out)), reference(case, exp)
    return None if got == want else f"result differs from the reference:\n got {got}\nwant {want}"


_STARTED: list[float] = []
_FOUND: list[str] = []


def run_case(case: Case, capsys, seen: dict) -> str | None:
    folder = Path(tempfile.mkdtemp(prefix="cetql-fuzz-"))
    try:
        data = write_inputs(case, folder)
        query = folder / "q.cet"
        query.write_text(case.query.format(w=case.window))
        exp = expect(case)
        before = snapshot(folder)
        here = os.getcwd()
        os.chdir(folder)
        try:
            capsys.readouterr()
            try:
                code = main(arguments(case, data, query))
            except SystemExit as e:
                code = e.code
            captured = capsys.readouterr()
        finally:
            os.chdir(here)
        lines = captured.err.strip().splitlines()
        seen.update(code=code, said=lines[-1][:160] if lines else "", dropped=exp.dropped, kept=len(exp.kept))
        return judge(case, exp, code, captured.out, captured.err, folder, before)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow  # spends its budget, CETQL_FUZZ_SECONDS
@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False, print_blob=True,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(case=cases())
def test_hostile_inputs(spark, capsys, case):
    if not _STARTED:
        _STARTED.append(time.monotonic())
    if SECONDS and time.monotonic() - _STARTED[0] > SECONDS:
        return  # the suite's budget is spent: the remaining examples pass unrun
    started, seen = time.monotonic(), {}
    problem = run_case(case, capsys, seen)
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"case": _describe(case), "problem": problem, **seen,
                                "seconds": round(time.monotonic() - started, 1)}) + "\n")  # fmt: skip
    if problem and os.environ.get("CETQL_FUZZ_COLLECT"):
        _FOUND.append(problem)
        return
    assert problem is None, f"{problem}\n{_describe(case)}"


def _describe(case: Case) -> dict:
    return {"fmt": case.fmt, "mode": case.mode, "query": case.query.format(w=case.window), "id_col": case.id_col,
            "drop": case.drop, "zone": case.zone, "strategy": case.strategy, "output": case.output, "bom": case.bom,
            "spaced": case.spaced, "split": case.split, "parquet_time": case.parquet_time,
            "rows": [[r.n, r.id, r.ts, r.src, r.dst, repr(r.x)] for r in case.rows]}  # fmt: skip
