"""What an input holds, as the one reader describes it (`backends.inputs.
sources.describe`, without an engine): its format, files and columns with
the types cetql decided.  The plan's scan carries it, so every engine reads
an input with the same columns and types."""

from __future__ import annotations

from dataclasses import dataclass

from cetql.planner.semantics.schema import BOOLEAN, NUMERIC, OTHER, STRING, TIMESTAMP, Schema


@dataclass(frozen=True)
class FileStamp:
    """A file as the plan was made for it: read later, it must still be so
    (`backends.inputs.stamps`)."""

    path: str
    size: int  # bytes
    mtime_ns: int  # modification time, nanoseconds since the epoch


@dataclass(frozen=True)
class ColumnStats:
    """What a Parquet input's footers and a sample of its first rows tell of
    one column, for the planner's estimates: its least and greatest value
    (numbers; times as epoch microseconds, nanoseconds for nanosecond
    columns; None: not known) and its distinct values over the whole input,
    estimated from the sample (GEE: values seen once scaled by the square
    root of the input's rows over the sample's), and the share of the
    sample's rows its most frequent value holds (a skewed key's largest
    group)."""

    name: str
    lo: float | None
    hi: float | None
    distinct: int
    top: float = 0.0  # the share of the sample's rows holding its most frequent (non-null) value


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark type: bigint, double, decimal(p,s), string, timestamp, boolean, date, …
    nanos: bool = False  # a timestamp in nanoseconds, read as bigint nanoseconds since the epoch
    unknown: bool = False  # no value was seen (an empty file): any type fits
    naive: bool = False  # a Parquet timestamp without a zone: a wall-clock time in the source's zone

    @property
    def cls(self) -> str:
        return OTHER if self.unknown else class_of(self.type, self.nanos)


@dataclass(frozen=True)
class Source:
    """An input as the reader sees it."""

    name: str  # as the user gave it
    format: str  # "csv", "parquet", "json", "table" or "dataframe"
    files: tuple[str, ...]  # absolute: a Spark Connect server may run elsewhere than here
    columns: tuple[Column, ...]
    time_zone: str = "UTC"  # the zone of times written without one
    headers: tuple[tuple[str, ...], ...] = ()  # CSV: each file's columns in its own order
    multiline: bool = False  # CSV: a file holds a quote, so a field may hold a newline
    size: int = 0  # bytes: on disk for text, the columns uncompressed for Parquet (its footers)
    rows: int | None = None  # Parquet: from the footers (text: not known without reading)
    arrow: tuple[tuple[str, str], ...] = ()  # Parquet: (column, Arrow type as pyarrow prints it)
    stamps: tuple[FileStamp, ...] = ()  # each file's size and time when described (`stamps`)
    stats: tuple[ColumnStats, ...] = ()  # Parquet: each column's range and distinct values (footers, a sample)

    def stat(self, name: str) -> ColumnStats | None:
        return next((s for s in self.stats if s.name == name), None)

    @property
    def schema(self) -> Schema:
        return Schema(tuple((c.name, c.cls, "timestamp(ns)" if c.nanos else c.type) for c in self.columns))

    @property
    def text(self) -> bool:
        """Read as text and cast (CSV, JSON)."""
        return self.format in ("csv", "json")


def class_of(spark_type: str, nanos: bool = False) -> str:
    t = spark_type.lower()
    if nanos or t in ("timestamp", "timestamp_ntz", "date"):
        return TIMESTAMP
    if t in ("tinyint", "smallint", "int", "bigint", "float", "double") or t.startswith("decimal"):
        return NUMERIC
    if t == "string":
        return STRING
    if t == "boolean":
        return BOOLEAN
    return OTHER
