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
import queue
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from processes import SPARK_HOME, die_with_parent, free_port, spark_env, start, stop, wait_for_port

from cetql.surfaces.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
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
                                  "--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(work),
                                  url], logs / f"worker{k}.log"))  # fmt: skip
        while _alive_workers(ui) < 2:
            for k, w in enumerate(workers):
                if w.poll() is not None:
                    pytest.fail(f"worker {k} exited: {(logs / f'worker{k}.log').read_text()[-2000:]}")
            if time.monotonic() - began > 600:  # only ends a hang: a loaded machine takes its time
                pytest.fail(f"the workers did not register within 600 s: {(logs / 'master.log').read_text()[-2000:]}")
            time.sleep(0.5)
        print(f"cluster up in {time.monotonic() - began:.1f} s")
        yield url, workers, logs
    finally:
        for proc in [*workers, master]:
            stop(proc)


class Driver:
    """One driver process for the module (one Spark start): it runs `cetql`
    commands sent as JSON lines, through the CLI's own entry point, and
    answers each with its exit code.  A command that does not answer within
    `TIMEOUT` seconds fails the test (the driver is killed), never hangs it."""

    TIMEOUT = 600

    SCRIPT = (
        "import json, sys\n"
        "from cetql.surfaces.cli.main import main\n"
        "for line in sys.stdin:\n"
        "    print('exit code:', json.dumps(main(json.loads(line))), flush=True)\n"
    )

    def __init__(self, folder: Path):
        self.folder = folder
        self.err = open(folder / "driver.err", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, cwd=folder,
                                     start_new_session=True, preexec_fn=die_with_parent,
                                     env=spark_env(CETQL_LOG_DIR=str(folder), CETQL_DRIVER_MEMORY="1g"))  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # end of output: the driver exited

    def send(self, args: list[str]) -> None:
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> int:
        """The exit code of the last command (its own output lines skipped)."""
        deadline = time.monotonic() + self.TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                stop(self.proc, kill=True)
                raise AssertionError(
                    f"the driver did not answer within {self.TIMEOUT} s: {self.errors()}\n{self.log()[-3000:]}"
                ) from None
            assert line, f"the driver died: {self.errors()}"
            if line.startswith("exit code: "):
                return json.loads(line.split(": ", 1)[1])

    def run(self, args: list[str]) -> int:
        self.send(args)
        return self.answer()

    def errors(self) -> str:
        self.err.flush()
        return (self.folder / "driver.err").read_text(errors="replace")[-3000:]

    def log(self) -> str:
        path = self.folder / "spark.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            stop(self.proc, kill=True)
            self.err.close()


@pytest.fixture(scope="module")
def driver(cluster, tmp_path_factory):
    d = Driver(tmp_path_factory.mktemp("driver"))
    try:
        yield d
    finally:
        d.stop()


def _rows(path: Path) -> list[tuple]:
    table = pq.read_table(path)
    return sorted(tuple(json.dumps(v, default=str) for v in row.values()) for row in table.to_pylist())


def test_cluster_gives_local_results(cluster, driver, spark, tmp_path):
    url, _, _ = cluster
    for name, args in RUNS.items():
        assert main(["run", *args, "--output", str(tmp_path / f"local-{name}"), "--format", "parquet"]) == 0
        began = time.monotonic()
        out = tmp_path / name
        assert driver.run(["run", *args, "--master", url, "--output", str(out), "--format", "parquet"]) == 0, (
            driver.errors()
        )
        print(f"{name} on the cluster in {time.monotonic() - began:.1f} s")
        got = _rows(out)
        assert got == _rows(tmp_path / f"local-{name}"), name
        assert len(got) > 10, name
    assert "Traceback" not in driver.errors()


def _kiting(n: int, seed: int, accounts: int = 50) -> pa.Table:
    """Checks between `accounts` accounts, one per time unit (many chains)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, accounts, n)
    dst = (src + rng.integers(1, accounts, n)) % accounts
    names = np.array([f"acct{k:02d}" for k in range(accounts)])
    return pa.table({"ts": np.arange(n), "id": np.arange(n), "src": names[src], "dst": names[dst],
                     "type": np.full(n, "notcovered")})  # fmt: skip


def _tasks(logs: Path) -> int:
    """Tasks the second worker's executors have started so far."""
    return sum(p.read_text(errors="replace").count("Running task") for p in (logs / "work1").glob("app-*/*/stderr"))


def test_a_lost_worker_does_not_change_the_result(cluster, driver, spark, tmp_path):
    url, workers, logs = cluster
    data = tmp_path / "kiting.parquet"
    pq.write_table(_kiting(300_000, seed=3), data)
    query = ["run", str(ROOT / "examples" / "kiting.cet"), "--input", str(data), "--id-col", "id",
             "--format", "parquet"]  # fmt: skip
    assert main([*query, "--output", str(tmp_path / "local")]) == 0
    expected = _rows(tmp_path / "local")
    assert len(expected) > 100_000

    victim = workers[-1]  # killed here; the fixture's stop is then a no-op
    target = tmp_path / "cluster"
    began = time.monotonic()
    try:
        driver.send([*query, "--master", url, "--output", str(target)])
        # the write job has begun when its staging folder appears beside the target
        while not any(p.name.startswith(".cluster.cetql-") for p in tmp_path.iterdir()):
            assert driver.proc.poll() is None, driver.errors()
            assert time.monotonic() - began < 600, "the job did not start within 600 s"  # only ends a hang
            time.sleep(0.1)
        # … and the victim is busy when it starts a task after that
        seen = _tasks(logs)
        while _tasks(logs) == seen:
            assert not target.exists(), "the job ended before the victim's executor took a task"
            assert time.monotonic() - began < 600, "the victim's executor took no task within 600 s"
            time.sleep(0.05)
        stop(victim, kill=True)  # the worker, its executor and their Python workers, at once
        killed = time.monotonic() - began
        assert driver.answer() == 0, driver.errors()
    finally:
        stop(victim, kill=True)
    print(f"worker killed {killed:.1f} s into the run; the run took {time.monotonic() - began:.1f} s")
    assert "Lost executor" in driver.log(), "the driver never saw the executor go"
    assert _rows(target) == expected
