"""Kernel expressions (`kernels.spec.Expr`) as Spark columns: the one SQL
compiler (`backends.sql.expressions`) in Spark's dialect, read by `F.expr`
(classic and Connect alike)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from cetql.backends.sql.dialects import SPARK
from cetql.backends.sql.expressions import Resolve, condition, to_sql
from cetql.kernels import spec as K


def column(e: K.Expr, resolve: Resolve | None = None) -> Column:
    """`e` as a Spark column; `resolve(slot, column)` gives the SQL a
    reference reads (by default the quoted column name)."""
    return F.expr(to_sql(e, SPARK, resolve))


def holds(e: K.Expr | None, resolve: Resolve | None = None) -> Column:
    """True only where `e` is true (null: false)."""
    return F.expr(condition(e, SPARK, resolve))


def quote(name: str) -> str:
    return SPARK.quote(name)
