"""Spark sessions for cetql: quiet, local by default, a cluster or a Spark
Connect server on request.

    get_spark()                          the active session, else an embedded local[*] one
    get_spark("spark://host:7077")       a standalone (or any) master
    get_spark(remote="sc://host:15002")  Spark Connect (also: SPARK_REMOTE)

The JVM's own output (log4j lines, JVM warnings) goes to a log file, never to
the terminal, unless `verbose`; `log_path()` says where.  Python workers run
on this interpreter, so they see the same packages.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .errors import CetqlError, UsageError


def log_path() -> Path:
    base = os.environ.get("CETQL_LOG_DIR") or os.path.join(tempfile.gettempdir(), f"cetql-{os.getuid()}")
    Path(base).mkdir(parents=True, exist_ok=True)
    return Path(base) / "spark.log"


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
    try:
        return _classic(conf, verbose)
    except CetqlError:
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"Spark did not start ({first}); its log is {log_path()}") from None


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


def _bounded_retries(spark) -> None:
    import warnings

    from pyspark.sql.connect.client.retries import DefaultPolicy

    # the client warns as it gives up; cetql's own error says so, once
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")

    waits, wait, retries = 0.0, 0.05, 0
    while waits < CONNECT_RETRY_SECONDS:
        waits += wait
        wait = min(wait * 4, 8.0)
        retries += 1
    spark.client.set_retry_policies([DefaultPolicy(max_retries=retries, max_backoff=8000)])


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")

