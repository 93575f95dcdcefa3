"""A name quoted for Spark SQL: the one function that does it (a house test
keeps it so), the Spark dialect's spelling (`backends.sql.dialects`)."""

from __future__ import annotations

from cetql.backends.sql.dialects import SPARK


def quote(name: str) -> str:
    return SPARK.quote(name)
