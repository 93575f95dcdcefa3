"""`cetql serve`: a long-lived Spark Connect server that `cetql run --remote`,
`cetql repl --remote` and `spark.cet` on a Connect session reuse, so a query
pays for its work and not for starting Spark.

    cetql serve [--port 15002] [--host 127.0.0.1] [--master local[*]] [--driver-memory 4g] [--conf K=V …]

It runs pyspark's own Connect server (`spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`) in the foreground,
its Python workers on this interpreter (so they import this cetql), its log
in the cetql log file.  Ctrl-C or SIGTERM stops it and everything it started;
if cetql is killed, the server is killed with it (Linux).

While it listens it keeps a small state file (its address, its process,
the Python and cetql it runs, the token its clients send) in the user's
runtime directory, the user's alone, removed when it stops: `cetql run` of
this user on this machine, with the same Python and cetql, finds it there
(`running()`) and sends its query to it instead of starting a Spark of its
own.  A file whose server is gone, or does not answer, is ignored; so is one
of another user's, or in a folder others may write to (docs/security.md).
Runs are handed whole to this process's warm runner (`surfaces.serve.runner`,
`surfaces.cli.launch`) before the client imports the compiler: a plan that
runs in process, or on this server, runs there.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from cetql.backends.spark.archive import class_archive
from cetql.backends.spark.session import _check_master, driver_memory, log_path
from cetql.base.errors import CetqlError, UsageError
from cetql.base.options import parse_size
from cetql.base.processes import die_with_parent
from cetql.surfaces.serve.state import LOOPBACK, UntrustedFolder, own_folder, write_state

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def add_parser(sub, run_command) -> None:
    """`run_command(argv, only_in_process=True)`: how the serve's children run a handed-over command (the CLI's)."""
    p = sub.add_parser("serve", help="keep a Spark Connect server running for `run --remote` and the REPL")
    p.add_argument("--port", default=15002, help="the port to listen on (default 15002, Connect's own)")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only)")  # fmt: skip
    p.add_argument("--master", default="local[*]", help="where the server runs queries (default local[*])")
    p.add_argument("--driver-memory", default=driver_memory(),
                   help="the server's JVM memory; with local[*] also its executor's (default 4g)")  # fmt: skip
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--verbose", action="store_true", help="let the server's log reach the terminal")
    p.add_argument("--start-timeout", default=300, metavar="SECONDS",
                   help="give up if the server does not listen within this long (default 300)")  # fmt: skip
    p.set_defaults(func=lambda args: cmd_serve(args, run_command))


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _client_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to `host`."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _listening(host: str, port: int) -> bool:
    target = _client_host(host).strip("[]")
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


def command(args) -> list[str]:
    """The spark-submit command line of the server."""
    parse_size(args.driver_memory, "--driver-memory", bare="m")  # the JVM's own message would only reach the log
    _check_master(args.master, hint=" (where the server runs its queries)")
    conf = {
        "spark.connect.grpc.binding.port": str(args.port),
        "spark.connect.grpc.binding.address": args.host,
        "spark.ui.enabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.sql.shuffle.partitions": str(max(2, 2 * (os.cpu_count() or 2))),
    }
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {item!r} is not of the form KEY=VALUE")
        if key.strip() in ("spark.connect.grpc.binding.port", "spark.connect.grpc.binding.address"):
            raise UsageError(f"--conf {key.strip()}: use --port and --host, which this command waits on")
        conf[key.strip()] = value
    cmd = [str(_spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", args.master,
           "--driver-memory", args.driver_memory, "--name", "cetql serve"]  # fmt: skip
    archive = class_archive(write=False)  # a long-lived server uses the archive, never writes it
    if archive:
        conf.setdefault("spark.driver.defaultJavaOptions", " ".join(archive))
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd


def _server_env(args) -> tuple[dict, str | None]:
    """(the server's environment, the token its clients must send): a server
    on this machine's loopback address takes only clients that send the
    token kept in the state file, this user's alone (docs/security.md); one
    that listens on another address takes any client that reaches it
    (pyspark's client sends a token only over TLS or to localhost), said once."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(_spark_home())}
    env.pop("SPARK_REMOTE", None)
    token = None
    if args.host in LOOPBACK:
        token = env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = secrets.token_urlsafe(32)  # in the environment: not in ps
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    elif not env.get("SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        print(f"warning: --host {args.host}: any client that reaches this address may run queries as you "
              "(a token needs TLS there); --host 127.0.0.1 keeps the server to your user", file=sys.stderr)  # fmt: skip
    return env, token


def _state_folder() -> Path:
    """The serve's state folder, this user's alone, or a one-line `UsageError` saying why not."""
    try:
        return own_folder()
    except UntrustedFolder as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cetql serve cannot make its state folder ({e.strerror}: {e.filename}); "
                         "set XDG_RUNTIME_DIR to a folder of your own") from None  # fmt: skip


def cmd_serve(args, run_command) -> int:
    cmd = command(args)
    _state_folder()  # before the server starts: its state would go nowhere a client trusts
    if _listening(args.host, args.port):
        raise UsageError(f"port {args.port} is in use (a server already running?); choose another with --port")
    env, token = _server_env(args)
    log = log_path().with_name(f"serve-{args.port}.log")  # this server's alone, so its errors can be found
    out = None if args.verbose else open(log, "wb")  # noqa: SIM115 - closed below
    began = time.monotonic()
    server = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if out else None, env=env,
                              start_new_session=True, preexec_fn=die_with_parent)  # fmt: skip
    stopping = {"asked": False}
    state = None

    def ask_stop(*_):
        stopping["asked"] = True

    # both set here: a shell's background job starts with SIGINT ignored, and Ctrl-C must still stop it
    previous = {sig: signal.signal(sig, ask_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    url = f"sc://{_client_host(args.host)}:{args.port}"
    listening = False
    runner = None
    try:
        while not _listening(args.host, args.port):
            if server.poll() is not None:
                raise CetqlError(f"the Spark Connect server exited ({server.returncode}) before listening"
                                 f"{_cause(log)}; its log is {log}")  # fmt: skip
            if stopping["asked"]:
                return 0
            if time.monotonic() - began > args.start_timeout:
                raise CetqlError(f"the Spark Connect server did not listen on port {args.port} within "
                                 f"{args.start_timeout:.0f} s (--start-timeout); its log is {log}")  # fmt: skip
            time.sleep(0.3)
        listening = True
        runner = _runner(args.port, run_command)
        state = write_state(url, args, server.pid, runner, token)
        _say_serving(url, args, time.monotonic() - began, log, state if token is not None else None)
        while server.poll() is None and not stopping["asked"]:
            time.sleep(0.3)
        if not stopping["asked"]:
            raise CetqlError(f"the Spark Connect server stopped ({server.returncode}); its log is {log}")
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        if state is not None:
            state.unlink(missing_ok=True)  # clients stop finding it before it stops answering
        if runner is not None:
            runner.close()
        _stop(server)  # with the handlers still set: a second Ctrl-C does not cut the stop short
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if out is not None:
            out.close()
        if listening:
            print("server stopped", file=sys.stderr, flush=True)


def _say_serving(url: str, args, took: float, log: Path, token_file: Path | None) -> None:
    print(f"serving Spark Connect on {url} ({args.master}, up in {took:.1f} s)", flush=True)
    print(f"  cetql run QUERY --input … --remote {url}   (or SPARK_REMOTE={url})", flush=True)
    if token_file is not None:  # the token itself is never printed
        print(f"  other Connect clients: sc://localhost:{args.port}/;token=… (the token is in {token_file})", flush=True)
    print(f"  Ctrl-C stops it; its log is {log}", flush=True)


def _cause(log: Path) -> str:
    """The last line of the server's log that names an error, if any."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        if any(w in line for w in ("Exception", "Error", "Invalid", "error:")):
            return ": " + line.strip()[:300]
    return ""


def _stop(server: subprocess.Popen) -> None:
    """The server's whole process group: SIGTERM, then SIGKILL after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, None)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(timeout=wait)
            if sig == signal.SIGTERM:
                os.killpg(server.pid, signal.SIGKILL)  # what outlived the JVM (Python workers)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def _runner(port: int, run_command):
    """The runner of runs in process (`cetql.runner`), or None where its
    socket cannot be made (runs then go to the Spark Connect server)."""
    from cetql.surfaces.serve.runner import Runner  # start-up cost: the compiler, for the serve alone

    try:
        return Runner(own_folder() / f"serve-{port}.sock", run_command)
    except OSError:
        return None


