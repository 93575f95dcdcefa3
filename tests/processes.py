"""Processes the tests start (a Spark Connect server, a standalone master
and its workers): each in its own process group, so that stopping it stops
everything it started (its JVM children, executors, Python workers)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env(**extra) -> dict:
    """The environment of a Spark process bound to 127.0.0.1, its Python
    workers on this interpreter; never a Connect client by accident."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(SPARK_HOME),
           "SPARK_LOCAL_IP": "127.0.0.1", **extra}  # fmt: skip
    if "SPARK_REMOTE" not in extra:
        env.pop("SPARK_REMOTE", None)
    return env


def start(args: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    """`args` in a new process group, its output in `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env or spark_env(),
                                start_new_session=True)  # fmt: skip


def wait_for_port(proc: subprocess.Popen, port: int, log: Path, what: str, timeout: float = 180) -> float:
    """Seconds until `port` on 127.0.0.1 accepts connections; a test failure
    (with the log's tail) if `proc` exits or `timeout` passes first."""
    started = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return time.monotonic() - started
        except OSError:
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{what} did not listen within {timeout:.0f} s: {log.read_text()[-2000:]}") from None
            time.sleep(0.5)


def stop(proc: subprocess.Popen, kill: bool = False) -> None:
    """Stop `proc`'s whole process group (SIGKILL after 30 s, or at once)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
