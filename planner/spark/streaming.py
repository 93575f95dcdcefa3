"""Structured Streaming: the batch plan over a streaming input, each window
answered once, when the watermark passes its end.

    Scan → Watermark → Filter → Windows → Partition      (the batch operators)
         → pack → StatefulWindows → unpack → output columns

- **Keys** (`stream_plan`, the streaming decision): the batch kernel's
  group — (block of windows, partition keys) — with blocks of at least
  `STREAM_BLOCK` windows, since a stream pays per key and micro-batch.
- **Watermark** on every scanned event (before the filter, so that any
  event moves time on): Spark's event-time clock in milliseconds
  (`kernels.stream.Clock`), the delay the user gave.
- **pack**: a Spark partition's rows, one row per key holding its events
  as an Arrow IPC chunk, so they reach the operator with their exact types.
- **StatefulWindows**: `transformWithStateInPandas` keyed by the group, in
  event time.  State per key: its events of open windows (a list of IPC
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

The seam to the physical plan: `compile_stream` takes the logical plan,
makes the streaming decision (`stream_plan`: the Windows operator with the
stream's blocks), lowers it (`lower`: kernel spec, keys, column
definitions), reads the window, time kind and time unit, and runs the
batch compiler's own Scan/Filter/Windows/Partition functions and kernel
input.  The operator itself, `stateful(df, phys, spec)`, takes only the
kernel input and a `StreamSpec` (kernel spec, how windows reach keys, the
window, the clock).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from cetql.errors import UsageError
from cetql.options import TIME_UNITS, Sharing, Strategy
from cetql.parser import TIME_UNITS as DURATION_SECONDS
from cetql.parser import UNIT_ALIASES

from ..kernels import process
from ..kernels import spec as K
from ..kernels import stream as S
from ..logical.plan import Decision, Detect, Filter, LogicalPlan, Partition, Scan, Windows
from ..lower import Physical, lower
from . import compiler as C
from . import reader

PROVIDER = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
METRICS = "cetql"  # the observed metrics' name in each micro-batch's progress (cetql_2, … for later streams)
_streams = itertools.count(1)  # Spark refuses two observations of one name in a query (streams unioned)
STATS = ("late", "stored", "purged", "windows")
STREAM_BLOCK = 64  # windows a key holds at least (see stream_plan)
OPERATOR_OUTPUT = ", ".join(f"{s} long" for s in STATS) + ", blob binary"


# ---------------------------------------------------------------- the watermark delay


@dataclass(frozen=True)
class Delay:
    """How far behind the latest event time the watermark runs: `amount`
    seconds with a unit, else in the time column's own units (seconds for
    timestamps), as WITHIN reads a duration."""

    amount: Decimal = Decimal(0)
    unit: str | None = None

    @classmethod
    def parse(cls, text) -> Delay:
        if text is None:
            return cls()
        words = str(text).strip().split()
        if len(words) == 1:  # "10s", "10"
            head = words[0].rstrip("abcdefghijklmnopqrstuvwxyz")
            words = [head, words[0][len(head) :]] if head != words[0] else words
        try:
            amount = Decimal(words[0])
            unit = UNIT_ALIASES[words[1].lower()] if len(words) == 2 else None
            ok = len(words) <= 2 and amount.is_finite() and amount >= 0
        except (InvalidOperation, KeyError, IndexError):
            ok = False
        if not ok:
            raise UsageError(f"watermark delay {text!r} is not a duration such as '10 minutes', '30 s' or 100")
        return cls(amount, unit)

    def millis(self, clock: S.Clock, time_kind: str) -> int:
        """The delay in milliseconds of the clock, rounded up."""
        if self.unit is not None:
            return math.ceil(self.amount * Decimal(str(DURATION_SECONDS[self.unit])) * 1000)
        if time_kind != "numeric":  # a bare duration is seconds for timestamps (as WITHIN reads one)
            return math.ceil(self.amount * 1000)
        per = clock.per_unit
        return math.ceil(Fraction(self.amount) * per)


def clock_of(plan: LogicalPlan, phys: Physical) -> S.Clock:
    """Milliseconds of the clock per unit of the time column."""
    if phys.time_kind == "timestamp":
        return S.Clock(Fraction(1, 1000))  # microseconds
    if phys.time_kind == "timestamp_ns":
        return S.Clock(Fraction(1, 1_000_000))
    return S.Clock(Fraction(1000, TIME_UNITS[plan.options.time_unit]))


# ---------------------------------------------------------------- inputs and session


def read_stream(spark, source: reader.Source, path: str) -> DataFrame:
    """A folder that receives files, read as a stream with the batch
    reader's rules: its format's files only, CSV and JSON as text (the scan
    casts them as in batch), Parquet as stored."""
    glob = {"csv": "*.csv", "parquet": "*.parquet", "json": "*.{json,jsonl,ndjson}"}[source.format]
    stream = spark.readStream.option("pathGlobFilter", glob).option("recursiveFileLookup", True)
    if source.format == "parquet":
        if any(c.nanos for c in source.columns):
            spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
        ddl = ", ".join(f"`{c.name}` {c.type}" for c in source.columns)
        return stream.schema(ddl).parquet(path)
    ddl = ", ".join(f"`{c.name}` string" for c in source.columns)
    if source.format == "csv":
        return (
            stream.option("header", True)
            .option("mode", "FAILFAST")
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


def refuse(plan: LogicalPlan) -> None:
    """What a stream cannot run, said before anything starts."""
    if isinstance(plan.root, Detect) and plan.root.strategy.choice == Strategy.DISTRIBUTED.value:
        raise UsageError("--strategy distributed runs batch joins; a stream runs each window on one worker (local)")
    if isinstance(plan.root, Detect) and not plan.find(Scan).id_col:
        raise UsageError("a streaming detection query needs an id column (--id-col / id_col=): ids derived from the "
                         "input order repeat from one micro-batch to the next")  # fmt: skip


# ---------------------------------------------------------------- the plan


def stream_plan(plan: LogicalPlan) -> LogicalPlan:
    """The streaming decision on keys.  A stream pays per key and
    micro-batch (a state read, a timer, a call into Python), where batch
    pays per group once: so a key holds a block of at least `STREAM_BLOCK`
    consecutive windows (an event is still in at most two blocks), and
    each timer that fires answers every window of the block the watermark
    has passed in one kernel call.  The block's state is the events of its
    open windows, whatever its width.  A block the plan chose keeps its
    shared graph or propagation (valid for any width); `--sharing copy`
    keeps a key per window."""
    op = plan.find(Windows)
    if plan.options.sharing == Sharing.COPY:
        return plan
    width = max(plan.query.window.copies, op.block, STREAM_BLOCK)
    if width == op.block:
        return plan
    why = (f"a stream: blocks of {width} consecutive windows a key (each event in at most 2), so that a key's "
           "timer answers every window the watermark has passed in one kernel call")  # fmt: skip
    blocks = replace(op, sharing=Decision(Sharing.BLOCKS.value, why), block=width,
                     propagate=op.propagate and bool(op.block), shared_graph=op.shared_graph and bool(op.block))  # fmt: skip
    part = plan.find(Partition)
    return replace(plan, root=replace(plan.root, child=replace(part, child=blocks)))


def compile_stream(plan: LogicalPlan, inputs: dict, delay: Delay) -> tuple[DataFrame, Physical]:
    """The streaming DataFrame of the plan over streaming inputs, and the
    lowered plan it was built from."""
    refuse(plan)
    plan = stream_plan(plan)
    check_session(next(iter(inputs.values())).df.sparkSession)
    columns = tuple(dict.fromkeys(c for i in inputs.values() for c in i.df.columns))
    phys = lower(plan, columns)
    clock = clock_of(plan, phys)
    df = C.scan(plan.find(Scan), phys, inputs, C.used_columns(phys, plan))
    df = watermark(df, phys, clock, delay.millis(clock, phys.time_kind))
    df = C.filter_events(plan.find(Filter), phys, df)
    df = C.windows(plan.find(Windows), phys, df)
    df = C.partition(plan.find(Partition), phys, df)
    spec = phys.spec
    extra = []
    if isinstance(spec, K.DetectSpec) and spec.columns.row:
        user = [c for c in columns if not c.startswith(phys.names.prefix)]
        df = df.withColumn(spec.columns.row, F.struct(*[F.col(f"`{c}`") for c in user]))
        extra.append(spec.columns.row)
    df = C._kernel_input(phys, df, spec, extra)
    return stateful(df, phys, stream_spec(plan, phys, clock)), phys


def stream_spec(plan: LogicalPlan, phys: Physical, clock: S.Clock) -> S.StreamSpec:
    op = plan.find(Windows)
    copies = S.ONE if op.sharing.choice == "none" else S.BLOCKS if op.block else S.COPY
    return S.StreamSpec(phys.spec, copies, phys.window_length, phys.window_slide, clock)


def watermark(df: DataFrame, phys: Physical, clock: S.Clock, delay_ms: int) -> DataFrame:
    """Spark's event time of each event (its clock as a timestamp) and the
    watermark on it; the column is dropped again by the kernel input."""
    name = phys.names.prefix + "et"
    ms = F.floor(F.col(phys.names.time).cast("double") * F.lit(float(clock.per_unit))) + F.lit(S.OFFSET)
    return df.withColumn(name, F.timestamp_millis(ms.cast("long"))).withWatermark(name, f"{delay_ms} milliseconds")


def stateful(df: DataFrame, phys: Physical, spec: S.StreamSpec) -> DataFrame:
    """The operator over the kernel input, and the batch's output columns."""
    group = list(spec.kernel.columns.group)
    arrow = to_arrow_schema(df.schema)
    packed_schema = from_arrow_schema(to_arrow_schema(df.select(*group).schema).append(_blob()))
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
    return _output(phys, spec, rows)


