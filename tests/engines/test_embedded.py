"""The embedded engine (DuckDB, then the kernels; `backends/embedded`):
generated queries over generated streams, read from CSV and from Parquet,
against the brute-force reference (`reference.py`) — detection and
aggregation, typed and single-type inputs, the values comparisons treat
specially — then what it runs and refuses (its capability table), and
what it does with bad rows.  Its equality with Spark is
tests/engines/test_parity.py's.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from checks import same_value, slide, wanted
from engines import plan, write_inputs
from generators import queries, stream
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates

import cetql
from cetql.backends.embedded.run import execute
from cetql.base.errors import QueryError, SchemaError, UsageError
from cetql.base.options import Engine
from cetql.language.printer import aggregate_to_text
from cetql.surfaces.cli.main import main

# Rows of docs/reliability.md's table (tests/surfaces/test_reliability.py prints and checks it)
CASES = [
    ('test_null_times_and_repeated_ids_fail_with_sparks_words_or_are_dropped_and_counted', 'a null time or a repeated id, run embedded (`--engine embedded`)',
     'exit 1 in the words of a Spark run, nothing written; `--drop-invalid` drops and counts them'),
    ('test_a_null_time_in_any_typed_input_is_found', 'a null time in the first of several typed inputs, run embedded',
     'refused, or dropped and counted, as in the last'),
    ('test_times_past_64_bits_fail_as_sparks_ansi_arithmetic_does', 'times near -2^63, run embedded',
     "refused as Spark's scan refuses them (outside the range whose windows are exact), or dropped and counted; never a wrapped window"),
    ('test_what_only_spark_runs_is_said_and_refused_when_insisted_on', '`--engine embedded` on decimals, no `--id-col`, `--with-rows` or the distributed strategy',
     'exit 2 naming why; without `--engine` the plan runs on Spark and `--explain` says why'),
    ('test_a_predicate_across_two_events_fails_past_64_bits', '`a.x + b.x` past 64 bits in a predicate across two events',
     "exit 1: a number went past what its type holds (as Spark's ANSI arithmetic fails), run embedded"),
    ('test_a_run_leaves_no_spill_folder', "an embedded run's printed result closed by its reader (piped to `head`)",
     'exit 141 without a word, as a tool killed by SIGPIPE; its DuckDB spill folder removed'),
    ('test_a_run_stopped_in_the_middle_leaves_no_spill_folder', "Ctrl-C during an embedded run's scan, or a workload's shared work",
     'exit 130, "cancelled"; the spill folders of the connections made so far removed'),
]  # fmt: skip

SETTINGS = settings(max_examples=budget(30), deadline=None, suppress_health_check=list(HealthCheck))


def embedded_rows(text: str, events: list[dict], typed: bool, special: bool, fmt: str, **options) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        data, by_type = write_inputs(Path(tmp), events, typed, special, fmt)
        try:
            compiled = plan(text, data, by_type, Engine.AUTO, id_col="id", **options)
        except (QueryError, SchemaError):  # SchemaError: a CSV column with no value reads as text beside a number
            assume(False)
        assert compiled.plan.engine.engine == Engine.EMBEDDED, compiled.plan.engine.reason
        result = execute(compiled.plan)
        return pa.Table.from_batches(list(result.batches), schema=result.schema).to_pylist()


def _k(row, text) -> int:
    return row["window_start"] // slide(text)


@SETTINGS
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans(),
       st.sampled_from(["csv", "parquet"]))  # fmt: skip
def test_detection_equals_reference(data, typed, trend_set, special, fmt):
    text = data.draw(queries(False, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events)
    rows = embedded_rows(text, events, typed, special, fmt, trends=trend_set, max_trends=0)
    got: dict[int, set] = {}
    for r in rows:
        assert r["length"] == len(r["events"])
        got.setdefault(_k(r, text), set()).add(tuple(r["events"]))
    assert len(rows) == sum(map(len, got.values())), "a trend returned twice"
    assert got == wanted(text, events, typed, trend_set, slide(text)), text


@SETTINGS
@given(st.data(), st.booleans(), st.booleans(), st.sampled_from(["csv", "parquet"]))
def test_aggregation_equals_reference(data, typed, special, fmt):
    text = data.draw(queries(True, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events)
    rows = embedded_rows(text, events, typed, special, fmt)
    names = [aggregate_to_text(a) for a in cetql.parse(text).aggregates]
    got = {_k(r, text): r for r in rows if r["COUNT(*)"] != 0}  # the reference lists windows with trends only
    want = {start // slide(text): row for (start, _), row in reference_aggregates(text, events, typed=typed).items()}
    assert got.keys() == want.keys(), text
    for k, row in want.items():
        for n in names:
            assert same_value(got[k][n], row[n]), (text, k, n, got[k][n], row[n])


# ---------------------------------------------------------------- what runs where, and refusals

EVENTS = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "id": pa.array([1, 2, 3], pa.int64()),
                   "x": pa.array([1.0, math.nan, 2.0])})  # fmt: skip
KITE = "PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10"


def _plan(tmp_path, text, table, name="events.parquet", engine=Engine.AUTO, **options):
    path = tmp_path / name
    if table is not None:
        pq.write_table(table, path) if name.endswith(".parquet") else path.write_text(table)
    return plan(text, str(path), {}, engine, **options).plan


@pytest.mark.parametrize(
    ("table", "name", "options", "why"),
    [
        (EVENTS, "events.parquet", {}, "ids from input order are Spark's own"),
        (EVENTS.set_column(2, "x", pa.array([1, 2, 3], pa.decimal128(5, 0))), "events.parquet", {"id_col": "id"},
         "column x is decimal(5,0)"),
        (EVENTS, "events.parquet", {"id_col": "id", "with_rows": True}, "--with-rows"),
        (EVENTS, "events.parquet", {"id_col": "id", "strategy": "distributed"}, "distributed strategy"),
        ("ts,id,x\n1.5,1,2\n", "events.csv", {"id_col": "id"},
         "windows need decimal arithmetic: time column 'ts' is double"),
        ("ts,id,x\n", "events.csv", {"id_col": "id"},
         "windows need decimal arithmetic: time column 'ts' has no value to tell its type (read as a double)"),
        ("ts,id,x\nNaN,1,2\n", "events.csv", {"id_col": "id"}, "windows need decimal arithmetic: time column 'ts' is double"),
        (EVENTS, "events.parquet", {"id_col": "id", "time_zone": "Europe/Berlin"}, None),
    ],
)
def test_what_only_spark_runs_is_said_and_refused_when_insisted_on(tmp_path, table, name, options, why):
    p = _plan(tmp_path, KITE, table, name, **options)
    if why is None:  # a zone that changes nothing (no time without one): embedded
        assert p.engine.engine == Engine.EMBEDDED, p.engine.reason
        return
    assert p.engine.engine == Engine.SPARK and why in p.engine.reason, p.engine.reason
    with pytest.raises(UsageError, match="cannot run this query"):
        _plan(tmp_path, KITE, None, name, engine=Engine.EMBEDDED, **options)


def test_fractional_window_sizes_are_said_as_the_cause(tmp_path):
    p = _plan(tmp_path, KITE.replace("WITHIN 10", "WITHIN 2.5"), EVENTS, id_col="id")
    assert p.engine.engine == Engine.SPARK, p.engine.reason
    assert p.engine.reason.endswith("windows need decimal arithmetic: the window sizes are fractional in the time "
                                    "column's units"), p.engine.reason  # fmt: skip


def test_naive_text_times_in_a_named_zone_are_sparks(tmp_path):
    p = _plan(tmp_path, KITE, "ts,id,x\n2026-01-01 10:00:00,1,2\n", "e.csv", id_col="id", time_zone="Europe/Berlin")
    assert p.engine.engine == Engine.SPARK and "Europe/Berlin" in p.engine.reason
    p = _plan(tmp_path, KITE, "ts,id,x\n2026-01-01 10:00:00,1,2\n", "e.csv", id_col="id", time_zone="+05:30")
    assert p.engine.engine == Engine.EMBEDDED, p.engine.reason


def test_a_dataframe_a_stream_or_a_session_asked_for_is_sparks(tmp_path):
    pq.write_table(EVENTS, tmp_path / "e.parquet")
    assert cetql.compile(KITE).plan.engine.reason == "the result is a Spark DataFrame"
    (tmp_path / "q.cet").write_text(KITE)
    assert main(["compile", str(tmp_path / "q.cet"), "--input", str(tmp_path / "e.parquet"), "--id-col", "id",
                 "--explain", "--stream"]) == 0  # fmt: skip


def _run(tmp_path, table, *flags):
    pq.write_table(table, tmp_path / "in.parquet")
    (tmp_path / "q.cet").write_text(KITE)
    return main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--output",
                 str(tmp_path / "out"), "--engine", "embedded", *flags])  # fmt: skip


def test_null_times_and_repeated_ids_fail_with_sparks_words_or_are_dropped_and_counted(tmp_path, capsys):
    no_time = EVENTS.set_column(0, "ts", pa.array([1, None, 3], pa.int64()))
    assert _run(tmp_path, no_time, "--id-col", "id") == 1
    assert "time column 'ts': 1 row(s) have no time (null, NaN or infinite); fix the input, or run with " \
           "--drop-invalid" in capsys.readouterr().err  # fmt: skip
    assert not (tmp_path / "out").exists()
    twice = EVENTS.set_column(1, "id", pa.array([7, 7, 8], pa.int64()))
    assert _run(tmp_path, twice, "--id-col", "id") == 1
    assert "invalid id: id 7 of id column 'id' is on 2 rows; every event needs its own id" in capsys.readouterr().err
    assert _run(tmp_path, twice, "--id-col", "id", "--drop-invalid") == 0
    assert "dropped 2 input row(s)" in capsys.readouterr().err
    assert pq.read_table(tmp_path / "out").num_rows == 1  # event 8 alone


def test_unreadable_text_fails_naming_the_column_or_is_dropped(tmp_path, capsys):
    (tmp_path / "q.cet").write_text(KITE)
    (tmp_path / "in.csv").write_text("ts,id,x\n1,1,2\n2,2,n/a\n3,3,3\n")
    base = ["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.csv"), "--id-col", "id", "--engine",
            "embedded"]  # fmt: skip
    assert main([*base, "--output", str(tmp_path / "out")]) == 1
    assert "column 'x' holds 1 value(s) that cannot be read as a whole number (e.g. 'n/a')" in capsys.readouterr().err
    assert main([*base, "--output", str(tmp_path / "out"), "--drop-invalid"]) == 0
    assert "dropped 1 input row(s)" in capsys.readouterr().err


def test_times_past_64_bits_fail_as_sparks_ansi_arithmetic_does(tmp_path, capsys):
    """A time whose windows leave 64 bits is refused as Spark's scan refuses
    it (`physical.ranges`), or dropped and counted: never a wrapped window."""
    edge = EVENTS.set_column(0, "ts", pa.array([-(2**63) + 1, 0, 1], pa.int64()))
    assert _run(tmp_path, edge, "--id-col", "id") == 1
    assert "time column 'ts': 1 row(s) have a time outside the range its windows can be computed in" \
        in capsys.readouterr().err  # fmt: skip
    assert _run(tmp_path, edge, "--id-col", "id", "--drop-invalid") == 0
    assert "dropped 1 input row(s)" in capsys.readouterr().err
    assert pq.read_table(tmp_path / "out").num_rows > 0


def test_an_existing_output_is_kept_and_append_checks_the_shape(tmp_path, capsys):
    assert _run(tmp_path, EVENTS, "--id-col", "id") == 0
    first = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert first[0] == "_SUCCESS" and first[1].startswith("part-00000-")
    assert _run(tmp_path, EVENTS, "--id-col", "id") == 2  # exists: refused, kept
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == first
    assert _run(tmp_path, EVENTS, "--id-col", "id", "--mode", "append") == 0
    assert len(list((tmp_path / "out").glob("part-*"))) == 2
    capsys.readouterr()


def test_explain_names_the_engine(tmp_path, capsys):
    pq.write_table(EVENTS, tmp_path / "in.parquet")
    (tmp_path / "q.cet").write_text(KITE)
    main(["compile", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--id-col", "id", "--explain"])
    out = capsys.readouterr().out
    assert "Engine     embedded — the embedded engine (DuckDB), no Spark: 3 rows of parquet" in out, out
    main(["compile", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--explain"])
    out = capsys.readouterr().out
    assert "Engine     spark — not the embedded engine (DuckDB): ids from input order are Spark's own" in out, out


def test_a_kernel_error_ends_the_run_as_on_spark(tmp_path, capsys):
    many = pa.table({"ts": pa.array(range(12), pa.int64()), "id": pa.array(range(12), pa.int64()),
                     "x": pa.array([0.0] * 12)})  # fmt: skip
    (tmp_path / "q.cet").write_text("PATTERN E+ e[] WITHIN 100")
    pq.write_table(many, tmp_path / "in.parquet")
    code = main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--id-col", "id",
                 "--output", str(tmp_path / "out"), "--max-trends", "10", "--trends", "all"])  # fmt: skip
    assert code == 1
    assert "--max-trends" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_null_time_in_any_typed_input_is_found(tmp_path, capsys):
    """Typed inputs are scanned one after the other: a null time in the
    first of two is refused (or dropped and counted) as in the last."""
    a = pa.table({"ts": pa.array([1, None], pa.int64()), "id": pa.array([1, 2], pa.int64())})
    b = pa.table({"ts": pa.array([3, 4], pa.int64()), "id": pa.array([3, 4], pa.int64())})
    pq.write_table(a, tmp_path / "a.parquet")
    pq.write_table(b, tmp_path / "b.parquet")
    (tmp_path / "q.cet").write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    base = ["run", str(tmp_path / "q.cet"), "--input", f"A={tmp_path / 'a.parquet'}", "--input",
            f"B={tmp_path / 'b.parquet'}", "--id-col", "id", "--engine", "embedded", "--output"]  # fmt: skip
    assert main([*base, str(tmp_path / "out")]) == 1
    assert "time column 'ts' of input A: 1 row(s) have no time" in capsys.readouterr().err
    assert main([*base, str(tmp_path / "out"), "--drop-invalid"]) == 0
    assert "dropped 1 input row(s)" in capsys.readouterr().err
    assert sorted(map(tuple, pq.read_table(tmp_path / "out").column("events").to_pylist())) == [(1, 3), (1, 4)]


def test_windows_at_the_edge_of_the_range_are_exact(tmp_path):
    """The last times the range admits (`physical.ranges`) get their exact
    windows, tumbling and sliding."""
    from cetql.planner.physical.ranges import time_range

    times = time_range("numeric", None, None, 10, 5)
    low = EVENTS.set_column(0, "ts", pa.array([times.lo, times.lo + 1, times.lo + 2], pa.int64()))
    (tmp_path / "q.cet").write_text(KITE + " SLIDE 5")
    pq.write_table(low, tmp_path / "in.parquet")
    assert main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--output",
                 str(tmp_path / "out"), "--engine", "embedded", "--id-col", "id"]) == 0  # fmt: skip
    starts = sorted(set(pq.read_table(tmp_path / "out").column("window_start").to_pylist()))
    assert starts and all(s <= times.lo < s + 10 for s in starts[:1]) and all(s % 5 == 0 for s in starts)


def test_naive_timestamps_are_utc_instants(tmp_path):
    """A time without a zone (in UTC, the default) is the instant it reads
    as in UTC: the same trends and bounds as the zoned column, any unit."""
    got = {}
    for name, t in (("naive", pa.timestamp("s")), ("zoned", pa.timestamp("us", tz="UTC"))):
        scale = 1 if t.unit == "s" else 1_000_000
        table = EVENTS.set_column(0, "ts", pa.array([v * scale for v in (1, 2, 3)], pa.int64()).cast(t))
        (tmp_path / name).mkdir()
        assert _run(tmp_path / name, table, "--id-col", "id") == 0
        got[name] = pq.read_table(tmp_path / name / "out").to_pylist()
    assert got["naive"] == got["zoned"] and got["naive"]


@pytest.mark.parametrize("output", [False, True])
def test_an_embedded_run_never_loads_pyspark(tmp_path, output):
    """The README's first command, printed or written, in a fresh process:
    pyspark is never imported (its import alone costs more than the run)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    argv = ["run", str(root / "examples" / "kiting.cet"), "--input", str(root / "examples" / "data" / "checks.csv"),
            "--id-col", "id", "--no-serve", *(["--output", str(tmp_path / "out")] if output else [])]  # fmt: skip
    code = (f"import sys; from cetql.surfaces.cli.launch import main; sys.argv = ['cetql', *{argv!r}]; "
            "status = main(); print('loaded', status, sorted(m for m in ('pyspark', 'py4j') if m in sys.modules), "
            "file=sys.stderr)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.stderr.strip().splitlines()[-1] == "loaded 0 []", done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out"] if output else [])  # nothing left in the folder


