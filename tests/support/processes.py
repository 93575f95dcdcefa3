"""Processes the tests start (a Spark Connect server, a standalone master
and its workers): each in its own process group, so that stopping it stops
everything it started (its JVM children, executors, Python workers)."""

from __future__ import annotations

import ctypes
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


def die_with_parent() -> None:
    """In a child before exec: SIGKILL it when the test process dies (Linux
    PR_SET_PDEATHSIG), so a killed pytest leaves no Spark daemon behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(args: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    """`args` in a new process group, its output in `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env or spark_env(),
                                start_new_session=True, preexec_fn=die_with_parent)  # fmt: skip


def wait_for_port(proc: subprocess.Popen, port: int, log: Path, what: str, timeout: float = 600) -> float:
    """Seconds until `port` on 127.0.0.1 accepts connections; a test failure
    (with the log's tail) if `proc` exits or `timeout` passes first (the
    timeout only ends a hang: a JVM on a loaded machine takes its time)."""
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


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def stop(proc: subprocess.Popen, kill: bool = False) -> None:
    """Stop `proc`'s whole process group (SIGKILL after 30 s, or at once);
    whatever of the group outlives its leader is killed too."""
    _signal_group(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    _signal_group(proc.pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out
