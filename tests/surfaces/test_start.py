"""A local run's start: the class data archive cetql keeps in the user's
cache (written once, then mapped; never required), and `cetql run` sending
its query to a `cetql serve` running on this machine.

Every process a test starts gets a cache and a runtime folder of its own
(CETQL_CACHE_DIR, XDG_RUNTIME_DIR), so nothing reaches the user's."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from processes import descendants, free_port, spark_env, start, stop, wait_for_port

import cetql
from cetql.backends.spark import archive as cds
from cetql.backends.spark import connect, session
from cetql.backends.spark.connect import with_token
from cetql.base.errors import UsageError
from cetql.base.options import Engine, RunOptions
from cetql.surfaces.cli import on_spark
from cetql.surfaces.cli.flags import known_inputs
from cetql.surfaces.cli.main import main
from cetql.surfaces.serve import state as serve_state

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
MAGIC = (0xF00BABA8).to_bytes(4, "little")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("CETQL_CACHE_DIR", str(folder))
    monkeypatch.delenv("CETQL_CLASS_ARCHIVE", raising=False)
    monkeypatch.setattr(cds, "_writer", None)
    yield folder
    if cds._writer is not None:  # the lock a test left taken
        os.close(cds._writer[0])


def _flag(options: list[str]) -> tuple[str, Path]:
    (option,) = options
    flag, _, path = option.partition("=")
    return flag, Path(path)


def _elsewhere(cache: Path) -> list[str]:
    """`class_archive()` as another run on this cache sees it."""
    code = "from cetql.backends.spark import archive; print(repr(archive.class_archive()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "CETQL_CACHE_DIR": str(cache)})  # fmt: skip
    return eval(done.stdout)  # noqa: S307 - a list of strings this test printed


def _dump(content: bytes):
    """`subprocess` for the archive module, its jcmd answered as the JVM
    would: the archive written to the path asked for."""

    def run(command, **_):
        Path(command[-1]).write_bytes(content)
        return subprocess.CompletedProcess(command, 0)

    return SimpleNamespace(run=run, SubprocessError=subprocess.SubprocessError, DEVNULL=subprocess.DEVNULL)


# ---------------------------------------------------------------- the class archive, without a JVM


def test_class_archive_is_written_once_then_mapped(cache, monkeypatch):
    assert cds.class_archive() == ["-XX:+RecordDynamicDumpInfo"] and cds.writing()
    assert cds.class_archive() == []  # one writer a process
    assert _elsewhere(cache) == []  # another run, while this one holds the lock: neither writes nor waits
    assert cds.class_archive(write=False) == []
    monkeypatch.setattr(cds, "subprocess", _dump(MAGIC + bytes(8188)))
    said = []
    archive = cds.save(12345, say=said.append)
    assert archive is not None and archive.name.endswith(".8192.jsa") and said and not cds.writing()
    assert [p.name for p in archive.parent.iterdir() if p.suffix in (".jsa", ".part")] == [archive.name]
    assert _flag(cds.class_archive()) == ("-XX:SharedArchiveFile", archive)
    assert _flag(_elsewhere(cache)) == ("-XX:SharedArchiveFile", archive)
    assert cds.save(12345) is None  # nothing to write any more


def test_a_cut_or_abandoned_archive_is_never_offered(cache, monkeypatch):
    cds.class_archive()
    monkeypatch.setattr(cds, "subprocess", _dump(MAGIC + bytes(8188)))
    archive = cds.save(1)
    with open(archive, "r+b") as f:  # cut short: the JVM would map past its end and crash
        f.truncate(6000)
    assert cds.class_archive() == ["-XX:+RecordDynamicDumpInfo"] and not archive.exists()
    monkeypatch.setattr(cds, "subprocess", _dump(bytes(100)))  # its JVM was killed before the header
    assert cds.save(1) is None
    abandoned = archive.parent / f"{archive.name.split('.8192')[0]}.1-1.part"
    abandoned.write_bytes(bytes(100))  # a writer killed mid-dump: no lock holds it any more
    assert cds.class_archive() == ["-XX:+RecordDynamicDumpInfo"] and not abandoned.exists()
    assert cds.save(None) is None
    assert cds.class_archive() == []  # three runs tried: no more for this install
    assert not [p for p in archive.parent.iterdir() if p.suffix in (".jsa", ".part")]


def test_no_archive_without_jcmd_or_a_jvm(cache, monkeypatch):
    monkeypatch.setattr(cds, "_jcmd", lambda: None)
    assert cds.class_archive() == [] and not cds.writing()
    monkeypatch.undo()
    monkeypatch.setenv("CETQL_CACHE_DIR", str(cache))
    monkeypatch.setattr(cds, "_writer", None)
    assert cds.class_archive() == ["-XX:+RecordDynamicDumpInfo"]
    assert cds.save(None) is None and not cds.writing()  # the JVM is gone: nothing written, the lock let go
    assert cds.class_archive() == ["-XX:+RecordDynamicDumpInfo"]  # the next run tries again


def test_class_archive_off_or_unwritable(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("CETQL_CLASS_ARCHIVE", "off")
    assert cds.class_archive() == [] and not cache.exists()
    monkeypatch.delenv("CETQL_CLASS_ARCHIVE")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CETQL_CACHE_DIR", str(blocker))
    assert cds.class_archive() == []


def test_jvm_options_for_a_local_run(cache, monkeypatch):
    options = session.jvm_options()
    assert options[: len(session.JIT_OPTIONS)] == list(session.JIT_OPTIONS)
    monkeypatch.setenv("CETQL_JVM_OPTIONS", "-Xshare:on -XX:+UseParallelGC")
    assert session.jvm_options()[:2] == ["-Xshare:on", "-XX:+UseParallelGC"]
    monkeypatch.setenv("CETQL_CLASS_ARCHIVE", "off")
    monkeypatch.setenv("CETQL_JVM_OPTIONS", "")
    assert session.jvm_options() == []


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


@pytest.mark.spark  # java itself
@pytest.mark.parametrize("content", [bytes(1 << 20), MAGIC + os.urandom(1 << 20)], ids=["no header", "garbage"])
def test_the_jvm_runs_without_an_archive_it_cannot_use(tmp_path, content):
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(content)
    done = subprocess.run([_java(), f"-XX:SharedArchiveFile={bad}", "-version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- the class archive, through Spark


def _run(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "cetql", "run", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _rows(text: str) -> list:
    rows = list(csv.reader(io.StringIO(text)))
    return [rows[0], *sorted(rows[1:])]


def _marked(marker: str) -> list[int]:
    """Live processes whose environment holds `marker` (a run's, whoever their parent is by now)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker.encode() in (d / "environ").read_bytes() and \
                    (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":  # fmt: skip
                found.append(int(d.name))
        except (OSError, IndexError):
            continue
    return found


@pytest.mark.spark
@pytest.mark.slow
def test_a_run_writes_the_archive_before_it_ends_and_the_next_maps_it(tmp_path):
    """Two first runs at once: one writes the archive (saying so) before it
    ends, the other neither writes nor waits; once both have ended nothing
    of theirs is working, and the next run maps the archive."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    marker = f"cetql-archive-test-{os.getpid()}-{time.time_ns()}"
    env = spark_env(CETQL_CACHE_DIR=str(cache), CETQL_LOG_DIR=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path),
                    CETQL_TEST_MARK=marker)  # fmt: skip
    env.pop("CETQL_CLASS_ARCHIVE", None)
    args = [KITING, "--input", CHECKS, "--id-col", "id", "--format", "csv", "--limit", "0", "--no-serve", "--engine",
            "spark"]  # fmt: skip
    command = [sys.executable, "-m", "cetql", "run", *map(str, args)]
    runs = [subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]  # fmt: skip
    try:
        done = [r.communicate(timeout=600) for r in runs]
        archives = sorted(p.name for p in (cache / "classes").iterdir() if p.suffix in (".jsa", ".part"))
        # a JVM ends with its run (its shutdown hooks, told by the parent's death): the deadline only
        # fails one that never ends; at load 14 (a fresh clone's suite beside another) it took over 5 s
        deadline = time.monotonic() + 180
        while _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _marked(marker)
    finally:
        for r in runs:
            r.kill()
            r.wait()
        for pid in _marked(marker):
            os.kill(pid, 9)
    assert [r.returncode for r in runs] == [0, 0], [err[-3000:] for _, err in done]
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives  # in place as the run ended, and only one
    assert sum("saving Spark's loaded classes" in err for _, err in done) == 1, [err for _, err in done]
    assert left == [], "a run's JVM still works after the run ended"
    # -Xshare:on: the JVM refuses to start unless it maps the archive
    mapped = _run(args, {**env, "CETQL_JVM_OPTIONS": "-XX:TieredStopAtLevel=1 -Xshare:on"}, work)
    assert _rows(mapped.stdout) == _rows(done[0][0]) and len(_rows(done[0][0])) > 100
    assert "saving" not in mapped.stderr
    (archive,) = (cache / "classes").glob("*.jsa")
    assert not list(work.iterdir()), "the runs wrote outside the cache"
    # made for Spark's class path: a JVM on another runs without it
    done = subprocess.run([_java(), "-cp", str(tmp_path), f"-XX:SharedArchiveFile={archive}", "-version"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- cetql run and a running cetql serve


def _state(folder: Path, **fields) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = {"url": "sc://127.0.0.1:1", "port": 1, "pid": os.getpid(), "started": 0.0, **serve_state.identity(), **fields}
    path = folder / f"serve-{state['port']}.json"
    path.write_text(json.dumps(state))
    path.chmod(0o600)  # as a serve writes it: one others may read is not trusted (test_serve_trust.py)
    return path


@pytest.mark.parametrize("flags", [[], ["--master", "local[1]"], ["--remote", "sc://127.0.0.1:1"]],
                         ids=["no serve running", "--master", "--remote"])  # fmt: skip
def test_a_serve_child_gives_back_a_run_that_would_start_its_own_spark(tmp_path, monkeypatch, capsys, flags):
    """In a serve's warm process, a plan for Spark runs there only on the
    serve's own Connect server; one that would start a Spark of its own
    (no serve found, `--master`) or reach another server (`--remote`) comes
    back to the client undone, having started nothing (no JVM: this test
    is not marked spark) and said nothing."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no serve here
    argv = ["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--engine", "spark", *flags]
    assert main(argv, only_in_process=True) == serve_state.NOT_HERE
    said = capsys.readouterr()
    assert said.out == "" and said.err == ""


def test_a_serve_child_runs_on_the_serve_it_found_or_nowhere(tmp_path, monkeypatch, capsys):
    """The serve a child found is the one it runs on: asked again later (the
    serve stopping, another starting), the answer changes nothing — the
    child never opens a Spark of its own."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    answers = iter(["sc://127.0.0.1:1"])
    monkeypatch.setattr(serve_state, "discovered", lambda master, remote: next(answers, None))
    opened = []

    def get_spark(master=None, *, remote=None, **_):
        opened.append((master, remote))
        raise UsageError("no Spark in this test")

    monkeypatch.setattr(on_spark, "get_spark", get_spark)
    argv = ["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--engine", "spark"]
    assert main(argv, only_in_process=True) == 2
    assert [m for m, _ in opened] == [None] and all(r.startswith("sc://127.0.0.1:1") for _, r in opened), opened
    assert "using cetql serve at sc://127.0.0.1:1" in capsys.readouterr().err


def test_only_a_live_server_of_this_python_and_cetql_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = serve_state.state_dir()
    assert folder == tmp_path / "cetql"
    gone = _state(folder, pid=2**22 + 17, port=2)  # no such process
    assert serve_state.running() is None and not gone.exists()
    _state(folder, port=3)  # this process is no `cetql serve`
    port = free_port()
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        monkeypatch.setattr(serve_state, "_alive", lambda pid: True)
        _state(folder, port=port, url=f"sc://127.0.0.1:{port}", python="/other/python")
        assert serve_state.running() is None  # another Python's workers would import another cetql
        _state(folder, port=port, url=f"sc://127.0.0.1:{port}")
        assert serve_state.running() == f"sc://127.0.0.1:{port}"
        assert serve_state.discovered("local[1]", None) is None and serve_state.discovered(None, "sc://x:1") is None
    assert serve_state.running() is None  # nothing answers there any more


@pytest.mark.slow
def test_run_uses_a_running_serve(spark, capsys, tmp_path):
    port = free_port()
    env = spark_env(CETQL_CACHE_DIR=str(tmp_path / "cache"), CETQL_LOG_DIR=str(tmp_path),
                    XDG_RUNTIME_DIR=str(tmp_path), CETQL_CLASS_ARCHIVE="off")  # fmt: skip
    log = tmp_path / "serve.out"
    server = start([sys.executable, "-m", "cetql", "serve", "--port", str(port), "--master", "local[2]",
                    "--driver-memory", "1g", "--conf", "spark.sql.shuffle.partitions=2"], log, env=env)  # fmt: skip
    state = tmp_path / "cetql" / f"serve-{port}.json"
    try:
        wait_for_port(server, port, log, "cetql serve")
        deadline = time.monotonic() + 300  # only ends a hang
        while not state.exists():
            assert time.monotonic() < deadline, "cetql serve wrote no state file"
            time.sleep(0.2)
        assert state.stat().st_mode & 0o777 == 0o600 and (tmp_path / "cetql").stat().st_mode & 0o777 == 0o700
        # the server takes no client without the serve's token (kept in the state file, the user's alone)
        refused = subprocess.run([sys.executable, "-c", f"from pyspark.sql import SparkSession as S; "
                                  f"S.builder.remote('sc://127.0.0.1:{port}').getOrCreate().range(1).count()"],
                                 capture_output=True, text=True, env=spark_env(), timeout=120)  # fmt: skip
        assert refused.returncode != 0 and "UNAUTHENTICATED" in refused.stderr, refused.stderr[-2000:]
        elsewhere = subprocess.run([sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(CHECKS),
                                    "--id-col", "id", "--remote", f"sc://127.0.0.1:{port}"], capture_output=True,
                                   text=True, env={**env, "XDG_RUNTIME_DIR": str(tmp_path / "cache")},
                                   timeout=300)  # fmt: skip
        assert elsewhere.returncode == 1 and "Traceback" not in elsewhere.stderr, elsewhere.stderr[-2000:]
        assert f"server at sc://127.0.0.1:{port} refused this client: it takes only clients that send its token" \
            in elsewhere.stderr, elsewhere.stderr[-2000:]  # fmt: skip
        args = ["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--format", "csv", "--limit", "0",
                "--engine", "spark"]  # a plan for Spark: the serve's Connect server runs it
        assert main(args) == 0  # this process's own session: no server is looked for
        local = _rows(capsys.readouterr().out)
        work = tmp_path / "work"
        work.mkdir()
        remote = _run(args[1:], {**env, "PYTHONPROFILEIMPORTTIME": "1"}, work)  # the client's imports, listed
        url = f"sc://127.0.0.1:{port}"
        assert f"using cetql serve at {url}; --no-serve to start a local Spark" in remote.stderr
        assert _rows(remote.stdout) == local and len(local) > 100
        # a plan for the serve's Connect server runs in the serve's warm process: this client loaded no pyspark
        # (nor the compiler); the child, forked from the warm process, imports nothing it lists
        imported = [line for line in remote.stderr.splitlines() if line.startswith("import time:")]
        assert imported and not [line for line in imported if "pyspark" in line or "cetql.planner" in line]
        # the next run takes the same server session, and with it the Python workers the first started
        slot = tmp_path / "cetql" / "sessions" / "slot-0"
        held, daemons = slot.read_text(), _daemons(server.pid)
        assert len(daemons) == 1, daemons
        assert _rows(_run(args[1:], env, work).stdout) == local
        assert slot.read_text() == held and _daemons(server.pid) == daemons
        # a kept session reads its input again: the same path with other rows gives their trends
        changed = work / "checks.csv"
        changed.write_text("".join(CHECKS.read_text().splitlines(keepends=True)[:1001]))
        args_changed = [*args[:3], str(changed), *args[4:]]
        assert main(args_changed) == 0
        fewer = _rows(capsys.readouterr().out)
        assert _rows(_run(args_changed[1:], env, work).stdout) == fewer and len(fewer) < len(local)
        changed.write_text(CHECKS.read_text())
        assert _rows(_run(args_changed[1:], env, work).stdout) == local
        # a slot's session the server has closed (another client released it): a new one, once
        token = json.loads(state.read_text())["token"]  # the serve takes clients that send it only
        _release(with_token(f"{url}/;session_id={held}", lambda host, port: token))
        again = _run(args[1:], env, work)
        assert _rows(again.stdout) == local, again.stderr
        assert slot.read_text() != held
        # a plan that runs in process is handed whole to the serve's warm process: the same files as here
        (work / "in").mkdir()
        pq.write_table(pcsv.read_csv(CHECKS), work / "in" / "part-0.parquet")  # 64-bit numbers: the local engine's
        to_files = [str(KITING), "--input", str(work / "in"), "--id-col", "id", "--output"]
        assert main(["run", *to_files, str(work / "here"), "--engine", "embedded"]) == 0
        served = _run([*to_files, "out"], env, work)  # a relative path: the client's working folder
        assert f"using cetql serve's warm process (pid {server.pid})" in served.stderr, served.stderr
        assert "wrote 3,771 trends to out (parquet)" in served.stdout, served.stdout
        here, there = spark.read.parquet(str(work / "here")), spark.read.parquet(str(work / "out"))
        assert here.count() == 3771 and here.exceptAll(there).count() == 0 and there.exceptAll(here).count() == 0
        refused = subprocess.run([sys.executable, "-m", "cetql", "run", *to_files, "out"], capture_output=True,
                                 text=True, env=env, cwd=work, timeout=600)  # fmt: skip
        assert refused.returncode == 2 and "exists" in refused.stderr  # said by the serve's child, as here
    finally:
        stop(server)
    assert not state.exists(), "cetql serve left its state file behind"


def _daemons(pid: int) -> set[int]:
    """The Python worker daemons (one a server session) below a process:
    pyspark.daemon processes whose parent is not one (the workers are)."""

    def daemon(p: int) -> bool:
        try:
            return b"pyspark.daemon" in Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            return False

    def parent(p: int) -> int:
        return int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])

    return {p for p in descendants(pid) if daemon(p) and not daemon(parent(p))}


def _release(url: str) -> None:
    """Close a server session from another client, as the server's idle timeout would."""
    code = (f"from pyspark.sql import SparkSession as S; s = S.builder.remote({url!r}).getOrCreate(); "
            "s.range(1).count(); s.stop()")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=spark_env(), timeout=120)


