"""Binding a compiled query to its inputs and running it on Spark.

`execute` reads every input's columns and types with the one reader
(`planner.spark.reader`), gathers the session's resources, gets the plan
from `planner.planning.plan` — the same function `compile --explain` and
`CompiledQuery.explain()` use — and compiles it to a lazy DataFrame.
`Execution` keeps the plan that runs beside the DataFrame.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame

from .errors import SchemaError, UsageError
from .planner.logical.plan import Delay, InputFacts, Inputs, LocalFiles, Resources
from .planner.physical.kernel import kernel_spec
from .planner.physical.plan import PhysicalPlan
from .planner.planning import plan
from .planner.semantics.schema import NUMERIC, OTHER, STRING, TIMESTAMP, Schema
from .planner.spark import reader
from .planner.spark.compiler import Input, compile_plan, events
from .planner.spark.streaming import compile_stream
from .session import get_spark, local_resources


@dataclass
class Execution:
    """A query bound to its inputs: the plan that runs and its DataFrame."""

    plan: PhysicalPlan
    inputs: dict[str | None, Input]
    spark: object
    source: str  # the query text, for messages
    _df: object = None

    @property
    def streaming(self) -> bool:
        """The plan runs its inputs as streams (its stateful operator)."""
        return self.plan.stream is not None

    @property
    def dataframe(self):
        if self._df is None:
            if self.streaming:  # the same plan's second lowering: each window answered once the watermark passes it
                self._df = compile_stream(self.plan, self.inputs)
            else:
                self._df = compile_plan(self.plan, self.inputs)
        return self._df

    @property
    def spec(self):
        """The kernel spec the workers receive (derived from the plan)."""
        return kernel_spec(self.plan)

    def events(self):
        """(the scanned events, the name of their id column)."""
        return events(self.plan, self.inputs)


def execute(compiled, data, typed: dict, *, spark, options, watermark=None) -> Execution:
    spark = spark or get_spark()
    inputs = resolve(spark, data, typed, options.time_zone)
    known = describe_inputs(inputs, options.time_col)
    if watermark is not None and not known.streaming:
        raise UsageError("watermark= is for streaming inputs (spark.readStream); a batch query reads all its data")
    if known.streaming:
        known = known.as_stream(Delay.parse(watermark))
    pattern_types = {p.type for p in compiled.query.positions.values()}
    unknown = set(known.types) - pattern_types
    if unknown:
        raise UsageError(
            f"input bound to type(s) {', '.join(sorted(unknown))} that the pattern does not use "
            f"(its types: {', '.join(sorted(pattern_types))})"
        )
    if options.id_col is not None:
        for name, inp in inputs.items():
            if options.id_col not in inp.df.columns:
                where = f"input {name}" if name else "the input"
                raise SchemaError(
                    f"id column '{options.id_col}' is not in {where} (columns: {', '.join(inp.df.columns)})"
                )
    return Execution(plan(compiled, known, session_resources(spark)), inputs, spark, compiled.source)


def session_resources(spark) -> Resources:
    """What the planner needs to know of a session: the memory its executors
    have for Python (spark.executor.pyspark.memory if set, else the
    executor's — local mode: the driver's, where its executor runs), how many
    tasks one runs at once, how many the session runs at once, whether the
    GraphFrames JVM package is on its classpath.  Read from its
    configuration only (no job, no JVM call), so Connect sessions answer too."""
    conf = _conf(spark)
    master = conf("spark.master") or ""
    local = master.startswith("local")
    memory = conf("spark.executor.pyspark.memory") or conf("spark.driver.memory" if local else "spark.executor.memory")
    cpus = max(1, int(conf("spark.task.cpus") or 1))
    if local:
        inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
        slots = (os.cpu_count() or 1) if inside.startswith("*") else int(inside.split(",")[0] or 1)
        parallelism = slots
    else:
        slots = int(conf("spark.executor.cores") or 1)
        instances = int(conf("spark.executor.instances") or 2)
        parallelism = int(conf("spark.default.parallelism") or slots * instances)
    jars = (conf("spark.jars.packages") or "") + (conf("spark.jars") or "")
    return Resources(executor_memory=memory or None, task_slots=max(1, slots // cpus),
                     parallelism=max(1, parallelism // cpus), graphframes="graphframes" in jars.lower() and _graphframes(),
                     source=f"the session ({master or 'master unknown'})", assumed=False)  # fmt: skip


def _conf(spark):
    def get(key: str):
        try:
            return spark.conf.get(key, None)
        except Exception:  # noqa: BLE001 - a key the session will not say: the plan assumes Spark's default
            return None

    return get


def _graphframes() -> bool:
    try:
        import graphframes  # noqa: F401 - an optional extra: is it installed?
    except ImportError:
        return False
    return True


def default_resources() -> Resources:
    """The resources of the session `cetql run` starts by default (local[*],
    its driver memory), for plans made before any session exists."""
    memory, slots = local_resources()
    return Resources(executor_memory=memory, task_slots=slots, parallelism=slots,
                     source=f"the session cetql run starts (local[*], {memory})", assumed=True)  # fmt: skip


# ---------------------------------------------------------------- inputs


def resolve(spark, data, typed: dict, time_zone: str = "UTC") -> dict[str | None, Input]:
    """{type name or None: Input} from what the user gave.  Timestamps
    without a zone are read in `time_zone`, whatever the session's zone."""
    given: dict = {}
    if isinstance(data, dict):
        given.update(data)
    elif data is not None:
        given[None] = data
    for k, v in typed.items():
        if k in given:
            raise UsageError(f"type '{k}' is bound to two inputs")
        given[k] = v
    if not given:
        raise UsageError("no input: give a DataFrame, a path or a table name")
    if None in given and len(given) > 1:
        raise UsageError("give either one untyped input or inputs bound to type names (Type=...), not both")
    out = {}
    for name, value in given.items():
        if isinstance(value, Input):  # read already (a stream read by the batch reader's rules)
            out[name] = value
        elif isinstance(value, DataFrame):
            out[name] = Input(reader.zoned(value, time_zone))
        elif isinstance(value, (str, Path)):
            out[name] = read_input(spark, value, time_zone)
        else:
            raise UsageError(f"input {name or ''} is a {type(value).__name__}; give a DataFrame, a path or a table name")
    return _one_precision(out)


