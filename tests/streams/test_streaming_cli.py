"""`cetql run --stream`: a folder that receives files, written exactly once
through a checkpoint however the run ends; printed windows; a window the
guard refuses stops the stream with the batch message, and the same
checkpoint answers it once the limit is raised."""

from __future__ import annotations

import csv
import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import spark_env, stop

from cetql.backends.spark.streaming import PROVIDER
from cetql.surfaces.cli.main import main
from cetql.surfaces.cli.stream import CHANGELOG

KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst\nWITHIN 20 SLIDE 10\n"


def checks(first_id: int, times, rnd: random.Random) -> list[dict]:
    return [{"id": first_id + i, "ts": t, "src": rnd.choice("abcd"), "dst": rnd.choice("abcd")} for i, t in enumerate(times)]


def drop(folder: Path, name: str, rows: list[dict]) -> None:
    """A CSV file appears in the folder whole (written beside, then renamed)."""
    tmp = folder.parent / f".{name}"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "ts", "src", "dst"])
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, folder / name)


def batch_rows(spark, rows: list[dict], text: str) -> list[tuple]:
    df = spark.createDataFrame([(r["id"], r["ts"], r["src"], r["dst"]) for r in rows], "id long, ts long, src string, dst string")
    return sorted((r["window_start"], tuple(r["events"])) for r in spark.cet(text, df, id_col="id").collect())


def _batch_of(ck: Path, name: str) -> int | None:
    """The micro-batch that reads file `name` (from the file source's log)."""
    log = ck / "sources" / "0"
    for f in sorted(log.iterdir()) if log.is_dir() else []:
        if f.name.isdigit() and name in f.read_text():  # (a test stream stays under 10 batches: no compact file)
            return int(f.name)
    return None


def _read(ck: Path, name: str) -> bool:
    """Whether the micro-batch that reads `name` is committed."""
    b = _batch_of(ck, name)
    return b is not None and (ck / "commits" / str(b)).exists()


def _idle(ck: Path) -> bool:
    """Whether every micro-batch the stream has begun (its offsets logged)
    is committed."""
    begun = [int(f.name) for f in (ck / "offsets").iterdir() if f.name.isdigit()]
    return bool(begun) and (ck / "commits" / str(max(begun))).exists()


def _wait(what, timeout: float = 600) -> None:
    started = time.monotonic()
    while not what():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.2)


@pytest.mark.slow
def test_killed_and_restarted_on_its_checkpoint_writes_every_window_once(spark, tmp_path):
    """SIGKILL to a running `cetql run --stream` (mid micro-batch where the
    timing allows), then the same command again: the output holds each
    batch row once; Ctrl-C then stops it cleanly (exit 130)."""
    rnd = random.Random(11)
    folder, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    folder.mkdir()
    (tmp_path / "q.cet").write_text(KITING)
    files = [checks(i * 40, sorted(i * 40 + rnd.randint(0, 42) for _ in range(40)), rnd) for i in range(5)]
    flush = [{"id": 10**6, "ts": 10**6, "src": "z", "dst": "z"}]
    command = [sys.executable, "-m", "cetql", "run", str(tmp_path / "q.cet"), "--stream", "--input", str(folder),
               "--id-col", "id", "--output", str(out), "--checkpoint", str(ck), "--watermark", "5"]  # fmt: skip
    env = spark_env(CETQL_DRIVER_MEMORY="1g")
    drop(folder, "part-0.csv", files[0])
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        for i in (1, 2):
            _wait(lambda i=i: _read(ck, f"part-{i - 1}.csv"))
            drop(folder, f"part-{i}.csv", files[i])
        _wait(lambda: _batch_of(ck, "part-2.csv") is not None)  # the micro-batch of part-2 has started
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        stop(first, kill=True)
    assert first.returncode == -signal.SIGKILL
    second = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        for i in (3, 4):
            drop(folder, f"part-{i}.csv", files[i])
        drop(folder, "part-5.csv", flush)
        every = [e for f in files for e in f]
        want = batch_rows(spark, every, KITING)
        _wait(lambda: len(_written(spark, out)) >= len(want))
        _wait(lambda: _idle(ck))  # every batch begun is committed: a row written twice would be there now
        second.send_signal(signal.SIGINT)
        _, err = second.communicate(timeout=120)
    finally:
        stop(second, kill=True)
    assert second.returncode == 130, err.decode()[-2000:]
    assert "stopped" in err.decode() and "Traceback" not in err.decode()
    assert _written(spark, out) == want


