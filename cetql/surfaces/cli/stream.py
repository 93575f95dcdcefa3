"""`cetql run --stream`: a query over a folder that receives files (or a
table), each window written — or printed — once, when the watermark passes
its end.

    cetql run QUERY --stream --input DIR|TABLE [--output PATH] [--checkpoint PATH]
              [--watermark DELAY] [--trigger INTERVAL] [--until-idle SECONDS]

The folder is read by the batch reader's rules (its columns and types from
the files already there); the output goes through Spark's file sink and the
checkpoint, so a run stopped or killed and started again on the same
checkpoint writes every window exactly once.  Without `--output` the rows
of each micro-batch are printed as its windows close (through a file sink
in the checkpoint folder, which the Connect server must be able to reach).
A line on standard error says, per micro-batch, how many windows were
answered and how many events arrived behind the watermark (counted and
dropped).  Ctrl-C stops the stream cleanly (exit 130); `--until-idle`
stops it after that many seconds without new input.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cetql.backends.spark import reader
from cetql.backends.spark.compiler import Input
from cetql.backends.spark.failures import describe
from cetql.backends.spark.streaming import METRICS, PROVIDER, ROCKSDB, STATS, read_stream
from cetql.base.errors import UsageError
from cetql.base.options import OutputFormat, OutputMode
from cetql.planner.logical.plan import Delay
from cetql.surfaces.cli.numbers import parse_interval
from cetql.surfaces.output import prepare_for_format, resolve_output
from cetql.surfaces.render import _cell, _plain

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
POLL_SECONDS = 0.5


# ---------------------------------------------------------------- before Spark


def check_stream_args(args) -> tuple[OutputFormat | None, Path | None]:
    """(output format, checkpoint) after refusing what a stream cannot do."""
    if args.mode != "error":
        raise UsageError("--mode is for batch output; a stream adds each window to --output once, and resumes it "
                         "from --checkpoint")  # fmt: skip
    for spec in args.input or []:
        path = Path(spec.split("=", 1)[1] if "=" in spec and not Path(spec).exists() else spec)
        if path.is_file():
            raise UsageError(f"--stream reads a folder that receives files; '{path}' is a file (give its folder)")
    Delay.parse(args.watermark)
    parse_interval(args.trigger)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    fmt = None
    if args.output is not None:
        if checkpoint is None:
            raise UsageError("--stream --output needs --checkpoint PATH: the stream's progress, so that each window is "
                             "written exactly once however often it stops and starts again")  # fmt: skip
        if args.format == "table":
            raise UsageError("--format table prints the result; with --output give parquet, csv or json")
        fmt = OutputFormat(args.format or "parquet")
        _check_resume(Path(args.output), checkpoint)
    inputs = [i.split("=", 1)[-1] if "=" in i and not Path(i).exists() else i for i in (args.input or [])]
    for path in (checkpoint, args.output):  # never in the folder being read, never a file or a protected folder
        if path is not None:  # (what is there was checked above: a stream's own output and checkpoint resume)
            resolve_output(str(path), OutputMode.IGNORE, inputs=inputs, query_file=args.query_file)
    return fmt, checkpoint


def _check_resume(output: Path, checkpoint: Path) -> None:
    """Start both, or resume both: never a checkpoint without its output."""
    if output.exists() and not (output / "_spark_metadata").is_dir():
        raise UsageError(f"output '{output}' already exists and is not a stream's output; give another path")
    if output.exists() != checkpoint.exists():
        have, missing = (output, checkpoint) if output.exists() else (checkpoint, output)
        raise UsageError(f"'{have}' exists but '{missing}' does not: a stream resumes from its checkpoint into its "
                         "own output; give both as they were, or two new paths")  # fmt: skip
    if not output.parent.exists():
        raise UsageError(f"the folder of output '{output}' ({output.parent}) does not exist")


# ---------------------------------------------------------------- inputs


def stream_inputs(spark, data, typed: dict, time_zone: str = "UTC") -> dict[str | None, Input]:
    """Each input as a stream: a folder (read by the batch reader's rules,
    times without a zone in `time_zone`) or a table."""
    given = {None: data} if data is not None else dict(typed)
    out = {}
    for name, spec in given.items():
        path = Path(str(spec))
        if path.is_dir():
            source = reader.describe(str(path), time_zone)
            out[name] = Input(read_stream(spark, source, str(path.resolve())), source)
        elif reader.is_path(str(spec)):
            raise UsageError(f"input '{spec}' does not exist")
        else:
            try:
                out[name] = Input(spark.readStream.table(str(spec)))
            except Exception as e:  # noqa: BLE001 - Spark's analysis error: one line instead
                raise UsageError(f"input '{spec}' is neither a folder nor a table that can be read as a stream "
                                 f"({str(e).strip().splitlines()[0][:200]})") from None  # fmt: skip
    return out


def configure(spark) -> None:
    """The session cetql runs a stream on: windows in RocksDB state, its
    commits as change logs (much less to write per micro-batch)."""
    spark.conf.set(PROVIDER, ROCKSDB)
    spark.conf.set(CHANGELOG, "true")


# ---------------------------------------------------------------- running


def run_stream(execution, args, fmt: OutputFormat | None, checkpoint: Path | None) -> int:
    """Start the stream, report each micro-batch, stop on Ctrl-C or idle."""
    df = execution.dataframe
    temporary = None
    if checkpoint is None:
        temporary = Path(tempfile.mkdtemp(prefix="cetql-stream-"))
        checkpoint = temporary / "checkpoint"
    sink = Path(args.output) if args.output else checkpoint / "printed"
    fmt = fmt or OutputFormat.PARQUET
    writer = prepare_for_format(df, fmt).writeStream.format(fmt.value).outputMode("append")
    if fmt == OutputFormat.CSV:
        writer = writer.option("header", True)
    writer = writer.option("path", str(sink.resolve())).option("checkpointLocation", str(checkpoint.resolve()))
    interval = parse_interval(args.trigger)
    if interval:
        writer = writer.trigger(processingTime=interval)
    printer = None if args.output else Printer(sink, args.format, execution.plan.kind.value)
    query = writer.start()
    try:
        return _watch(query, args, printer)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)


def _watch(query, args, printer) -> int:
    idle = float(args.until_idle) if args.until_idle is not None else None
    seen, last_input, late_total = -1, time.monotonic(), 0
    try:
        while query.isActive:
            for p in query.recentProgress:
                if p["batchId"] <= seen:
                    continue
                seen = p["batchId"]
                counts = metrics(p)
                late_total += counts["late"]
                if p.get("numInputRows", 0):
                    last_input = time.monotonic()
                if printer is not None:
                    printer.print_new()
                if counts["windows"] or counts["late"]:
                    rows = int((p.get("sink") or {}).get("numOutputRows", -1))
                    written = f", {rows:,} row(s)" if rows >= 0 else ""
                    print(f"batch {seen}: {counts['windows']:,} window(s) answered{written}; {counts['late']:,} "
                          f"event(s) behind the watermark dropped ({late_total:,} in all)", file=sys.stderr)  # fmt: skip
            if idle is not None and _busy(query):  # idle counts from the end of the last micro-batch
                last_input = time.monotonic()
            if idle is not None and time.monotonic() - last_input > idle:
                query.stop()
                if printer is not None:
                    printer.print_new()
                print(f"stopped after {idle:g} s without new input; {late_total:,} late event(s) dropped in all",
                      file=sys.stderr)  # fmt: skip
                return 0
            query.awaitTermination(POLL_SECONDS)
    except KeyboardInterrupt:
        query.stop()
        print(f"stopped; {late_total:,} late event(s) dropped in all; the checkpoint resumes the stream",
              file=sys.stderr)  # fmt: skip
        raise
    error = query.exception()
    if error is not None:
        raise describe(error) from None
    return 0


def _busy(query) -> bool:
    try:
        status = query.status
    except Exception:  # noqa: BLE001 - a query that just stopped
        return False
    return bool(status.get("isTriggerActive") or status.get("isDataAvailable"))


def metrics(progress: dict) -> dict[str, int]:
    """The counts of every cetql stream in one micro-batch's progress (its
    observed metrics: a Row on classic sessions, values and a schema on
    Spark Connect)."""
    total = dict.fromkeys(STATS, 0)
    for name, row in (progress.get("observedMetrics") or {}).items():
        if not name.startswith(METRICS):
            continue
        values = row.asDict() if hasattr(row, "asDict") else dict(row)
        if "values" in values and "schema" in values:
            values = dict(zip([f["name"] for f in values["schema"]["fields"]], values["values"]))
        for s in STATS:
            total[s] += int(values.get(s) or 0)
    return total


# ---------------------------------------------------------------- printing


class Printer:
    """The rows of each committed micro-batch of a file sink, printed as
    they arrive: a table on a terminal, else CSV (or JSON lines)."""

    def __init__(self, sink: Path, fmt: str | None, kind: str):
        self.sink, self.kind = sink, kind
        self.fmt = fmt if fmt in ("csv", "json", "table") else ("table" if sys.stdout.isatty() else "csv")
        self.done = set(self._committed())  # a resumed stream prints only what it writes now
        self.header = False

    def _committed(self) -> list[str]:
        log = self.sink / "_spark_metadata"
        files = []
        for f in log.iterdir() if log.is_dir() else []:
            if not f.name.split(".")[0].isdigit() or f.name.endswith(".tmp") or f.name.startswith("."):
                continue  # Spark's checksums and files being written
            for line in f.read_text().splitlines()[1:]:
                entry = json.loads(line)
                if entry.get("action") == "add":
                    files.append(entry["path"])
        return files

    def print_new(self) -> None:
        import pyarrow.parquet as pq  # printing only

        new = [f for f in self._committed() if f not in self.done]
        self.done.update(new)
        rows = []
        for f in new:
            rows += pq.read_table(f.removeprefix("file:")).to_pylist()
        if rows:
            rows.sort(key=lambda r: tuple(json.dumps(_plain(v), default=str) for k, v in r.items() if k != "rows"))
            self._print(rows)

    def _print(self, rows: list[dict]) -> None:
        columns = [c for c in rows[0] if c != "rows"]
        if self.fmt == "json":
            for r in rows:
                sys.stdout.write(json.dumps({c: _plain(v) for c, v in r.items()}, default=str) + "\n")
        elif self.fmt == "csv":
            import csv

            w = csv.writer(sys.stdout)
            if not self.header:
                w.writerow(list(rows[0]))
                self.header = True
            for r in rows:
                w.writerow([_cell(v) for v in r.values()])
        else:
            from rich.console import Console
            from rich.table import Table

            table = Table()
            for c in columns:
                table.add_column(c, overflow="fold")
            for r in rows:
                table.add_row(*(("[" + ", ".join(map(str, r[c])) + "]") if c == "events" else _cell(r[c]) for c in columns))
            Console(file=sys.stdout, highlight=False).print(table)
        sys.stdout.flush()
