"""Pipes and early refusals: what `cetql run` does when standard output is
not a terminal, when its reader goes away, and what it refuses before
Spark starts.

The choices (docs/run.md, "Printing"):
- without `--output`, standard output that is not a terminal carries the
  whole result (CSV, or JSON lines), streamed; `--limit N` cuts it, and the
  summary on standard error says so;
- a reader that closes the pipe (`… | head -3`) ends the run: the Spark job
  is cancelled, nothing is said, the exit status is 141 (128 + SIGPIPE), as
  for `yes | head` in a shell;
- CSV lines end in `\\n`.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import README

from cetql.surfaces.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KITING = ROOT / "examples" / "kiting.cet"
CHECKS = ROOT / "examples" / "data" / "checks.csv"
# the count the README states for its first example
README_TRENDS = next(c.count for c in README if c.key == f"run examples/kiting.cet --input {CHECKS.relative_to(ROOT)} --id-col id")


def _first(tmp_path, n: int) -> Path:
    path = tmp_path / f"checks{n}.csv"
    path.write_text("".join(CHECKS.read_text().splitlines(keepends=True)[: n + 1]))
    return path


def test_piped_output_carries_every_row_streamed(spark, capsys, monkeypatch):
    """The README's kiting example on Spark (`--engine spark`: the planner
    gives it to the embedded engine otherwise) with standard output not a
    terminal: a header and as many CSV lines as the README says (3,771), each
    ending in `\\n`, the summary on standard error without a cut — and no
    `collect()` brought more than a few rows to the driver (the rows came
    through `toLocalIterator`)."""
    collected, streamed = [], []
    frame = type(spark.range(1))  # the session's own DataFrame class (classic or Connect)
    collect, iterate = frame.collect, frame.toLocalIterator

    def counting_collect(self):
        rows = collect(self)
        collected.append(len(rows))
        return rows

    def counting_iterator(self, *a, **k):
        for row in iterate(self, *a, **k):
            streamed.append(1)
            yield row

    monkeypatch.setattr(frame, "collect", counting_collect)
    monkeypatch.setattr(frame, "toLocalIterator", counting_iterator)
    code = main(["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--engine", "spark"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "\r" not in out and out.endswith("\n")
    lines = out.split("\n")[:-1]
    assert lines[0] == "window_start,window_end,events,length"
    assert len(lines) - 1 == README_TRENDS == len(streamed)
    assert err.startswith(f"{README_TRENDS:,} trends;") and "first" not in err
    assert max(collected, default=0) < 100, collected  # the summary's few rows, never the result


def test_piped_limit_is_said_on_standard_error(spark, capsys, tmp_path):
    code = main(["run", str(KITING), "--input", str(_first(tmp_path, 400)), "--id-col", "id", "--limit", "5",
                 "--format", "json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.splitlines()) == 5
    total = int(err.split(" ", 1)[0].replace(",", ""))
    assert total > 5 and "(first 5 written, as --limit 5 asks)" in err


def test_a_closed_pipe_ends_the_run_quietly(tmp_path):
    """`cetql run … --limit 0 | head -3` in a real process: the reader takes
    three lines and closes its end; cetql exits 141 with nothing on standard
    error (no 'Broken pipe', no traceback, no 'Exception ignored')."""
    read, write = os.pipe()
    fcntl.fcntl(write, 1031, 4096)  # F_SETPIPE_SZ: a small pipe, so the output cannot all fit before the close
    proc = subprocess.Popen(
        [sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(_first(tmp_path, 600)), "--id-col", "id",
         "--limit", "0"],
        stdout=write, stderr=subprocess.PIPE, cwd=tmp_path,
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        head = [reader.readline() for _ in range(3)]
    try:
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert head[0] == b"window_start,window_end,events,length\n" and all(h.endswith(b"\n") for h in head)
    assert proc.returncode == 141, err.decode()
    assert err == b""


# ---------------------------------------------------------------- refused before Spark


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr("cetql.surfaces.cli.on_spark.get_spark", refuse)


@pytest.mark.parametrize(
    "inputs,message",
    [
        (["nope.csv"], "input 'nope.csv' does not exist"),
        (["data/nope"], "input 'data/nope' does not exist"),
        (["Check=nope.parquet"], "input 'nope.parquet' does not exist"),
        (["in/events.jsonl"], "does not exist"),
        ([f"Debit={CHECKS}"], "type(s) Debit that the pattern does not use (its types: Check)"),
    ],
)
def test_refused_before_spark(no_spark, capsys, tmp_path, monkeypatch, inputs, message):
    monkeypatch.chdir(tmp_path)
    args = [a for i in inputs for a in ("--input", i)]
    assert main(["run", str(KITING), *args]) == 2
    assert message in capsys.readouterr().err


def test_show_names_a_column_before_spark(no_spark, capsys):
    assert main(["run", str(KITING), "--input", str(CHECKS), "--show", "src,nope"]) == 2
    assert "--show: no column nope in the input" in capsys.readouterr().err


def test_a_missing_path_starts_no_jvm(tmp_path):
    """A real process with a `java` that leaves a mark if it is ever run:
    exit 2 at once, no mark."""
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    mark = tmp_path / "java-ran"
    java = java_home / "bin" / "java"
    java.write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    java.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(java_home), "PATH": f"{java_home / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "cetql", "run", str(KITING), "--input", "nope.csv"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 2 and "input 'nope.csv' does not exist" in proc.stderr
    assert not mark.exists()


# ---------------------------------------------------------------- for the integrator


def test_a_users_session_gets_the_plans_partitions(spark):
    """A session the user made, with Spark's default 200 shuffle partitions:
    the kernels should run on as many partitions as the plan chooses for the
    session's task slots (2 here), not 200."""
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    try:
        df = spark.cet(KITING.read_text(), str(CHECKS), id_col="id")
        partitions = df.rdd.getNumPartitions()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    assert partitions == 4, partitions  # twice the session's 2 task slots, as the plan says
