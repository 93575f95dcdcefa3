"""What a run keeps in its Spark session, persisted here.

A `cetql serve` session slot passes from run to run; a run that kept
something clears the slot's session of it as it ends
(`spark.catalog.clearCache()`), and one that kept nothing does not ask the
server (a round trip every run).  So every DataFrame cetql persists is
persisted by `keep`, which records that this process did (a test finds any
other `.persist(` in the package)."""

from __future__ import annotations

_KEPT = {"since_taken": False}


def keep(df, level=None):
    """`df` persisted (at `level`, else Spark's default), recorded."""
    _KEPT["since_taken"] = True
    return df.persist() if level is None else df.persist(level)


def take() -> bool:
    """Whether this process kept a DataFrame since the last call."""
    kept, _KEPT["since_taken"] = _KEPT["since_taken"], False
    return kept
