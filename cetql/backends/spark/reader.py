"""One reader for every input, used by `compile --input` and by `run` alike,
so both see the same columns with the same types.

`describe(path)` looks at a file or folder without Spark (a Parquet footer;
the first rows of a CSV or JSON-lines file) and decides each column's type.
`read(spark, source)` then reads the data with exactly those types: Parquet
as stored; CSV and JSON as text, each column cast by the engine to its
decided type, so that a value that cannot be read (`n/a` in a column of
numbers) is found and counted — never compared as text, never silently null.

Rules:
- A folder holds files of one format, told by extension (.csv, .parquet,
  .json/.jsonl/.ndjson); other files (`*.bak`, `*.txt`, Spark's `_SUCCESS`
  and `.crc` files) are ignored; two formats in one folder is an error
  that lists them.
- CSV is RFC 4180: a quoted field may hold commas, quotes and newlines (a
  file with a quote is read whole by one task, so a record is never cut at a
  newline inside quotes); a UTF-8 byte-order mark is ignored; header names are
  trimmed (`id, ts, src`).  A CSV must have a header row; a first row made
  only of numbers and times is recognised as data and refused with a message
  that says so.  An empty field is null.  The files of a folder are matched by
  header name, whatever the order of their columns; files with other columns
  are refused, naming them.
- JSON lines are read with the columns `describe` found (the keys of the
  sampled lines of every file), each as text then cast; a line that is not a
  JSON object fails the query as a malformed row.
- A CSV or JSON column is a whole number (`bigint`) when every sampled value
  is one, a number (`double`) when most are numbers, a timestamp when most
  are ISO-8601 times (to the nanosecond when a sampled one has a digit below
  the microsecond: see `times`), a boolean for true/false, text otherwise.
- Parquet timestamps with nanoseconds (pandas' default) are read exactly, as
  nanoseconds since the epoch.  Timestamps without a zone, in any format, are
  wall-clock times in the source's time zone (UTC unless the user names one),
  given to Spark explicitly: the session's zone and the machine's never
  change a value.
"""

from __future__ import annotations

from dataclasses import replace

from cetql.backends.inputs import casts
from cetql.backends.inputs.sources import (  # noqa: F401 - the reader's public names
    FORMATS,
    Column,
    Source,
    decide,
    describe,
    files_of,
    from_spark,
    is_path,
)
from cetql.backends.inputs.stamps import check_unchanged
from cetql.backends.inputs.times import ISO, is_utc
from cetql.backends.spark import times
from cetql.backends.spark.sql import quote
from cetql.backends.sql.dialects import SPARK
from cetql.planner.semantics.schema import TIMESTAMP

# The one session setting the readers change (for nanosecond Parquet inputs):
# a session kept for later runs (`cetql run` on a serve) has it unset first.
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"


def read(spark, source: Source):
    """The input as a DataFrame.  Text formats come back with every column as
    text: `cast_column` gives the typed columns and the invalid flags."""
    files = list(source.files)
    if source.format == "parquet":
        if any(c.nanos for c in source.columns):
            # pandas' nanosecond timestamps: read exactly, as nanoseconds since the epoch
            spark.conf.set(NANOS_AS_LONG, "true")
        df = spark.read.parquet(*files)
        naive_ns = {c.name for c in source.columns if c.nanos and c.naive}
        return zoned(df.select(*[quote(c.name) for c in source.columns]), source.time_zone, naive_ns)
    if source.format == "csv":
        return _read_csv(spark, source)
    ddl = ", ".join(f"{quote(c.name)} string" for c in source.columns)
    return (
        spark.read.option("mode", "FAILFAST")
        .option("timeZone", source.time_zone)
        .schema(ddl)
        .json(files)
    )


def _read_csv(spark, source: Source):
    """CSV files, each read with its own header's order, then unioned by
    name: one read for each order found."""
    by_order: dict[tuple[str, ...], list[str]] = {}
    for f, header in zip(source.files, source.headers or [tuple(c.name for c in source.columns)] * len(source.files)):
        by_order.setdefault(header, []).append(f)
    names = [quote(c.name) for c in source.columns]
    out = None
    for header, files in by_order.items():
        df = (
            spark.read.option("header", True)
            .option("mode", "FAILFAST")
            .option("enforceSchema", True)  # the header was read by `describe`: names trimmed, order per file
            .option("multiLine", source.multiline)
            .option("escape", '"')  # RFC 4180: a quote inside quotes is doubled; a backslash is a backslash
            .option("timeZone", source.time_zone)
            .schema(", ".join(f"{quote(n)} string" for n in header))
            .csv(files)
            .select(*names)
        )
        out = df if out is None else out.unionByName(df)
    return out


