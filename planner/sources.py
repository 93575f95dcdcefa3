"""Inputs → one events DataFrame: the user's columns plus `__id`, `__t` (a
number: the time column, or microseconds since the epoch for timestamps),
`__type` (the type a typed source is bound to; null for a single-type stream)
and `__wk`, the index of each window the event falls in (one row per window).

Nothing here runs a Spark job: null times fail the query lazily with
`raise_error`, and ids derived from input order use
`monotonically_increasing_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from cetql.errors import SchemaError, UsageError

from .schema import NUMERIC, TIMESTAMP, folder_suffix, from_spark

if TYPE_CHECKING:
    from .analyze import Window

ID, TIME, TYPE, WINDOW = "__id", "__t", "__type", "__wk"
MICROS = 1_000_000


@dataclass(frozen=True)
class TimeAxis:
    """How `__t` relates to the time column and to window arithmetic."""

    kind: str  # "timestamp" or "numeric"
    length: Decimal  # window length in `__t` units
    slide: Decimal

    def window_bounds(self, wk_col):
        """(window_start, window_end) columns for window index `wk_col`."""
        from pyspark.sql import functions as F

        start = wk_col * F.lit(_num(self.slide))
        end = start + F.lit(_num(self.length))
        if self.kind == "timestamp":
            return F.timestamp_micros(start.cast("long")), F.timestamp_micros(end.cast("long"))
        return start, end


def _num(d: Decimal):
    return int(d) if d == d.to_integral_value() else float(d)


def read_source(spark, spec: str | Path):
    """A path (CSV with header, Parquet, JSON lines; file or folder) or the
    name of a table/view."""
    text = str(spec)
    p = Path(text)
    if p.exists():
        suffix = p.suffix.lower() if p.is_file() else folder_suffix(p)
        if suffix == ".csv":
            return spark.read.option("header", True).option("inferSchema", True).csv(text)
        if suffix == ".parquet":
            return spark.read.parquet(text)
        if suffix in (".json", ".jsonl", ".ndjson"):
            return spark.read.json(text)
        raise UsageError(f"cannot tell the format of '{text}' from its name; use .csv, .parquet or .json")
    if spark.catalog.tableExists(text):
        return spark.table(text)
    raise UsageError(f"input '{text}' is neither a file nor a table or view")


def time_axis(df, time_col: str, window: Window) -> TimeAxis:
    found = from_spark(df.schema).lookup(time_col)
    if found is None:
        cols = ", ".join(df.columns)
        raise SchemaError(f"time column '{time_col}' is not in the input (columns: {cols}); name it with --time-col")
    cls, written = found
    if cls == TIMESTAMP:
        return TimeAxis("timestamp", window.length * MICROS, window.slide * MICROS)
    if cls == NUMERIC:
        return TimeAxis("numeric", window.length, window.slide)
    raise SchemaError(f"time column '{time_col}' is {written}; it must be a timestamp or a number")


def events(sources: dict[str | None, object], time_col: str, id_col: str | None, window: Window):
    """Union the sources into one events DataFrame with `__id`, `__t`,
    `__type`; returns (events, time axis)."""
    from pyspark.sql import functions as F

    frames = []
    axis = None
    for type_name, df in sources.items():
        a = time_axis(df, time_col, window)
        if axis is not None and a.kind != axis.kind:
            raise SchemaError(f"time column '{time_col}' is a timestamp in one input and a number in another")
        axis = a
        if id_col is not None and id_col not in df.columns:
            raise SchemaError(f"id column '{id_col}' is not in the input (columns: {', '.join(df.columns)})")
        t = F.col(time_col)
        t = F.unix_micros(t.cast("timestamp")) if a.kind == "timestamp" else t
        ident = F.col(id_col) if id_col else F.monotonically_increasing_id()
        frames.append(
            df.withColumn(ID, ident)
            .withColumn(
                TIME, F.when(t.isNull(), F.raise_error(F.lit(f"null value in time column '{time_col}'"))).otherwise(t)
            )
            .withColumn(TYPE, F.lit(type_name).cast("string"))
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=True)
    return out, axis


def assign_windows(df, axis: TimeAxis):
    """One row per (event, window it falls in): windows [k*s, k*s + w)."""
    from pyspark.sql import functions as F

    w, s = F.lit(_num(axis.length)), F.lit(_num(axis.slide))
    t = F.col(TIME)
    k_hi = F.floor(t / s).cast("long")
    k_lo = (F.floor((t - w) / s) + 1).cast("long")
    return df.withColumn(WINDOW, F.explode(F.sequence(k_lo, k_hi)))