def _one_precision(inputs: dict[str | None, Input]) -> dict[str | None, Input]:
    """A timestamp column in nanoseconds in one input and in microseconds in
    another is read to the nanosecond in both (pandas' Parquet beside
    Spark's): one kind of time, exactly."""
    nanos = {c.name for inp in inputs.values() if inp.source is not None for c in inp.source.columns if c.nanos}
    if not nanos or len(inputs) < 2:
        return inputs
    return {name: Input(*reader.as_nanoseconds(inp.df, inp.source, nanos)) for name, inp in inputs.items()}


def read_input(spark, spec, time_zone: str = "UTC") -> Input:
    text = str(spec)
    if Path(text).exists():
        source = reader.describe(text, time_zone)
        return Input(reader.read(spark, source), source)
    if reader.is_path(text):
        raise UsageError(f"input '{text}' does not exist")
    if _table_exists(spark, text):
        return Input(reader.zoned(spark.table(text), time_zone))
    raise UsageError(f"input '{text}' is neither a file nor a table or view")


def _table_exists(spark, name: str) -> bool:
    try:
        return spark.catalog.tableExists(name)
    except Exception:  # a name Spark cannot parse as a table name
        return False


def describe_inputs(inputs: dict[str | None, Input], time_col: str) -> Inputs:
    """What the planner needs to know of the inputs, streams among them
    (`isStreaming`: the plan then runs them through its stateful operator)."""
    streams = {inp.df.isStreaming for inp in inputs.values()}
    if len(streams) > 1:
        raise UsageError("some inputs are streams and some are not; give every input as a stream (spark.readStream)")
    known = summarize(
        {
            name: (
                inp.source.schema if inp.source is not None else reader.from_spark(inp.df.schema),
                inp.source is not None and any(c.nanos and c.name == time_col for c in inp.source.columns),
                inp.source.name if inp.source is not None else "a DataFrame",
                inp.source is not None and inp.source.text,
            )
            for name, inp in inputs.items()
        },
        time_col,
    )
    return known.as_stream() if True in streams else known