@pytest.mark.parametrize(
    ("argv", "handed"),
    [
        (["run", "q.cet", "--input", "x.parquet", "--output", "o"], True),
        (["run", "q.cet", "--input", "x.parquet", "--master=local[1]"], True),  # the serve's planner says Spark
        (["run", "q.cet", "--input", "x.parquet", "--engine", "spark"], True),
        (["run", "q.cet", "--input", "x.parquet", "--no-serve"], False),
        (["run", "q.cet", "--input", "x.parquet", "--no-se"], False),  # argparse reads it as --no-serve
        (["run", "q.cet", "--input", "x.parquet", "--strea"], False),
        (["run", "-", "--input", "x.parquet"], False),
        (["run", "/dev/stdin", "--input", "x.parquet"], False),
        (["run", "-h"], False),
        (["compile", "q.cet"], False),
    ],
)
def test_what_is_handed_to_a_serve(argv, handed, monkeypatch):
    """The launcher decides no engine: it keeps only what a serve cannot
    take (standard input, a stream, SPARK_REMOTE, which is not handed over)."""
    from cetql.surfaces.cli import launch

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert launch._may_hand_over(argv) is handed
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:15002")
    assert launch._may_hand_over(argv) is False


def test_every_row_as_tables_looks_up_chains_while_rows_stream(capsys):
    """`--limit 0` as tables (of 1,000 rows, each with its chains looked
    up) on the README's 3,771 trends: the lookups run beside the rows still
    being read."""
    root = Path(__file__).resolve().parents[2]
    code = main(["run", str(root / "examples" / "kiting.cet"), "--input", str(root / "examples" / "data" / "checks.csv"),
                 "--id-col", "id", "--format", "table", "--limit", "0", "--engine", "embedded"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.count("┏") == 4 and "3,771 trends;" in out and "acct23 → acct04" in out


def test_text_times_before_year_1000_are_padded_as_spark_writes_them():
    """Spark writes `yyyy` with four digits (0001-01-01T00:00:00.000Z, as
    its CSV files from year-1 times show); strftime's %Y does not pad."""
    import datetime as dt

    from cetql.backends.embedded.text import spark_time

    utc = dt.UTC
    assert spark_time(dt.datetime(1, 1, 1, tzinfo=utc), utc) == "0001-01-01T00:00:00.000Z"
    assert spark_time(dt.datetime(999, 5, 6, 7, 8, 9, 123000, tzinfo=utc), utc) == "0999-05-06T07:08:09.123Z"


@pytest.mark.parametrize("rows, count, sampled", [(5000, True, True), (100, True, False), (5000, False, False)])
def test_the_warm_up_sample_is_read_only_where_a_compiled_loop_may_run(tmp_path, monkeypatch, rows, count, sampled):
    """The kernel input of a few events (the warm-up's) is computed only
    where a compiled variant may run on the input: enough rows, a shape
    numba runs (a COUNT(*) of E+), compiled loops allowed."""
    from cetql.backends.embedded import compiler

    asked = []
    real = compiler.kernel_input
    monkeypatch.setattr(compiler, "kernel_input", lambda con, plan, events=None: asked.append(events) or
                        real(con, plan, events))  # fmt: skip
    pq.write_table(pa.table({"ts": list(range(rows)), "id": list(range(rows)), "x": [t % 7 for t in range(rows)]}),
                   tmp_path / "in.parquet")  # fmt: skip
    what = "COUNT(*)" if count else "SUM(e.x)"
    (tmp_path / "q.cet").write_text(f"RETURN {what} PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 50 SLIDE 25")
    assert main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--id-col", "id",
                 "--output", str(tmp_path / "out"), "--engine", "embedded"]) == 0  # fmt: skip
    assert asked.count(compiler.WARM_ROWS) == (1 if sampled else 0) and asked.count(None) == 1


