"""`cetql serve`'s runner: runs that `cetql.launch` hands over, each in a
child forked from the serve's warm process (the compiler, the kernels and
their compiled loops already loaded).

A Unix socket beside the serve's state file, readable by its user only,
takes one request a connection from a process of that user (`peer_uid`:
another user's is refused, with one line on the serve's stderr): the
client's standard input, output and error (file descriptors, SCM_RIGHTS),
then its arguments, working folder and environment (of it, the child
takes `state.HANDED_ENV` alone) as JSON.  The child takes all of them, runs the command as
the CLI's main (a plan that runs in process, or on this serve's own Connect
server: else it exits with `state.NOT_HERE`, having said and written
nothing) and its exit status
goes back as one JSON line (saying so when the serve's own stop ended
it: the client says that, not a bare 143).  A byte from the client while it runs is a
signal for the child ("I": SIGINT, "T": SIGTERM); a client that goes away
takes the child with it (SIGTERM).  Children leave the serve's session (a
Ctrl-C at the serve's terminal is not theirs) and die with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

from cetql.base.processes import die_with_parent
from cetql.base.streams import Unfailing
from cetql.surfaces.serve import state
from cetql.surfaces.serve.state import NOT_HERE, handed_env, peer_uid


class Runner:
    """The listening socket and the children it started."""

    def __init__(self, path: Path, run_command):
        self.path = path
        self.run_command = run_command  # (argv, only_in_process=True) -> exit status: the CLI's main
        path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is created with the user's permissions only
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        self.sock.listen(16)
        self.ready = threading.Event()  # set once warm: no fork while another thread imports
        self.fork_lock = threading.Lock()
        self.children: set[int] = set()
        self.closing = False
        threading.Thread(target=self._warm, daemon=True, name="cetql-warm").start()
        threading.Thread(target=self._accept, daemon=True, name="cetql-runner").start()

    def close(self, wait: float = 10.0) -> None:
        """Take no more runs; stop the running ones, and give them `wait`
        seconds to remove what they staged before the serve ends (its end
        kills them)."""
        self.closing = True  # a run ended from here on was ended by the serve's stop: its client is told so
        with contextlib.suppress(OSError):
            self.sock.close()
        self.path.unlink(missing_ok=True)
        for pid in list(self.children):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait
        while self.children and time.monotonic() < deadline:
            time.sleep(0.05)

    def _warm(self) -> None:
        try:
            warm_up()
        except Exception:  # noqa: BLE001 - a run still works cold
            pass
        finally:
            self.ready.set()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if not _own_user(conn):
                return  # closed unread: what it sent (its streams too) is dropped with the connection
            fds: list[int] = []
            try:
                head, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
                size, data = int.from_bytes(head[:8], "big"), head[8:]
                while len(data) < size:
                    more = conn.recv(size - len(data))
                    if not more:
                        raise ValueError("a request cut short")
                    data += more
                request = json.loads(data)
                if len(fds) != 3 or not isinstance(request.get("argv"), list):
                    raise ValueError("not a run")
            except (OSError, ValueError):
                for fd in fds:
                    os.close(fd)
                return
            self.ready.wait()
            with self.fork_lock:
                pid = os.fork()
                if pid == 0:
                    _child(request, fds, self.run_command)  # never returns
            for fd in fds:
                os.close(fd)
            self.children.add(pid)
            done = threading.Event()
            threading.Thread(target=_relay, args=(conn, pid, done), daemon=True).start()
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: its pid is not reused yet
            done.set()
            _, status = os.waitpid(pid, 0)
            self.children.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            reply = {"status": code if code >= 0 else 128 - code}
            if self.closing and code != 0:
                reply["serve_stopped"] = True
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(reply).encode() + b"\n")


def _own_user(conn: socket.socket) -> bool:
    """Is the client a process of the serve's user?  Else one line on the serve's stderr."""
    try:
        uid = peer_uid(conn)
    except OSError:
        uid = -1
    if uid is None or uid == os.getuid():
        return True
    with contextlib.suppress(Exception):
        print(f"cetql serve: refused a run from uid {uid}: only uid {os.getuid()}, this serve's user, may hand it runs",
              file=sys.stderr, flush=True)  # fmt: skip
    return False


def _relay(conn: socket.socket, pid: int, done: threading.Event) -> None:
    """Signals from the client to the child; the client gone: SIGTERM."""
    while not done.is_set():
        try:
            b = conn.recv(1)
        except OSError:
            b = b""
        if done.is_set():
            return
        sig = {b"I": signal.SIGINT, b"T": signal.SIGTERM, b"": signal.SIGTERM}.get(b)
        if sig is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        if not b:
            return


def _child(request: dict, fds: list[int], run_command) -> None:
    """In the forked child: become the client's command, then exit."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the serve's files, other clients' streams: not this run's
        os.umask(int(request.get("umask", 0o022)))
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1 if os.isatty(1) else -1)  # noqa: SIM115
        sys.stderr = Unfailing(2)  # words lost to a full standard error do not fail the run
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(handed_env(request.get("env") or {}))  # the allow-list, whatever a client sent
        time.tzset()  # the client's TZ
        tempfile.tempdir = None  # the client's TMPDIR, not the serve's cached one
        state.QUIET = True  # its client has said every warning of the state folder already
        code = run_command(list(request["argv"]), only_in_process=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException as e:  # noqa: BLE001 - the child ends here, whatever happened
        code = 1
        with contextlib.suppress(Exception):
            print(f"error: cetql serve's process failed to run the command ({type(e).__name__}: {e}); "
                  "--no-serve runs it in this one", file=sys.stderr)  # fmt: skip
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code if code is not None else 0)


