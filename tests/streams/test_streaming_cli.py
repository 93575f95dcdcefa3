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
import threading
import time
from pathlib import Path

import pytest
from processes import spark_env, stop

from cetql.backends.spark.streaming import PROVIDER
from cetql.surfaces.cli.main import main
from cetql.surfaces.cli.stream import CHANGELOG
from cetql.surfaces.output import streamed

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
    if not list(out.glob("part-*")):
        return []
    return sorted((r["window_start"], tuple(r["events"])) for r in spark.read.parquet(str(out)).collect())


def _uncommitted(out: Path) -> list[Path]:
    """Part files a file sink is writing (in the output, or in cetql's sink inside it) that no commit lists yet."""
    listed = {f.name for folder in (out, streamed.sink_of(out)) for f in streamed.committed(folder)}  # X
    return [f for folder in (out, streamed.sink_of(out)) if folder.is_dir() for f in folder.glob("part-*")
            if f.name not in listed]  # fmt: skip


@pytest.mark.slow
def test_a_stream_killed_mid_batch_leaves_only_whole_files(spark, tmp_path):
    """SIGKILL to the stream's command and its JVM while a micro-batch
    writes its part files: every file a
    reader of the output finds opens (pyarrow, pandas), and the same
    command again writes each window once and leaves nothing half-written."""
    folder, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    folder.mkdir()
    (tmp_path / "q.cet").write_text(KITING)
    rnd = random.Random(5)
    events = checks(0, range(0, 60), rnd)
    dense = [{"id": 1000 + i, "ts": 61 + i, "src": "a", "dst": "a"} for i in range(19)]  # 2^17 trends in [60, 80)
    drop(folder, "part-0.csv", events + dense)
    command = [sys.executable, "-m", "cetql", "run", str(tmp_path / "q.cet"), "--stream", "--input", str(folder),
               "--id-col", "id", "--output", str(out), "--checkpoint", str(ck), "--max-trends", "0"]  # fmt: skip
    env = spark_env(CETQL_DRIVER_MEMORY="1g", CETQL_CLASS_ARCHIVE="off")
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _wait(lambda: _read(ck, "part-0.csv"))
        drop(folder, "part-1.csv", [{"id": 10**6, "ts": 10**6, "src": "z", "dst": "z"}])  # closes every window
        _wait(lambda: _uncommitted(out) or first.poll() is not None, timeout=300)
        os.killpg(first.pid, signal.SIGKILL)  # the JVM too, with no time to remove what its tasks began
        first.wait(timeout=60)
        _wait(lambda: not descendants_of_group(first.pid), timeout=60)
    finally:
        stop(first, kill=True)
    assert first.returncode == -signal.SIGKILL, first.communicate()[1].decode()[-2000:]
    import pandas as pd
    import pyarrow.parquet as pq

    for f in out.glob("part-*"):
        pq.read_table(f)  # whole: a file cut short raises here
    if list(out.glob("part-*")):
        pd.read_parquet(out)
    second = subprocess.run([*command, "--until-idle", "5"], env=env, capture_output=True, timeout=600)
    assert second.returncode == 0, second.stderr.decode()[-2000:]
    assert _written(spark, out) == batch_rows(spark, events + dense, KITING)  # the flush's own windows stay open
    assert _uncommitted(out) == [] and len(pd.read_parquet(out)) == len(_written(spark, out))


def descendants_of_group(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (a killed command's JVM and workers)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(d.name))
    return found


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


# ---------------------------------------------------------------- --until-idle, without Spark


class _Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class _Query:
    """A stream that goes through `script` (one (status message, progress
    or None) per poll), on a clock of its own: each wait moves it on."""

    def __init__(self, script, clock: _Clock):
        self.script, self.clock, self.at = list(script), clock, 0
        self.recentProgress, self.stopped_at = [], None

    @property
    def isActive(self) -> bool:
        return self.stopped_at is None

    @property
    def status(self) -> dict:
        message, _ = self.script[min(self.at, len(self.script) - 1)]
        return {"message": message, "isDataAvailable": message == "Processing new data", "isTriggerActive": True}

    def awaitTermination(self, seconds: float) -> None:
        self.clock.now += seconds
        self.at += 1
        assert self.at < len(self.script), "never stopped"
        progress = self.script[self.at][1]
        if progress is not None:
            self.recentProgress.append(progress)

    def stop(self) -> None:
        self.stopped_at = self.clock.now

    def exception(self):
        return None


def test_until_idle_counts_from_the_last_batch_once_the_stream_has_started(monkeypatch, capsys):
    """A start slower than --until-idle (Initializing sources), a batch with
    input, a long one that only closes windows, then triggers that find no
    new file, each seen while it polls (a loaded machine): the stream stops
    once, `idle` seconds after the last batch ended, never before its first
    batch, never in one."""
    from types import SimpleNamespace

    from cetql.surfaces.cli import stream as S

    clock = _Clock()
    monkeypatch.setattr(S, "time", clock)
    polls = lambda n, message, progress=None: [(message, None)] * (n - 1) + [(message, progress)]  # noqa: E731
    script = (polls(40, "Initializing sources") + polls(10, "Processing new data")
              + polls(1, "Waiting for data to arrive", {"batchId": 0, "numInputRows": 5})
              + polls(20, "No new data but cleaning up state")
              + polls(1, "Waiting for data to arrive", {"batchId": 1, "numInputRows": 0})
              + polls(200, "Waiting for data to arrive"))  # fmt: skip
    query, published = _Query(script, clock), []
    idle = 3.0
    assert S._watch(query, SimpleNamespace(until_idle=idle), lambda: published.append(clock.now)) == 0
    last_batch = S.POLL_SECONDS * (40 + 10 + 1 + 20 + 1 - 1)
    assert last_batch + idle < query.stopped_at <= last_batch + idle + 2 * S.POLL_SECONDS
    assert len(published) == 3 and published[-1] == query.stopped_at  # each batch's rows, then the last ones
    assert f"stopped after {idle:g} s without new input" in capsys.readouterr().err


def test_until_idle_ends_a_stream_whose_watermark_no_longer_moves(cli_session, tmp_path, capsys):
    """Windows still open when the input stops (their timers pending, the
    watermark at the last event for good): --until-idle ends the stream,
    with the windows the watermark closed printed, and only those."""
    rnd = random.Random(11)
    folder = tmp_path / "in"
    folder.mkdir()
    (tmp_path / "q.cet").write_text(KITING)
    events = checks(0, [0, 3, 5, 8, 12, 14, 19, 22, 27, 33], rnd)
    drop(folder, "part-0.csv", events)
    guard = threading.Timer(600, lambda: [q.stop() for q in cli_session.streams.active])  # ends a hang, nothing else
    guard.start()
    try:
        code = main(["run", str(tmp_path / "q.cet"), "--stream", "--input", str(folder), "--id-col", "id",
                     "--format", "csv", "--until-idle", "2"])  # fmt: skip
    finally:
        guard.cancel()
    out, err = capsys.readouterr()
    assert code == 0 and "stopped after 2 s without new input" in err, err
    got = sorted((int(r["window_start"]), tuple(int(x) for x in r["events"].split(";"))) for r in csv.DictReader(io.StringIO(out)))
    batch = batch_rows(cli_session, events, KITING)
    assert got == [r for r in batch if r[0] + 20 <= 33] and len(got) < len(batch)  # [20, 40) and [30, 50) open
