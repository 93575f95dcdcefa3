"""A standalone Spark cluster on this machine for the benchmarks (a master
and one-core workers on 127.0.0.1, pyspark's `spark-class`), and the peak
memory of its executors while a command runs.

The executors are children of the workers, not of the measured command,
so `run.timed_run` (the command's process tree) sees the driver only;
`executor_peaks` samples every executor process (`CoarseGrainedExecutor-
Backend`) and its Python workers as well.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
from processes import SPARK_HOME, free_port, start, stop, wait_for_port  # noqa: E402
from run import _memory, sampled_run, tree_pids  # noqa: E402

__all__ = ["cluster", "executor_peaks", "stop"]


def cluster(logs: Path, workers: int = 2, memory: str = "4g"):
    """(master URL, processes): a standalone master and `workers` one-core
    workers of `memory` each; stop the processes (`stop`) when done."""
    port, ui = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs = [start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(ui)], logs / "master.log")]  # fmt: skip
    wait_for_port(procs[0], port, logs / "master.log", "the standalone master")
    url = f"spark://127.0.0.1:{port}"
    for k in range(workers):
        (logs / f"work{k}").mkdir()
        procs.append(start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores",
                            "1", "--memory", memory, "--webui-port", "0", "--work-dir", str(logs / f"work{k}"), url],
                           logs / f"worker{k}.log"))  # fmt: skip
    began = time.monotonic()
    while f'"aliveworkers" : {workers}'.encode() not in _status(ui):
        if time.monotonic() - began > 300:
            raise SystemExit(f"the workers did not register: {(logs / 'master.log').read_text()[-2000:]}")
        time.sleep(0.5)
    return url, procs


def _status(ui: int) -> bytes:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
            return r.read()
    except OSError:
        return b""


def _executors() -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if b"CoarseGrainedExecutorBackend" in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def executor_peaks(args: list[str], env: dict | None = None) -> tuple[float, int, int, str]:
    """(seconds, peak PSS of the command's process tree (the driver), the
    largest peak PSS of one executor with its Python workers, output)."""

    def sample(pid: int) -> dict:
        out = {"driver": sum(_memory(p) for p in tree_pids(pid))}
        for e in _executors():
            out[f"executor {e}"] = sum(_memory(p) for p in tree_pids(e))
        return out

    elapsed, peak, text = sampled_run(args, sample, env)
    executors = [v for k, v in peak.items() if k.startswith("executor")]
    return elapsed, peak.get("driver", 0), max(executors, default=0), text
