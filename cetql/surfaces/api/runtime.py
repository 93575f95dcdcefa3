"""Binding a compiled query to its inputs and running it on Spark.

`execute` reads every input's columns and types with the one reader
(`planner.spark.reader`), gathers the session's resources, gets the plan
from `planner.planning.plan` — the same function `compile --explain` and
`CompiledQuery.explain()` use — and compiles it to a lazy DataFrame.
`Execution` keeps the plan that runs beside the DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame

from cetql.backends.inputs.facts import summarize, time_in_nanos
from cetql.backends.spark import reader
from cetql.backends.spark.compiler import Input, compile_plan, events
from cetql.backends.spark.resources import session_resources
from cetql.backends.spark.session import get_spark
from cetql.backends.spark.streaming import compile_stream, refuse_own_watermark
from cetql.base.errors import SchemaError, UsageError
from cetql.base.words import did_you_mean
from cetql.planner.logical.plan import Delay, Inputs
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.planning import plan
from cetql.surfaces.api.engines import OFFERED
from cetql.surfaces.serve.state import token_for


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
    spark = spark or get_spark(token_for=token_for)
    inputs = resolve(spark, data, typed, options.time_zone)
    known = describe_inputs(inputs, options.time_col)
    if watermark is not None and not known.streaming:
        raise UsageError("watermark= is for streaming inputs (spark.readStream); a batch query reads all its data")
    if known.streaming:
        refuse_own_watermark(inputs)
        known = known.as_stream(Delay.parse(watermark))
    pattern_types = {p.type for p in compiled.query.positions.values()}
    unknown = set(known.types) - pattern_types
    if unknown:
        raise UsageError(
            f"input bound to type(s) {', '.join(sorted(unknown))} that the pattern does not use"
            f"{did_you_mean(min(unknown), pattern_types)} (its types: {', '.join(sorted(pattern_types))})"
        )
    if options.id_col is not None:
        for name, inp in inputs.items():
            if options.id_col not in inp.df.columns:
                where = f"input {name}" if name else "the input"
                raise SchemaError(
                    f"id column '{options.id_col}' is not in {where}{did_you_mean(options.id_col, inp.df.columns)} "
                    f"(columns: {', '.join(inp.df.columns)})"
                )
    return Execution(plan(compiled, known, session_resources(spark), OFFERED), inputs, spark, compiled.source)


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
                inp.source is not None and time_in_nanos(inp.source, time_col),
                inp.source.name if inp.source is not None else "a DataFrame",
                inp.source is not None and inp.source.text,
                inp.source,  # its files as described: the stamps a read checks, a Parquet input's statistics
            )
            for name, inp in inputs.items()
        },
        time_col,
    )
    return known.as_stream() if True in streams else known


