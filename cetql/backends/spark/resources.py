"""What the planner needs to know of a Spark session (its resources), read
from its configuration only — no job, no JVM call, so Connect sessions
answer too — and of the session `cetql run` would start, before any exists."""

from __future__ import annotations

import os

from cetql.backends.spark.session import local_resources
from cetql.planner.logical.plan import Resources


def session_resources(spark) -> Resources:
    """What the planner needs to know of a session: the memory its executors
    have for Python (spark.executor.pyspark.memory if set, else the
    executor's — local mode: the driver's, where its executor runs), how many
    tasks one runs at once, how many the session runs at once, whether the
    GraphFrames JVM package is on its classpath.  Read from its
    configuration only (no job, no JVM call), so Connect sessions answer too."""
    conf = _conf(spark)
    master = conf("spark.master") or ""
    local = master.startswith("local")
    memory = conf("spark.executor.pyspark.memory") or conf("spark.driver.memory" if local else "spark.executor.memory")
    cpus = max(1, int(conf("spark.task.cpus") or 1))
    if local:
        inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
        slots = (os.cpu_count() or 1) if inside.startswith("*") else int(inside.split(",")[0] or 1)
        parallelism = slots
    else:
        slots = int(conf("spark.executor.cores") or 1)
        instances = int(conf("spark.executor.instances") or 2)
        parallelism = int(conf("spark.default.parallelism") or slots * instances)
    jars = (conf("spark.jars.packages") or "") + (conf("spark.jars") or "")
    changed = [f"{k}={v}" for k, default in PARQUET_DEFAULTS.items() if (v := conf(k)) is not None
               and str(v).lower() != default]  # fmt: skip
    return Resources(executor_memory=memory or None, task_slots=max(1, slots // cpus),
                     parallelism=max(1, parallelism // cpus), graphframes="graphframes" in jars.lower() and _graphframes(),
                     source=f"the session ({master or 'master unknown'})", assumed=False, master=master or None,
                     parquet=changed[0] if changed else None)  # fmt: skip


# Spark's Parquet writer's settings whose defaults the files its kernels' workers write follow (`arrow.parquet`):
# a session that changes one has its files written by Spark (`engine.with_writer`)
PARQUET_DEFAULTS = {"spark.sql.parquet.compression.codec": "snappy", "spark.sql.parquet.outputTimestampType": "int96",
                    "spark.sql.files.maxRecordsPerFile": "0", "spark.sql.parquet.writeLegacyFormat": "false"}  # fmt: skip


def _conf(spark):
    """The session's settings by key: read in one call where the session
    lists them all (`getAll`: one round trip to a Connect server, not one a
    key), else key by key; None for a key it does not set."""
    try:
        settings = dict(spark.conf.getAll)
    except Exception:  # noqa: BLE001 - a session that does not list them: asked one by one
        settings = None

    def get(key: str):
        if settings is not None:
            return settings.get(key)
        try:
            return spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a key the session will not say: the plan assumes Spark's default
            return None

    return get


def _graphframes() -> bool:
    try:
        import graphframes  # noqa: F401 - an optional extra: is it installed?
    except ImportError:
        return False
    return True


def default_resources() -> Resources:
    """The resources of the session `cetql run` starts by default (local[*],
    its driver memory), for plans made before any session exists."""
    memory, slots = local_resources()
    return Resources(executor_memory=memory, task_slots=slots, parallelism=slots,
                     source=f"the session cetql run starts (local[*], {memory})", assumed=True)  # fmt: skip