def test_a_slots_session_is_cleared_of_what_its_run_kept_and_only_then(monkeypatch):
    """A run on a serve's session slot that persisted a DataFrame (through
    `kept.keep`, as every persist in cetql) clears the session's cache as it
    ends; a run that kept nothing does not ask the server; a session of the
    run's own is never cleared (it ends with the run)."""
    from cetql.backends.spark import kept

    monkeypatch.setattr(on_spark, "is_connect", lambda _spark: True)
    cleared, released = [], []

    def session():
        return SimpleNamespace(client=SimpleNamespace(set_retry_policies=lambda _p: None), stop=lambda: None,
                               catalog=SimpleNamespace(clearCache=lambda: cleared.append(1)))  # fmt: skip

    slot = SimpleNamespace(release=lambda: released.append(1))
    kept.take()  # whatever this process kept before
    frame = SimpleNamespace(persist=lambda *_level: "persisted")
    assert kept.keep(frame) == "persisted"
    on_spark._release(session(), slot)
    assert cleared == [1] and released == [1]
    on_spark._release(session(), slot)  # kept nothing since
    assert cleared == [1] and released == [1, 1]
    kept.keep(frame)
    on_spark._release(session(), None)  # its own session
    assert cleared == [1] and kept.take()


def test_cetql_persists_only_through_kept():
    """Every `.persist(` in the package is `kept.keep`'s, and nothing else
    caches (`.cache()`, a checkpoint, CACHE TABLE): else a slot's session
    could keep a run's DataFrames for the next run."""
    root = Path(cetql.__file__).parent
    ways = (".persist(", ".cache(", "checkpoint(", "CACHE TABLE")
    found = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name != "kept.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if any(w in line for w in ways)]  # fmt: skip
    assert found == []


