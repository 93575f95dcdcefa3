"""The `cetql` command's first step: a `cetql run` that a running `cetql
serve` of this Python and cetql can take is handed to it, whole, before
this process imports the compiler.  Only a serve of this user's is
trusted with a run, its streams and its environment (docs/security.md):
its state folder, state file and socket owned by this user and writable by
no one else, the process on the socket's other end running as this user
(`state.connect_runner`); anything else is ignored, with one line of
warning, and the run goes on here.

The serve's process keeps the compiler, the kernels and their compiled
loops loaded; for each run it forks a child that takes this process's
standard input, output and error (passed over a Unix socket), its working
folder and the part of its environment a run reads (`state.HANDED_ENV`),
and runs the command as `cetql.cli.main` would — only if the plan runs in
process (`--engine`, `physical.engine`) or on the serve's own Spark Connect server (pyspark's
Connect client is loaded there too); a plan that would start a Spark of its own (`--master`, `--remote`) comes back
undone (`NOT_HERE`) and runs here as usual.  Ctrl-C and SIGTERM here
are passed on to the child; if this process dies, the child is stopped.

Where a run runs is the planner's decision alone: a run that asks for Spark
(`--engine spark`, `--master`, …) is handed over like any other, and runs
on the serve's server or comes back undone.  Not handed over: other commands, `--no-serve`, `--stream`,
`--help`, a run under `SPARK_REMOTE` (the variable, which may carry a
token, is not handed to the serve), a query read from standard input (`-`:
a plan for Spark would come back with the query read).  Standard library and the serve's state (`serve.state`) only: this module
runs before anything else of cetql is imported.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import sys
import threading
from typing import NoReturn

from cetql.base.processes import begin_command
from cetql.surfaces.serve.state import NOT_HERE, connect_runner, handed_env, runner_socket

_KEPT_FLAGS = ("--no-serve", "--stream", "--help", "-h")


def command() -> NoReturn:
    """The `cetql` command (`python -m cetql` too): `main`, then the end of
    the process (`end`)."""
    begin_command(sys.argv[1] if len(sys.argv) > 1 else "")
    end(main())


def end(status: int | None) -> NoReturn:
    """End the process as `sys.exit(status)` does — the threads that are
    not daemons waited for, the exit handlers run (temporary folders
    removed, sessions stopped), standard output and error flushed — but
    without the interpreter's teardown of every object left (after an
    embedded run, a fifth of a second: DuckDB's tables, Arrow's buffers,
    numba's compiled code), which nothing of a finished command needs."""
    threading._shutdown()  # noqa: SLF001 - Python's own first step: thread pools told to end, threads joined
    atexit._run_exitfuncs()  # noqa: SLF001 - and its second
    code = 0 if status is None else status
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:  # closed by the command itself: nothing to flush, as Python's exit
            continue
        try:
            stream.flush()
        except OSError:  # closed by its reader: status 120, as Python's exit says it
            code = code or 120
    os._exit(code)


def main() -> int:
    argv = sys.argv[1:]
    try:
        status = handed_over(argv) if _may_hand_over(argv) else None
        if status is not None:
            return status
        from cetql.surfaces.cli.main import (
            main as cli_main,  # start-up cost: the compiler loads only once no serve took the run
        )

        return cli_main(argv)
    except KeyboardInterrupt:  # Ctrl-C before the command's own handling began (while cetql loads)
        print("cancelled", file=sys.stderr)
        return 130


def _may_hand_over(argv: list[str]) -> bool:
    if not argv or argv[0] != "run" or os.environ.get("SPARK_REMOTE"):
        return False
    if any(s is None for s in (sys.stdin, sys.stdout, sys.stderr)):  # a closed standard stream: nothing to pass
        return False
    for a in argv[1:]:
        name = a.split("=", 1)[0]
        if a == "-h":
            return False
        if len(name) > 2 and name.startswith("--") and any(f.startswith(name) for f in _KEPT_FLAGS):
            return False  # the flag, or an abbreviation argparse reads as it
        if a == "-" or a.startswith(("/dev/", "/proc/")) or _special(a):
            return False  # read once (standard input, a pipe), or only this process's (/dev/fd/N)
    return True


def _special(path: str) -> bool:
    """A path that names something other than a file or a folder (a pipe, a device)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    import stat

    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def handed_over(argv: list[str]) -> int | None:
    """The exit status of the run as the serve's child ran it, or None when
    it did not (no serve, it refused, or the plan runs on a Spark of this process's own)."""
    path = runner_socket()
    conn = connect_runner(path) if path is not None else None
    if conn is None:
        return None
    try:
        mask = os.umask(0o022)
        os.umask(mask)
        env = handed_env(os.environ)
        request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": env, "umask": mask}).encode()
        fds = [sys.stdin.fileno(), sys.stdout.fileno(), sys.stderr.fileno()]
        socket.send_fds(conn, [len(request).to_bytes(8, "big") + request], fds)
    except (OSError, ValueError):  # gone, or no standard streams to pass
        conn.close()
        return None
    previous = {}

    def forward(signum, _frame):
        try:
            conn.sendall(b"I" if signum == signal.SIGINT else b"T")
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # ignored here (a background job): not passed on either
            previous[sig] = signal.signal(sig, forward)
    try:
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                break
            reply += chunk
        return _status(reply)
    except OSError:
        return _status(b"")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        conn.close()


def _status(reply: bytes) -> int | None:
    """The run's exit status from the serve's reply; a reply cut short (the
    serve stopped after it took the run) is a failed run, never run twice."""
    try:
        answer = json.loads(reply)
        status = int(answer["status"])
    except (ValueError, KeyError, TypeError):
        answer, status = {"serve_stopped": True}, 1
    if answer.get("serve_stopped"):
        try:
            print("error: cetql serve stopped while it ran the query; run it again (--no-serve: in this process)",
                  file=sys.stderr)  # fmt: skip
        except OSError:  # a full or closed standard error: the status says it
            pass
        return 1
    return None if status == NOT_HERE else status
