"""Structured Streaming: the physical plan's second lowering — the same
operators over a streaming input, with the plan's stateful operator
(`PhysicalPlan.stream`, a `Stateful`) before the kernels.  It decides
nothing: keys, windows, clock, watermark delay and late-event policy are the
plan's (the `streaming` planner rule), shown by `--explain`.

    Scan → event time + watermark → Filter → Windows → Partition
         → pack → Stateful → unpack → output columns

- **event time**: the plan's clock (`Stateful.clock`, milliseconds per
  unit of the internal time, from an origin `kernels.stream.OFFSET`) as a
  timestamp on every scanned event (before the filter, so that any event
  moves time on), watermarked by the plan's delay.
- **pack**: a Spark partition's rows, one row per key holding its events
  as an Arrow IPC chunk, so they reach the operator with their exact types.
- **Stateful**: `transformWithStateInPandas` keyed by the kernel's group,
  in event time.  State per key: its events of open windows (a list of IPC
  chunks) and the watermark it last closed windows at; one timer, at its
  earliest open window's end.  New events behind the watermark are
  counted and dropped; a timer that fires answers every window of the key
  the watermark has passed with the batch kernels (`detect_table`,
  `aggregate_table`: a shared graph or one propagation where the plan
  shares blocks), keeps the events of open windows only and sets the next
  timer.  Aggregation keeps events, not running counts: what GRETA
  propagates depends on every earlier event of the window, which may still
  arrive out of order until the watermark passes.
- **unpack**: the result chunks as the batch kernel's output rows, then the
  batch's output columns.  Counts (late events, events stored and purged,
  windows answered) leave as Spark observed metrics named `METRICS`.
"""
from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cetql.backends.spark import compiler as C
from cetql.backends.spark import reader
from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.sql import quote
from cetql.base.errors import UsageError
from cetql.kernels import process
from cetql.kernels import stream as S
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import PhysicalPlan

PROVIDER = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
METRICS = "cetql"  # the observed metrics' name in each micro-batch's progress (cetql_2, … for later streams)
_streams = itertools.count(1)  # Spark refuses two observations of one name in a query (streams unioned)
STATS = ("late", "stored", "purged", "windows")
OPERATOR_OUTPUT = ", ".join(f"{s} long" for s in STATS) + ", blob binary"


# ---------------------------------------------------------------- inputs and session


def read_stream(spark, source: reader.Source, path: str) -> DataFrame:
    """A folder that receives files, read as a stream with the batch
    reader's rules: its format's files only, CSV and JSON as text (the scan
    casts them as in batch), Parquet as stored."""
    glob = {"csv": "*.csv", "parquet": "*.parquet", "json": "*.{json,jsonl,ndjson}"}[source.format]
    stream = spark.readStream.option("pathGlobFilter", glob).option("recursiveFileLookup", True)
    if source.format == "parquet":
        if any(c.nanos for c in source.columns):
            spark.conf.set(reader.NANOS_AS_LONG, "true")
        ddl = ", ".join(f"{quote(c.name)} {c.type}" for c in source.columns)
        naive_ns = {c.name for c in source.columns if c.nanos and c.naive}
        return reader.zoned(stream.schema(ddl).parquet(path), source.time_zone, naive_ns)
    ddl = ", ".join(f"{quote(c.name)} string" for c in source.columns)
    stream = stream.option("timeZone", source.time_zone)
    if source.format == "csv":
        return (
            stream.option("header", True)
            .option("mode", "FAILFAST")
            .option("multiLine", source.multiline)
            .option("escape", '"')  # RFC 4180, as the batch reader
            .option("enforceSchema", False)
            .schema(ddl)
            .csv(path)
        )
    return stream.schema(ddl).json(path)


def check_session(spark) -> None:
    """The operator keeps its state in RocksDB (Spark's default store cannot
    hold the state API's lists and timers)."""
    try:
        provider = spark.conf.get(PROVIDER, None)
    except Exception:  # noqa: BLE001 - a session that will not say: Spark's own error follows
        return
    if provider != ROCKSDB:
        raise UsageError(f"a streaming query keeps its windows in RocksDB state: set {PROVIDER}={ROCKSDB} on the "
                         "Spark session (SparkSession.builder.config or spark.conf.set) before running it")  # fmt: skip


# ---------------------------------------------------------------- the plan, spelled in Spark


def compile_stream(plan: PhysicalPlan, inputs: dict) -> DataFrame:
    """The streaming DataFrame of a plan with a stateful operator, over
    streaming inputs."""
    check_session(next(iter(inputs.values())).df.sparkSession)
    df = watermark(plan, C.scan(plan, inputs))
    df = C.partition(plan, C.windows(plan, C.filter_events(plan, df)))
    df, extra = C._with_rows(plan, df) if plan.detect is not None else (df, ())
    return stateful(plan, C._kernel_columns(plan, df, extra))