def unchanged(df, stamps, label: str):
    """The input's rows, read only while its files are as the plan was made
    for them (`inputs.stamps`): checked now, and again by the job that reads
    them, for each file a batch of rows comes from — Spark lists the files
    when the DataFrame is made, and would read one rewritten since with the
    old listing and columns."""
    check_unchanged(stamps, label)
    if not stamps:
        return df
    import pandas as pd  # start-up cost: pandas loads only where a file input is read
    from pyspark.sql import functions as F

    def as_planned(paths):
        check_unchanged(stamps, label, paths.unique())
        return pd.Series(True, index=paths.index)

    as_planned.__annotations__ = {"paths": pd.Series, "return": pd.Series}  # a Series → Series pandas UDF
    return df.filter(F.pandas_udf(as_planned, "boolean")(F.input_file_name()))


def zoned(df, time_zone: str, naive_ns=frozenset()):
    """Timestamps without a zone as the instants they are in `time_zone`:
    Spark's TIMESTAMP_NTZ columns, and the columns `naive_ns` of pandas'
    nanoseconds without a zone.  The DataFrame itself when it has none."""
    from pyspark.sql import functions as F

    if is_utc(time_zone):
        naive_ns = frozenset()  # already the instants they are
    if not naive_ns and not any(f.dataType.simpleString() == "timestamp_ntz" for f in df.schema.fields):
        return df
    out = []
    for field in df.schema.fields:
        col = F.col(quote(field.name))
        if field.dataType.simpleString() == "timestamp_ntz":
            col = times.ntz_instant(col, time_zone).alias(field.name)
        elif field.name in naive_ns:
            col = times.wall_nanos_instant(col, time_zone).alias(field.name)
        out.append(col)
    return df.select(*out)


def as_nanoseconds(df, source: Source | None, names: set[str]):
    """(DataFrame, Source) with the timestamp columns `names` as epoch
    nanoseconds: where one input holds a column in nanoseconds and another
    in microseconds, both are read to the nanosecond (one kind of time)."""
    from pyspark.sql import functions as F

    given = source
    if source is None:
        source = Source("a DataFrame", "dataframe", (), tuple(
            Column(f.name, f.dataType.simpleString()) for f in df.schema.fields))  # fmt: skip
    change = {c.name for c in source.columns if c.name in names and not c.nanos and c.cls == TIMESTAMP}
    if not change:
        return df, given
    if source.text:  # the cast reads the text to the nanosecond
        columns = tuple(replace(c, nanos=True) if c.name in change else c for c in source.columns)
        return df, replace(source, columns=columns)
    df = df.select(*[times.epoch_nanos(F.col(quote(c)), False).alias(c) if c in change else F.col(quote(c))
                     for c in df.columns])  # fmt: skip
    columns = tuple(replace(c, type="bigint", nanos=True) if c.name in change else c for c in source.columns)
    return df, replace(source, columns=columns)


def cast_column(source: Source, name: str):
    """(typed column, invalid flag) for column `name` of a text source: the
    flag is true where a value is present but cannot be read as the type
    (the rules of `inputs.casts`, which every engine applies)."""
    from pyspark.sql import functions as F

    col = next(c for c in source.columns if c.name == name)
    raw = F.col(quote(name))
    if not source.text or col.type in ("string", "nested"):
        return raw, F.lit(False)
    if col.type == "timestamp":
        trimmed = F.trim(raw)
        read = times.iso_nanos if col.nanos else times.iso_timestamp
        typed = F.when(F.expr(casts.matches(SPARK, casts.trimmed(SPARK, name), ISO)), read(trimmed, source.time_zone))
        return typed, _invalid(raw, typed)
    typed = F.expr(casts.typed_text(SPARK, name, col.type))
    return typed, _invalid(raw, typed)


def _invalid(raw, typed):
    from pyspark.sql import functions as F

    return raw.isNotNull() & (F.trim(raw) != "") & typed.isNull()
