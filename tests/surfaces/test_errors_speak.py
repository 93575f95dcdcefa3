"""Errors speak cetql: what Spark, Py4J, Arrow and the system say is
mapped in one place (`backends.spark.failures`, the writers' staging) to one
line naming the option, output or input — never a JVM call's name
("An error occurred while calling o123.save"), never "internal error" for
a user's input.  A fuzzer draws the hostile classes (malformed masters,
outputs nothing can be written to, full and read-only file systems) and
checks every answer; the words of a run that succeeded never fail it
(`2>/dev/full`), and a run a stopped serve ended says so."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.backends.spark import failures, gateway
from cetql.surfaces.cli.main import main
from cetql.surfaces.serve import runner as serve_runner

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
SPARK_WORDS = re.compile(r"An error occurred while calling|\bo\d+\.\w+|org\.apache\.|py4j|Traceback|internal error|"
                         r"JavaSparkContext|bug in cetql")  # fmt: skip


def _one_cetql_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert not SPARK_WORDS.search(lines[0]), lines[0]
    return lines[0]


# ---------------------------------------------------------------- masters


VALID = re.compile(r"local|local\[([1-9]\d*|\*)(\s*,\s*\d+)?\]|local-cluster\[\s*[1-9]\d*\s*,\s*[1-9]\d*\s*,\s*"
                   r"[1-9]\d*\s*\]|spark://[^\s/:,]+:\d{1,5}(,[^\s/:,]+:\d{1,5})*|yarn|k8s://\S+")  # fmt: skip
junk = st.text(st.sampled_from("0123456789*,abc -[]:/."), max_size=8)
masters = st.one_of(
    st.builds("local[{}]".format, junk), st.builds("local-cluster[{}]".format, junk),
    st.builds("spark://{}".format, junk), st.builds("local{}".format, junk), st.text(max_size=12),
    st.sampled_from(["local[0]", "local[abc]", "local[2", "spark://", "spark://host", "mesos://h:1", "yarn-client",
                     "k8s://", "local-cluster[1,1]"]),
).filter(lambda m: not VALID.fullmatch(m) and "\0" not in m and not m.startswith("-"))  # fmt: skip


@pytest.fixture
def no_jvm(monkeypatch):
    """A JVM start fails the test: a malformed master is refused before Spark starts."""

    def refuse(*_a, **_k):
        raise AssertionError("a JVM was started")

    monkeypatch.setattr(gateway, "launch", refuse)
    monkeypatch.setattr("cetql.backends.spark.session.launch", refuse)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(master=masters)
def test_a_malformed_master_is_refused_before_spark_starts(master, no_jvm, capsys):
    code = main(["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--engine", "spark", "--no-serve",
                 "--master", master])  # fmt: skip
    line = _one_cetql_line(capsys.readouterr().err)
    shown = master if master.isprintable() else repr(master)[1:-1]
    assert code == 2 and f"unknown Spark master '{shown}'" in line and "expected local" in line, line


# ---------------------------------------------------------------- outputs nothing can be written to


def _read_only() -> Path | None:
    """A read-only file system of this test's own (root can mount one), else None."""
    folder = Path(tempfile.mkdtemp(prefix="cetql-ro-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True)
    return folder if done.returncode == 0 else None


def _tiny() -> Path | None:
    """A file system with room for almost nothing (8 KB), else None."""
    folder = Path(tempfile.mkdtemp(prefix="cetql-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(folder)], capture_output=True)
    return folder if done.returncode == 0 else None


@pytest.fixture(scope="module")
def mounts():
    made = {"read-only": _read_only(), "full": _tiny()}
    yield made
    for folder in made.values():
        if folder is not None:
            _unmount(folder)


def _unmount(folder: Path) -> None:
    """Unmount and remove.  A process still holding the mount (the run's
    session JVM, which lives until the test run ends, or a JVM told to stop
    on a loaded machine) keeps it busy: then it is detached at once, and
    freed by the kernel when its last user ends."""
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)
    os.rmdir(folder)


def _places(tmp: Path, mounts: dict) -> dict[str, Path]:
    """Outputs nothing can be written to, by kind."""
    (tmp / "a-file").write_text("x")
    places = {"under a file": tmp / "a-file" / "out", "proc": Path("/proc/cetql-out"), "sys": Path("/sys/cetql-out"),
              "too long": tmp / ("x" * 300), "missing folder": tmp / "no" / "such" / "out"}  # fmt: skip
    if mounts["read-only"] is not None:
        places["read-only"] = mounts["read-only"] / "out"
    if os.geteuid() != 0:
        locked = tmp / "locked"
        locked.mkdir(mode=0o500, exist_ok=True)
        places["no permission"] = locked / "out"
    return places


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["under a file", "proc", "sys", "too long", "missing folder", "read-only",
                             "no permission"]), fmt=st.sampled_from(["parquet", "csv", "json"]))  # fmt: skip
def test_an_output_nothing_can_be_written_to(kind, fmt, tmp_path, mounts, capsys):
    places = _places(tmp_path, mounts)
    if kind not in places:
        return  # not on this machine (no mount, or run as root)
    out = places[kind]
    code = main(["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--no-serve", "--output", str(out),
                 "--format", fmt])  # fmt: skip
    line = _one_cetql_line(capsys.readouterr().err)
    assert code in (1, 2) and "output" in line, line
    assert not [p for p in out.parent.glob(".*cetql-*")] if out.parent.is_dir() else True


@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_a_full_file_system(engine, spark, mounts, capsys):
    if mounts["full"] is None:
        pytest.skip("no tmpfs can be mounted here (root only)")
    out = mounts["full"] / f"out-{engine}"
    fmt = "parquet" if engine == "embedded" else "csv"  # the files each engine writes
    code = main(["run", str(KITING), "--input", str(CHECKS), "--id-col", "id", "--no-serve", "--output", str(out),
                 "--format", fmt, "--engine", engine])  # fmt: skip
    line = _one_cetql_line(capsys.readouterr().err)
    assert code == 1 and f"output '{out}' could not be written: No space left on device" in line, line
    assert not list(mounts["full"].iterdir()), "staging left behind"


def test_a_py4j_error_is_said_without_the_jvm_call(spark):
    with pytest.raises(Exception) as raised:
        spark._jvm.java.lang.Class.forName("no.such.Thing")
    assert "An error occurred while calling" in str(raised.value)  # what Py4J says
    said = str(failures.describe(raised.value))
    assert not SPARK_WORDS.search(said) and "no.such.Thing" in said, said
    text = "An error occurred while calling o123.save.\n: java.io.IOException: Mkdirs failed to create file:/x"
    assert failures.first_line(text) == "Mkdirs failed to create file:/x"


# ---------------------------------------------------------------- standard error, and the serve's stop


def test_a_full_standard_error_fails_no_run(tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(CHECKS), "--id-col",
                               "id", "--no-serve", "--format", "csv"], stdout=subprocess.PIPE, stderr=full,
                              text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 3772


def _serving(tmp_path: Path, monkeypatch, command) -> tuple[serve_runner.Runner, dict]:
    """A serve's runner in this process running `command`, and the environment
    of a `cetql run` that finds it (a trusted state file)."""
    monkeypatch.setattr(serve_runner, "warm_up", lambda: None)
    runtime = tmp_path / "runtime"
    (runtime / "cetql").mkdir(parents=True, mode=0o700)
    runtime.chmod(0o700)
    runner = serve_runner.Runner(runtime / "cetql" / "serve-1.sock", command)
    from cetql.surfaces.serve import state as serve_state

    state = {"url": "sc://127.0.0.1:1", "port": 1, "pid": os.getpid(), "started": 0.0, "token": "t",
             "runner": str(runner.path), **serve_state.identity()}  # fmt: skip
    path = runtime / "cetql" / "serve-1.json"
    path.write_text(json.dumps(state))
    path.chmod(0o600)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    env.pop("SPARK_REMOTE", None)
    return runner, env


def test_a_handed_over_run_with_a_full_standard_error(tmp_path, monkeypatch):
    runner, env = _serving(tmp_path, monkeypatch, main)
    try:
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(CHECKS),
                                   "--id-col", "id", "--format", "csv"], stdout=subprocess.PIPE, stderr=full,
                                  text=True, env=env, timeout=300)  # fmt: skip
    finally:
        runner.close()
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 3772


def _waits(_argv, only_in_process):  # noqa: ARG001 - the CLI main's signature
    print("ready", flush=True)
    signal.pause()  # until the serve's stop ends it
    return 0


def test_a_run_the_serve_stopped_says_so(tmp_path, monkeypatch):
    runner, env = _serving(tmp_path, monkeypatch, _waits)
    client = subprocess.Popen([sys.executable, "-m", "cetql", "run", str(KITING), "--input", str(CHECKS), "--id-col",
                               "id"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        assert client.stdout.readline().strip() == "ready"
        runner.close()  # as the serve does on SIGTERM
        _, err = client.communicate(timeout=60)
    finally:
        client.kill()
        runner.close()
    assert client.returncode == 1
    assert _one_cetql_line(err) == "error: cetql serve stopped while it ran the query; run it again (--no-serve: " \
        "in this process)"  # fmt: skip
