"""A workload over a stream: the workload plan's second lowering, as
`streaming` is a query's — deciding nothing.

    each scan group:  one scan, its event time and watermark (the plan's)
      each exchange:  the shared kernel input → pack → one stateful
                      operator keyed by the exchange's group, running every
                      member's kernel when the watermark passes a window
                      (`kernels.workload` through `kernels.stream.close`)
    all exchanges:    one streaming DataFrame of (exchange, result chunk)
                      rows — one streaming query, one checkpoint

`WorkloadStream.frames(batch)` turns one micro-batch of it into each
query's rows, in the columns the query gives alone (a `foreachBatch`
writes them: `surfaces.cli.workload_stream`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.spark import compiler as C
from cetql.backends.spark import streaming as S
from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.workload import query_frame, shared_input
from cetql.kernels import stream as KS
from cetql.kernels.workload import combined_schema
from cetql.kernels.workload_spec import WorkloadSpec
from cetql.planner.physical.plan import PhysicalPlan
from cetql.planner.workload.kernel import workload_spec
from cetql.planner.workload.plan import WorkloadPlan

EXCHANGE = "exchange"


@dataclass(frozen=True)
class Answered:
    """One exchange's stateful operator: its members' combined rows leave as chunks."""

    index: int
    spec: WorkloadSpec
    schema: pa.Schema  # the combined rows' schema
    plans: tuple[tuple[str, int, PhysicalPlan], ...]  # (name, query index, plan) of each member


@dataclass(frozen=True)
class WorkloadStream:
    """The workload's one streaming DataFrame and how to read a micro-batch of it."""

    df: DataFrame
    exchanges: tuple[Answered, ...]

    def frames(self, batch: DataFrame) -> dict[str, DataFrame]:
        """Each query's rows of one micro-batch, in its own columns."""
        out = {}
        for ex in self.exchanges:
            chunks = batch.filter((F.col(EXCHANGE) == ex.index) & F.col("blob").isNotNull()).select("blob")
            rows = chunks.mapInArrow(KS.unpack_fn(ex.schema), from_arrow_schema(ex.schema))
            for name, query, plan in ex.plans:
                out[name] = query_frame(plan, rows, ex.spec, query)
        return out


def workload_stream(w: WorkloadPlan, inputs: dict) -> WorkloadStream:
    """The workload's streaming DataFrame (every query must share: a stream
    runs shared, or as one query of its own)."""
    S.check_session(next(iter(inputs.values())).df.sparkSession)
    if w.alone:
        raise ValueError("a stream's workload runs every query in an exchange")  # the planner's stream rule
    parts, answered = [], []
    for g in w.groups:
        reader = replace(w.plan(g.reader), scan=g.scan)
        events = S.watermark(reader, C.scan(reader, inputs))
        for ex in g.exchanges:
            plan = w.plan(ex.queries[0])
            spec = workload_spec(w, ex)
            df = shared_input(ex, plan, spec, events)
            schema = combined_schema(spec, batch_schema(df))
            k = len(answered)
            parts.append(_operator(plan, spec, df).select(F.lit(k).alias(EXCHANGE), "blob"))
            answered.append(Answered(k, spec, schema, tuple((w.queries[q].name, q, w.plan(q)) for q in ex.queries)))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return WorkloadStream(out, tuple(answered))


def _operator(plan: PhysicalPlan, spec: WorkloadSpec, df: DataFrame) -> DataFrame:
    """The stateful operator over a shared kernel input (`streaming.stateful`, every member at once)."""
    w, op = plan.windows, plan.stream
    stream_spec = KS.StreamSpec(spec, op.windows.value, S._number(w.length), S._number(w.slide),
                                KS.Clock(Fraction(op.clock)))  # fmt: skip
    group = list(op.key)
    packed_schema = from_arrow_schema(batch_schema(df.select(*group)).append(S._blob()))
    packed = df.mapInArrow(KS.pack_fn(group), packed_schema)
    answered = packed.groupBy(*group).transformWithStateInPandas(
        statefulProcessor=S.WindowsProcessor(stream_spec), outputStructType=S.OPERATOR_OUTPUT, outputMode="Append",
        timeMode="EventTime",
    )  # fmt: skip
    n = next(S._streams)
    return answered.observe(S.METRICS if n == 1 else f"{S.METRICS}_{n}", *[F.sum(s).alias(s) for s in S.STATS])


def compile_workload_stream(w: WorkloadPlan, inputs: dict) -> tuple[dict[str, DataFrame], WorkloadStream]:
    """(each query's streaming DataFrame — each started on its own runs the
    whole workload's operators —, the workload as one stream)."""
    ws = workload_stream(w, inputs)
    return ws.frames(ws.df), ws
