"""Bad and awkward inputs: each row of docs/reliability.md's table is a
test here or in a module `TABLE_MODULES` names (`CASES`; `python
tests/surfaces/test_reliability.py` prints the table).

Most run the CLI in this process on the suite's one Spark session; the few
that must see a real terminal process (Ctrl-C, Spark's own log lines,
refusals before the JVM starts) run `python -m cetql` in a subprocess.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# the suite's support modules, as conftest.py puts them on the path: this file also runs as a script
# (`python tests/surfaces/test_reliability.py` prints docs/reliability.md's table)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from processes import descendants, free_port, spark_env, start, stop, wait_for_port

from cetql.surfaces.cli.main import main

KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
RISING = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10"
CHECKS = "id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,B,D\n4,4,D,E\n"

# (test name, the input, what cetql does) — docs/reliability.md's table, row by row.
CASES = [
    ("test_output_existing_folder_is_kept", "`--output` names a folder that exists", "refused (exit 2) unless `--mode overwrite/append/ignore`; the folder and its files are untouched"),
    ("test_output_existing_file_is_kept", "`--output` names a regular file", "refused (exit 2); the file is untouched"),
    ("test_output_is_the_input", "`--output in.csv` where `in.csv` is the input", "always refused, whatever `--mode`"),
    ("test_output_contains_the_input", "`--output` is a folder that holds the input", "always refused"),
    ("test_output_inside_the_input_folder", "`--output` inside an input folder", "always refused"),
    ("test_mode_overwrite_replaces", "`--mode overwrite` on an existing output", "results written beside it, then moved into place; the old content is gone"),
    ("test_failed_query_leaves_the_old_output", "`--mode overwrite` and the query fails", "exit 1; the old output is exactly as it was"),
    ("test_mode_append_adds_files", "`--mode append` on an existing output folder", "new part files beside the old ones"),
    ("test_mode_ignore_writes_nothing", "`--mode ignore` on an existing output", "exit 0, nothing written, and it says so"),
    ("test_mode_without_output", "`--mode` without `--output`", "usage error (exit 2)"),
    ("test_output_folder_parent_missing", "`--output a/b/c` where `a/b` does not exist", "refused before Spark runs, naming the folder"),
    ("test_csv_output_of_an_aggregation", "`--format csv` output of an aggregation", "a header row and one line per (window, group); 'wrote N rows'"),
    ("test_csv_output_of_trends_with_rows", "`--format csv` of trends `--with-rows`", "events joined with `;`, rows as JSON text"),
    ("test_every_format_says_how_many_rows", "`--output` in parquet, csv or json", "'wrote N trends to PATH (format)' with the true count"),
    ("test_epoch_nanoseconds_land_in_their_windows", "integer epoch-nanosecond times either side of a window boundary (`--time-unit ns`)", "each event in its own window (integer arithmetic, no double)"),
    ("test_nan_time_is_rejected", "a `NaN` time", "exit 1 with the number of rows; `--drop-invalid` drops and counts them"),
    ("test_null_time_is_rejected_with_a_count", "empty time values", "exit 1: 'N row(s) have no time'; `--drop-invalid` drops them and says how many"),
    ("test_infinite_time_is_rejected", "`inf` / `-inf` times", "exit 1 with the number of rows"),
    ("test_pandas_nanosecond_parquet", "pandas' default Parquet timestamps (nanoseconds, no zone)", "read exactly; same windows as microsecond timestamps"),
    ("test_pandas_nanosecond_parquet_with_zone", "pandas' nanosecond timestamps with a time zone", "read exactly, as UTC"),
    ("test_iso_times_in_csv", "ISO-8601 times in a CSV (`2026-01-01T10:00:00Z`)", "read as timestamps"),
    ("test_iso_times_in_json", "ISO-8601 times in JSON lines", "read as timestamps"),
    ("test_text_in_a_numeric_column", "a numeric column with one `n/a`", "exit 1 naming the column, the number of rows and a sample; `--drop-invalid` drops them"),
    ("test_numbers_compare_as_numbers", "a numeric CSV column (`9` and `10`)", "compared as numbers, never as text"),
    ("test_csv_without_header", "a CSV whose first line is data", "exit 2: 'has no header row'"),
    ("test_empty_file", "an empty input file", "exit 2: 'is empty'"),
    ("test_header_only_csv", "a CSV with a header and no rows", "no trends, exit 0"),
    ("test_folder_reads_only_its_format", "a folder with `*.csv` beside `*.bak` and `*.txt`", "only the CSV files are read"),
    ("test_folder_with_two_formats", "a folder with CSV and Parquet files", "exit 2 listing both"),
    ("test_unknown_extension", "an input named `data.dat`", "exit 2: cannot tell the format"),
    ("test_column_named_like_an_internal_one", "an input column named `__t` (or `__id`, `__wk`)", "kept as it is: internal columns take another prefix"),
    ("test_key_named_like_an_output_column", "an equivalence attribute named `length` or `events`", "refused before Spark: it would clash with an output column"),
    ("test_malformed_csv_row", "a CSV row with too many fields", "exit 1, one line: a malformed row"),
    ("test_input_not_utf8", "a Latin-1 CSV", "exit 2: not UTF-8 text, with the byte"),
    ("test_missing_input", "`--input` that does not exist", "exit 2: does not exist"),
    ("test_unknown_table", "`--input` naming no file and no table", "exit 2: neither a file nor a table or view"),
    ("test_missing_time_column", "no `ts` column", "exit 2 naming `--time-col` and the columns there are"),
    ("test_missing_id_column", "`--id-col` naming a missing column", "exit 2 naming the columns there are"),
    ("test_query_file_not_utf8", "a query file in Latin-1", "exit 2: not UTF-8 text, with the byte"),
    ("test_deep_nesting", "100 nested parentheses in a predicate", "runs, or a one-line error; never a traceback"),
    ("test_nan_parameter", "`--param ratio=nan`", "exit 2: a parameter must be a finite number"),
    ("test_param_without_value", "`--param ratio`", "exit 2: not of the form name=value"),
    ("test_unbound_parameter_refused_early", "an unbound parameter", "exit 2 before Spark starts"),
    ("test_distributed_with_a_memory_budget_refused_early", "`--strategy distributed` with `--memory-budget`",
     "exit 2 before Spark starts, saying why"),
    ("test_maximal_aggregation_refused_early", "`--trends maximal` on an aggregation", "exit 2 before Spark starts"),
    ("test_bogus_master", "`--master bogus://x`", "exit 2: unknown Spark master"),
    ("test_unreachable_remote", "`--remote sc://…` where no server listens", "exit 1 within seconds: cannot reach the Spark Connect server, and why; no traceback"),
    ("test_master_beside_remote", "`--master` and `--remote` together", "exit 2 before Spark starts: give one"),
    ("test_server_dies_mid_query", "the `--remote` server dies while the query runs", "exit 1 within a minute: lost the Spark Connect server; no output left, no traceback"),
    ("test_memory_budget_not_a_size", "`--memory-budget lots` (or 0, or 1.5 bytes)", "exit 2: must be a size such as 512m or 2g"),
    ("test_negative_limit", "`--limit -1`", "exit 2: must be zero or positive"),
    ("test_missing_query_file", "a query file that does not exist", "exit 2"),
    ("test_unknown_type_binding", "`--input Debit=…` for a type the pattern does not use", "exit 2 naming the pattern's types"),
    ("test_syntax_error_has_a_caret", "a syntax error", "exit 2: file:line:col, the line, a caret"),
    ("test_runaway_detection_is_refused", "a detection query with ~10^300 trends", "exit 1 with the exact count, the window and group, and what to do instead"),
    ("test_aggregate_too_large", "an exact count above 10^38", "exit 1 naming the aggregate, window and group; `--exact string` / `--approx` work"),
    ("test_ctrl_c_cancels", "Ctrl-C while a job runs", "the job is cancelled, 'cancelled', exit 130, no traceback"),
    ("test_spark_logs_stay_quiet", "a successful run", "nothing from Spark or the JVM on the terminal (log file instead)"),
    ("test_compile_and_run_read_the_same_types", "`compile --input` then `run` on the same file", "the same columns and types (one reader)"),
]


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def q(tmp_path):
    def make(text=KITING, name="q.cet"):
        p = tmp_path / name
        p.write_text(text)
        return p

    return make


@pytest.fixture
def checks(tmp_path):
    p = tmp_path / "checks.csv"
    p.write_text(CHECKS)
    return p


# ---------------------------------------------------------------- output never destroys


def test_output_existing_folder_is_kept(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run(capsys, "run", q(), "--input", checks, "--output", out)
    assert code == 2 and "already exists; give --mode overwrite" in err
    assert (out / "keep.txt").read_text() == "mine" and len(list(out.iterdir())) == 1


def test_output_existing_file_is_kept(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "results.parquet"
    out.write_text("mine")
    code, _, err = run(capsys, "run", q(), "--input", checks, "--output", out)
    assert code == 2 and "already exists" in err and out.read_text() == "mine"


def test_output_is_the_input(spark, capsys, q, checks):
    for mode in ("error", "overwrite", "append", "ignore"):
        code, _, err = run(capsys, "run", q(), "--input", checks, "--output", checks, "--format", "csv", "--mode", mode)
        assert code == 2 and "is an input of the query" in err
    assert checks.read_text() == CHECKS


def test_output_contains_the_input(spark, capsys, q, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "checks.csv").write_text(CHECKS)
    code, _, err = run(capsys, "run", q(), "--input", folder / "checks.csv", "--output", folder, "--mode", "overwrite")
    assert code == 2 and "contains the input" in err and (folder / "checks.csv").read_text() == CHECKS


def test_output_inside_the_input_folder(spark, capsys, q, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "checks.csv").write_text(CHECKS)
    code, _, err = run(capsys, "run", q(), "--input", folder, "--output", folder / "out")
    assert code == 2 and "inside the input folder" in err


def test_mode_overwrite_replaces(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    code, stdout, _ = run(capsys, "run", q(), "--input", checks, "--id-col", "id", "--output", out, "--mode", "overwrite")
    assert code == 0 and "wrote 2 trends" in stdout
    assert not (out / "old.txt").exists()
    assert sorted(pq.read_table(out).column("events").to_pylist()) == [[1, 2], [1, 3, 4]]
    assert not [p for p in tmp_path.iterdir() if ".cetql-" in p.name]  # no staging left behind


def test_failed_query_leaves_the_old_output(spark, capsys, q, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,ts,src,dst\n1,,A,B\n2,2,B,C\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    code, _, err = run(capsys, "run", q(), "--input", bad, "--output", out, "--mode", "overwrite")
    assert code == 1 and "have no time" in err
    assert [p.name for p in out.iterdir()] == ["old.txt"] and (out / "old.txt").read_text() == "old"
    assert not [p for p in tmp_path.iterdir() if ".cetql-" in p.name]


def test_mode_append_adds_files(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "out"
    assert run(capsys, "run", q(), "--input", checks, "--id-col", "id", "--output", out)[0] == 0
    before = {p.name for p in out.iterdir()}
    assert run(capsys, "run", q(), "--input", checks, "--id-col", "id", "--output", out, "--mode", "append")[0] == 0
    after = {p.name for p in out.iterdir()}
    assert before < after
    assert len(pq.read_table(out)) == 4


def test_mode_ignore_writes_nothing(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, _ = run(capsys, "run", q(), "--input", checks, "--output", out, "--mode", "ignore")
    assert code == 0 and "nothing written" in stdout and not list(out.iterdir())


def test_mode_without_output(capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--mode", "overwrite")
    assert code == 2 and "give --output too" in err


def test_output_folder_parent_missing(capsys, q, checks, tmp_path):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--output", tmp_path / "a" / "b" / "c")
    assert code == 2 and "does not exist" in err and str(tmp_path / "a" / "b") in err


def test_csv_output_of_an_aggregation(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "agg"
    text = "RETURN COUNT(*) PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10"
    code, stdout, _ = run(capsys, "run", q(text), "--input", checks, "--output", out, "--format", "csv")
    assert code == 0 and "wrote 1 rows" in stdout
    parts = [p.read_text().splitlines() for p in sorted(out.glob("*.csv"))]
    assert all(lines[0] == "window_start,window_end,COUNT(*)" for lines in parts)  # every file has its header
    assert [line for lines in parts for line in lines[1:]] == ["0,10,8"]  # 4 single checks, 1-2, 1-3, 3-4, 1-3-4


def test_csv_output_of_trends_with_rows(spark, capsys, q, checks, tmp_path):
    out = tmp_path / "trends"
    code, _, _ = run(capsys, "run", q(), "--input", checks, "--id-col", "id", "--with-rows", "--output", out, "--format", "csv")
    assert code == 0
    import csv

    lines = [r for p in sorted(out.glob("*.csv")) for r in csv.DictReader(p.open())]
    assert sorted(r["events"] for r in lines) == ["1;2", "1;3;4"]
    assert all(r["rows"].startswith("[{") for r in lines)


def test_every_format_says_how_many_rows(spark, capsys, q, checks, tmp_path):
    for fmt in ("parquet", "csv", "json"):
        code, stdout, _ = run(capsys, "run", q(), "--input", checks, "--output", tmp_path / fmt, "--format", fmt)
        assert code == 0 and f"wrote 2 trends to {tmp_path / fmt} ({fmt})" in stdout


# ---------------------------------------------------------------- times are exact


def test_epoch_nanoseconds_land_in_their_windows(spark, capsys, q, tmp_path):
    # 1,700,000,000 s in nanoseconds, one nanosecond either side of a 1-second window boundary:
    # a double cannot tell these apart (2^53 < 1.7e18).
    edge = 1_700_000_000 * 10**9
    data = tmp_path / "ns.csv"
    data.write_text(f"id,ts,x\n1,{edge - 1},1\n2,{edge},2\n3,{edge + 1},3\n")
    text = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 1 s"
    code, stdout, _ = run(capsys, "run", q(text), "--input", data, "--id-col", "id", "--time-unit", "ns", "--format", "csv")
    assert code == 0
    rows = stdout.splitlines()[1:]
    assert rows == [f"{edge - 10**9},{edge},1,1", f"{edge},{edge + 10**9},2;3,2"]


def test_nan_time_is_rejected(spark, capsys, q, tmp_path):
    data = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"ts": [1.0, float("nan"), 3.0], "x": [1, 2, 3]}), data)
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 1 and "1 row(s) have no time (null, NaN or infinite)" in err
    code, stdout, err = run(capsys, "run", q(RISING), "--input", data, "--drop-invalid", "--format", "csv")
    assert code == 0 and "dropped 1 input row(s)" in err


def test_null_time_is_rejected_with_a_count(spark, capsys, q, tmp_path):
    data = tmp_path / "null.csv"
    data.write_text("id,ts,src,dst\n1,,A,B\n2,2,B,C\n3,,B,D\n")
    code, _, err = run(capsys, "run", q(), "--input", data, "--id-col", "id")
    assert code == 1 and "time column 'ts': 2 row(s) have no time" in err and "Traceback" not in err
    code, stdout, err = run(capsys, "run", q(), "--input", data, "--id-col", "id", "--drop-invalid", "--format", "csv")
    assert code == 0 and "dropped 2 input row(s)" in err and stdout.splitlines()[1:] == ["0,10,2,1"]


def test_infinite_time_is_rejected(spark, capsys, q, tmp_path):
    data = tmp_path / "inf.csv"
    data.write_text("ts,x\n1,1\ninf,2\n-inf,3\n4,4\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 1 and "2 row(s) have no time" in err


def _pandas_parquet(path, tz=None):
    import pandas as pd

    t0 = pd.Timestamp("2026-01-01 00:00:00")
    ts = pd.to_datetime([t0 + pd.Timedelta(seconds=s) for s in (1, 2, 12)])
    if tz:
        ts = ts.tz_localize(tz)
    pd.DataFrame({"ts": ts, "x": [1, 2, 3], "id": [1, 2, 3]}).to_parquet(path)
    return t0


def test_pandas_nanosecond_parquet(spark, capsys, q, tmp_path):
    data = tmp_path / "pandas.parquet"
    _pandas_parquet(data)
    assert pq.read_schema(data).field("ts").type == pa.timestamp("ns")
    code, stdout, _ = run(capsys, "run", q("PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"), "--input", data,
                          "--id-col", "id", "--format", "csv")  # fmt: skip
    assert code == 0
    assert stdout.splitlines()[1:] == ["2026-01-01 00:00:00,2026-01-01 00:00:10,1;2,2",
                                       "2026-01-01 00:00:10,2026-01-01 00:00:20,3,1"]  # fmt: skip


def test_pandas_nanosecond_parquet_with_zone(spark, capsys, q, tmp_path):
    data = tmp_path / "pandas-tz.parquet"
    _pandas_parquet(data, tz="UTC")
    code, stdout, _ = run(capsys, "run", q("PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"), "--input", data,
                          "--id-col", "id", "--format", "csv")  # fmt: skip
    assert code == 0 and len(stdout.splitlines()) == 3


def test_iso_times_in_csv(spark, capsys, q, tmp_path):
    data = tmp_path / "iso.csv"
    data.write_text("id,ts,x\n1,2026-01-01T00:00:01Z,1\n2,2026-01-01T00:00:02Z,2\n3,2026-01-01T00:00:12Z,3\n")
    code, stdout, _ = run(capsys, "run", q("PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"), "--input", data,
                          "--id-col", "id", "--format", "csv")  # fmt: skip
    assert code == 0 and [line.split(",")[2] for line in stdout.splitlines()[1:]] == ["1;2", "3"]


def test_iso_times_in_json(spark, capsys, q, tmp_path):
    data = tmp_path / "iso.json"
    data.write_text("\n".join(f'{{"id": {i}, "ts": "2026-01-01T00:00:{s:02d}Z", "x": {i}}}' for i, s in
                              ((1, 1), (2, 2), (3, 12))) + "\n")  # fmt: skip
    code, stdout, _ = run(capsys, "run", q("PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"), "--input", data,
                          "--id-col", "id", "--format", "csv")  # fmt: skip
    assert code == 0 and [line.split(",")[2] for line in stdout.splitlines()[1:]] == ["1;2", "3"]


# ---------------------------------------------------------------- one reader, one schema


def test_text_in_a_numeric_column(spark, capsys, q, tmp_path):
    data = tmp_path / "na.csv"
    data.write_text("ts,x\n1,9\n2,10\n3,n/a\n4,12\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 1 and "column 'x' holds 1 value(s) that cannot be read as a whole number (e.g. 'n/a')" in err
    code, stdout, err = run(capsys, "run", q(RISING), "--input", data, "--drop-invalid", "--format", "csv")
    # rows 0, 1, 3 remain (9, 10, 12): two complete rising trends, 9-10-12 and 9-12
    assert code == 0 and "dropped 1 input row(s)" in err and stdout.splitlines()[1:] == ["0,10,0;1;3,3", "0,10,0;3,2"]


def test_numbers_compare_as_numbers(spark, capsys, q, tmp_path):
    data = tmp_path / "n.csv"
    data.write_text("ts,x\n1,9\n2,10\n")
    code, stdout, _ = run(capsys, "run", q(RISING), "--input", data, "--format", "csv")
    assert code == 0 and stdout.splitlines()[1:] == ["0,10,0;1,2"]  # 9 < 10: one rising trend of two


def test_csv_without_header(spark, capsys, q, tmp_path):
    data = tmp_path / "nohead.csv"
    data.write_text("1,1,5\n2,2,6\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 2 and "has no header row" in err


def test_empty_file(capsys, q, tmp_path):
    data = tmp_path / "empty.csv"
    data.write_text("")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 2 and "is empty" in err


def test_header_only_csv(spark, capsys, q, tmp_path):
    data = tmp_path / "header.csv"
    data.write_text("id,ts,src,dst\n")
    code, stdout, err = run(capsys, "run", q(), "--input", data, "--format", "csv")
    assert code == 0 and stdout.splitlines() == ["window_start,window_end,events,length"] and err.startswith("0 trends")


def test_folder_reads_only_its_format(spark, capsys, q, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.csv").write_text("id,ts,src,dst\n1,1,A,B\n")
    (folder / "b.csv").write_text("id,ts,src,dst\n2,2,B,C\n")
    (folder / "a.csv.bak").write_text("id,ts,src,dst\n9,3,C,D\n")
    (folder / "notes.txt").write_text("not data\n")
    code, stdout, _ = run(capsys, "run", q(), "--input", folder, "--id-col", "id", "--format", "csv")
    assert code == 0 and stdout.splitlines()[1:] == ["0,10,1;2,2"]


def test_folder_with_two_formats(capsys, q, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.csv").write_text("ts,x\n1,1\n")
    pq.write_table(pa.table({"ts": [2], "x": [2]}), folder / "b.parquet")
    code, _, err = run(capsys, "run", q(RISING), "--input", folder)
    assert code == 2 and "mixes formats" in err and "csv" in err and "parquet" in err


def test_unknown_extension(capsys, q, tmp_path):
    data = tmp_path / "data.dat"
    data.write_text("ts,x\n1,1\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 2 and "cannot tell the format" in err


def test_column_named_like_an_internal_one(spark, capsys, q, tmp_path):
    data = tmp_path / "internal.csv"
    data.write_text("ts,x,__t,__id,__wk\n1,1,a,b,c\n2,2,d,e,f\n")
    code, stdout, _ = run(capsys, "run", q(RISING), "--input", data, "--with-rows", "--format", "json")
    assert code == 0
    import json

    (trend,) = [json.loads(line) for line in stdout.splitlines()]
    assert [(r["__t"], r["__id"], r["__wk"]) for r in trend["rows"]] == [("a", "b", "c"), ("d", "e", "f")]


def test_key_named_like_an_output_column(capsys, q, tmp_path):
    data = tmp_path / "named.csv"
    data.write_text("id,ts,length,events,window_start\n1,1,a,b,c\n")
    for attr in ("length", "events", "window_start"):
        code, _, err = run(capsys, "run", q(f"PATTERN Check+ c[] WHERE [{attr}] WITHIN 10"), "--input", data)
        assert code == 2 and f"the output already has a column '{attr}'" in err


def test_malformed_csv_row(spark, capsys, q, tmp_path):
    data = tmp_path / "bad.csv"
    data.write_text("ts,x\n1,1\n2,2,3\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 1 and "malformed row" in err and len(err.strip().splitlines()) == 1


def test_input_not_utf8(capsys, q, tmp_path):
    data = tmp_path / "latin1.csv"
    data.write_bytes("ts,name\n1,Zürich\n".encode("latin-1"))
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 2 and "is not UTF-8 text" in err


def test_missing_input(capsys, q, tmp_path):
    code, _, err = run(capsys, "run", q(), "--input", tmp_path / "nope.csv")
    assert code == 2 and "does not exist" in err


def test_unknown_table(spark, capsys, q):
    code, _, err = run(capsys, "run", q(), "--input", "no_such_table")
    assert code == 2 and "neither a file nor a table or view" in err


def test_missing_time_column(capsys, q, tmp_path):
    data = tmp_path / "notime.csv"
    data.write_text("time,x\n1,1\n")
    code, _, err = run(capsys, "run", q(RISING), "--input", data)
    assert code == 2 and "time column 'ts' is not in the input" in err and "--time-col" in err


def test_missing_id_column(spark, capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--id-col", "eid")
    assert code == 2 and "id column 'eid' is not in the input" in err


# ---------------------------------------------------------------- queries, parameters, the command line


def test_query_file_not_utf8(capsys, checks, tmp_path):
    p = tmp_path / "q.cet"
    p.write_bytes("PATTERN S+ s[] WHERE s.name = 'Zürich' WITHIN 3".encode("latin-1"))
    code, _, err = run(capsys, "compile", p)
    assert code == 2 and "is not UTF-8 text" in err


def test_deep_nesting(capsys, q):
    text = "PATTERN S+ s[] WHERE " + "(" * 100 + "s.x > 1" + ")" * 100 + " WITHIN 3"
    code, out, err = run(capsys, "compile", q(text))
    assert (code == 0 and out.startswith("ok")) or (code == 2 and "Traceback" not in err)


def test_nan_parameter(capsys, q):
    code, _, err = run(capsys, "compile", q("PATTERN S+ s[] WHERE s[i].x > ratio * s[i-1].x WITHIN 3"),
                       "--param", "ratio=nan")  # fmt: skip
    assert code == 2 and "finite number" in err


def test_param_without_value(capsys, q):
    code, _, err = run(capsys, "compile", q(), "--param", "ratio")
    assert code == 2 and "not of the form name=value" in err


def _subprocess(*args, timeout=600, env=None):
    """`python -m cetql ARGS`; the timeout only ends a run that hangs."""
    return subprocess.run([sys.executable, "-m", "cetql", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


@pytest.fixture
def no_jvm(_refusing_java_home):
    """Whether no JVM was started: this test is not marked spark, so every
    `java` it or its children could start is conftest's, which refuses and
    leaves a mark."""
    _, mark = _refusing_java_home
    return lambda: not mark.exists()


def test_unbound_parameter_refused_early(no_jvm, q, tmp_path):
    data = tmp_path / "rising.csv"
    data.write_text("ts,x\n1,1\n2,2\n")
    proc = _subprocess("run", q("PATTERN S+ s[] WHERE s[i].x > ratio * s[i-1].x WITHIN 3"), "--input", data,
                                "--param", "other=1")  # fmt: skip
    assert proc.returncode == 2 and "unbound parameter 'ratio'" in proc.stderr
    assert no_jvm() and "Traceback" not in proc.stderr


def test_distributed_with_a_memory_budget_refused_early(no_jvm, q, checks):
    proc = _subprocess("run", q("PATTERN SEQ(Check a, Check+ b[]) WITHIN 3"), "--input", checks,
                       "--strategy", "distributed", "--memory-budget", "1m")  # fmt: skip
    assert proc.returncode == 2 and "--memory-budget bounds the local strategy's groups" in proc.stderr
    assert no_jvm() and "Traceback" not in proc.stderr


def test_maximal_aggregation_refused_early(no_jvm, q, checks):
    proc = _subprocess("run", q("RETURN COUNT(*) PATTERN Check+ c[] WITHIN 3"), "--input", checks,
                                "--trends", "maximal")  # fmt: skip
    assert proc.returncode == 2 and "not MAXIMAL" in proc.stderr
    assert no_jvm() and "Traceback" not in proc.stderr


def test_bogus_master(capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--master", "bogus://x")
    assert code == 2 and "unknown Spark master 'bogus://x'" in err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens on it once closed


def test_unreachable_remote(capsys, q, checks, monkeypatch):
    """Refused by cetql's own look at the port, before the Connect client
    (which would retry for minutes) is ever made."""
    from pyspark.sql import SparkSession

    def no_client(*a, **k):
        raise AssertionError("a Connect client was made")

    monkeypatch.setattr(SparkSession.Builder, "remote", no_client)
    port = _free_port()
    code, _, err = run(capsys, "run", q(), "--input", checks, "--remote", f"sc://127.0.0.1:{port}", "--engine", "spark")
    assert code == 1 and f"cannot reach the Spark Connect server at sc://127.0.0.1:{port}: connection refused" in err
    assert "is `cetql serve` or another Connect server running there?" in err and "Traceback" not in err


def test_master_beside_remote(capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--master", "local[1]", "--remote", "sc://127.0.0.1:1")
    assert code == 2 and "give --master or --remote, not both" in err


def test_memory_budget_not_a_size(capsys, q, checks):
    for value, message in (("lots", "must be a size such as 512m or 2g"), ("0", "must be positive"),
                           ("1.5", "whole number of bytes")):  # fmt: skip
        code, _, err = run(capsys, "run", q(), "--input", checks, "--memory-budget", value)
        assert code == 2 and message in err, (value, err)


def test_negative_limit(capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", checks, "--limit", "-1")
    assert code == 2 and err.strip() == "error: --limit -1: must be zero or positive"


def test_missing_query_file(capsys, checks):
    code, _, err = run(capsys, "run", "no/such/q.cet", "--input", checks)
    assert code == 2 and "query file 'no/such/q.cet' does not exist" in err


def test_unknown_type_binding(spark, capsys, q, checks):
    code, _, err = run(capsys, "run", q(), "--input", f"Debit={checks}")
    assert code == 2 and "type(s) Debit that the pattern does not use (its types: Check)" in err


def test_syntax_error_has_a_caret(capsys, q, checks):
    p = q("PATTERN S+ s[]\nWHERE s.x > )\nWITHIN 3")
    code, _, err = run(capsys, "run", p, "--input", checks)
    assert code == 2 and err.startswith(f"{p}:2:13: syntax error") and "     |             ^" in err


# ---------------------------------------------------------------- runaways and big numbers


def test_runaway_detection_is_refused(spark, capsys, q, tmp_path):
    data = tmp_path / "stock.csv"
    data.write_text("ts,price\n" + "".join(f"{i},{i % 7}\n" for i in range(1000)))
    text = "PATTERN Stock+ s[] WITHIN 1000"
    code, _, err = run(capsys, "run", q(text), "--input", data)
    # every event follows every earlier one: the complete trends are the paths
    # from the first event to the last through any subset of the 998 between
    assert code == 1 and f"would return {2**998:,} complete trends" in err
    assert "window [0, 1000)" in err and "ask for an aggregation" in err and "--max-trends" in err
    agg = q("RETURN COUNT(*) PATTERN Stock+ s[] WITHIN 1000 TRENDS COMPLETE", name="agg.cet")
    code, stdout, _ = run(capsys, "run", agg, "--input", data, "--exact", "string", "--format", "csv")
    assert code == 0 and stdout.splitlines()[1] == f"0,1000,{2**998}"


def test_aggregate_too_large(spark, capsys, q, tmp_path):
    data = tmp_path / "a.csv"
    data.write_text("id,ts,x\n" + "".join(f"{i},{i},{i}\n" for i in range(140)))
    text = "RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 1000"
    code, _, err = run(capsys, "run", q(text), "--input", data)
    assert code == 1 and "COUNT(*) = 139379657490… (43 digits) in window [0, 1000)" in err
    assert run(capsys, "run", q(text), "--input", data, "--exact", "string", "--format", "csv")[0] == 0


# ---------------------------------------------------------------- terminals


@pytest.mark.spark  # a cetql run on Spark, interrupted
def test_ctrl_c_cancels(tmp_path, q):
    data = tmp_path / "slow.csv"
    data.write_text("ts,price\n" + "".join(f"{i},{i}\n" for i in range(3000)))
    # rising prices: every subsequence is a trend; all of them, with no limit, take long
    query = q("PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN 100000 TRENDS ALL")
    proc = subprocess.Popen([sys.executable, "-m", "cetql", "run", str(query), "--input", str(data), "--max-trends", "0",
                             "--output", str(tmp_path / "out"), "--engine", "spark"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        # the job runs once Spark's Python workers (the kernels) are there
        _wait_for(lambda: proc.poll() is not None or _kernel_workers(proc.pid), "the job never started")
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        stop(proc, kill=True)  # whatever of its group is left (its JVM)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "cancelled" and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def _kernel_workers(pid: int) -> list[int]:
    """Spark's Python workers below process `pid`: they start when a job's
    first task runs the kernels."""
    found = []
    for p in descendants(pid):
        try:
            if b"pyspark.daemon" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(p)
        except OSError:
            continue
    return found


def _wait_for(event, what: str, timeout: float = 600) -> None:
    """Until `event()`; the timeout only fails a test that hangs."""
    deadline = time.monotonic() + timeout
    while not event():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.spark
def test_spark_logs_stay_quiet(q, checks):
    """Spark's own lines never reach the terminal (cetql's one-time note of
    the class archive it saves, on an install's first Spark run, is off
    here: the order of the suite decides which run is first)."""
    proc = _subprocess("run", q(), "--input", checks, "--format", "csv", "--engine", "spark",
                       env={**os.environ, "CETQL_CLASS_ARCHIVE": "off"})  # fmt: skip
    assert proc.returncode == 0
    assert proc.stderr.strip().splitlines() == ["2 trends; 2 distinct across windows; by length 2: 1, 3: 1"]


def test_compile_and_run_read_the_same_types(spark, capsys, q, tmp_path):
    data = tmp_path / "pandas.parquet"
    _pandas_parquet(data)
    text = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 10 s"
    code, out, _ = run(capsys, "compile", q(text), "--input", data, "--format", "json")
    assert code == 0
    import json

    compiled = json.loads(out)
    (scan,) = [o for o in compiled["plan"] if o["op"] == "Scan"]
    assert scan["time_kind"] == "timestamp_ns"
    import cetql

    execution = cetql.compile(text).execution(str(data), spark=spark)
    assert execution.plan.scan.time_kind == "timestamp_ns"
    assert execution.dataframe.count() == 2


@pytest.mark.spark
@pytest.mark.slow
def test_server_dies_mid_query(tmp_path):
    """A Connect server that dies while a query runs: the client gives up
    after its bounded retries (30 s a call by default, here 6 s by
    CETQL_CONNECT_RETRY_SECONDS; Spark's default waits at least 10 minutes)
    with a one-line error, and leaves no output behind."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 300_000
    rng = np.random.default_rng(7)
    src = rng.integers(0, 50, n)
    names = np.array([f"a{k}" for k in range(50)])
    data = tmp_path / "checks.parquet"
    pq.write_table(pa.table({"ts": np.arange(n), "id": np.arange(n), "src": names[src],
                             "dst": names[(src + rng.integers(1, 50, n)) % 50]}), data)  # fmt: skip
    query = tmp_path / "q.cet"
    query.write_text("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 168 SLIDE 1")
    port = free_port()
    log = tmp_path / "serve.out"
    server = start([sys.executable, "-m", "cetql", "serve", "--port", str(port), "--master", "local[2]",
                    "--driver-memory", "1g"], log, env=spark_env(CETQL_LOG_DIR=str(tmp_path)))  # fmt: skip
    client = None
    try:
        wait_for_port(server, port, log, "cetql serve")
        out = tmp_path / "out"
        client = subprocess.Popen(
            [sys.executable, "-m", "cetql", "run", str(query), "--input", str(data), "--id-col", "id",
             "--max-trends", "0", "--output", str(out), "--remote", f"sc://127.0.0.1:{port}", "--no-serve"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=spark_env(CETQL_CONNECT_RETRY_SECONDS="6"),
            cwd=tmp_path,
        )  # fmt: skip
        # the query runs on the server once its Python workers (the kernels) are there
        _wait_for(lambda: client.poll() is not None or _kernel_workers(server.pid), "the query never ran on the server")
        assert client.poll() is None, client.communicate()
        stop(server, kill=True)  # the server and everything it started, at once
        # bounded: 6 s of retries where Spark's own default waits ten minutes (the timeout only ends a hang)
        _, err = client.communicate(timeout=300)
        assert client.returncode == 1, err[-3000:]
        assert "lost the Spark Connect server while the query ran" in err and "Traceback" not in err, err[-3000:]
        assert "RETRIES_EXCEEDED" not in err
        assert "retried for 6 s" in err, err[-3000:]
        assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        stop(server, kill=True)


# Modules whose `CASES` are rows of docs/reliability.md's table (test name,
# the input, what cetql does); this module's come first.
TABLE_MODULES = ("test_reliability", "test_output_safety", "test_inputs_read", "test_inputs_time", "test_inputs_ids",
                 "test_inputs_messages", "test_fuzz_inputs", "test_embedded", "test_spills", "test_inputs_names",
                 "test_parity")


@functools.cache
def _module(name: str) -> dict:
    """A test module's names, by its file's name anywhere under tests/ (each
    folder of tests is not a package: loaded from its path)."""
    import importlib.util

    if name in ("test_reliability", __name__):
        return globals()
    (path,) = Path(__file__).resolve().parents[1].glob(f"*/{name}.py")
    spec = importlib.util.spec_from_file_location(f"_table_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # where dataclasses look up a module's names (string annotations)
    spec.loader.exec_module(module)
    return vars(module)


def table_rows() -> list[tuple[str, str, str, str]]:
    """(module, test name, the input, what cetql does) for every row."""
    return [(name, *case) for name in TABLE_MODULES for case in _module(name)["CASES"]]


def test_docs_table_lists_every_case():
    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text()
    rows = table_rows()
    missing = [test for _, test, what, does in rows if f"| {what} | {does} | `{test}` |" not in page]
    assert not missing, missing
    for module, test, _, _ in rows:
        tests = _module(module)
        assert test in tests and test.startswith("test_"), (module, test)
    assert len(rows) >= 55
    listed = page.count("` |\n")
    assert listed == len(rows), "a row of docs/reliability.md that no test's CASES holds"


if __name__ == "__main__":  # print docs/reliability.md's table
    print("| input | what cetql does | test |\n| --- | --- | --- |")
    for _, test, what, does in table_rows():
        print(f"| {what} | {does} | `{test}` |")