def _written(spark, out: Path) -> list[tuple]:
    if not (out / "_spark_metadata").is_dir():
        return []
    return sorted((r["window_start"], tuple(r["events"])) for r in spark.read.parquet(str(out)).collect())


@pytest.fixture
def cli_session(spark):
    """`cetql run --stream` in this process sets the state store on the
    session it finds (the suite's): put it back afterwards."""
    before = {k: spark.conf.get(k, None) for k in (PROVIDER, CHANGELOG)}
    yield spark
    for k, v in before.items():
        spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def test_a_refused_window_stops_the_stream_and_is_answered_after_the_limit_is_raised(cli_session, tmp_path, capsys):
    """Printed windows; the guard applies to each window when it closes,
    with the batch message, and stops the stream (nothing of that window
    printed or written); the same checkpoint with a higher limit answers it."""
    rnd = random.Random(3)
    folder, ck = tmp_path / "in", tmp_path / "ck"
    folder.mkdir()
    (tmp_path / "q.cet").write_text(KITING)
    events = checks(0, range(0, 60), rnd)
    dense = [{"id": 1000 + i, "ts": 62 + i % 6, "src": "a", "dst": "a"} for i in range(12)]  # many trends in [60, 80)
    drop(folder, "part-0.csv", events + dense)
    drop(folder, "part-1.csv", [{"id": 10**6, "ts": 10**6, "src": "z", "dst": "z"}])
    args = ["run", str(tmp_path / "q.cet"), "--stream", "--input", str(folder), "--id-col", "id", "--checkpoint", str(ck),
            "--format", "csv", "--until-idle", "3"]  # fmt: skip
    assert main([*args, "--max-trends", "100"]) == 1
    first = capsys.readouterr()
    assert "more than --max-trends 100" in first.err and "window [" in first.err and "Traceback" not in first.err
    assert len(first.err.strip().splitlines()) <= 2
    assert main([*args, "--max-trends", "0"]) == 0
    second = capsys.readouterr()
    printed = list(csv.DictReader(io.StringIO(first.out))) + list(csv.DictReader(io.StringIO(second.out)))
    got = sorted((int(r["window_start"]), tuple(int(x) for x in r["events"].split(";"))) for r in printed)
    assert got == batch_rows(cli_session, events + dense, KITING)
    assert "window(s) answered" in second.err


def test_stream_arguments_are_checked_before_spark(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    drop(folder, "part-0.csv", [{"id": 1, "ts": 1, "src": "a", "dst": "b"}])
    q = tmp_path / "q.cet"
    q.write_text(KITING)
    base = ["run", str(q), "--input", str(folder), "--id-col", "id"]
    cases = [
        ([*base, "--stream", "--output", str(tmp_path / "out")], "needs --checkpoint"),
        ([*base, "--checkpoint", str(tmp_path / "ck")], "add --stream"),
        ([*base, "--stream", "--mode", "append", "--output", str(tmp_path / "o"), "--checkpoint", str(tmp_path / "c")],
         "--mode is for batch"),
        (["run", str(q), "--input", str(folder / "part-0.csv"), "--stream"], "is a file"),
        ([*base, "--stream", "--output", str(folder / "out"), "--checkpoint", str(tmp_path / "ck")], "inside the input"),
        ([*base, "--stream", "--watermark", "soon"], "not a duration"),
    ]  # fmt: skip
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
