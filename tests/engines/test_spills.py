"""The embedded engine's spill folders (`compiler.connect`): each names its
owner (pid and start time); a run removes those of this user's cetql
processes that are gone — killed, so no exit handler removed them — and
leaves alone a folder whose process runs (even one whose pid was reused is
told apart), another user's, a link, and a name it did not make."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cetql.backends.embedded import compiler
from cetql.base.processes import start_time

# Rows of docs/reliability.md's table (tests/surfaces/test_reliability.py prints and checks it)
CASES = [
    ("test_a_killed_runs_spill_is_removed_by_the_next_run", "an embedded run killed (SIGKILL, the out-of-memory killer) while DuckDB holds its spill folder",
     "the folder stays (no exit handler runs); the next embedded run of that user removes it, and only folders of gone cetql processes"),
]  # fmt: skip


def _gone() -> tuple[int, int]:
    """(pid, start time) of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    start = start_time(proc.pid)
    proc.communicate(b"")
    return proc.pid, start


def test_only_the_folders_of_gone_processes_of_this_user_are_removed(tmp_path):
    pid, start = _gone()
    me, mine = os.getpid(), start_time(os.getpid())
    gone = tmp_path / f"{compiler.SPILL}{pid}-{start}-abc"
    reused = tmp_path / f"{compiler.SPILL}{me}-{mine + 1}-abc"  # this pid, another start: its owner is gone
    running = tmp_path / f"{compiler.SPILL}{me}-{mine}-abc"
    unnamed = tmp_path / f"{compiler.SPILL}k2j4h1"  # an older name: no owner to tell
    for d in (gone, reused, running, unnamed):
        (d / "spill").mkdir(parents=True)
        (d / "spill" / "block").write_bytes(b"x" * 100)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep").write_text("a user's file")
    link = tmp_path / f"{compiler.SPILL}{pid}-{start}-link"
    link.symlink_to(target)
    removed = compiler.sweep_spills(str(tmp_path))
    assert sorted(removed) == sorted([gone.name, reused.name])
    assert not gone.exists() and not reused.exists()
    assert running.exists() and unnamed.exists() and link.is_symlink() and (target / "keep").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="gives a folder to another user: root only")
def test_another_users_folder_is_left_alone(tmp_path):
    pid, start = _gone()
    theirs = tmp_path / f"{compiler.SPILL}{pid}-{start}-abc"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)  # nobody
    assert compiler.sweep_spills(str(tmp_path)) == [] and theirs.exists()


def test_a_killed_runs_spill_is_removed_by_the_next_run(tmp_path):
    """A run killed (SIGKILL: no exit handler) while it holds its spill
    folder leaves it; the next run, of any query, removes it."""
    data = tmp_path / "e.parquet"
    n = 300_000
    pq.write_table(pa.table({"ts": pa.array(range(n), pa.int64()), "id": pa.array(range(n), pa.int64()),
                             "x": pa.array([i % 7 for i in range(n)], pa.int64())}), data)  # fmt: skip
    query = tmp_path / "q.cet"
    query.write_text("PATTERN E+ e[] WHERE e[i].x = e[i-1].x WITHIN 50 SLIDE 25")
    spills = tmp_path / "tmp"
    spills.mkdir()
    env = {**os.environ, "TMPDIR": str(spills)}
    run = [sys.executable, "-m", "cetql", "run", str(query), "--input", str(data), "--id-col", "id", "--no-serve",
           "--max-trends", "0"]  # fmt: skip
    victim = subprocess.Popen([*run, "--output", str(tmp_path / "a")], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120  # only ends a hang
    while not list(spills.glob(f"{compiler.SPILL}{victim.pid}-*")):
        assert victim.poll() is None, "the run ended before its spill folder was seen"
        assert time.monotonic() < deadline, "no spill folder"
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    left = list(spills.glob(f"{compiler.SPILL}{victim.pid}-*"))
    assert left, "the killed run's spill folder is there"
    done = subprocess.run([*run, "--output", str(tmp_path / "b")], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not any(p.exists() for p in left) and list(spills.glob(f"{compiler.SPILL}*")) == []
