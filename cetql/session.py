"""Spark sessions for cetql, and the `spark.cet(...)` extension.

`get_spark()` returns the active session, or starts an embedded one
(`local[*]`, UI off, Python workers on this interpreter so they see the same
packages).  `import cetql` adds `SparkSession.cet`:

    df = spark.cet("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100", checks_df)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def get_spark(master: str | None = None, *, shuffle_partitions: int | None = None):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    cores = os.cpu_count() or 2
    log4j = Path(__file__).with_name("log4j2.properties")
    java_opts = f"-Dlog4j.configurationFile=file:{log4j} -Dlog4j2.configurationFile=file:{log4j}"
    java_opts += " " + os.environ.get("CETQL_JAVA_OPTS", "")
    builder = (
        SparkSession.builder.appName("cetql")
        .master(master or "local[*]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(2, 2 * cores)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.driver.memory", os.environ.get("CETQL_DRIVER_MEMORY", "4g"))
        .config("spark.driver.extraJavaOptions", java_opts)
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _cet(self, query: str, data=None, *, params: dict | None = None, **options):
    """`spark.cet(query, data, params={...}, time_col="ts", …)` → DataFrame."""
    from .compiler import compile

    return compile(query, params).run(data, spark=self, **options)


def install() -> None:
    """Add `SparkSession.cet` (done on `import cetql` when pyspark is present)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return
    if not hasattr(SparkSession, "cet"):
        SparkSession.cet = _cet
