"""Spark sessions for cetql: quiet, local by default, a cluster or a Spark
Connect server on request.

    get_spark()                          the active session, else an embedded local[*] one
    get_spark("spark://host:7077")       a standalone (or any) master
    get_spark(remote="sc://host:15002")  Spark Connect (also: SPARK_REMOTE)

The JVM's own output (log4j lines, JVM warnings) goes to a log file, never to
the terminal, unless `verbose`; `log_path()` says where.  Python workers run
on this interpreter, so they see the same packages.

A local session starts for short runs (see `bench/phases.py`): its JVM
compiles with C1 only and collects with the serial collector
(CETQL_JVM_OPTIONS replaces those), and maps Spark's classes from a class
data archive that its first run writes into the user's cache
(`class_archive`; CETQL_CLASS_ARCHIVE=off never uses one).  The archive is
never required: a missing, stale or unreadable one only costs the time it
would have saved.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from pathlib import Path

from cetql.base.errors import CetqlError, UsageError
from cetql.base.places import cache_dir, log_path  # noqa: F401 - also the session's names for them

# The local driver JVM's compilers and collector, chosen for runs of seconds
# on a few cores (bench/start_options.py; bench/RESULTS.md, "Start-up
# settings"): C1 compiles at once and leaves the cores to the query, where
# C2 would spend them on code that runs for seconds; the serial collector
# starts no threads.  Both cut the 100-event run and the 1M-event ones alike
# (the JVM's share of those is reading, moving and writing rows, not hot
# loops C2 would pay back).  CETQL_JVM_OPTIONS replaces them ("" adds none).
JIT_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def jvm_options() -> list[str]:
    """Options of the local driver JVM `get_spark` starts: JIT_OPTIONS (or
    CETQL_JVM_OPTIONS) and the class archive's."""
    given = os.environ.get("CETQL_JVM_OPTIONS")
    options = list(JIT_OPTIONS) if given is None else given.split()
    return options + class_archive()


# ---------------------------------------------------------------- class data sharing
#
# Starting Spark's JVM is mostly loading and verifying some 10,000 classes
# from its jars.  Java's class data sharing maps them from an archive
# instead: the first local run of a pyspark install writes one when its JVM
# exits (-XX:ArchiveClassesAtExit, into a file of its own), a later run
# renames a finished one into place and every run after maps it
# (-XX:SharedArchiveFile).  The archive is only ever an optimisation: the JVM
# checks it against its own version and class path and, where it does not
# fit, runs without it (-Xshare:auto, its default); a file the JVM did not
# finish has no header (the JVM writes it last) and is never renamed.

_DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")
_SETTLED = 600  # seconds after which a part without its header is abandoned (its JVM was killed)
_ATTEMPTS = 3  # runs that may try to write an archive for one install


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    import shutil

    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _archive_stem() -> str | None:
    """A name that changes with pyspark's jars and the JVM, so that an
    archive is never offered to a JVM or class path it was not made for."""
    import hashlib

    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    facts = [pyspark.__version__, str(jars.resolve()), str(jars.stat().st_mtime_ns), str(java)]
    for f in (java, *java.parent.parent.glob("lib/server/libjvm.so")):
        st = f.stat()
        facts += [str(st.st_size), str(st.st_mtime_ns)]
    digest = hashlib.sha256("\0".join(facts).encode()).hexdigest()[:16]
    return f"spark-{pyspark.__version__}-{digest}"


