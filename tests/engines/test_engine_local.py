"""The in-process engine (`planner.local`): generated queries over generated
streams, written as Parquet files and planned as `cetql run --output DIR`
plans them, against the brute-force reference (`reference.py`) — detection
and aggregation, typed and single-type inputs, and the values comparisons
treat specially (null, NaN, ±infinity, -0.0) — then what it refuses, and
the same result as the Spark engine for the README's example.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from checks import same_value, slide, wanted
from generators import queries, stream
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates

import cetql
from cetql.backends.embedded import compiler as local
from cetql.base.errors import QueryError, UsageError
from cetql.base.options import Engine, RunOptions, Sink
from cetql.language.printer import aggregate_to_text
from cetql.surfaces.cli.flags import known_inputs
from cetql.surfaces.cli.main import main

# Rows of the README's Reliability table (tests/surfaces/test_reliability.py prints and checks it)
CASES = [
    ('test_null_times_and_repeated_ids_fail_with_sparks_words_or_are_dropped_and_counted', 'a null time or a repeated id, run in process (`--engine local`)',
     'exit 1 in the words of a Spark run, nothing written; `--drop-invalid` drops and counts them'),
    ('test_a_null_time_in_any_typed_input_is_found', 'a null time in the first of several typed inputs, run in process',
     'refused, or dropped and counted, as in the last'),
    ('test_times_past_64_bits_fail_as_sparks_ansi_arithmetic_does', 'times near -2^63, run in process',
     "exit 1 where Spark's arithmetic overflows, never a wrapped window"),
    ('test_what_only_spark_runs_is_said_and_refused_when_insisted_on', '`--engine local` on CSV, decimals, no `--id-col`, `--with-rows` or the distributed strategy',
     'exit 2 naming why; without `--engine` the plan runs on Spark and `--explain` says why'),
]  # fmt: skip

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
TYPES = {"ts": pa.int64(), "id": pa.int64(), "x": pa.int64(), "g": pa.string(), "k": pa.string(), "y": pa.float64()}


def write_inputs(folder: Path, events: list[dict], typed: bool, special: bool):
    """(untyped input, {type: input}) as Parquet files of typed columns (y:
    the special streams')."""
    cols = [c for c in TYPES if c != "y" or special]
    schema = pa.schema([(c, TYPES[c]) for c in cols])

    def table(evs):
        return pa.Table.from_pylist([{c: e.get(c) for c in cols} for e in evs], schema=schema)

    if not typed:
        pq.write_table(table(events), folder / "events.parquet")
        return str(folder / "events.parquet"), {}
    out = {}
    for t in sorted({e["__type"] for e in events}):
        pq.write_table(table([e for e in events if e["__type"] == t]), folder / f"{t}.parquet")
        out[t] = str(folder / f"{t}.parquet")
    return None, out


def local_rows(text: str, events: list[dict], typed: bool, special: bool, **options) -> tuple[list[dict], object]:
    """The in-process engine's rows, and its plan (the engine the plan chose
    must be the in-process one)."""
    with tempfile.TemporaryDirectory() as tmp:
        data, by_type = write_inputs(Path(tmp), events, typed, special)
        inputs = known_inputs(data, by_type, "ts")
        opts = replace(RunOptions.of(id_col="id", **options), engine=Engine.AUTO, sink=Sink.PARQUET)
        try:
            plan = cetql.compile(text, {}, options=opts, inputs=inputs, strict_params=True).plan
        except QueryError:
            assume(False)
        assert plan.engine.engine == Engine.LOCAL, plan.engine.reason
        result = local.run(plan)
        rows = pa.Table.from_batches(list(result.batches), schema=result.schema).to_pylist()
    return rows, plan


def _k(row, text) -> int:
    return row["window_start"] // slide(text)


@SETTINGS
@given(st.data(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans())
def test_detection_equals_reference(data, typed, trend_set, special):
    text = data.draw(queries(False, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events or not typed)
    rows, _ = local_rows(text, events, typed, special, trends=trend_set, max_trends=0)
    got: dict[int, set] = {}
    for r in rows:
        assert r["length"] == len(r["events"])
        got.setdefault(_k(r, text), set()).add(tuple(r["events"]))
    assert len(rows) == sum(map(len, got.values())), "a trend returned twice"
    assert got == wanted(text, events, typed, trend_set, slide(text)), text


@SETTINGS
@given(st.data(), st.booleans(), st.booleans())
def test_aggregation_equals_reference(data, typed, special):
    text = data.draw(queries(True, repeated_types=not typed, special=special))
    events = data.draw(stream(typed, special=special))
    assume(events or not typed)
    rows, _ = local_rows(text, events, typed, special)
    names = [aggregate_to_text(a) for a in cetql.parse(text).aggregates]
    got = {_k(r, text): r for r in rows if r["COUNT(*)"] != 0}  # the reference lists windows with trends only
    want = {start // slide(text): row for (start, _), row in reference_aggregates(text, events, typed=typed).items()}
    assert got.keys() == want.keys(), text
    for k, row in want.items():
        for n in names:
            assert same_value(got[k][n], row[n]), (text, k, n, got[k][n], row[n])


# ---------------------------------------------------------------- what runs where, and refusals


def _plan(tmp_path, text, table: pa.Table | None = None, name="events.parquet", **options):
    path = tmp_path / name
    if table is not None:
        pq.write_table(table, path) if name.endswith(".parquet") else path.write_text(table)
    opts = replace(RunOptions.of(**options), engine=options.pop("engine", Engine.AUTO), sink=Sink.PARQUET)
    return cetql.compile(text, {}, options=opts, inputs=known_inputs(str(path), {}, "ts"), strict_params=True).plan


EVENTS = pa.table({"ts": pa.array([1, 2, 3], pa.int64()), "id": pa.array([1, 2, 3], pa.int64()),
                   "x": pa.array([1.0, math.nan, 2.0])})  # fmt: skip
KITE = "PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10"


@pytest.mark.parametrize(
    ("table", "name", "options", "why"),
    [
        (EVENTS, "events.parquet", {}, "ids from input order are Spark's own"),
        ("ts,id,x\n1,1,2\n", "events.csv", {"id_col": "id"}, "is not local Parquet files"),
        (EVENTS.set_column(2, "x", pa.array([1, 2, 3], pa.decimal128(5, 0))), "events.parquet", {"id_col": "id"},
         "column x is decimal128(5, 0)"),
        (EVENTS, "events.parquet", {"id_col": "id", "with_rows": True}, "--with-rows"),
        (EVENTS, "events.parquet", {"id_col": "id", "strategy": "distributed"}, "distributed strategy"),
    ],
)
def test_what_only_spark_runs_is_said_and_refused_when_insisted_on(tmp_path, table, name, options, why):
    plan = _plan(tmp_path, KITE, table, name, **options)
    assert plan.engine.engine == Engine.SPARK and why in plan.engine.reason
    with pytest.raises(UsageError, match="cannot run this query"):
        _plan(tmp_path, KITE, None, name, engine=Engine.LOCAL, **options)


def test_a_printed_result_or_a_dataframe_is_sparks(tmp_path):
    pq.write_table(EVENTS, tmp_path / "e.parquet")
    inputs = known_inputs(str(tmp_path / "e.parquet"), {}, "ts")
    for sink in (Sink.TEXT, Sink.DATAFRAME):
        opts = replace(RunOptions.of(id_col="id"), engine=Engine.AUTO, sink=sink)
        assert cetql.compile(KITE, {}, options=opts, inputs=inputs).plan.engine.engine == Engine.SPARK
    assert cetql.compile(KITE, {}, inputs=inputs).plan.engine.reason == "the result is a Spark DataFrame"


def _run(tmp_path, table, *flags):
    pq.write_table(table, tmp_path / "in.parquet")
    (tmp_path / "q.cet").write_text(KITE)
    return main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--output",
                 str(tmp_path / "out"), "--engine", "local", *flags])  # fmt: skip


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


def test_times_past_64_bits_fail_as_sparks_ansi_arithmetic_does(tmp_path, capsys):
    edge = EVENTS.set_column(0, "ts", pa.array([-(2**63) + 1, 0, 1], pa.int64()))
    assert _run(tmp_path, edge, "--id-col", "id") == 1
    assert "went past what its type holds" in capsys.readouterr().err


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
    assert "Engine     local — in this process over Arrow, no Spark: 3 rows of local Parquet" in capsys.readouterr().out
    main(["compile", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--explain"])
    assert "Engine     spark — default: ids from input order are Spark's own" in capsys.readouterr().out


@pytest.mark.parametrize("time", ["bigint", "timestamp[ms, tz=America/New_York]"])
def test_the_same_files_as_the_spark_engine(tmp_path, spark, time):
    """The README's example as Parquet (its time column as whole numbers,
    and as timestamps of other units, with and without a zone), run by both
    engines: equal rows, equal types (the Spark engine in this test's session)."""
    import pyarrow.csv as pcsv

    examples = Path(__file__).resolve().parents[2] / "examples"
    checks = pcsv.read_csv(examples / "data" / "checks.csv")
    if time != "bigint":
        unit, zone = ("ms", "America/New_York") if "ms" in time else ("s", None)
        scale = 1000 if unit == "ms" else 1
        stamps = pa.array([t * scale + 1_700_000_000 * scale for t in checks.column("ts").to_pylist()], pa.int64())
        checks = checks.set_column(0, "ts", stamps.cast(pa.timestamp(unit, tz=zone)))
    (tmp_path / "checks").mkdir()
    pq.write_table(checks, tmp_path / "checks" / "part-0.parquet")
    query = str(examples / "kiting.cet")
    both = {}
    for engine in ("local", "spark"):
        out = tmp_path / f"out-{engine}"
        assert main(["run", query, "--input", str(tmp_path / "checks"), "--id-col", "id", "--output", str(out),
                     "--engine", engine]) == 0  # fmt: skip
        both[engine] = spark.read.parquet(str(out))
    local_df, spark_df = both["local"], both["spark"]
    assert [(f.name, f.dataType) for f in local_df.schema] == [(f.name, f.dataType) for f in spark_df.schema]
    assert local_df.count() > 0
    assert local_df.exceptAll(spark_df).count() == 0 and spark_df.exceptAll(local_df).count() == 0


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


# ---------------------------------------------------------------- expressions, vectorised


def _exprs():
    """Kernel expressions over x (whole numbers), y (doubles, special
    values), g (text) and literals."""
    from cetql.kernels import spec as K

    ints = st.sampled_from([K.Col("self", "x"), K.Lit(0), K.Lit(2), K.Lit(-3), K.Lit(2**62)])
    floats = st.sampled_from([K.Col("self", "y"), K.Lit(0.0), K.Lit(-0.0), K.Lit(1.5), K.Lit(math.nan),
                              K.Lit(math.inf), K.Lit(None)])  # fmt: skip
    texts = st.sampled_from([K.Col("self", "g"), K.Lit("g"), K.Lit("é"), K.Lit("")])

    def numbers(inner):
        return st.one_of(
            st.builds(K.Arith, st.sampled_from("+-*/%"), inner, inner),
            st.builds(K.Neg, inner),
        )

    number = st.recursive(ints | floats, numbers, max_leaves=4)
    ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    atoms = st.builds(K.Cmp, ops, number, number) | st.builds(K.Cmp, ops, texts, texts) | \
        st.builds(K.IsNotNull, number)  # fmt: skip

    def logic(inner):
        pairs = st.lists(inner, min_size=2, max_size=3).map(tuple)
        return st.builds(K.And, pairs) | st.builds(K.Or, pairs) | st.builds(K.Not, inner)

    return st.recursive(atoms, logic, max_leaves=4) | number


ROW = st.fixed_dictionaries({"x": st.none() | st.integers(-5, 5) | st.sampled_from([2**62, -(2**63)]),
                             "y": st.sampled_from([None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, 3.0]),
                             "g": st.sampled_from([None, "g", "é", "", "h"])})  # fmt: skip


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b and type(a) is type(b) or (a == b and {type(a), type(b)} <= {int, bool} and not
                                             (isinstance(a, bool) ^ isinstance(b, bool)))  # fmt: skip


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(_exprs(), st.lists(ROW, min_size=1, max_size=8))
def test_vectorised_expressions_equal_the_kernels_evaluator(e, rows):
    """`local.exprs.evaluate` (whole columns, Arrow) against `kernels.expr`
    (one row at a time, the kernels' evaluator): equal values, nulls and
    NaN alike; an integer past 64 bits fails the query (Spark's ANSI mode)
    where the row evaluator's Python integer leaves 64 bits."""
    from cetql.backends.embedded.exprs import ArithmeticOverflow, evaluate
    from cetql.kernels.expr import evaluate as one_row
    from cetql.planner.physical.engine import kind

    assume(kind(e, {"x": "int", "y": "float", "g": "string"}) is not None)
    table = pa.table({"x": pa.array([r["x"] for r in rows], pa.int64()),
                      "y": pa.array([r["y"] for r in rows], pa.float64()),
                      "g": pa.array([r["g"] for r in rows], pa.string())})  # fmt: skip
    want = [one_row(e, {"self": r}) for r in rows]
    try:
        got = evaluate(e, table).to_pylist()
    except ArithmeticOverflow:
        assert _leaves_64_bits(e, rows), e
        return
    assert all(_same(g, w) for g, w in zip(got, want)), (e, rows, got, want)


def _leaves_64_bits(e, rows) -> bool:
    """Whether some integer step of `e` leaves 64 bits on some row."""
    from cetql.kernels import spec as K
    from cetql.kernels.expr import evaluate as one_row

    found = []

    def walk(x):
        if isinstance(x, (K.Arith, K.Neg)):
            for r in rows:
                v = one_row(x, {"self": r})
                if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
                    found.append(x)
        for child in getattr(x, "items", ()) or [getattr(x, f, None) for f in ("left", "right", "operand")]:
            if child is not None and not isinstance(child, str):
                walk(child)

    walk(e)
    return bool(found)


def test_a_null_time_in_any_typed_input_is_found(tmp_path, capsys):
    """Typed inputs are scanned one after the other: a null time in the
    first of two is refused (or dropped and counted) as in the last."""
    a = pa.table({"ts": pa.array([1, None], pa.int64()), "id": pa.array([1, 2], pa.int64())})
    b = pa.table({"ts": pa.array([3, 4], pa.int64()), "id": pa.array([3, 4], pa.int64())})
    pq.write_table(a, tmp_path / "a.parquet")
    pq.write_table(b, tmp_path / "b.parquet")
    (tmp_path / "q.cet").write_text("PATTERN SEQ(A a, B b) WITHIN 10")
    base = ["run", str(tmp_path / "q.cet"), "--input", f"A={tmp_path / 'a.parquet'}", "--input",
            f"B={tmp_path / 'b.parquet'}", "--id-col", "id", "--engine", "local", "--output"]  # fmt: skip
    assert main([*base, str(tmp_path / "out")]) == 1
    assert "time column 'ts': 1 row(s) have no time" in capsys.readouterr().err
    assert main([*base, str(tmp_path / "out"), "--drop-invalid"]) == 0
    assert "dropped 1 input row(s)" in capsys.readouterr().err
    assert sorted(map(tuple, pq.read_table(tmp_path / "out").column("events").to_pylist())) == [(1, 3), (1, 4)]


@pytest.mark.parametrize("column", [pa.array([1, 2, 3], pa.int32()), pa.array([1.0, 2.0, 3.0], pa.float32())])
def test_narrow_numbers_are_sparks(tmp_path, column):
    """Spark's arithmetic and comparisons on 32-bit numbers are their own
    (a float compared as a float, an int32 sum overflowing at 2^31)."""
    plan = _plan(tmp_path, KITE, EVENTS.set_column(2, "x", column), id_col="id")
    assert plan.engine.engine == Engine.SPARK and f"column x is {column.type}" in plan.engine.reason


def test_windows_overflow_where_sparks_arithmetic_does(tmp_path, capsys):
    """Near -2^63 a tumbling window's start (t - pmod(t, 10)) still fits and
    runs; a sliding one's t - WITHIN does not, and fails."""
    low = EVENTS.set_column(0, "ts", pa.array([-(2**63) + 10, -(2**63) + 11, -(2**63) + 12], pa.int64()))
    assert _run(tmp_path, low, "--id-col", "id") == 0
    starts = set(pq.read_table(tmp_path / "out").column("window_start").to_pylist())
    assert starts == {-(2**63) + 8}
    (tmp_path / "q.cet").write_text(KITE + " SLIDE 5")
    assert main(["run", str(tmp_path / "q.cet"), "--input", str(tmp_path / "in.parquet"), "--output",
                 str(tmp_path / "out2"), "--engine", "local", "--id-col", "id"]) == 1  # fmt: skip
    assert "went past what its type holds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "handed"),
    [
        (["run", "q.cet", "--input", "x.parquet", "--output", "o"], True),
        (["run", "q.cet", "--input", "x.parquet", "--no-serve"], False),
        (["run", "q.cet", "--input", "x.parquet", "--no-se"], False),  # argparse reads it as --no-serve
        (["run", "q.cet", "--input", "x.parquet", "--strea"], False),
        (["run", "q.cet", "--input", "x.parquet", "--master=local[1]"], False),
        (["run", "-", "--input", "x.parquet"], False),
        (["run", "/dev/stdin", "--input", "x.parquet"], False),
        (["run", "-h"], False),
        (["compile", "q.cet"], False),
    ],
)
def test_what_is_handed_to_a_serve(argv, handed, monkeypatch):
    from cetql.surfaces.cli import launch

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("CETQL_ENGINE", raising=False)
    assert launch._may_hand_over(argv) is handed
    monkeypatch.setenv("CETQL_ENGINE", "spark")
    assert launch._may_hand_over(argv) is False


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
