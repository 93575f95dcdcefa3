"""`cetql run q1.cet q2.cet … --stream`: a workload over one stream — one
streaming query, one checkpoint, its stateful operators shared as the
workload plan says (`backends.spark.workload_stream`).

Each micro-batch's rows of each query are written by Spark's writer to
`DIR/<name>/` (`--output DIR`; without it, to the checkpoint's `printed/`
folder, and printed under the query's name): first beside (`.batch-<id>`),
then moved in as `part-<batch id>-<n>…`, after removing files of the same
batch id a stopped run may have left — so a micro-batch replayed from the
checkpoint is written once.  `DIR/_cetql_stream` marks the folder as a
workload stream's output, which the same checkpoint resumes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from pyspark.sql import functions as F

from cetql.backends.spark.failures import describe
from cetql.backends.spark.kept import keep
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError, UsageError
from cetql.base.options import OutputFormat, OutputMode
from cetql.planner.logical.plan import Delay
from cetql.surfaces.cli import stream as streaming
from cetql.surfaces.cli.flags import run_options
from cetql.surfaces.cli.numbers import parse_interval
from cetql.surfaces.cli.said import ACTIVE
from cetql.surfaces.cli.workload_common import planned, title
from cetql.surfaces.output import prepare_for_format, resolve_output
from cetql.surfaces.serve import state as serve_state

MARK = "_cetql_stream"


def check_args(args) -> tuple[OutputFormat, Path | None]:
    if args.mode != "error":
        raise UsageError("--mode is for batch output; a stream adds each window to --output once, and resumes it "
                         "from --checkpoint")  # fmt: skip
    Delay.parse(args.watermark)
    parse_interval(args.trigger)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    if args.output is not None:
        out = Path(args.output)
        if checkpoint is None:
            raise UsageError("--stream --output needs --checkpoint PATH: the stream's progress, so that each window is "
                             "written exactly once however often it stops and starts again")  # fmt: skip
        if args.format == "table":
            raise UsageError("--format table prints the result; with --output give parquet, csv or json")
        if out.exists() and not (out / MARK).exists():
            raise UsageError(f"output '{out}' already exists and is not a workload stream's output; give another path")
        if out.exists() != checkpoint.exists():
            have, missing = (out, checkpoint) if out.exists() else (checkpoint, out)
            raise UsageError(f"'{have}' exists but '{missing}' does not: a stream resumes from its checkpoint into its "
                             "own output; give both as they were, or two new paths")  # fmt: skip
    inputs = [i.split("=", 1)[-1] if "=" in i and not Path(i).exists() else i for i in (args.input or [])]
    for spec in inputs:
        if Path(spec).is_file():
            raise UsageError(f"--stream reads a folder that receives files; '{spec}' is a file (give its folder)")
    for path in (checkpoint, args.output):
        if path is not None:
            resolve_output(str(path), OutputMode.IGNORE, inputs=inputs, query_file=args.query_file, make_parents=True)
    return OutputFormat(args.format if args.format in ("parquet", "csv", "json") else "parquet"), checkpoint


def write_batch(df, folder: Path, batch: int, fmt: OutputFormat) -> None:
    """One micro-batch's rows of one query into its folder, once (see the module)."""
    folder.mkdir(parents=True, exist_ok=True)
    stage = folder / f".batch-{batch}"
    writer = prepare_for_format(df, fmt).write.mode("overwrite").format(fmt.value)
    if fmt == OutputFormat.CSV:
        writer = writer.option("header", True)
    writer.save(str(stage))
    prefix = f"part-{batch:08d}-"
    for old in folder.glob(prefix + "*"):
        old.unlink()
    for k, f in enumerate(sorted(p for p in stage.iterdir() if p.name.startswith("part-"))):
        os.replace(f, folder / f"{prefix}{k:05d}{''.join(f.suffixes)}")
    shutil.rmtree(stage, ignore_errors=True)


def _nothing() -> None:
    """Each micro-batch's files are already in place (`write_batch`): nothing to publish."""


class _Printed(streaming.Printer):
    """A query's printed rows: the files moved into its folder."""

    def _committed(self) -> list[str]:
        return sorted(str(f) for f in self.sink.glob("part-*")) if self.sink.is_dir() else []


class Printer:
    """Each query's new rows, under its name, as micro-batches commit."""

    def __init__(self, root: Path, names, fmt: str | None, kinds: dict):
        self.each = {n: _Printed(root / n, fmt, kinds[n]) for n in names}
        self.first = True

    def print_new(self) -> None:
        for name, p in self.each.items():
            fresh = [f for f in p._committed() if f not in p.done]
            if fresh:
                title(name, self.first)
                self.first = False
                p.print_new()


def run_workload_stream(args) -> int:
    fmt, checkpoint = check_args(args)
    options = run_options(args)
    cw, data, typed = planned(args, options, stream=True)
    spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone,
                      token_for=serve_state.token_for)  # fmt: skip
    ACTIVE["spark"] = spark
    streaming.configure(spark)
    try:
        inputs = streaming.stream_inputs(spark, data, typed, options.time_zone)
        execution = cw.execution(inputs, spark=spark, watermark=args.watermark or 0)
        return _start(execution, args, fmt, checkpoint)
    except (CetqlError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise describe(e) from None


def _start(execution, args, fmt: OutputFormat, checkpoint: Path | None) -> int:
    ws = execution.frames.stream
    temporary = None
    if checkpoint is None:
        temporary = Path(tempfile.mkdtemp(prefix="cetql-stream-"))
        checkpoint = temporary / "checkpoint"
    root = Path(args.output) if args.output else checkpoint / "printed"
    root.mkdir(parents=True, exist_ok=True)
    (root / MARK).touch()
    fmt = fmt if args.output else OutputFormat.PARQUET

    def each_batch(batch, batch_id: int) -> None:
        if batch.filter(F.col("blob").isNotNull()).isEmpty():
            return
        keep(batch)
        try:
            for name, df in ws.frames(batch).items():
                write_batch(df, root / name, batch_id, fmt)
        finally:
            batch.unpersist()

    writer = ws.df.writeStream.foreachBatch(each_batch).option("checkpointLocation", str(checkpoint.resolve()))
    interval = parse_interval(args.trigger)
    if interval:
        writer = writer.trigger(processingTime=interval)
    kinds = {q.name: q.plan.kind.value for q in execution.plan.queries}
    printer = None if args.output else Printer(root, execution.plan.names(), args.format, kinds)
    query = writer.start()
    try:
        return streaming._watch(query, args, printer.print_new if printer else _nothing)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
