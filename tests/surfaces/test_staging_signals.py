"""Nothing left behind by a write that is stopped: every signal that can be
caught (Ctrl-C, SIGTERM, SIGHUP) removes the staging folder before the
process ends, on both engines' writers; SIGKILL, which cannot be caught,
leaves it, and the next run writing beside it removes it.  A Spark write
interrupted before its job began (still being planned in the JVM) does not
make the folder again after its removal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from processes import spark_env

from cetql.surfaces import output

ROOT = Path(__file__).resolve().parents[2]
SLOW = "PATTERN Stock+ s[] WHERE s[i].price > s[i-1].price WITHIN 100000 TRENDS ALL"  # runs for ever: 2^3000 trends


def _staging(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".cetql-" in p.name)


def _run(folder: Path, engine: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cetql", "run", "slow.cet", "--input", "slow.csv", "--max-trends",
                             "0", "--id-col", "id", "--output", "out", "--engine", engine, "--no-serve"], cwd=folder,
                            env=spark_env(CETQL_CLASS_ARCHIVE="off"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def _writing(folder: Path, engine: str) -> subprocess.Popen:
    """`cetql run --output out` on a query that never ends, once its staging folder is there."""
    (folder / "slow.csv").write_text("id,ts,price\n" + "".join(f"{i},{i},{i}\n" for i in range(3000)))
    (folder / "slow.cet").write_text(SLOW)
    proc = _run(folder, engine)
    deadline = time.monotonic() + 180
    while proc.poll() is None and not _staging(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _staging(folder):
        proc.kill()
        pytest.fail(f"no staging appeared: {proc.communicate()[1][-2000:]}")
    return proc


def _settled(folder: Path, seconds: float = 5.0) -> list[str]:
    """The staging left once whatever the run started has had `seconds` to end."""
    deadline = time.monotonic() + seconds
    while _staging(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # a JVM still ending would make it again now
    return _staging(folder)


ENDINGS = [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP)]


@pytest.mark.parametrize("engine", ["embedded", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])])
def test_a_caught_signal_removes_the_staging(tmp_path, engine):
    # SIGHUP takes SIGTERM's handler (output.staging._ENDING): on Spark, whose every run starts a JVM, those two
    for sig, status in ENDINGS if engine == "embedded" else ENDINGS[:2]:
        folder = tmp_path / sig.name
        folder.mkdir()
        proc = _writing(folder, engine)
        try:
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == status, err
        assert "Traceback" not in err and _settled(folder) == [] and not (folder / "out").exists(), err


@pytest.mark.parametrize("engine", ["embedded", pytest.param("spark", marks=pytest.mark.spark)])
def test_sigkill_staging_is_removed_by_the_next_run(tmp_path, engine):
    proc = _writing(tmp_path, engine)
    proc.kill()
    proc.communicate(timeout=60)
    left = _staging(tmp_path)
    assert left  # SIGKILL cannot be caught
    (tmp_path / "slow.cet").write_text("PATTERN Stock+ s[] WITHIN 2")
    again = _run(tmp_path, "embedded")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    for name in left:
        assert f"removed '{tmp_path / name}', left by cetql process {proc.pid}" in err
    assert _settled(tmp_path) == [] and (tmp_path / "out").is_dir()


def test_a_write_interrupted_before_its_job_began(spark, tmp_path):
    """Ctrl-C while the JVM still plans the write (here: a write that starts
    its job a second late): the staging is removed only once the write has
    returned, so its job cannot make the folder again afterwards."""
    out = tmp_path / "out"
    began = threading.Event()
    df = spark.range(0, 1_000_000, numPartitions=2).selectExpr("id", "reflect('java.lang.Thread', 'sleep', 50L) s")

    def late_write(path: Path):
        began.set()
        time.sleep(1.0)
        df.write.parquet(str(path))

    threading.Timer(0, lambda: (began.wait(), os.kill(os.getpid(), signal.SIGINT))).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with output.staged(output.resolve_output(out), spark) as stage:
                stage.call(lambda: late_write(stage.path))
        time.sleep(2)  # the write's job, had it begun after the removal, has made the folder by now
        assert _staging(tmp_path) == [] and not out.exists()
    finally:
        spark.sparkContext.cancelAllJobs()  # the shared session runs nothing of this test's afterwards
