"""Writing results without destroying anything.

- An existing output path is refused unless the user asks (`mode`:
  "error" — the default —, "overwrite", "append", "ignore": Spark's words).
- An output path that is an input, contains an input, or lies inside an
  input folder is always refused.
- Results are written beside the target (a hidden sibling folder) and moved
  into place only when the job succeeded: a failed query leaves what was
  there untouched.
- CSV gets a header row; a trend's `events` are joined with `;` and its
  `rows` written as JSON text.

Local paths only move atomically; a URI (`hdfs://`, `s3a://`) is handed to
Spark's own writer with the same mode.
"""

from __future__ import annotations

import csv
import os
import shutil
import uuid
from pathlib import Path

from .errors import UsageError
from .options import OutputFormat, OutputMode


def _is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _local(path: str) -> Path:
    return Path(path[len("file://") :] if path.startswith("file://") else path).expanduser().resolve()


def check_target(path: str, mode: OutputMode, inputs: list[str]) -> bool:
    """Refuse what would destroy data; False when there is nothing to do
    (mode ignore and the path exists)."""
    if _is_uri(path):
        return True
    target = _local(path)
    for spec in inputs:
        p = Path(spec)
        if not p.exists():
            continue
        src = p.resolve()
        if target == src:
            raise UsageError(f"output '{path}' is an input of the query; write the results somewhere else")
        if src.is_relative_to(target):
            raise UsageError(f"output '{path}' contains the input '{spec}'; write the results somewhere else")
        if src.is_dir() and target.is_relative_to(src):
            raise UsageError(f"output '{path}' is inside the input folder '{spec}'; write the results somewhere else")
    if target.exists() or target.is_symlink():
        if mode == OutputMode.ERROR:
            raise UsageError(
                f"output '{path}' already exists; give --mode overwrite to replace it, --mode append to add to it, "
                "or another path"
            )
        if mode == OutputMode.IGNORE:
            return False
        if mode == OutputMode.APPEND and not target.is_dir():
            raise UsageError(f"output '{path}' is a file; --mode append adds files to a folder of results")
    if not target.parent.exists():
        raise UsageError(f"the folder of output '{path}' ({target.parent}) does not exist")
    return True


def prepare_for_format(df, fmt: OutputFormat):
    """CSV cannot hold arrays or structs: events joined with ';', rows as JSON."""
    from pyspark.sql import functions as F

    if fmt != OutputFormat.CSV:
        return df
    for field in df.schema.fields:
        t = field.dataType.typeName()
        if field.name == "events" and t == "array":
            df = df.withColumn("events", F.concat_ws(";", F.col("events").cast("array<string>")))
        elif t in ("array", "struct", "map"):
            df = df.withColumn(field.name, F.to_json(F.col(f"`{field.name}`")))
    return df


def write(df, path: str, fmt: OutputFormat, mode: OutputMode, inputs: list[str]) -> int | None:
    """Write `df`; return the number of rows written (None when not counted,
    e.g. mode ignore on an existing path, or a URI)."""
    if not check_target(path, mode, inputs):
        return None
    out = prepare_for_format(df, fmt)
    writer = out.write.format(fmt.value)
    if fmt == OutputFormat.CSV:
        writer = writer.option("header", True)
    if _is_uri(path):
        writer.mode(mode.value).save(path)
        return None
    target = _local(path)
    staging = target.parent / f".{target.name}.cetql-{uuid.uuid4().hex[:8]}"
    try:
        writer.mode("error").save(str(staging))
        rows = count_rows(staging, fmt)
        _move_into_place(staging, target, mode)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return rows


def _move_into_place(staging: Path, target: Path, mode: OutputMode) -> None:
    if mode == OutputMode.APPEND and target.is_dir():
        tag = uuid.uuid4().hex[:8]
        for f in staging.iterdir():
            if f.name.startswith(("_", ".")):
                continue
            name = f.name if not (target / f.name).exists() else f"{f.stem}-{tag}{f.suffix}"
            os.replace(f, target / name)
        return
    if target.exists() or target.is_symlink():  # overwrite: the old one goes only once the new one is in place
        old = target.parent / f".{target.name}.cetql-old-{uuid.uuid4().hex[:8]}"
        os.replace(target, old)
        try:
            os.replace(staging, target)
        except OSError:
            os.replace(old, target)
            raise
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
        return
    os.replace(staging, target)


def count_rows(folder: Path, fmt: OutputFormat) -> int:
    """Rows in a folder Spark wrote: Parquet footers, or lines of CSV/JSON files."""
    files = [f for f in folder.iterdir() if f.is_file() and not f.name.startswith(("_", "."))]
    if fmt == OutputFormat.PARQUET:
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    total = 0
    for f in files:
        if fmt == OutputFormat.CSV:  # records, not lines: a quoted value may hold a newline
            with open(f, newline="", encoding="utf-8") as fh:
                total += max(0, sum(1 for _ in csv.reader(fh)) - 1)
        else:
            with open(f, "rb") as fh:
                total += sum(1 for line in fh if line.strip())
    return total
