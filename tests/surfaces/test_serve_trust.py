"""`cetql serve`'s hand-over trusts only its owner (docs/security.md): the
state folder, the state file and the runner's socket must be the user's and
writable by no one else, the process at the socket's other end must run as
the user (SO_PEERCRED), and a run hands over only the allow-listed part of
its environment.  Anything else is ignored with one line of warning and
the run goes on by itself.

No Spark Connect server is started here: the runner (`serve.runner.Runner`)
runs in the test's process with a stand-in for the CLI's main, and the
other user's files and sockets come from a small standard-library script
run as `nobody` (setpriv; root only)."""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from cetql.backends.spark.connect import shown_address, with_token
from cetql.surfaces.cli.main import main
from cetql.surfaces.serve import runner as serve_runner
from cetql.surfaces.serve import state as serve_state

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NOBODY_UID = 65534


@pytest.fixture(autouse=True)
def runtime(tmp_path, monkeypatch):
    """A runtime folder of this test's own; the once-a-process warnings forgotten."""
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setattr(serve_state, "_WARNED", set())
    monkeypatch.setattr(serve_state, "_alive", lambda pid: True)  # every state's serve counts as running
    return folder


def _state(folder: Path, mode: int = 0o600, **fields) -> Path:
    """A state file as a serve of this user writes it (mode 0600 unless told)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    state = {"url": "sc://127.0.0.1:1", "port": 1, "pid": os.getpid(), "started": 0.0, "token": "t0k3n",
             "runner": str(folder / "serve-1.sock"), **serve_state.identity(), **fields}  # fmt: skip
    path = folder / f"serve-{state['port']}.json"
    path.write_text(json.dumps(state))
    path.chmod(mode)
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


# ---------------------------------------------------------------- the checks, one path at a time


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757, 0o1777], ids=oct)
def test_a_folder_others_may_write_to_is_ignored(runtime, capsys, mode):
    folder = runtime / "cetql"
    _state(folder)
    folder.chmod(mode)
    assert serve_state.runner_socket() is None and serve_state.token_for("127.0.0.1", 1) is None
    (line,) = _warnings(capsys.readouterr().err)  # one line, once a process
    assert f"ignoring {folder}: its mode {mode:04o} lets group or others write it" in line, line
    folder.chmod(0o755)  # others may read it: the state file itself is the private part
    assert serve_state.runner_socket() == folder / "serve-1.sock"
    assert serve_state.token_for("127.0.0.1", 1) == "t0k3n" and serve_state.token_for("10.1.2.3", 1) is None


@pytest.mark.parametrize("mode", [0o666, 0o644, 0o620, 0o604], ids=oct)
def test_a_state_file_others_may_read_or_write_is_ignored(runtime, capsys, mode):
    path = _state(runtime / "cetql", mode=mode)
    assert serve_state.runner_socket() is None and serve_state.token_for("localhost", 1) is None
    (line,) = _warnings(capsys.readouterr().err)
    assert f"ignoring {path}: its mode {mode:04o} lets others read it" in line and "remove it" in line, line
    path.chmod(0o600)
    assert serve_state.runner_socket() is not None


def test_a_state_file_behind_a_symbolic_link_is_ignored(runtime, tmp_path, capsys):
    elsewhere = _state(tmp_path / "elsewhere")
    folder = runtime / "cetql"
    folder.mkdir(mode=0o700)
    (folder / "serve-1.json").symlink_to(elsewhere)
    assert serve_state.runner_socket() is None
    (line,) = _warnings(capsys.readouterr().err)
    assert f"ignoring {folder / 'serve-1.json'}: it is a symbolic link" in line


def _root_only():
    if os.getuid() != 0:
        pytest.skip("needs root: a file of another user's is made with os.chown")


def test_a_folder_or_state_file_of_another_user_is_ignored(runtime, capsys):
    _root_only()
    folder = runtime / "cetql"
    path = _state(folder)
    os.chown(path, NOBODY_UID, NOBODY_UID)
    assert serve_state.runner_socket() is None and serve_state.running() is None
    (line,) = _warnings(capsys.readouterr().err)
    assert f"ignoring {path}: it is owned by uid {NOBODY_UID}, not by you (uid 0)" in line, line
    os.chown(path, 0, 0)
    os.chown(folder, NOBODY_UID, NOBODY_UID)
    assert serve_state.runner_socket() is None and serve_state.session_slot() is None
    (line,) = _warnings(capsys.readouterr().err)
    assert f"ignoring {folder}: it is owned by uid {NOBODY_UID}" in line and "XDG_RUNTIME_DIR" in line, line


def test_a_socket_of_another_user_is_not_connected_to(runtime, capsys):
    _root_only()
    path = runtime / "other.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen()
        os.chown(path, NOBODY_UID, NOBODY_UID)
        assert serve_state.connect_runner(path) is None
        (line,) = _warnings(capsys.readouterr().err)
        assert f"ignoring {path}: it is owned by uid {NOBODY_UID}" in line, line
        serve_state._WARNED.clear()
        os.chown(path, 0, 0)
        path.chmod(0o666)
        assert serve_state.connect_runner(path) is None  # this user's, but anyone may write to it
        (line,) = _warnings(capsys.readouterr().err)
        assert f"ignoring {path}: its mode 0666 lets group or others write it" in line, line
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # neither was connected to


def test_the_serve_makes_its_folder_and_state_its_users_alone(runtime):
    folder = serve_state.own_folder()
    assert folder == runtime / "cetql" and stat.S_IMODE(folder.stat().st_mode) == 0o700
    args = SimpleNamespace(port=15002, master="local[1]", driver_memory="1g")
    path = serve_state.write_state("sc://127.0.0.1:15002", args, 0, None, "secret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and json.loads(path.read_text())["token"] == "secret"
    assert [p.name for p in folder.iterdir()] == [path.name]


@pytest.mark.parametrize("mode", [0o777, 0o770], ids=oct)
def test_the_serve_refuses_a_folder_others_may_write_to(runtime, tmp_path, monkeypatch, capsys, mode):
    monkeypatch.setenv("CETQL_CACHE_DIR", str(tmp_path / "cache"))
    folder = runtime / "cetql"
    folder.mkdir()
    folder.chmod(mode)
    (folder / "planted").write_text("kept")
    with pytest.raises(serve_state.UntrustedFolder, match="chmod 700"):
        serve_state.own_folder()
    # before any server starts: one line naming the folder, why and what to do
    assert main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"will not keep its state in {folder}: its mode {mode:04o}" in err, err
    assert stat.S_IMODE(folder.stat().st_mode) == mode and (folder / "planted").read_text() == "kept"


def test_only_the_allow_list_of_the_environment_is_handed_over():
    env = {"AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "s", "SSH_AUTH_SOCK": "/s", "LD_PRELOAD": "/evil.so",
           "PYTHONPATH": "/evil", "SPARK_CONNECT_AUTHENTICATE_TOKEN": "s", "CETQL_ENGINE": "local", "LC_ALL": "C",
           "PATH": "/bin", "TZ": "UTC", "COLUMNS": "120", "NO_COLOR": "1", "HOME": "/h"}  # fmt: skip
    assert serve_state.handed_env(env) == {k: env[k] for k in ("CETQL_ENGINE", "LC_ALL", "PATH", "TZ", "COLUMNS",
                                                              "NO_COLOR", "HOME")}  # fmt: skip


def test_a_connect_address_of_this_users_serve_gets_its_token(monkeypatch):
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)

    def token_for(host, port):
        return "T" if port == 15002 else None

    assert with_token("sc://127.0.0.1:15002", token_for) == "sc://localhost:15002/;token=T"
    with_session = "sc://localhost:15002/;token=T;session_id=abc"
    assert with_token("sc://127.0.0.1:15002/;session_id=abc", token_for) == with_session
    assert with_token("sc://127.0.0.1:15003", token_for) == "sc://127.0.0.1:15003"
    assert with_token("sc://localhost:15002/;token=mine", token_for) == "sc://localhost:15002/;token=mine"
    assert with_token("sc://127.0.0.1:15002", None) == "sc://127.0.0.1:15002"
    assert shown_address(with_session) == "sc://localhost:15002/;token=…;session_id=abc"  # no message shows it


# ---------------------------------------------------------------- another user's files and sockets


def _as_nobody() -> None:
    if os.getuid() != 0:
        pytest.skip("needs root, to run a second user's process (setpriv --reuid=nobody)")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux), to run a second user's process")
    probe = subprocess.run([*NOBODY, sys.executable, "-I", "-c", "pass"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"user nobody cannot run this Python: {probe.stderr.decode(errors='replace')[-200:]}")


# Run as nobody: plants a state file and two listening sockets (Unix: the
# runner's, TCP: a Connect server's) where told, prints "ready", then one line
# for every connection either gets (its bytes and file descriptors) until
# its standard input closes.
PLANTER = r"""
import json, os, select, socket, sys
folder, identity, sock_mode = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3], 8)
os.makedirs(folder, exist_ok=True)
unix = socket.socket(socket.AF_UNIX)
path = os.path.join(folder, "serve-1.sock")
unix.bind(path)
os.chmod(path, sock_mode)
unix.listen()
tcp = socket.socket()
tcp.bind(("127.0.0.1", 0))
tcp.listen()
port = tcp.getsockname()[1]
state = {"url": f"sc://127.0.0.1:{port}", "port": port, "pid": os.getpid(), "jvm": os.getpid(), "started": 9e9,
         "runner": path, "token": "stolen", **identity}
