"""Finding a running `cetql serve`: the state files it leaves in the
user's runtime folder, the identity a client and a serve must share (this
Python, this cetql), the serve's session slots, and the status a run in
the serve's process gives for "run it in the client".  Standard library
and cetql's base only: `cetql.surfaces.cli.launch` reads it before anything
else of cetql loads.

Trust (docs/security.md): a folder, state file or socket is used only when
this user owns it and no one else may write to it (`untrusted`), a socket's
other end only when it runs as this user (`peer_uid`, Linux), and a run
hands over only the environment of `HANDED_ENV`."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import struct
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cetql.base.places import cache_dir
from cetql.base.processes import pid_exists
from cetql.base.version import VERSION

# a handed-over run's exit status for "run it in the client" (a plan for a Spark of its own, a stream, a workload on
# Spark): nothing was said or written
NOT_HERE = 254


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


def untrusted(st: os.stat_result, *, private: bool = False) -> str | None:
    """Why a serve's folder, state file or socket with this status cannot be
    trusted (None: it can): another user owns it, or others may write to it
    (`private`: a file with a token may not even be read by others)."""
    if st.st_uid != os.getuid():
        return f"it is owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & (0o077 if private else 0o022):
        return f"its mode {mode:04o} lets {'others read' if private else 'group or others write'} it"
    return None


_WARNED: set[str] = set()


QUIET = False  # a serve's child: its client has said every warning already


def _warn(path: Path, why: str) -> None:
    """One line on stderr, once a process, for a path no serve of this user is used from."""
    if not QUIET and str(path) not in _WARNED:
        _WARNED.add(str(path))
        fix = ("chmod 700 it if it is yours, else set XDG_RUNTIME_DIR to a folder of your own" if path.is_dir()
               else "remove it if it is yours")  # fmt: skip
        print(f"warning: ignoring {path}: {why}; this run uses no cetql serve from it ({fix})", file=sys.stderr)


def _folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot hold a serve's files (None: it can; FileNotFoundError: it is not there)."""
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid != os.getuid():
            return f"it is a symbolic link made by uid {st.st_uid}, not by you (uid {os.getuid()})"
        st = os.stat(folder)
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    return untrusted(st)


def trusted_folder(folder: Path) -> bool:
    """Is `folder` there, this user's, and writable by no one else?  Else (a
    folder that is there) one line of warning."""
    try:
        why = _folder_problem(folder)
    except OSError:
        return False
    if why is not None:
        _warn(folder, why)
    return why is None


class UntrustedFolder(PermissionError):
    """A serve's state folder that is there but another user's, or writable by others."""


def own_folder() -> Path:
    """The serve's state folder, made this user's alone (0700) if new;
    `UntrustedFolder` (its message names it, why, and the fix) if it is
    there and another user's or writable by others: never used, never changed."""
    folder = state_dir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    why = _folder_problem(folder)
    if why is not None:
        raise UntrustedFolder(f"cetql serve will not keep its state in {folder}: {why}; remove it, chmod 700 it if "
                              "it is yours, or set XDG_RUNTIME_DIR to a folder of your own")  # fmt: skip
    return folder


def write_state(url: str, args, jvm: int, runner=None, token: str | None = None) -> Path | None:
    """The state file clients find the serve by: this user's alone (0600), it holds the server's token."""
    try:
        folder = own_folder()
        path = folder / f"serve-{args.port}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)  # a killed serve's of the same pid: in a folder of this user's alone
        state = {"url": url, "port": args.port, "pid": os.getpid(), "jvm": jvm, "master": args.master,
                 "driver_memory": args.driver_memory, "started": time.time(), **identity(),
                 "runner": str(runner.path) if runner is not None else None, "token": token}  # fmt: skip
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)
        os.replace(tmp, path)
        return path
    except OSError:  # not found by clients, still served
        return None


