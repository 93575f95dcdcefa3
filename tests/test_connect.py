"""Spark Connect: `spark.cet` on a Connect session and `cetql run --remote`
(and SPARK_REMOTE) give the rows classic mode gives.

The test starts a Spark Connect server (pyspark ships it: `spark-submit
--class org.apache.spark.sql.connect.service.SparkConnectServer`) on a free
port of 127.0.0.1, in its own process group, and stops the whole group at
the end.  The Connect client runs in subprocesses: this process already
holds the suite's classic session.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from cetql.cli import main

ROOT = Path(__file__).parent.parent
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
COUNT = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50 AGG COUNT(*), MAX(c.ts)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("connect") / "server.log"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    env.pop("SPARK_REMOTE", None)
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [str(submit), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=2", "--driver-memory", "1g"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    started = time.monotonic()
    try:
        while True:
            if server.poll() is not None:
                pytest.fail(f"the Connect server exited ({server.returncode}): {log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() - started > 180:
                    pytest.fail(f"the Connect server did not listen within 180 s: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        print(f"Connect server up in {time.monotonic() - started:.1f} s")
        yield f"sc://127.0.0.1:{port}"
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def _client_env(**extra) -> dict:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, **extra}
    if "SPARK_REMOTE" not in extra:
        env.pop("SPARK_REMOTE", None)
    return env


def _csv_rows(text: str) -> list[tuple]:
    rows = list(csv.reader(io.StringIO(text)))
    return [rows[0]] + sorted(map(tuple, rows[1:]))


def test_spark_cet_on_a_connect_session(spark, connect_url):
    script = f"""
import json, cetql
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote({connect_url!r}).getOrCreate()
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