def warm_up() -> None:
    """Load what a run in process needs — the compiler, the in-process
    engine and the kernels' compiled loops — by running a detection and an
    aggregation on a few thousand generated events."""
    # what a run in process loads, loaded here once
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cetql.backends.embedded.compiler import run  # start-up cost paid here on purpose: the warm-up
    from cetql.backends.inputs.facts import describe_paths  # start-up cost paid here on purpose: the warm-up
    from cetql.base.options import Engine, RunOptions, Sink  # start-up cost paid here on purpose: the warm-up
    from cetql.surfaces.api.query import compile  # start-up cost paid here on purpose: the warm-up

    n = 8192
    table = pa.table({"ts": pa.array(range(n), pa.int64()), "id": pa.array(range(n), pa.int64()),
                      "src": pa.array([f"a{i % 50}" for i in range(n)]), "dst": pa.array([f"a{i % 47}" for i in range(n)]),
                      "price": pa.array([i * 7919 % 101 for i in range(n)], pa.int64())})  # fmt: skip
    # detection by the compiled walk; COUNT(*) in int64 (short groups) and in limbs (past `WIDE_FROM` events)
    queries = [("PATTERN E+ e[] WHERE e[i].src = e[i-1].dst WITHIN 100 SLIDE 50", {"id_col": "id", "max_trends": 0}),
               ("RETURN src, COUNT(*) PATTERN E S+ WHERE [src] AND S.price < NEXT(S).price GROUP-BY src WITHIN 1000 "
                "SLIDE 500", {"exact": "string"}),
               ("RETURN COUNT(*) PATTERN E S+ WHERE S.price < NEXT(S).price WITHIN 1000 SLIDE 500", {"exact": "string"})]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cetql-warm-") as tmp:
        path = Path(tmp) / "events.parquet"
        pq.write_table(table, path)
        inputs = describe_paths({None: str(path)}, "ts")
        for text, options in queries:
            opts = replace(RunOptions.of(engine=Engine.AUTO, **options), sink=Sink.PARQUET)
            plan = compile(text, {}, options=opts, inputs=inputs).plan
            for _ in run(plan).batches:
                pass
    with contextlib.suppress(Exception):  # a run on the serve's server still works, loading it then
        _connect_client()


def _connect_client() -> None:
    """Load what a run on the serve's Connect server needs (pyspark's Connect
    client, cetql's Spark compiler): a child runs such a plan itself.  No
    channel is opened here: each child opens its own (gRPC's channels do not
    survive a fork)."""
    import pyspark.sql.connect.session  # noqa: F401 - start-up cost paid here on purpose: the warm-up

    import cetql.surfaces.cli.on_spark  # noqa: F401 - start-up cost paid here on purpose: the warm-up


__all__ = ["NOT_HERE", "Runner", "warm_up"]