def _read_state(path: Path) -> dict | None:
    """A state file's content, if this user wrote it and no one else may read
    or change it (else one line of warning); None too for one that is not a state."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ELOOP:
            _warn(path, "it is a symbolic link")
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        why = untrusted(st, private=True) or (None if stat.S_ISREG(st.st_mode) else "it is not a file")
        if why is not None:
            _warn(path, why)
            return None
        try:
            state = json.loads(f.read(1 << 20))
        except (OSError, ValueError):
            return None
    return state if isinstance(state, dict) else None


def _states() -> list[tuple[Path, dict]]:
    """(path, content) of each state file this user's serves left in a folder of this user's."""
    folder = state_dir()
    if not trusted_folder(folder):
        return []
    try:
        files = sorted(folder.glob("serve-*.json"))
    except OSError:
        return []
    return [(f, state) for f in files if (state := _read_state(f)) is not None]


def _alive(pid: int) -> bool:
    """A process `pid` runs and (where /proc tells) it is a `cetql serve`, not another that got its number."""
    if not pid_exists(pid):
        return False
    try:
        return b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def running() -> str | None:
    """The address of a `cetql serve` of this user on this machine that runs
    this Python and this cetql and answers now (the latest started), else
    None; files of servers that are gone are removed."""
    found = []
    me = identity()
    for f, state in _states():
        try:
            pid, port, url = int(state["pid"]), int(state["port"]), str(state["url"])
        except (ValueError, KeyError, TypeError):
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


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def token_for(host: str, port: int) -> str | None:
    """The token of this user's running serve that listens on `port` of this
    machine (`host` a loopback address), for a Spark Connect client to
    send; None for any other server."""
    if host not in LOOPBACK:
        return None
    for _, state in _states():
        try:
            if int(state["port"]) == port and state.get("token") and _alive(int(state["pid"])):
                return str(state["token"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


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
    folder = state_dir() / "sessions"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return None
    if not (trusted_folder(folder.parent) and trusted_folder(folder)):
        return None
    for k in range(SESSION_SLOTS):
        try:
            fd = os.open(folder / f"slot-{k}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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


def serve_for(no_serve: bool, master: str | None, remote: str | None) -> str | None:
    """The serve a `cetql run` uses (`discovered`), unless --no-serve."""
    return None if no_serve else discovered(master, remote)


def runner_socket() -> Path | None:
    """The socket of the latest running serve of this user, Python and cetql
    that takes runs in its process, else None."""
    me, found = identity(), []
    for _, state in _states():
        if not state.get("runner") or any(state.get(k) != v for k, v in me.items()):
            continue
        found.append((float(state.get("started", 0)), str(state["runner"])))
    return Path(max(found)[1]) if found else None


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux's
    SO_PEERCRED); None where the system does not tell."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid


def connect_runner(path: Path) -> socket.socket | None:
    """A connection to a serve's runner socket, if the socket is this user's
    (no one else may write to it) and the process listening runs as this
    user; else None, with one line of warning."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    why = untrusted(st) or (None if stat.S_ISSOCK(st.st_mode) else "it is not a socket")
    if why is not None:
        _warn(path, why)
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        uid = peer_uid(conn)
    except OSError:
        conn.close()
        return None
    if uid is not None and uid != os.getuid():
        conn.close()
        _warn(path, f"the process listening on it runs as uid {uid}, not as you (uid {os.getuid()})")
        return None
    return conn


# The environment a `cetql run` hands to the serve's child, and all the
# child gets (docs/security.md): what a run in process reads — where it
# keeps files (HOME, TMPDIR, XDG_*), how it prints (TZ, the locale, the
# terminal's size and colour wishes), cetql's own settings — and nothing
# else: no secrets, no Spark settings; USER: the user a Connect session is
# opened as (a client's own run sends it: the same server session, slots
# and Python workers, whichever process runs the plan) (a plan for Spark runs there only on
# the serve's own Connect server, whose settings are the serve's; one that
# would start a Spark of its own comes back undone and runs in the client,
# with its whole environment).
HANDED_ENV = ("PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM", "COLUMNS", "LINES", "NO_COLOR",
              "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "USER")  # fmt: skip
HANDED_ENV_PREFIXES = ("CETQL_", "LC_")


def handed_env(environ) -> dict[str, str]:
    """The part of `environ` of `HANDED_ENV`."""
    return {str(k): str(v) for k, v in environ.items() if k in HANDED_ENV or str(k).startswith(HANDED_ENV_PREFIXES)}
