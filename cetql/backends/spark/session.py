"""Spark sessions for cetql: quiet, local by default, a cluster or a Spark
Connect server on request.

    get_spark()                          the active session, else an embedded local[*] one
    get_spark("spark://host:7077")       a standalone (or any) master
    get_spark(remote="sc://host:15002")  Spark Connect (also: SPARK_REMOTE)

The JVM's own output (log4j lines, JVM warnings) goes to a log file, never to
the terminal, unless `verbose`; `log_path()` says where.  Python workers run
on this interpreter, so they see the same packages.

A local session starts for short runs (see `bench/phases.py`): its JVM
compiles with C1 only and collects with the serial collector; for a run
the plan calls long (millions of events: `EngineChoice.long_run`) it keeps
C2 (CETQL_JVM_OPTIONS replaces either), and maps Spark's classes from a class
data archive that its first run writes into the user's cache before it
ends (`archive`; CETQL_CLASS_ARCHIVE=off never uses one).  The archive is
never required: a missing, stale or unreadable one only costs the time it
would have saved.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys

from cetql.backends.spark import archive
from cetql.backends.spark.archive import class_archive
from cetql.backends.spark.connect import _connect, shown_address
from cetql.backends.spark.failures import start_failure
from cetql.backends.spark.gateway import launch
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


# A long run (the plan's `engine.long_run`: millions of events) keeps C2: its code runs long enough to pay
# back its compiles (bench/RESULTS.md, "Start-up settings": A1 1.34x faster at 5M events, 1.85x at 20M); the serial collector stays.
LONG_RUN_OPTIONS = ("-XX:+UseSerialGC",)


def jvm_options(long_run: bool = False) -> list[str]:
    """Options of the local driver JVM `get_spark` starts: JIT_OPTIONS, or
    LONG_RUN_OPTIONS for a long run (CETQL_JVM_OPTIONS replaces either), and
    the class archive's."""
    given = os.environ.get("CETQL_JVM_OPTIONS")
    options = list(LONG_RUN_OPTIONS if long_run else JIT_OPTIONS) if given is None else given.split()
    return options + class_archive()


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


# the masters Spark itself parses (SparkContext.createTaskScheduler), spelled as it reads them
_MASTERS = (
    r"local",
    r"local\[(?:[1-9][0-9]*|\*)\]",  # threads: at least one
    r"local\[(?:[1-9][0-9]*|\*)\s*,\s*[0-9]+\]",  # and task failures allowed
    r"local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]",  # workers, cores, memory (MB)
    r"spark://[^\s/:,]+:[0-9]{1,5}(?:,[^\s/:,]+:[0-9]{1,5})*",  # one or more standalone masters
    r"yarn",
    r"k8s://\S+",
)


def _check_master(master: str, *, hint: str = " (for Spark Connect, use --remote sc://host:port)") -> None:
    """A master Spark can parse, refused here in one line (Spark would fail
    later, inside its context's start, with a JVM call's name)."""
    import re

    if not any(re.fullmatch(m, master) for m in _MASTERS):
        shown = master if master.isprintable() else repr(master)[1:-1]
        raise UsageError(f"unknown Spark master '{shown}'; expected local, local[N] or local[*] (N at least 1), "
                         f"local[N,F], local-cluster[N,C,M], spark://host:port, yarn or k8s://…{hint}")  # fmt: skip


def get_spark(master: str | None = None, *, remote: str | None = None, verbose: bool = False,
              shuffle_partitions: int | None = None, time_zone: str = "UTC", token_for=None,
              long_run: bool = False):  # fmt: skip
    """A Spark session: Connect when `remote` (or SPARK_REMOTE without a
    master) is given (with the token `token_for(host, port)` gives a server
    there: `serve.state.token_for`), the active session when no master is, else a new one.
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
        spark = _connect(remote, origin, token_for)
        _set_time_zone(spark, time_zone, remote)
        return spark
    if master is not None:
        _check_master(master)  # an empty one too: refused, not taken for none
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or "local[*]"
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
        options = jvm_options(long_run)
        if options:
            conf["spark.driver.defaultJavaOptions"] = " ".join(options)
    try:
        with _launch_env(local):
            spark = _classic(conf, verbose)
        if archive.writing():
            atexit.register(_save_classes)
        return spark
    except CetqlError:
        raise
    except Exception as e:
        raise start_failure(e, master) from None


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
    if SparkContext._gateway is None:  # else pyspark keeps its JVM (of a stopped session): no second one
        if verbose:
            gateway = launch(sconf, None)
        else:
            with open(log_path(), "ab") as log:  # the JVM holds its own copy for its life
                gateway = launch(sconf, {"stdout": log, "stderr": log})
    sc = SparkContext(conf=sconf, gateway=gateway)
    sc.setLogLevel("INFO" if verbose else "ERROR")
    spark = SparkSession(sc)
    _STARTED.append(spark)
    return spark


_STARTED: list = []  # the sessions this process started (their SparkContext and JVM its own)


def started_here(spark) -> bool:
    """Whether `spark` is a session this process started (not a user's, not a test's)."""
    return any(s is spark for s in _STARTED)


def _save_classes() -> None:
    """At this process's end, while its JVM lives: the class archive this
    run was chosen to write (`archive.save`), written before the run ends."""
    from pyspark import SparkContext

    try:
        pid = int(SparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - no JVM to ask (gone, or never started): nothing to write
        pid = None
    archive.save(pid, say=lambda line: print(line, file=sys.stderr, flush=True))


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


def _set_time_zone(spark, time_zone: str, remote: str) -> None:
    """The session's zone: the first call to the server, so also where a server that wants a token says so."""
    try:
        spark.conf.set("spark.sql.session.timeZone", time_zone)
    except Exception as e:  # noqa: BLE001 - a server that refuses it: say so, in one line
        if "UNAUTHENTICATED" in str(e):
            raise CetqlError(f"the Spark Connect server at {shown_address(remote)} refused this client: it takes "
                             "only clients that send its token (a `cetql serve` of yours: run with the "
                             "XDG_RUNTIME_DIR it runs with; another server: add ;token=… to the address; "
                             "docs/security.md)") from None  # fmt: skip
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"the Spark Connect server refused the time zone {time_zone}: {first}") from None
