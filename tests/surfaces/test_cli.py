"""`cetql compile`: explain output, JSON, schema checks and exit statuses."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cetql.base.errors import spoken
from cetql.surfaces.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "queries"
QUERIES = sorted(EXAMPLES.glob("*.cet"))


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_compile_explain_runs_for_every_seed_query(path, capsys):
    assert main(["compile", str(path), "--explain"]) == 0
    out = capsys.readouterr().out
    for section in ("query:", "plan:", "Scan", "Filter", "Windows", "Partition", "predicates:", "template:"):
        assert section in out, section
    assert "AST:" not in out  # only with --ast
    assert main(["compile", str(path), "--explain", "--ast"]) == 0
    assert "AST:" in capsys.readouterr().out


def test_explain_says_which_trend_set_an_aggregation_uses(capsys):
    main(["compile", str(EXAMPLES / "greta_q1_stock.cet"), "--explain"])
    assert "trends: ALL — default for aggregation" in capsys.readouterr().out
    main(["compile", str(EXAMPLES / "abi_q1_kiting.cet"), "--explain"])
    assert "trends: COMPLETE — default for detection" in capsys.readouterr().out


def test_explain_is_the_python_api_text(capsys):
    import cetql

    text = (EXAMPLES / "greta_q3_traffic.cet").read_text()
    from dataclasses import replace

    from cetql.base.options import Engine, RunOptions, Sink

    main(["compile", str(EXAMPLES / "greta_q3_traffic.cet"), "--explain"])
    cli = capsys.readouterr().out.strip()
    run = replace(RunOptions(), engine=Engine.AUTO, sink=Sink.PARQUET)  # compile plans `cetql run --output DIR`
    assert spoken(cli, "python") == cetql.compile(text, options=run).explain(as_string=True).strip()  # Python's words


def test_json_format(capsys):
    assert main(["compile", str(EXAMPLES / "abi_q2_stock.cet"), "--format", "json", "--param", "ratio=1.5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "detection"
    assert data["trend_set"]["choice"] == "COMPLETE"
    assert data["parameters"]["bound"] == {"ratio": 1.5}  # numbers as numbers
    by_text = {p["predicate"]: p for p in data["predicates"]}
    p = by_text["s[i].price > ratio * s[i-1].price"]
    assert (p["kind"], p["op"], p["scope"], p["h"]) == ("edge", "range", "adjacent", "h(x) = ratio * x")
    assert "ast" not in data
    assert [o["op"] for o in data["plan"]] == ["Scan", "Filter", "Windows", "Partition", "Detect"]
    (windows,) = [o for o in data["plan"] if o["op"] == "Windows"]
    assert windows["length"] == 3600 and windows["slide"] == 600


def test_json_errors_are_json(tmp_path, capsys):
    q = tmp_path / "bad.cet"
    q.write_text("PATTERN A+ WHERE a.x > ) WITHIN 3")
    assert main(["compile", str(q), "--format", "json"]) == 2
    err = json.loads(capsys.readouterr().err)
    assert err["error"]["kind"] == "syntax error" and err["error"]["line"] == 1 and err["error"]["column"] == 24


def test_short_form_without_explain(capsys):
    assert main(["compile", str(EXAMPLES / "abi_q2_stock.cet")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: detection query over COMPLETE trends")
    assert "ratio unbound" in out


def test_syntax_error_exit_status_and_caret(tmp_path, capsys):
    q = tmp_path / "bad.cet"
    q.write_text("PATTERN Check+ c[]\nWHERE c.x > )\nWITHIN 3\n")
    assert main(["compile", str(q)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{q}:2:13: syntax error: unexpected ')'")
    assert "   2 | WHERE c.x > )" in err
    assert "     |             ^" in err


def test_errors_print_no_traceback_from_the_console_script(tmp_path):
    q = tmp_path / "bad.cet"
    q.write_text("PATTERN SEQ(A a, B b) WHERE c.x = 1 WITHIN 3")
    proc = subprocess.run(
        [sys.executable, "-m", "cetql", "compile", str(q)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "unknown variable 'c'; the pattern binds a, b" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unbound_parameter_is_an_error_once_params_are_given(tmp_path, capsys):
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Stock+ s[] WHERE s[i].price > ratio * s[i-1].price + bump WITHIN 3")
    assert main(["compile", str(q), "--param", "ratio=2"]) == 2
    assert "unbound parameter 'bump'" in capsys.readouterr().err
    assert main(["compile", str(q), "--param", "ratio=2", "--param", "bump=0.5"]) == 0


def test_malformed_param(capsys):
    assert main(["compile", str(EXAMPLES / "abi_q2_stock.cet"), "--param", "ratio"]) == 2
    assert "--param 'ratio' is not of the form name=value" in capsys.readouterr().err


def test_memory_budget_on_the_command_line(capsys):
    q = str(EXAMPLES / "abi_q1_kiting.cet")
    assert main(["compile", q, "--explain", "--memory-budget", "64m"]) == 0
    assert "memory: 64 MiB — --memory-budget, per task; a group keeps its graph's edges up to 699,050" in (
        capsys.readouterr().out)
    assert main(["compile", q, "--memory-budget", "lots"]) == 2
    assert "--memory-budget must be a size such as 512m or 2g, not 'lots'" in capsys.readouterr().err
    assert main(["compile", str(EXAMPLES / "greta_q1_stock.cet"), "--memory-budget", "1g"]) == 2
    assert "--memory-budget bounds what a detection group holds" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,message",
    [
        (["--driver-memory", "lots"], "--driver-memory must be a size such as 512m or 2g, not 'lots'"),
        (["--start-timeout", "0"], "--start-timeout 0: must be a positive number of seconds"),
        (["--port", "0"], "--port 0: must be a whole number from 1 to 65,535"),
        (["--conf", "spark.connect.grpc.binding.port=1"], "use --port and --host"),
        (["--conf", "novalue"], "is not of the form KEY=VALUE"),
        (["--master", "bogus"], "unknown Spark master 'bogus'"),
    ],
)
def test_serve_refuses_before_starting_anything(args, message, capsys):
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "--remote" not in err  # the server's own options, not run's


def test_missing_query_file(capsys):
    assert main(["compile", "no/such/file.cet"]) == 2
    assert "query file 'no/such/file.cet' does not exist" in capsys.readouterr().err


def test_schema_string_checks_columns(capsys):
    q = str(EXAMPLES / "abi_q1_kiting.cet")
    assert main(["compile", q, "--schema", "ts long, src string, dest string, type string"]) == 0
    capsys.readouterr()
    assert main(["compile", q, "--schema", "ts long, src string, dst string, type string"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: column 'dest' (c[i-1].dest, 4:24) is not in the input (did you mean 'dst'?); "
                   "its columns are: ts, src, dst, type\n")  # one line, proposing the column meant


def test_schema_type_mismatch(tmp_path, capsys):
    q = tmp_path / "q.cet"
    q.write_text("PATTERN Stock+ s[] WHERE s.id > 3 WITHIN 3")
    assert main(["compile", str(q), "--schema", "ts double, id string, price double"]) == 2
    assert "type mismatch: 's.id > 3' compares string with numeric" in capsys.readouterr().err


def test_schema_time_column(capsys):
    q = str(EXAMPLES / "cet_q3_stock.cet")
    assert main(["compile", q, "--schema", "time long, companyID string, price double"]) == 2
    assert "time column 'ts' is not in the input" in capsys.readouterr().err
    assert main(["compile", q, "--schema", "time long, companyID string, price double", "--time-col", "time"]) == 0


def test_input_csv_and_parquet_schemas(tmp_path, capsys):
    csv = tmp_path / "checks.csv"
    csv.write_text("ts,src,dst,type\n1,A,B,notcovered\n2,B,C,notcovered\n")
    q = str(EXAMPLES / "abi_q1_kiting.cet")
    assert main(["compile", q, "--input", str(csv)]) == 2
    assert "column 'dest'" in capsys.readouterr().err

    table = pa.table({"ts": [1, 2], "src": ["A", "B"], "dest": ["B", "C"], "type": ["x", "y"]})
    pq.write_table(table, tmp_path / "checks.parquet")
    assert main(["compile", q, "--input", str(tmp_path / "checks.parquet"), "--explain"]) == 0
    assert "schema: checked against ts bigint, src string, dest string, type string" in capsys.readouterr().out


def test_sum_over_a_string_column(tmp_path, capsys):
    q = tmp_path / "q.cet"
    q.write_text("RETURN SUM(M.host) PATTERN Measurement M+ WITHIN 1 minute")
    assert main(["compile", str(q), "--schema", "ts timestamp, host string"]) == 2
    assert "SUM(M.host) is not defined on column 'host' of type string: SUM takes a numeric column" in capsys.readouterr().err


def test_ctrl_c_a_library_turned_into_its_own_error_is_cancelled(tmp_path, monkeypatch, capsys):
    """SIGINT that a library answers with an error of its own (DuckDB's
    "Query interrupted"): cancelled, 130, no traceback; the same error
    without SIGINT is cetql's failure and stays one."""
    import os
    import signal

    from cetql.surfaces.cli import main as cli

    def interrupted(_args):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0)  # let the handler run
        except KeyboardInterrupt:
            pass
        raise RuntimeError("Query interrupted")

    def exit_(code):
        raise SystemExit(code)

    monkeypatch.setattr(cli, "cmd_run", interrupted)
    monkeypatch.setattr(cli.os, "_exit", exit_)
    query = tmp_path / "q.cet"
    query.write_text("PATTERN A+ a[] WITHIN 3")
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a `cetql` process has it (a test runner's worker may not)
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main(["run", str(query), "--input", "x.csv"])
        assert ended.value.code == 130 and capsys.readouterr().err.strip() == "cancelled"
        monkeypatch.setattr(cli, "cmd_run", lambda _args: (_ for _ in ()).throw(RuntimeError("Query interrupted")))
        with pytest.raises(RuntimeError):
            cli.main(["run", str(query), "--input", "x.csv"])
    finally:
        signal.signal(signal.SIGINT, previous)