def _blob():
    return pa.field("blob", pa.binary())


def _output(phys: Physical, spec: S.StreamSpec, rows: DataFrame) -> DataFrame:
    """The batch query's output columns (`compiler.detect` / `aggregate`)."""
    start, end = C._window_bounds(phys)
    cols = [start.alias("window_start"), end.alias("window_end")]
    if spec.detect:
        cols += [F.col(name).alias(attr) for name, attr in phys.keys]
        cols += [F.col("events"), F.col("length")] + ([F.col("rows")] if spec.kernel.columns.row else [])
    else:
        by_name = dict(phys.keys)
        cols += [F.col(c).alias(by_name[c]) for c in spec.kernel.output_keys]
        cols += [F.col(f"`{t.name}`") for t in spec.kernel.targets]
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

    def handleInputRows(self, key, rows, timerValues):
        table = S.from_ipc(b for pdf in rows for b in pdf["blob"])
        if table is None:
            return
        kept, late = S.accept(self.spec, table, timerValues.getCurrentWatermarkInMs())
        if kept.num_rows:
            self.events.appendValue((S.to_ipc(kept),))
            self.handle.registerTimer(S.next_timer(self.spec, kept))
        yield _stats(late=late, stored=kept.num_rows)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
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
            yield pd.DataFrame({**{s: [0] * len(blobs) for s in STATS}, "blob": blobs})
        yield _stats(purged=closed.purged, windows=closed.windows)

    def close(self) -> None:
        pass


def _stats(**counts) -> pd.DataFrame:
    return pd.DataFrame({**{s: [int(counts.get(s, 0))] for s in STATS}, "blob": [None]})
