"""A real cluster: a Spark standalone master and two one-core workers on
127.0.0.1 (pyspark's `spark-class`), `cetql run --master spark://…` on it,
results identical to local mode — and still identical when one worker is
killed while the job runs (Spark retries the lost tasks on the other).

The driver runs in a subprocess (this process holds the suite's local
session).  Every process the tests start is in its own process group and
stopped at the end, whatever happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from processes import SPARK_HOME, cmdline, descendants, free_port, spark_env, start, stop, wait_for_port

from cetql.cli import main

ROOT = Path(__file__).parent.parent
DATA = ROOT / "examples" / "data"
RUNS = {
    "kiting": [str(ROOT / "examples" / "kiting.cet"), "--input", str(DATA / "checks.csv"), "--id-col", "id"],
    "stock": [str(ROOT / "examples" / "stock.cet"), "--input", str(DATA / "stock.csv"), "--id-col", "id"],
    "cluster": [str(ROOT / "examples" / "queries" / "greta_q2_cluster.cet"),
                *(x for t in ("Start", "Measurement", "End")
                  for x in ("--input", f"{t}={DATA / 'cluster' / (t.lower() + '.csv')}"))],
}  # fmt: skip


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, the two worker processes, the folder of logs)."""
    logs = tmp_path_factory.mktemp("cluster")
    port, ui = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    began = time.monotonic()
    master = start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(port), "--webui-port", str(ui)], logs / "master.log")  # fmt: skip
    workers: list[subprocess.Popen] = []
    try:
        wait_for_port(master, port, logs / "master.log", "the standalone master")
        url = f"spark://127.0.0.1:{port}"
        for k in range(2):
            work = logs / f"work{k}"
            work.mkdir()
            workers.append(start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                  "--cores", "1", "--memory", "2g", "--webui-port", "0", "--work-dir", str(work),
                                  url], logs / f"worker{k}.log"))  # fmt: skip
        while _alive_workers(ui) < 2:
            for k, w in enumerate(workers):
                if w.poll() is not None:
                    pytest.fail(f"worker {k} exited: {(logs / f'worker{k}.log').read_text()[-2000:]}")
            if time.monotonic() - began > 180:
                pytest.fail(f"the workers did not register within 180 s: {(logs / 'master.log').read_text()[-2000:]}")
            time.sleep(0.5)
        print(f"cluster up in {time.monotonic() - began:.1f} s")
        yield url, workers, logs
    finally:
        for proc in [*workers, master]:
            stop(proc)


def _driver(commands: list[list[str]], log_dir: Path) -> subprocess.Popen:
    """One driver process running `cetql` commands in turn (one Spark start
    for all of them), through the CLI's own entry point."""
    script = "import sys\nfrom cetql.cli import main\nsys.exit(max(main(a) for a in %r))" % (commands,)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=log_dir, start_new_session=True,
                            env=spark_env(CETQL_LOG_DIR=str(log_dir), CETQL_DRIVER_MEMORY="1g"))  # fmt: skip


def _rows(path: Path) -> list[tuple]:
    table = pq.read_table(path)
    return sorted(tuple(json.dumps(v, default=str) for v in row.values()) for row in table.to_pylist())


def _finish(driver: subprocess.Popen, timeout: float = 600) -> None:
    try:
        out, err = driver.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(driver, kill=True)
        raise
    assert driver.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]


def test_cluster_gives_local_results(cluster, spark, tmp_path):
    url, _, _ = cluster
    commands, expected = [], {}
    for name, args in RUNS.items():
        assert main(["run", *args, "--output", str(tmp_path / f"local-{name}"), "--format", "parquet"]) == 0
        expected[name] = _rows(tmp_path / f"local-{name}")
        commands.append(["run", *args, "--master", url, "--output", str(tmp_path / name), "--format", "parquet"])
    began = time.monotonic()
    _finish(_driver(commands, tmp_path))
    print(f"three queries on the cluster in {time.monotonic() - began:.1f} s (one driver)")
    for name in RUNS:
        got = _rows(tmp_path / name)
        assert got == expected[name], name
        assert len(got) > 10, name


def _python_workers(worker: subprocess.Popen) -> list[int]:
    """Python processes under a worker's executor: its tasks are running
    Python code (the kernel)."""
    return [p for p in descendants(worker.pid) if "python" in cmdline(p).split(" ")[0]]


def test_a_lost_worker_does_not_change_the_result(cluster, spark, tmp_path):
    url, workers, logs = cluster
    data = tmp_path / "kiting.parquet"
    assert main(["gen", "kiting", "--events", "300000", "-o", str(data), "--seed", "3"]) == 0
    query = ["run", str(ROOT / "examples" / "kiting.cet"), "--input", str(data), "--id-col", "id",
             "--format", "parquet"]  # fmt: skip
    assert main([*query, "--output", str(tmp_path / "local")]) == 0
    expected = _rows(tmp_path / "local")

    victim = workers.pop()  # the fixture no longer stops it: the test does
    began = time.monotonic()
    driver = _driver([[*query, "--master", url, "--output", str(tmp_path / "cluster")]], tmp_path)
    try:
        while not _python_workers(victim):  # the kernel runs on the victim
            if driver.poll() is not None:
                pytest.fail(f"the job ended before any Python task ran on the worker: {driver.stderr.read()[-3000:]}")
            if time.monotonic() - began > 300:
                pytest.fail("no Python task ran on the worker within 300 s")
            time.sleep(0.2)
        time.sleep(1.0)
        assert driver.poll() is None, "the job ended before the worker could be killed"
        stop(victim, kill=True)  # the worker, its executor and their Python workers, at once
        killed = time.monotonic() - began
        _finish(driver)
    finally:
        stop(driver, kill=True)
        stop(victim, kill=True)
    print(f"worker killed {killed:.1f} s into the run; the run took {time.monotonic() - began:.1f} s")
    log = (tmp_path / "spark.log").read_text(errors="replace")
    assert "Lost executor" in log or "lost" in log.lower(), "the driver never saw the executor go"
    assert _rows(tmp_path / "cluster") == expected
    assert len(expected) > 1000
