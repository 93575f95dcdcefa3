"""A plan's Parquet files written by its kernels' own Python workers (the
plan's `engine.workers_write`: a Spark on this machine, whose workers see
the folder the run writes): each kernel task's batches become the
result's columns (`arrow.result`, the embedded engine's projection) and
one Parquet file as Spark writes it (`arrow.parquet`), in the task; the
job's rows are the files' names and rows.  Spark's own writer would take
the kernels' Arrow batches into the JVM, as rows, to write them again (on
D1, 1.9M trends, half a second of a warm run).

The task writes under a name of its attempt, then renames the file to the
part's: a failed attempt leaves at most its own unnamed file, which the
caller removes (`surfaces.output.writers.write_by_workers`)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyspark
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.arrow.parquet import part_name, plain, write_part
from cetql.backends.arrow.result import output
from cetql.backends.spark.compiler import Input, kernel_input, moved, restored
from cetql.kernels import process
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Detect, PhysicalPlan

FILES = pa.schema([pa.field("file", pa.string(), nullable=False), pa.field("rows", pa.int64(), nullable=False)])


def written(plan: PhysicalPlan, inputs: dict[str | None, Input]):
    """(the result's Arrow schema, `frame`): `frame(folder, job)` is the
    lazy DataFrame whose tasks write the plan's result into `folder` (a file
    a task, named for job `job`), a row each: the file's name, its rows."""
    spec = kernel_spec(plan)
    df, put_back, schema_in = moved(plan, kernel_input(plan, inputs))
    detect = isinstance(plan.root, Detect)
    kernel = partial(restored, process.detect_fn(spec) if detect else process.aggregate_fn(spec), put_back)
    made = (process.detect_schema if detect else process.aggregate_schema)(spec, schema_in)
    schema, project = output(plan, made)
    # the files' schema: as Spark writes it, its footer naming Spark's version as Spark's files do
    written_schema = plain(schema).with_metadata({b"org.apache.spark.version": pyspark.__version__.encode()})

    def frame(folder: str, job: str) -> DataFrame:
        return df.mapInArrow(partial(_write, kernel, project, written_schema, folder, job), from_arrow_schema(FILES))

    return written_schema, frame


def _write(kernel, project, schema: pa.Schema, folder: str, job: str, batches):
    """In a Python worker: the task's kernel output as one file."""
    task = TaskContext.get()
    name = part_name(task.partitionId(), job)
    attempt = Path(folder) / f".{name}.{task.attemptNumber()}.{os.getpid()}"
    batches = (_as(project(b), schema) for b in kernel(batches))
    rows = write_part(schema, batches, attempt)
    os.replace(attempt, Path(folder) / name)
    yield pa.RecordBatch.from_pydict({"file": [name], "rows": [rows]}, schema=FILES)


def _as(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` in `schema`'s types (`plain`: no large variants)."""
    if batch.schema.equals(schema):
        return batch
    return pa.RecordBatch.from_arrays([batch.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)
