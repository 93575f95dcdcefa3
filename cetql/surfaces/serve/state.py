"""Finding a running `cetql serve`: the state files it leaves in the
user's runtime folder, the identity a client and a serve must share (this
Python, this cetql), the serve's session slots, and the status a run in
the serve's process gives for "this plan runs on Spark".  Standard library
and cetql's base only: `cetql.surfaces.cli.launch` reads it before anything
else of cetql loads."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cetql.base.places import cache_dir
from cetql.base.processes import pid_exists
from cetql.base.version import VERSION

NOT_HERE = 254  # a handed-over run's exit status for "this plan runs on Spark": nothing was said or written


def state_dir() -> Path:
    """Where running servers leave their state: $XDG_RUNTIME_DIR/cetql, else the cache's serve/."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "cetql"
    return cache_dir() / "serve"


def identity() -> dict:
    """What a client must share with a server to send it queries: the
    Python its workers run and the cetql they import."""
    package = Path(__file__).resolve().parents[2]  # cetql/
    return {"python": os.path.realpath(sys.executable), "cetql": str(package), "version": VERSION}


def write_state(url: str, args, jvm: int, runner=None) -> Path | None:
    try:
        folder = state_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"serve-{args.port}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        state = {"url": url, "port": args.port, "pid": os.getpid(), "jvm": jvm, "master": args.master,
                 "driver_memory": args.driver_memory, "started": time.time(), **identity(),
                 "runner": str(runner.path) if runner is not None else None}  # fmt: skip
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)
        return path
    except OSError:  # not found by clients, still served
        return None


def _alive(pid: int) -> bool:
    """A process `pid` runs and (where /proc tells) it is a `cetql serve`, not another that got its number."""
    if not pid_exists(pid):
        return False
    try:
        return b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def running() -> str | None:
    """The address of a `cetql serve` on this machine that runs this Python
    and this cetql and answers now (the latest started), else None; files
    of servers that are gone are removed."""
    try:
        files = list(state_dir().glob("serve-*.json"))
    except OSError:
        return None
    found = []
    me = identity()
    for f in files:
        try:
            state = json.loads(f.read_text())
            pid, port, url = int(state["pid"]), int(state["port"]), str(state["url"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            f.unlink(missing_ok=True)
            continue
        if any(state.get(k) != v for k, v in me.items()):
            continue
        host = url.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
        try:
            with socket.create_connection((host, port), timeout=1):
                pass
        except OSError:
            continue
        found.append((float(state.get("started", 0)), url))
    return max(found)[1] if found else None


# Server sessions a `cetql run` on a found server takes, one process at a
# time each (a lock on its slot file), and leaves open for the next: a new
# Connect session gets Python workers of its own (Spark keys them by the
# session), so a run on a fresh session pays their start (about 1 s) and the
# kernels' import again, and leaves them idle on the server.
SESSION_SLOTS = 4


@dataclass
class Slot:
    """A held server session: its id, and the open, locked file that holds it
    for this process until `release` (or the process's end)."""

    session_id: str
    fd: int

    def renew(self) -> None:
        """A new id (the server closed the old one: its idle timeout); an id
        that cannot be written is used by this run alone."""
        self.session_id = str(uuid.uuid4())
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, self.session_id.encode(), 0)
        except OSError:
            pass

    def release(self) -> None:
        """Let another run take the slot (its session stays open on the server)."""
        if self.fd >= 0:
            os.close(self.fd)  # closing the file drops its lock
            self.fd = -1


def session_slot() -> Slot | None:
    """A free slot's session, held by this process; None when all are in
    use (the run then has a session of its own, as any Connect client)."""
    try:
        folder = state_dir() / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    for k in range(SESSION_SLOTS):
        try:
            fd = os.open(folder / f"slot-{k}", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        slot = Slot("", fd)
        try:
            slot.session_id = str(uuid.UUID(os.pread(fd, 64, 0).decode().strip()))
        except ValueError:
            slot.renew()
        return slot
    return None


def discovered(master: str | None, remote: str | None) -> str | None:
    """The server `cetql run` sends its query to when it is given no
    --master, --remote or SPARK_REMOTE and this process holds no session:
    `running()`'s."""
    if master is not None or remote is not None or os.environ.get("SPARK_REMOTE"):
        return None
    sql = sys.modules.get("pyspark.sql")  # not imported: no session here
    if sql is not None and sql.SparkSession.getActiveSession() is not None:
        return None
    core = sys.modules.get("pyspark")  # a context without an active session (another thread's) counts too
    if core is not None and getattr(core.SparkContext, "_active_spark_context", None) is not None:
        return None
    return running()


def runner_socket() -> Path | None:
    """The socket of the latest running serve of this Python and cetql that
    takes runs in its process, else None."""
    try:
        files = list(state_dir().glob("serve-*.json"))
    except OSError:
        return None
    me, found = identity(), []
    for f in files:
        try:
            state = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(state, dict) or not state.get("runner") or any(state.get(k) != v for k, v in me.items()):
            continue
        found.append((float(state.get("started", 0)), state["runner"]))
    return Path(max(found)[1]) if found else None