def summarize(described: dict[str | None, tuple], time_col: str) -> Inputs:
    """Inputs from each input's (schema, nanosecond time?, label, read as
    text?[, local Parquet files])."""
    cols: dict[str, tuple] = {}
    kinds = set()
    each = []
    for name, (schema, nanos, label, text, *files) in described.items():
        kinds.add(time_kind(schema, time_col, nanos, name))
        found = schema.lookup(time_col)
        written = None if found is None or found[0] == OTHER else found[1]
        each.append(InputFacts(name, label, text, written, nanos, files=files[0] if files else None))
        for c in schema.columns:
            prev = cols.get(c[0])
            if prev is not None and OTHER not in (prev[1], c[1]) and prev[1] != c[1]:
                raise SchemaError(
                    f"column '{c[0]}' is {prev[2]} in one input and {c[2]} in another; give it one type"
                )
            if prev is None or prev[1] == OTHER:
                cols[c[0]] = c
    kinds.discard(None)
    if kinds == {"timestamp", "timestamp_ns"}:  # the same kind at two precisions: nanoseconds hold both
        kinds = {"timestamp_ns"}
    if len(kinds) > 1:
        raise SchemaError(f"time column '{time_col}' is a timestamp in one input and a number in another")
    return Inputs(
        typed=None not in described,
        types=tuple(sorted(k for k in described if k is not None)),
        schema=Schema(tuple(cols.values())),
        time_kind=next(iter(kinds)) if kinds else "numeric",
        names=tuple(d[2] for d in described.values()),
        each=tuple(each),
    )


def describe_paths(specs: dict[str | None, str], time_col: str) -> Inputs | None:
    """What can be learnt of inputs without Spark: paths are described by the
    reader; a table name needs Spark (None)."""
    if not specs or not all(Path(str(v)).exists() for v in specs.values()):
        return None
    described = {}
    for name, spec in specs.items():
        source = reader.describe(spec)
        nanos = any(c.nanos and c.name == time_col for c in source.columns)
        described[name] = (source.schema, nanos, source.name, source.text, local_files(source))
    return summarize(described, time_col)


def local_files(source) -> LocalFiles | None:
    """What the in-process engine needs to know of Parquet files: rows, size
    and Arrow types, from their footers (None for other formats)."""
    if source.format != "parquet":
        return None
    import pyarrow.parquet as pq

    rows = size = 0
    arrow = None
    for f in source.files:
        meta = pq.ParquetFile(f).metadata
        rows += meta.num_rows
        size += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if arrow is None:
            arrow = tuple((field.name, str(field.type)) for field in meta.schema.to_arrow_schema())
    return LocalFiles(tuple(source.files), rows, size, arrow or ())


def time_kind(schema: Schema, time_col: str, nanos: bool, name=None) -> str | None:
    found = schema.lookup(time_col)
    where = f"input {name}" if name else "the input"
    if found is None:
        raise SchemaError(
            f"time column '{time_col}' is not in {where} (columns: {', '.join(schema.names())}); "
            "name it with --time-col"
        )
    cls, written = found
    if nanos:
        return "timestamp_ns"
    if cls == TIMESTAMP:
        return "timestamp"
    if cls == NUMERIC:
        return "numeric"
    if cls == OTHER:
        return None  # no value seen (an empty input): any kind fits
    what = "text" if cls == STRING else written
    raise SchemaError(f"time column '{time_col}' is {what}; it must be a timestamp or a number")
