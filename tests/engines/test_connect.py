"""Spark Connect: `spark.cet` on a Connect session and `cetql run --remote`
(and SPARK_REMOTE) give the rows classic mode gives.

The server is `cetql serve` (pyspark's Connect server, `spark-submit
--class org.apache.spark.sql.connect.service.SparkConnectServer`) on a free
port of 127.0.0.1, in its own process group.  At the end it is sent SIGINT
(Ctrl-C) and must stop with everything it started, its port closed; the
group is then killed whatever happened.  The Connect client runs in
subprocesses: this process already holds the suite's classic session.
"""

from __future__ import annotations

import csv
import io
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from processes import descendants, free_port, spark_env, start, stop, wait_for_port

from cetql.backends.spark.connect import with_token
from cetql.surfaces.cli.main import main
from cetql.surfaces.serve.state import token_for

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
COUNT = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50 AGG COUNT(*), MAX(c.ts)"


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    port = free_port()
    folder = tmp_path_factory.mktemp("connect")
    log = folder / "serve.out"
    server = start(
        [sys.executable, "-m", "cetql", "serve", "--port", str(port), "--master", "local[2]", "--driver-memory", "1g",
         "--conf", "spark.sql.shuffle.partitions=2"],
        log, env=spark_env(CETQL_LOG_DIR=str(folder)),
    )  # fmt: skip
    try:
        print(f"cetql serve up in {wait_for_port(server, port, log, 'cetql serve'):.1f} s")
        yield f"sc://127.0.0.1:{port}"
        started = descendants(server.pid)  # the JVM (its own session) and its Python workers
        assert started, "cetql serve started no server process"
        server.send_signal(signal.SIGINT)  # Ctrl-C: stops the server and what it started
        assert server.wait(timeout=300) == 0, log.read_text()[-2000:]  # the timeout only ends a hang
        assert not _listening(port)
        assert "server stopped" in log.read_text()
        alive = [p for p in started if _alive(p)]
        assert not alive, f"left running after cetql serve stopped: {alive}"
    finally:
        stop(server)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_serve_refuses_a_port_in_use(connect_url):
    port = connect_url.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "cetql", "serve", "--port", port], capture_output=True, text=True,
                          env=spark_env(), timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"port {port} is in use" in done.stderr and "Traceback" not in done.stderr


def _client_env(**extra) -> dict:
    return spark_env(**extra)


def _csv_rows(text: str) -> list[tuple]:
    rows = list(csv.reader(io.StringIO(text)))
    return [rows[0]] + sorted(map(tuple, rows[1:]))


def test_spark_cet_on_a_connect_session(spark, connect_url):
    url = with_token(connect_url, token_for)  # any Connect client sends the serve's token (docs/security.md)
    assert ";token=" in url
    script = f"""
import json, cetql
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote({url!r}).getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
out = {{}}
df = spark.cet(open({str(KITING)!r}).read(), {str(CHECKS)!r}, id_col="id")
out["detect"] = sorted([str(r.window_start), str(r.window_end), list(r.events), r.length] for r in df.collect())
agg = spark.cet({COUNT!r}, spark.read.csv({str(CHECKS)!r}, header=True, inferSchema=True), id_col="id")
out["agg"] = sorted([str(v) for v in r] for r in agg.collect())
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_client_env(),
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    remote = json.loads(done.stdout.strip().splitlines()[-1])

    df = spark.cet(KITING.read_text(), str(CHECKS), id_col="id")
    local = sorted([str(r.window_start), str(r.window_end), list(r.events), r.length] for r in df.collect())
    agg = spark.cet(COUNT, spark.read.csv(str(CHECKS), header=True, inferSchema=True), id_col="id")
    assert remote["detect"] == local and len(local) > 100
    assert remote["agg"] == sorted([str(v) for v in r] for r in agg.collect())


def test_cli_run_with_remote_and_spark_remote(spark, connect_url, capsys, tmp_path):
    args = ["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--format", "csv", "--limit", "0"]
    assert main(args) == 0
    local = _csv_rows(capsys.readouterr().out)
    assert len(local) > 100

    cli = [sys.executable, "-m", "cetql"]
    remote = subprocess.run([*cli, *args, "--remote", connect_url], capture_output=True, text=True,
                            env=_client_env(), cwd=tmp_path, timeout=600)  # fmt: skip
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert _csv_rows(remote.stdout) == local

    query = tmp_path / "count.cet"
    query.write_text(COUNT)
    agg_args = ["run", str(query), "--input", str(CHECKS), "--id-col", "id", "--format", "csv", "--limit", "0"]
    assert main(agg_args) == 0
    local_agg = _csv_rows(capsys.readouterr().out)
    by_env = subprocess.run([*cli, *agg_args], capture_output=True, text=True,
                            env=_client_env(SPARK_REMOTE=connect_url), cwd=tmp_path, timeout=600)  # fmt: skip
    assert by_env.returncode == 0, by_env.stderr[-3000:]
    assert _csv_rows(by_env.stdout) == local_agg
    assert "Traceback" not in remote.stderr + by_env.stderr