with open(os.path.join(folder, "serve-1.json"), "w") as f:
    json.dump(state, f)
print("ready", port, flush=True)
while True:
    ready, _, _ = select.select([unix, tcp, sys.stdin], [], [])
    for listener in (unix, tcp):
        if listener in ready:
            conn, _ = listener.accept()
            conn.settimeout(30)
            got, fds = 0, 0
            while True:
                data, ancdata, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * 4))
                fds += sum(len(d) // 4 for _, _, d in ancdata)
                got += len(data)
                if not data:
                    break
            print(f"connection {'unix' if listener is unix else 'tcp'} bytes={got} fds={fds}", flush=True)
    if sys.stdin in ready and not sys.stdin.readline():
        break
"""


def _plant(folder: Path, sock_mode: int = 0o666) -> tuple[subprocess.Popen, int]:
    """nobody's planter, planting in `folder`, ready; (the process, its TCP port)."""
    command = [*NOBODY, sys.executable, "-I", "-c", PLANTER, str(folder), json.dumps(serve_state.identity()),
               oct(sock_mode)]  # fmt: skip
    planter = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    if not select.select([planter.stdout], [], [], 60)[0]:
        planter.kill()
        pytest.fail(f"the planter did not start: {planter.communicate()[1][-2000:]}")
    first = planter.stdout.readline().split()
    if first[:1] != ["ready"]:
        planter.kill()
        pytest.fail(f"the planter did not start: {first} {planter.communicate()[1][-2000:]}")
    return planter, int(first[1])


def _connections(planter: subprocess.Popen) -> list[str]:
    """What the planter's sockets received, once it has read every connection
    made: its standard input closes, it ends (killed if it does not)."""
    try:
        out, err = planter.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        planter.kill()
        out, err = planter.communicate()
    assert planter.returncode == 0, err[-2000:]
    return [line for line in out.splitlines() if line.startswith("connection")]


@pytest.fixture
def shared():
    """A folder any user may write to and none may take from another, as /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="cetql-trust-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def events(tmp_path) -> Path:
    """A few hundred checks, as Parquet: a plan the in-process engine runs."""
    folder = tmp_path / "in"
    folder.mkdir()
    rows = "".join(CHECKS.read_text().splitlines(keepends=True)[:301])
    (tmp_path / "checks.csv").write_text(rows)
    pq.write_table(pcsv.read_csv(tmp_path / "checks.csv"), folder / "part-0.parquet")
    return folder


def _cetql_run(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cetql", "run", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)  # fmt: skip


@pytest.mark.parametrize("owner", ["nobody's folder", "a folder of yours others may write to"])
def test_run_ignores_what_another_user_planted_and_runs_itself(shared, events, tmp_path, monkeypatch, owner):
    _as_nobody()
    folder = shared / "cetql"
    if owner != "nobody's folder":
        folder.mkdir()
        folder.chmod(0o1777)  # a runtime folder pre-created for everyone
    planter, port = _plant(folder)
    try:
        env = {**os.environ, "XDG_RUNTIME_DIR": str(shared), "CETQL_CACHE_DIR": str(tmp_path / "cache"),
               "CETQL_LOG_DIR": str(tmp_path), "AWS_SECRET_ACCESS_KEY": "not for nobody"}  # fmt: skip
        env.pop("SPARK_REMOTE", None)
        done = _cetql_run([KITING, "--input", events, "--id-col", "id", "--engine", "embedded", "--output", "out"],
                          env, tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "wrote " in done.stdout and "trends to out (parquet)" in done.stdout, done.stdout
        assert "using cetql serve" not in done.stderr and (tmp_path / "out").is_dir()
        (line,) = _warnings(done.stderr)
        why = f"owned by uid {NOBODY_UID}" if owner == "nobody's folder" else "mode 1777 lets group or others write"
        assert f"ignoring {folder}: " in line and why in line, line
        # the Spark Connect side: neither found nor given its token
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
        assert serve_state.running() is None and serve_state.token_for("127.0.0.1", port) is None
    finally:
        received = _connections(planter)
    assert received == [], received


def test_run_refuses_a_socket_whose_listener_is_another_user(runtime, shared, events, tmp_path):
    """The files pass (the socket made to look the user's), the peer's uid does not."""
    _as_nobody()
    planter, _ = _plant(shared / "planted", sock_mode=0o600)
    try:
        sock = shared / "planted" / "serve-1.sock"
        os.chown(sock, 0, 0)  # as if the user's own: only SO_PEERCRED tells
        _state(runtime / "cetql", runner=str(sock))
        env = {**os.environ, "CETQL_CACHE_DIR": str(tmp_path / "cache"), "CETQL_LOG_DIR": str(tmp_path)}
        env.pop("SPARK_REMOTE", None)
        done = _cetql_run([KITING, "--input", events, "--id-col", "id", "--engine", "embedded", "--output", "out"],
                          env, tmp_path)  # fmt: skip
        assert done.returncode == 0 and "trends to out (parquet)" in done.stdout, done.stderr[-3000:]
        (line,) = _warnings(done.stderr)
        assert f"ignoring {sock}: the process listening on it runs as uid {NOBODY_UID}, not as you" in line, line
    finally:
        received = _connections(planter)
    assert received == ["connection unix bytes=0 fds=0"], received  # connected to, then told nothing


# ---------------------------------------------------------------- the serve's side: its runner


def _report_env(argv, only_in_process):
    """The stand-in for the CLI's main in the runner's child: says what it was given."""
    print(json.dumps({"argv": argv, "env": dict(os.environ), "uid": os.getuid()}))
    return 0


@pytest.fixture
def runner(shared, monkeypatch):
    """The serve's runner in this process (no warm-up: the stand-in needs none), its socket in `shared`."""
    monkeypatch.setattr(serve_runner, "warm_up", lambda: None)
    folder = shared / "serve"
    folder.mkdir(mode=0o700)
    made = serve_runner.Runner(folder / "serve-1.sock", _report_env)
    yield made
    made.close()


def _hand(path: Path, request: dict) -> tuple[bytes, str]:
    """Hand a run to the runner as `cetql run` does: (its reply, what the run wrote on standard output)."""
    out_r, out_w = os.pipe()
    with socket.socket(socket.AF_UNIX) as conn, open(os.devnull) as null:
        conn.connect(str(path))
        body = json.dumps(request).encode()
        socket.send_fds(conn, [len(body).to_bytes(8, "big") + body], [null.fileno(), out_w, out_w])
        os.close(out_w)
        with os.fdopen(out_r) as out:
            written = out.read()
        reply = b""
        while not reply.endswith(b"\n") and (chunk := conn.recv(64)):  # one line, as `cetql run` reads it
            reply += chunk
    return reply, written


CLIENT = r"""
import json, os, socket, sys
conn = socket.socket(socket.AF_UNIX)
conn.connect(sys.argv[1])
body = json.dumps({"argv": ["run", "q.cet"], "cwd": "/", "env": {}, "umask": 18}).encode()
reply = b""
try:
    socket.send_fds(conn, [len(body).to_bytes(8, "big") + body], [0, 1, 2])
    while chunk := conn.recv(64):
        reply += chunk
except (BrokenPipeError, ConnectionResetError):  # closed unread
    pass
print("reply", repr(reply), flush=True)
"""


def test_the_runner_refuses_a_client_of_another_user(runner, capsys):
    _as_nobody()
    runner.path.parent.chmod(0o755)
    runner.path.chmod(0o666)  # the files let nobody in: only SO_PEERCRED stops it
    done = subprocess.run([*NOBODY, sys.executable, "-I", "-c", CLIENT, str(runner.path)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "reply b''", done.stdout  # closed, nothing run, no status
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "refused" in x]
    assert f"cetql serve: refused a run from uid {NOBODY_UID}" in line and "only uid 0" in line, line
    # the serve's own user is served, with the allow-list of the environment whatever it sends
    env = {"AWS_SECRET_ACCESS_KEY": "s", "PATH": "/usr/bin:/bin", "CETQL_ENGINE": "local"}
    reply, written = _hand(runner.path, {"argv": ["run", "q.cet"], "cwd": "/", "env": env, "umask": 0o022})
    assert json.loads(reply) == {"status": 0}
    seen = json.loads(written)
    assert seen["argv"] == ["run", "q.cet"] and seen["uid"] == 0
    assert {k: v for k, v in seen["env"].items() if k in env} == {"PATH": "/usr/bin:/bin", "CETQL_ENGINE": "local"}
    assert set(seen["env"]) <= set(serve_state.handed_env(seen["env"])), seen["env"]


def test_run_hands_over_only_the_allow_list(runner, runtime, tmp_path, monkeypatch):
    """What `cetql run` sends, as the runner's child receives it unfiltered."""
    monkeypatch.setattr(serve_runner, "handed_env", dict)
    _state(runtime / "cetql", runner=str(runner.path))
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": "not handed", "CETQL_KERNELS": "python", "LC_TIME": "C",
           "TZ": "Europe/Paris"}  # fmt: skip
    env.pop("SPARK_REMOTE", None)
    done = _cetql_run(["q.cet", "--input", "x.parquet", "--engine", "embedded"], env, tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == ["run", "q.cet", "--input", "x.parquet", "--engine", "embedded"]
    assert "AWS_SECRET_ACCESS_KEY" not in seen["env"] and "PYTHONPATH" not in seen["env"]
    assert {k: seen["env"].get(k) for k in ("CETQL_KERNELS", "LC_TIME", "TZ")} == {
        "CETQL_KERNELS": "python", "LC_TIME": "C", "TZ": "Europe/Paris"}  # fmt: skip
    assert seen["env"] == serve_state.handed_env(env)