def _finished(path: Path) -> bool:
    """A dynamic archive whose writer got to the end (its header, written last, is there)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _DYNAMIC_MAGIC and path.stat().st_size > 4096
    except OSError:
        return False


def _whole(path: Path) -> bool:
    """A finished archive of the size its name says (the JVM does not check:
    a cut one would crash it)."""
    size = path.name.rsplit(".", 2)[-2]
    try:
        return size.isdigit() and path.stat().st_size == int(size) and _finished(path)
    except OSError:
        return False


def class_archive(write: bool = True) -> list[str]:
    """The JVM options that use (or, once, `write`) this install's class
    archive; none where archives are off, the cache cannot be written, or a
    run is writing one now."""
    if os.environ.get("CETQL_CLASS_ARCHIVE", "").lower() in ("0", "off", "no", "false"):
        return []
    try:
        stem = _archive_stem()
        folder = cache_dir() / "classes"
        if stem is None or '"' in str(folder):
            return []
        folder.mkdir(parents=True, exist_ok=True)
        archive, writing = _settle(folder, stem)
        if archive is not None:
            return [_option("-XX:SharedArchiveFile", archive)]
        attempts = folder / f"{stem}.attempts"
        tried = len(attempts.read_text().split()) if attempts.exists() else 0
        if writing or tried >= _ATTEMPTS or not write:
            return []
        with open(attempts, "a") as f:
            f.write(f"{os.getpid()}\n")
        return [_option("-XX:ArchiveClassesAtExit", folder / f"{stem}.{os.getpid()}-{time.time_ns()}.part")]
    except (OSError, ValueError):
        return []


def _settle(folder: Path, stem: str) -> tuple[Path | None, bool]:
    """(the usable archive, whether a run may be writing one now): a
    finished part becomes the archive (its size in its name), a part
    abandoned or not needed and an archive cut short are removed."""
    archive = None
    for f in folder.glob(f"{stem}.*.jsa"):
        if archive is None and _whole(f):
            archive = f
        else:
            f.unlink(missing_ok=True)
    writing = False
    for part in folder.glob(f"{stem}.*.part"):
        if _finished(part) and archive is None:
            archive = folder / f"{stem}.{part.stat().st_size}.jsa"
            os.replace(part, archive)
        elif _finished(part) or time.time() - part.stat().st_mtime > _SETTLED:
            part.unlink(missing_ok=True)
        else:
            writing = archive is None
    return archive, writing


def _option(flag: str, path: Path) -> str:
    """`flag=path`, quoted for spark-submit's option parser where the path has a space."""
    text = f"{flag}={path}"
    return f'"{text}"' if any(c.isspace() for c in text) else text


_QUIET = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
}


def driver_memory() -> str:
    """The driver memory of the local session cetql starts (CETQL_DRIVER_MEMORY, default 4g)."""
    return os.environ.get("CETQL_DRIVER_MEMORY", "4g")


def local_resources() -> tuple[str, int]:
    """(executor memory, task slots) of the session `get_spark()` starts: local[*]."""
    return driver_memory(), os.cpu_count() or 1


def _check_master(master: str, *, hint: str = " (for Spark Connect, use --remote sc://host:port)") -> None:
    ok = master.startswith(("local", "spark://", "yarn", "k8s://", "mesos://")) or master in ("local",)
    if not ok:
        raise UsageError(
            f"unknown Spark master '{master}'; expected local[*], local[N], spark://host:port, yarn or k8s://…{hint}"
        )