def test_a_predicate_across_two_events_fails_past_64_bits(tmp_path, capsys):
    """a.x + b.x is computed by the kernel (it reads two events): past 64
    bits it fails the query, as Spark's ANSI arithmetic does; it answered
    with Python's unbounded integer (2^62 + 2^62 > 0: a trend)."""
    pq.write_table(pa.table({"ts": [1, 2, 3], "id": [1, 2, 3], "x": [2**62, 2**62, 5]}), tmp_path / "in.parquet")
    (tmp_path / "q.cet").write_text("PATTERN SEQ(E a, E b) WHERE a.x + b.x > 0 WITHIN 10")
    argv = ["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--id-col", "id",
            "--engine", "embedded", "--output", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 1
    assert "a number went past what its type holds" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("reader", ["whole", "closes"])
def test_a_run_leaves_no_spill_folder(tmp_path, reader):
    """A `cetql` process removes its DuckDB spill folder however the run
    ends: read whole (the process ends without the interpreter's teardown,
    `launch.end`, its exit handlers run), or its output closed by a reader
    that has read enough (`| head`: the process ends at once, with no exit
    handler, so the run closes its connection before)."""
    import os
    import subprocess
    import sys

    import numpy as np
    import pyarrow.csv  # noqa: F401 - pa.csv

    spill = tmp_path / "tmp"
    spill.mkdir()
    rng = np.random.default_rng(7)  # checks among 5 accounts: some hundred thousand trends, more than a pipe holds
    src = rng.integers(0, 5, 20_000)
    pa.csv.write_csv(pa.table({"ts": np.arange(20_000), "id": np.arange(20_000), "src": src, "dst": (src + rng.integers(1, 5, 20_000)) % 5}),
                     tmp_path / "checks.csv")  # fmt: skip
    (tmp_path / "q.cet").write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 20 SLIDE 10")
    run = subprocess.Popen([sys.executable, "-m", "cetql", "run", str(tmp_path / "q.cet"), "--input",
                            str(tmp_path / "checks.csv"), "--id-col", "id", "--no-serve", "--format", "csv"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(spill)})  # fmt: skip
    try:
        if reader == "closes":
            assert run.stdout.readline()
            run.stdout.close()
            run.wait(timeout=300)
            assert run.returncode == 141, run.stderr.read()[-2000:]  # as a tool killed by SIGPIPE
        else:
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0 and len(out.splitlines()) > 1000, err[-2000:]
    finally:
        run.kill()
        run.wait()
    assert list(spill.glob("cetql-duckdb-*")) == []  # (the user's log folder, `places`, is kept)


INTERRUPTED = """
import sys
from cetql.backends.embedded import compiler, workload
from cetql.surfaces.cli.launch import command
def interrupted(f):
    def g(*args):
        f(*args)
        raise KeyboardInterrupt  # as Ctrl-C there
    return g
if sys.argv[1] == "scan":
    compiler.scan = interrupted(compiler.scan)
else:
    workload._exchange = interrupted(workload._exchange)
sys.argv = ["cetql", *sys.argv[2:]]
command()
"""


@pytest.mark.parametrize(("where", "query"), [("scan", "kiting.cet"), ("exchange", "workload.cetw")])
def test_a_run_stopped_in_the_middle_leaves_no_spill_folder(tmp_path, where, query):
    """Ctrl-C during the scan of a query's run, or the shared work of a
    workload's, ends the process at once (no exit handler): the connections
    made so far are closed first, their spill folders removed."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    data = "checks.csv" if query == "kiting.cet" else "stock.csv"
    (tmp_path / "run.py").write_text(INTERRUPTED)
    spill = tmp_path / "tmp"
    spill.mkdir()
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), where, "run", str(root / "examples" / query),
                           "--input", str(root / "examples" / "data" / data), "--id-col", "id", "--no-serve"],
                          capture_output=True, text=True, env={**os.environ, "TMPDIR": str(spill)}, timeout=300)  # fmt: skip
    assert done.returncode == 130 and "cancelled" in done.stderr, done.stderr[-2000:]
    assert list(spill.glob("cetql-duckdb-*")) == []


def test_the_command_ends_as_python_would(tmp_path):
    """`launch.end`: threads that are not daemons finish, exit handlers run,
    buffered output is flushed, the status is the command's."""
    import subprocess
    import sys

    code = ("import atexit, concurrent.futures, sys, threading, time\n"
            "from cetql.surfaces.cli.launch import end\n"
            "atexit.register(lambda: print('handler'))\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), print('thread'))).start()\n"
            "pool = concurrent.futures.ThreadPoolExecutor(2)  # its idle threads are told to end, not waited on\n"
            "pool.submit(int).result()\n"
            "print('x' * 100000, end='')\n"
            "end(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "x" * 100000 + "thread\nhandler\n"
    assert subprocess.run([sys.executable, "-c", code.replace("end(3)", "end(None)")], capture_output=True,
                          timeout=60).returncode == 0  # fmt: skip


@pytest.mark.parametrize(("error", "numeric"), [
    (pa.ArrowInvalid("overflow"), True),
    (pa.ArrowInvalid("Integer value 9223372036854775807 not in range: out of range"), True),
    (pa.ArrowInvalid("Take operation overflowed binary array capacity"), False),
    (pa.ArrowInvalid("offset overflow while concatenating arrays"), False),
    (ValueError("overflow"), False),
])  # fmt: skip
def test_only_a_number_past_its_type_is_said_as_an_overflow(error, numeric):
    """An array past Arrow's offsets is the run's failure in Arrow's words,
    not a number past 64 bits."""
    from cetql.backends.embedded.output import overflow

    assert overflow(error) == numeric
