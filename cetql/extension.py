"""`spark.cet(query, data, …)`: cetql as a method of Spark sessions, classic
and Spark Connect alike.

`import cetql` adds the method to both session classes (Connect's only when
its packages are installed); `cetql.install(spark)` does it for one session
object explicitly, whatever its class.
"""

from __future__ import annotations

from .query import compile


def cet(self, query: str, data=None, *, params: dict | None = None, **options):
    """`spark.cet(query, data, params={...}, time_col="ts", …)` → a lazy DataFrame.

    `data`: a DataFrame, a path, a table/view name, or {type: …}; typed
    inputs may also be keywords (`Check=df`).  Options as for
    `CompiledQuery.run`."""
    return compile(query, params).run(data, spark=self, **options)


def _session_classes() -> list[type]:
    classes = []
    try:
        from pyspark.sql import SparkSession

        classes.append(SparkSession)
    except ImportError:  # pragma: no cover - pyspark is a dependency
        pass
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        classes.append(ConnectSession)
    except ImportError:  # Spark Connect's packages (grpcio, …) are not installed
        pass
    return classes


def install(spark=None) -> None:
    """Add `.cet` to the session classes, or to one session object's class."""
    classes = [type(spark)] if spark is not None else _session_classes()
    for cls in classes:
        if getattr(cls, "cet", None) is not cet:
            cls.cet = cet
