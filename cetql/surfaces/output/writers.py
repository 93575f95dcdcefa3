"""The writers every surface uses, through `staging.staged`: a Spark
DataFrame (`write`), Arrow batches (`write_batches`), one rendered file
(`write_file`); CSV with a header, a trend's `events` joined with `;`."""

from __future__ import annotations

import csv
import uuid
from pathlib import Path

from cetql.backends.spark.sql import quote
from cetql.base.errors import CetqlError
from cetql.base.options import OutputFormat, OutputMode
from cetql.surfaces.output.paths import resolve_output
from cetql.surfaces.output.shapes import _check_shape, check_append_shape, data_files
from cetql.surfaces.output.staging import staged
from cetql.surfaces.output.target import FILE, Target


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
            df = df.withColumn(field.name, F.to_json(F.col(quote(field.name))))
    return df


def check_append(target: Target, fmt: OutputFormat, *, df=None, schema=None) -> None:
    """Refuse, before anything is written, a result `--mode append` would add
    to a folder of results of another shape: of a Spark DataFrame (`df`, as
    `prepare_for_format` makes it) or of Arrow batches (`schema`).  Every
    writer asks here; a workload asks for each of its queries before it
    writes the first."""
    if target.skip or target.mode != OutputMode.APPEND or not target.existed:
        return
    if df is not None:
        check_append_shape(target, df, fmt)
    else:
        from cetql.backends.arrow.parquet import spark_type_name  # start-up cost: pyarrow, only when writing

        _check_shape(target, [(f.name, spark_type_name(f.type)) for f in schema], fmt)


def write(df, target, fmt: OutputFormat, mode: OutputMode = OutputMode.ERROR, inputs=()) -> int | None:
    """Write `df` to `target` (a Target, or a path resolved here); the rows
    written, or None when nothing was (mode ignore) or not counted (a URI)."""
    if not isinstance(target, Target):
        target = resolve_output(target, mode, inputs=inputs, fmt=fmt)
    if target.skip:
        return None
    out = prepare_for_format(df, fmt)
    check_append(target, fmt, df=out)
    if target.kind == FILE:
        out = out.coalesce(1)
    writer = out.write.format(fmt.value)
    if fmt == OutputFormat.CSV:
        writer = writer.option("header", True)
    if target.uri is not None:
        writer.mode(target.mode.value).save(target.uri)
        return None
    with staged(target, df.sparkSession) as stage:
        stage.call(lambda: writer.mode("error").save(str(stage.path)))
        rows = count_rows(stage.path, fmt)
        if target.kind == FILE:
            stage.source = _single_file(stage.path, out, fmt)
    return rows if stage.written else None


def write_batches(schema, batches, target: Target, parts=()) -> int | None:
    """Write Arrow batches (the in-process engine's result) as Parquet in a
    folder laid out as Spark lays out its own (`part-…parquet` and
    `_SUCCESS`), through the same staging as `write`: the rows written, or
    None when nothing was (mode ignore).  One file of `batches`; or, given
    the same batches as `parts` (calls giving one slice's batches each, in
    order) and a folder to write, one file a part, written at once in
    threads of their own (as Spark writes one file a partition)."""
    from cetql.backends.arrow.parquet import part_name, write_part  # start-up cost: pyarrow, only when writing

    if target.skip:
        return None
    check_append(target, OutputFormat.PARQUET, schema=schema)
    with staged(target) as stage:
        stage.path.mkdir()
        job = str(uuid.uuid4())
        if len(parts) > 1 and target.kind != FILE:
            rows = _write_parts(schema, parts, stage.path, job)
        else:
            rows = write_part(schema, batches, stage.path / part_name(0, job))
        (stage.path / "_SUCCESS").touch()
        if target.kind == FILE:
            stage.source = stage.path / part_name(0, job)
    return rows if stage.written else None


def _write_parts(schema, parts, folder: Path, job: str) -> int:
    """Each part to its own file, in threads: the rows written.  A part's
    failure stops the parts after it (those before it run to their end, so
    the error raised is the first in part order, as one reader of the parts
    in turn would meet it); Ctrl-C stops them all; either way every thread
    has ended before this returns or raises (a part stops before its next
    batch is written: the one its kernel computes meanwhile is waited for)."""
    import threading

    from cetql.backends.arrow.parquet import kept, part_name, write_part  # start-up cost: pyarrow, only when writing

    stop = [len(parts)]  # the parts from this index on stop before their next batch
    rows, errors = [0] * len(parts), [None] * len(parts)
    lock = threading.Lock()

    def one(i: int) -> None:
        try:
            rows[i] = write_part(schema, parts[i](), folder / part_name(i, job), lambda: i >= stop[0])
        except BaseException as e:  # noqa: BLE001 - raised by the caller, in part order
            errors[i] = e
            with lock:
                stop[0] = min(stop[0], i + 1)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(parts))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        with lock:
            stop[0] = 0
        for t in threads:
            t.join()
        raise
    for e in errors:
        if e is not None:
            raise e
    for i, keep in enumerate(kept(rows)):  # as Spark's writer keeps its parts
        if not keep:
            (folder / part_name(i, job)).unlink()
    return sum(rows)