def test_session_slots_are_held_one_run_at_a_time(monkeypatch, tmp_path):
    """A slot is held until released (a run in a long-lived process gives
    its slot back at its end); all slots held: None, a session of its own."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    held = [serve_state.session_slot() for _ in range(serve_state.SESSION_SLOTS)]
    assert all(held) and len({s.session_id for s in held}) == serve_state.SESSION_SLOTS
    assert serve_state.session_slot() is None
    first = held[0].session_id
    held[0].release()
    again = serve_state.session_slot()
    assert again is not None and again.session_id == first
    for s in [again, *held[1:]]:
        s.release()


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "3601", "soon"])
def test_connect_retry_seconds_are_checked(monkeypatch, value):
    monkeypatch.setenv("CETQL_CONNECT_RETRY_SECONDS", value)
    with pytest.raises(UsageError, match="CETQL_CONNECT_RETRY_SECONDS"):
        connect.connect_retry_seconds()
    monkeypatch.setenv("CETQL_CONNECT_RETRY_SECONDS", "6")
    assert connect.connect_retry_seconds() == 6


def test_a_long_run_keeps_c2_and_the_plan_says_which(tmp_path, monkeypatch, capsys):
    """The plan calls a run long from its inputs' events with window copies
    (a Parquet footer's rows; a text input's bytes): a long one's local JVM
    keeps C2, a short one's compiles with C1 only, and `--explain` says which."""
    import numpy as np
    import pyarrow as pa

    from cetql.planner.physical.engine import LONG_RUN_EVENTS

    monkeypatch.delenv("CETQL_JVM_OPTIONS", raising=False)
    assert "-XX:TieredStopAtLevel=1" not in session.jvm_options(long_run=True)
    assert "-XX:TieredStopAtLevel=1" in session.jvm_options(long_run=False)
    query = tmp_path / "q.cet"
    query.write_text("RETURN COUNT(*) PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10 SLIDE 5")  # 2 windows an event
    for rows, long_run in ((LONG_RUN_EVENTS // 2 - 1, False), (LONG_RUN_EVENTS // 2, True)):
        path = tmp_path / f"in-{rows}.parquet"
        pq.write_table(pa.table({"ts": np.arange(rows), "x": np.zeros(rows, dtype=np.int64)}), path)
        assert main(["compile", str(query), "--input", str(path), "--explain", "--engine", "spark"]) == 0
        said = f"{2 * rows:,} events with window copies"
        kind = "C2: a long run" if long_run else "C1 only: a short run"
        assert f"a local driver JVM cetql starts: {kind}, {said}" in capsys.readouterr().out
    # a Spark Connect server runs a --remote run (the REPL's, a run's): no JVM starts here, and the plan says none does
    for asked in ("--remote", "SPARK_REMOTE"):
        opts = replace(RunOptions.of(), engine=Engine.SPARK, spark_asked=asked)
        text = cetql.compile(query.read_text(), options=opts).planned(known_inputs(str(path), {}, "ts")).explain(as_string=True)
        assert "Spark" in text and "local driver JVM" not in text, text