def get_spark(master: str | None = None, *, remote: str | None = None, verbose: bool = False,
              shuffle_partitions: int | None = None, time_zone: str = "UTC"):  # fmt: skip
    """A Spark session: Connect when `remote` (or SPARK_REMOTE without a
    master) is given, the active session when no master is, else a new one.
    A session cetql starts has `time_zone` as its session time zone (the
    reader names its zone to Spark itself, so the active session's own zone
    never changes what an input means)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    _quiet_query_loggers(verbose)
    if remote is not None and master is not None:
        raise UsageError("give --master or --remote, not both: --remote runs on the Connect server's own master")
    origin = "--remote"
    if remote is None and master is None:
        remote = os.environ.get("SPARK_REMOTE") or None
        origin = "SPARK_REMOTE"
    if remote is not None:
        spark = _connect(remote, origin)
        _set_time_zone(spark, time_zone)
        return spark
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or "local[*]"
    _check_master(master)
    cores = os.cpu_count() or 2
    conf = {
        **_QUIET,
        "spark.app.name": "cetql",
        "spark.master": master,
        "spark.sql.shuffle.partitions": str(shuffle_partitions or max(2, 2 * cores)),
        "spark.driver.memory": driver_memory(),
        "spark.sql.session.timeZone": time_zone,
    }
    local = master.startswith("local")
    if local:
        options = jvm_options()
        if options:
            conf["spark.driver.defaultJavaOptions"] = " ".join(options)
    try:
        with _launch_env(local):
            return _classic(conf, verbose)
    except CetqlError:
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"Spark did not start ({first}); its log is {log_path()}") from None


# spark-submit first runs a small JVM that only builds the real JVM's command line
_LAUNCHER_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


@contextlib.contextmanager
def _launch_env(local: bool):
    """The environment spark-submit starts the JVM in (pyspark passes it
    this process's, for as long as it starts): a local session binds to
    127.0.0.1 (no search for the machine's address, no warning that its name
    is a loopback one); spark-submit's launcher JVM starts for a short run."""
    added = {}
    if local and "SPARK_LOCAL_IP" not in os.environ:
        added["SPARK_LOCAL_IP"] = "127.0.0.1"
    if "SPARK_LAUNCHER_OPTS" not in os.environ:
        added["SPARK_LAUNCHER_OPTS"] = _LAUNCHER_OPTIONS
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _classic(conf: dict, verbose: bool):
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:  # a context exists (e.g. stopped session): reuse it
        builder = SparkSession.builder
        for k, v in conf.items():
            builder = builder.config(k, v)
        return builder.getOrCreate()
    sconf = SparkConf()
    for k, v in conf.items():
        sconf.set(k, v)
    gateway = None
    if not verbose:
        from pyspark.java_gateway import launch_gateway

        log = open(log_path(), "ab")  # noqa: SIM115 - held by the JVM for its life
        gateway = launch_gateway(sconf, popen_kwargs={"stdout": log, "stderr": log})
    sc = SparkContext(conf=sconf, gateway=gateway)
    sc.setLogLevel("INFO" if verbose else "ERROR")
    return SparkSession(sc)


def _quiet_query_loggers(verbose: bool) -> None:
    """pyspark logs every failed query's error as a JSON record on stderr
    (its query-context loggers); cetql's own one-line error says what
    happened, and the record goes to the log file."""
    if verbose:
        return
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        for h in list(logger.handlers):
            if not isinstance(h, logging.FileHandler):
                logger.removeHandler(h)
        if not logger.handlers:
            logger.addHandler(logging.FileHandler(log_path()))
        logger.propagate = False


def _set_time_zone(spark, time_zone: str) -> None:
    try:
        spark.conf.set("spark.sql.session.timeZone", time_zone)
    except Exception as e:  # noqa: BLE001 - a server that refuses it: say so, in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"the Spark Connect server refused the time zone {time_zone}: {first}") from None


def connect_address(remote: str, origin: str = "--remote") -> tuple[str, int]:
    """(host, port) of a Spark Connect address `sc://host[:port][/;k=v…]`,
    or a one-line `UsageError` naming what is wrong and where it came from."""
    import re

    shown = f"{origin} {remote!r}" if origin == "--remote" else f"{origin}={remote!r}"
    m = re.fullmatch(r"sc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]*))?(/(;[^;=/]+=[^;]*)*;?)?", remote)
    if m is None:
        raise UsageError(f"{shown} is not a Spark Connect address; expected sc://host:port, e.g. sc://localhost:15002")
    host, port = m.group(1).strip("[]"), m.group(2)
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise UsageError(f"{shown}: the port must be a number from 1 to 65535, e.g. sc://{host}:15002")
    return host, int(port) if port else 15002


def _reachable(remote: str, origin: str = "--remote", timeout: float = 10) -> None:
    """A one-line error now, where the Connect client would retry for many
    minutes against a server that is not there."""
    import socket

    host, port = connect_address(remote, origin)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as e:
        reason = e.strerror or type(e).__name__
    raise CetqlError(f"cannot reach the Spark Connect server at {remote}: {reason.lower()} "
                     "(is `cetql serve` or another Connect server running there?)")  # fmt: skip


def _connect(remote: str, origin: str = "--remote"):
    if not (remote.startswith("sc://") or remote.startswith("local")):
        shown = f"{origin} {remote!r}" if origin == "--remote" else f"{origin}={remote!r}"
        raise UsageError(f"unknown Spark Connect address: {shown}; expected sc://host:port (or local[N])")
    if remote.startswith("sc://"):
        connect_retry_seconds()  # a bad setting is named now, not as a server that cannot be reached
        _reachable(remote, origin)
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(remote).getOrCreate()
        if remote.startswith("sc://"):
            _bounded_retries(spark)
    except ImportError as e:
        raise CetqlError(f"Spark Connect needs the pyspark[connect] packages ({e.name} is missing)") from None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"cannot reach the Spark Connect server at {remote}: {first}") from None
    return spark


# How long a Connect client waits for a server it has lost, in all: it
# retries (doubling its wait up to 8 s) for about this long, then fails.
# Spark's own default waits at least 10 minutes, which left a query whose
# server had died hanging without a word.
CONNECT_RETRY_SECONDS = 30


def connect_retry_seconds() -> float:
    """How long a Connect client retries (CETQL_CONNECT_RETRY_SECONDS, default 30)."""
    text = os.environ.get("CETQL_CONNECT_RETRY_SECONDS", "")
    if not text:
        return CONNECT_RETRY_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= 3600:
        raise UsageError(f"CETQL_CONNECT_RETRY_SECONDS={text!r}: give a number of seconds from 0 to 3600")
    return seconds


def _bounded_retries(spark) -> None:
    import warnings

    from pyspark.sql.connect.client.retries import DefaultPolicy

    # the client warns as it gives up; cetql's own error says so, once
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")

    waits, wait, retries = 0.0, 0.05, 0
    bound = connect_retry_seconds()
    while waits < bound:
        waits += wait
        wait = min(wait * 4, 8.0)
        retries += 1
    spark.client.set_retry_policies([DefaultPolicy(max_retries=retries, max_backoff=8000)])


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")

