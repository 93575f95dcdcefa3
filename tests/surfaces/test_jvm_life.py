"""Nothing left running: the local JVM of a `cetql run` ends with it,
whenever it ends — killed (SIGKILL, which it cannot handle) or interrupted
(Ctrl-C, exit 130) — including while Spark starts.

Each run carries a marker in its environment, which every process it
starts inherits (spark-submit's shell, its launcher JVM, the driver JVM,
Python workers): those are the processes "of it", found by the marker
whoever their parent is by then.  Moments are counted from the first such
process (Spark's start), never from the command's own start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from processes import spark_env

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
MOMENTS = (0.5, 2.0, 5.0)  # seconds into Spark's start
AFTER = 5.0  # a JVM of the run still there this long after it ended is left running


def _marked(marker: str) -> list[int]:
    """The live processes (not zombies) whose environment holds `marker`."""
    found = []
    needle = marker.encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if needle in (d / "environ").read_bytes() and (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(d.name))
        except (OSError, IndexError):
            continue
    return found


def _start(marker: str) -> tuple[subprocess.Popen, float]:
    """`cetql run --engine spark` with `marker` in its environment, once
    Spark's start has begun: (the process, when the first process of
    Spark's appeared)."""
    env = spark_env(CETQL_TEST_MARK=marker, CETQL_CLASS_ARCHIVE="off")
    proc = subprocess.Popen([sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(CHECKS), "--id-col",
                             "id", "--engine", "spark", "--no-serve", "--format", "csv"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while not [p for p in _marked(marker) if p != proc.pid]:
        if proc.poll() is not None or time.monotonic() > deadline:
            _end(proc, marker)
            pytest.fail(f"Spark did not start: {proc.communicate()[1][-2000:]}")
        time.sleep(0.01)
    return proc, time.monotonic()


def _end(proc: subprocess.Popen, marker: str) -> None:
    """Whatever of the run is left, killed (the test's own clean-up)."""
    if proc.poll() is None:
        proc.kill()
    proc.communicate()
    for pid in _marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _left_after(marker: str, seconds: float) -> list[str]:
    """The run's processes still alive `seconds` after it ended (each with its command line)."""
    deadline = time.monotonic() + seconds
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = []
    for pid in _marked(marker):
        try:
            left.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:200]!r}")
        except OSError:
            continue
    return left


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_killed_run_leaves_no_jvm(moment):
    marker = f"cetql-test-{uuid.uuid4().hex}"
    proc, started = _start(marker)
    try:
        time.sleep(max(0.0, started + moment - time.monotonic()))
        running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert _left_after(marker, AFTER) == []
        assert running, "the run ended before it was killed: the moment tested nothing"
    finally:
        _end(proc, marker)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("moment", MOMENTS)
def test_ctrl_c_while_spark_starts(moment):
    marker = f"cetql-test-{uuid.uuid4().hex}"
    proc, started = _start(marker)
    try:
        time.sleep(max(0.0, started + moment - time.monotonic()))
        running = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert running, "the run ended before Ctrl-C: the moment tested nothing"
        assert proc.returncode == 130, err
        assert err.strip().splitlines()[-1] == "cancelled" and "Traceback" not in err, err
        assert _left_after(marker, AFTER) == []
    finally:
        _end(proc, marker)