def write_result(execution, target: Target, fmt: OutputFormat) -> int | None:
    """A Spark plan's result (a bound query: its plan, inputs, session and
    DataFrame) written as its plan says: Parquet by the kernels' Python
    workers where `engine.workers_write`, else by Spark's writer (`write`)."""
    if execution.plan.engine.workers_write and fmt == OutputFormat.PARQUET:
        from cetql.backends.spark.written import written  # start-up cost: pyspark's, for a Spark run only

        schema, frame = written(execution.plan, execution.inputs)
        return write_by_workers(execution.spark, schema, frame, target)
    return write(execution.dataframe, target, fmt)


def write_by_workers(spark, schema, frame, target: Target) -> int | None:
    """Write a Spark plan's result as Parquet through its kernels' Python
    workers (the plan's `engine.workers_write`): `frame(folder, job)` is
    the lazy DataFrame whose tasks each write one file of the result's
    `schema` (Arrow) into `folder` and give its name and rows.  Collected
    here: the files the tasks did not name (an attempt that failed) are
    removed, and the rest kept as Spark's writer keeps its parts
    (`arrow.parquet.kept`; the first partition's written here if its task
    gave none), in the same staging as every writer.  A file target gets
    the parts as one file.  The rows written, or None when nothing was
    (mode ignore)."""
    from cetql.backends.arrow.parquet import kept, part_name, write_part  # start-up cost: pyarrow, only when writing

    if target.skip:
        return None
    check_append(target, OutputFormat.PARQUET, schema=schema)
    with staged(target, spark) as stage:
        stage.path.mkdir()
        job = str(uuid.uuid4())
        named = dict((r["file"], r["rows"]) for r in stage.call(lambda: frame(str(stage.path), job).collect()))
        if part_name(0, job) not in named:
            named[part_name(0, job)] = write_part(schema, [], stage.path / part_name(0, job))
        order = sorted(named)  # part names sort in part order
        keep = {n for n, k in zip(order, kept([named[n] for n in order])) if k}
        for p in stage.path.iterdir():
            if p.name not in keep:
                p.unlink()
        if target.kind == FILE:
            stage.source = _one_part(schema, stage.path, sorted(keep), job)
        (stage.path / "_SUCCESS").touch()
    return sum(named.values()) if stage.written else None


def _one_part(schema, folder: Path, names: list[str], job: str) -> Path:
    """The parts `names` of `folder` as one file of it, in part order."""
    import pyarrow.parquet as pq

    from cetql.backends.arrow.parquet import part_name, write_part  # start-up cost: pyarrow, only when writing

    parts = [folder / n for n in names]
    if len(parts) == 1:
        return parts[0]
    one = folder / part_name(len(names), job)
    # read back as written: INT96 timestamps to the microsecond, in the result's types
    write_part(schema, (b for p in parts for b in
                        pq.read_table(p, coerce_int96_timestamp_unit="us").cast(schema).to_batches()), one)  # fmt: skip
    return one


def write_text_batches(schema, batches, target: Target, fmt: OutputFormat, zone) -> int | None:
    """Write Arrow batches (the embedded engine's result) as one CSV or JSON
    lines file in a folder laid out as Spark's (`part-…` and `_SUCCESS`),
    the values written as Spark's writers write them (`embedded.text`),
    through the same staging as `write`: the rows written, or None."""
    from cetql.backends.embedded import text  # start-up cost: only when a run writes text files

    if target.skip:
        return None
    check_append(target, fmt, schema=schema)
    lines = text.csv_lines if fmt == OutputFormat.CSV else text.json_lines
    rows = 0
    with staged(target) as stage:
        stage.path.mkdir()
        part = stage.path / f"part-00000-{uuid.uuid4()}-c000.{fmt.value}"
        with open(part, "w", encoding="utf-8", newline="") as out:
            for line in lines(schema, batches, zone):
                out.write(line)
        rows = count_rows(stage.path, fmt)
        (stage.path / "_SUCCESS").touch()
        if target.kind == FILE:
            stage.source = part
    return rows if stage.written else None


def write_file(target: Target, render) -> bool:
    """`render(path)` writes one file; it is moved into place as `target`.
    False when mode ignore found the target there."""
    if target.skip:
        return False
    with staged(target) as stage:
        render(stage.path)
    return stage.written


def _single_file(folder: Path, df, fmt: OutputFormat) -> Path:
    files = [f for f in data_files(folder) if f.is_file()]
    if len(files) == 1:
        return files[0]
    if files:
        raise CetqlError(f"Spark wrote {len(files)} files where one was asked for")
    empty = folder / f"empty.{fmt.value}"  # no rows: no part file
    with open(empty, "w", newline="", encoding="utf-8") as fh:
        if fmt == OutputFormat.CSV:
            csv.writer(fh).writerow(df.columns)
    return empty


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