def stream_spec(plan: PhysicalPlan) -> S.StreamSpec:
    """What the operator's workers receive, read off the plan."""
    w, op = plan.windows, plan.stream
    return S.StreamSpec(kernel_spec(plan), op.windows.value, _number(w.length), _number(w.slide),
                        S.Clock(Fraction(op.clock)))  # fmt: skip


def _number(v):
    return float(v) if isinstance(v, Decimal) else v


def watermark(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """Spark's event time of each event (the plan's clock as a timestamp)
    and the watermark on it; the column is dropped again by the kernel input."""
    op = plan.stream
    ms = F.floor(F.col(plan.names.time).cast("double") * F.lit(float(op.clock))) + F.lit(S.OFFSET)
    df = df.withColumn(op.event_time, F.timestamp_millis(ms.cast("long")))
    return df.withWatermark(op.event_time, f"{op.watermark_ms} milliseconds")


def stateful(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """The operator over the kernel input, and the batch's output columns."""
    spec = stream_spec(plan)
    group = list(plan.stream.key)
    arrow = batch_schema(df)
    packed_schema = from_arrow_schema(batch_schema(df.select(*group)).append(_blob()))
    packed = df.mapInArrow(S.pack_fn(group), packed_schema)
    answered = packed.groupBy(*group).transformWithStateInPandas(
        statefulProcessor=WindowsProcessor(spec), outputStructType=OPERATOR_OUTPUT, outputMode="Append",
        timeMode="EventTime",
    )  # fmt: skip
    n = next(_streams)
    answered = answered.observe(METRICS if n == 1 else f"{METRICS}_{n}", *[F.sum(s).alias(s) for s in STATS])
    if spec.detect:
        out_schema = process.detect_schema(spec.kernel, arrow)
    else:
        out_schema = process.aggregate_schema(spec.kernel, arrow)
    rows = answered.filter(F.col("blob").isNotNull()).select("blob")
    rows = rows.mapInArrow(S.unpack_fn(out_schema), from_arrow_schema(out_schema))
    return _output(plan, rows)


def _blob():
    return pa.field("blob", pa.binary())


def _output(plan: PhysicalPlan, rows: DataFrame) -> DataFrame:
    """The batch query's output columns (`compiler.detect` / `aggregate`)."""
    start, end = C.window_bounds(plan)
    cols = [start.alias("window_start"), end.alias("window_end")]
    keys = plan.partition.keys
    if plan.detect is not None:
        cols += [F.col(k.column).alias(k.attr) for k in keys]
        cols += [F.col("events"), F.col("length")] + ([F.col("rows")] if plan.root.with_rows else [])
    else:
        cols += [F.col(k.column).alias(k.attr) for k in keys if k.output is not None]
        cols += [F.col(quote(t.name)) for t in plan.root.targets]
    return rows.select(*cols)


# ---------------------------------------------------------------- the operator


class WindowsProcessor(StatefulProcessor):
    """One key's windows (see the module's docstring)."""

    def __init__(self, spec: S.StreamSpec):
        self.spec = spec

    def init(self, handle) -> None:
        self.handle = handle
        self.events = handle.getListState("events", "blob binary")
        self.closed_at = handle.getValueState("closed_at", "watermark long")

    def handleInputRows(self, key, rows, timerValues):  # noqa: ARG002 - Spark's interface: the key is in the rows
        table = S.from_ipc(b for pdf in rows for b in pdf["blob"])
        if table is None:
            return
        kept, late = S.accept(self.spec, table, timerValues.getCurrentWatermarkInMs())
        if kept.num_rows:
            self.events.appendValue((S.to_ipc(kept),))
            self.handle.registerTimer(S.next_timer(self.spec, kept))
        yield _stats(late=late, stored=kept.num_rows)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # noqa: ARG002 - Spark passes them by these names
        wm = timerValues.getCurrentWatermarkInMs()
        done = self.closed_at.get()
        if done is not None and done[0] == wm:  # another timer of this micro-batch closed them all
            return
        table = S.from_ipc(b for (b,) in self.events.get())
        if table is None:
            return
        closed = S.close(self.spec, table, wm)
        if closed.remaining is None:
            self.events.clear()
            self.closed_at.clear()
        else:
            if closed.windows:  # the events left no longer name the windows just answered
                self.events.put([(S.to_ipc(closed.remaining),)])
            self.handle.registerTimer(S.next_timer(self.spec, closed.remaining))
            self.closed_at.update((wm,))
        if closed.batches:
            blobs = [S.to_ipc(pa.Table.from_batches([b])) for b in closed.batches]
            yield _frame({**{s: [0] * len(blobs) for s in STATS}, "blob": blobs})
        yield _stats(purged=closed.purged, windows=closed.windows)

    def close(self) -> None:
        pass


def _stats(**counts):
    return _frame({**{s: [int(counts.get(s, 0))] for s in STATS}, "blob": [None]})


def _frame(columns: dict):
    """A pandas DataFrame (what transformWithStateInPandas takes); pandas is
    imported here, in the stream's workers, not by every batch run (0.2 s)."""
    import pandas as pd

    return pd.DataFrame(columns)
