"""Parquet files as Spark writes them: its file names (`part-…-c000.snappy.parquet`),
snappy, timestamps as INT96, and the footer's row metadata (the result's
schema in Spark's JSON, so an append compares types as for Spark's own
files).  The embedded engine's writer and a Spark plan's Python workers
write through here."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cetql.backends.inputs.sources import arrow_to_spark

ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"


def part_name(i: int, job: str) -> str:
    """Part `i`'s file name in a folder written by job `job`."""
    return f"part-{i:05d}-{job}-c000.snappy.parquet"


def spark_type_name(t: pa.DataType) -> str:
    """An Arrow type as Spark names it (`simpleString`): how a folder's
    results are compared before appending, whichever engine wrote them."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{spark_type_name(t.value_type)}>"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return arrow_to_spark(t)


def spark_json(schema: pa.Schema) -> dict:
    """An Arrow schema as the JSON Spark keeps in its Parquet files' footers."""

    def one(t):
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return {"type": "array", "elementType": one(t.value_type), "containsNull": t.value_field.nullable}
        if pa.types.is_decimal(t):
            return f"decimal({t.precision},{t.scale})"
        name = spark_type_name(t)
        return {"tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long"}.get(name, name)

    return {"type": "struct", "fields": [{"name": f.name, "type": one(f.type), "nullable": f.nullable, "metadata": {}}
                                         for f in schema]}  # fmt: skip


def kept(rows: list[int]) -> list[bool]:
    """Which parts (their rows, in part order) leave a file, as Spark's
    writer leaves them: the first partition's always (the schema, even
    without rows), another's only with rows."""
    return [i == 0 or n > 0 for i, n in enumerate(rows)]


def plain(schema: pa.Schema) -> pa.Schema:
    """`schema` in the Arrow types Spark's writer writes: text, bytes and
    lists as such, never their large variants (Spark's Arrow batches carry
    those under `spark.sql.execution.arrow.useLargeVarTypes`)."""

    def one(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_binary(t):
            return pa.binary()
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return pa.list_(t.value_field.with_type(one(t.value_type)))
        return t

    return pa.schema([f.with_type(one(f.type)) for f in schema], metadata=schema.metadata)


def write_part(schema: pa.Schema, batches, path: Path, stopped=lambda: False) -> int:
    """One Parquet file of the batches (its schema only if there is none):
    the rows written.  `stopped()` is asked before each batch is written.
    The footer's key-values: the schema's own, and Spark's row metadata."""
    metadata = {**(schema.metadata or {}), ROW_METADATA: json.dumps(spark_json(schema)).encode()}
    # timestamps as Spark writes them by default, decimals of up to 18 digits as integers as it does; no
    # dictionary for a list column (a trend's event ids: as many distinct values as events, so the writer's try
    # of one is wasted — a tenth of writing D1's trends)
    flat = [f.name for f in schema if not pa.types.is_list(f.type) and not pa.types.is_large_list(f.type)]
    rows = 0
    with pq.ParquetWriter(path, schema.with_metadata(metadata), compression="snappy", use_dictionary=flat,
                          use_deprecated_int96_timestamps=True, store_decimal_as_integer=True) as out:  # fmt: skip
        for batch in batches:
            if stopped():
                break
            if batch.num_rows:
                out.write_batch(batch)
                rows += batch.num_rows
    return rows
