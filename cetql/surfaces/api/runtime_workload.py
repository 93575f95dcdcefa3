"""Binding a workload to its inputs and running it on Spark: the inputs
read once by the one reader, each query planned by the one `plan`
function for the inputs of its own types, the workload plan over them
(`planner.workload`), compiled to one lazy DataFrame per query
(`backends.spark.workload`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cetql.backends.spark.resources import session_resources
from cetql.backends.spark.session import get_spark
from cetql.backends.spark.workload import compile_workload
from cetql.base.errors import ArgumentTypeError, UsageError
from cetql.base.options import RunOptions, option_names, unknown_keyword
from cetql.planner.logical.plan import Delay
from cetql.planner.planning import plan
from cetql.planner.workload.plan import WorkloadPlan
from cetql.planner.workload.share import workload
from cetql.surfaces.api.engines import OFFERED
from cetql.surfaces.api.query import check_inputs
from cetql.surfaces.api.runtime import Execution, describe_inputs, resolve
from cetql.surfaces.serve.state import token_for


class WorkloadFrames(dict):
    """{query name: its lazy DataFrame}, in the workload's order, and the
    workload plan that made them (`plan`).  The DataFrames of a shared
    exchange read one persisted result: the first action computes every
    query of it; `unpersist()` releases it."""

    def __init__(self, frames: dict, plan: WorkloadPlan, kept: list, stream=None):
        super().__init__(frames)
        self.plan = plan
        self._kept = kept
        self.stream = stream  # streams: the workload as one streaming DataFrame (`WorkloadStream`: df, frames(batch))

    def unpersist(self) -> None:
        for df in self._kept:
            df.unpersist()


@dataclass
class WorkloadExecution:
    """A workload bound to its inputs: its plan, its queries' DataFrames."""

    plan: WorkloadPlan
    inputs: dict
    spark: object
    frames: WorkloadFrames
    sources: dict  # query text by name, for messages

    def execution(self, name: str) -> Execution:
        """One query's result as a single query's `Execution` (its plan, its DataFrame)."""
        i = self.plan.names().index(name)
        return Execution(self.plan.plan(i), self.inputs, self.spark, self.sources[name], self.frames[name])


def _split(keywords: dict, types: tuple[str, ...]) -> tuple[dict, dict]:
    options, typed = {}, {}
    for k, v in keywords.items():
        if k in option_names():
            options[k] = v
        elif k in types:
            typed[k] = v
        else:
            raise ArgumentTypeError(unknown_keyword(k, option_names(), types))
    return options, typed


def execute_workload(cw, data, keywords: dict, *, spark, watermark=None) -> WorkloadExecution:
    types = tuple(sorted({t for _, c in cw.queries for t in c.types}))
    given, typed = _split(keywords, types)
    opts = RunOptions.of(cw.queries[0][1].options, **given)
    check_inputs(data, types)
    check_inputs(typed, types)
    cw.check_typed(typed if data is None else {}, "{}=input")
    spark = spark or get_spark(token_for=token_for)
    inputs = resolve(spark, data, typed, opts.time_zone)
    resources = session_resources(spark)
    named = []
    for name, c in cw.queries:
        mine = {t: i for t, i in inputs.items() if t is None or t in c.types}
        known = describe_inputs(mine, opts.time_col)
        if known.streaming:
            known = known.as_stream(Delay.parse(watermark))
        elif watermark is not None:
            raise UsageError("watermark= is for streaming inputs (spark.readStream); a batch query reads all its data")
        _check_ids(mine, opts.id_col)
        named.append((name, plan(replace(c, options=opts), known, resources, OFFERED)))
    w = workload(named, cw.sharing)
    if any(p.stream is not None for _, p in named):
        from cetql.backends.spark.workload_stream import compile_workload_stream  # start-up cost: streams only

        frames, one = compile_workload_stream(w, inputs)
        out = WorkloadFrames(frames, w, [], one)
    else:
        out = _frames(w, inputs)
    return WorkloadExecution(w, inputs, spark, out, {n: c.source for n, c in cw.queries})


def _frames(w: WorkloadPlan, inputs: dict) -> WorkloadFrames:
    frames, kept = compile_workload(w, inputs)
    return WorkloadFrames(frames, w, kept)


def _check_ids(inputs: dict, id_col: str | None) -> None:
    if id_col is None:
        return
    for name, inp in inputs.items():
        if id_col not in inp.df.columns:
            where = f"input {name}" if name else "the input"
            raise UsageError(f"id column '{id_col}' is not in {where} (columns: {', '.join(inp.df.columns)})")
