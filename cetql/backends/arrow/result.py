"""The result's columns from a kernel's batches, as the Spark compiler
selects them: window bounds (from the window index, as `sql.windows`
spells them for Spark), keys by their attributes' names, then the trends
or the aggregates.  Window bounds are never null; every other column may
be (the rule both engines' result schemas follow).  Used where Arrow
batches become the result: the embedded engine, and a Spark plan's Python
workers writing their own Parquet files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.base.errors import OVERFLOW_MESSAGE, CetqlError
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Bounds, Detect, PhysicalPlan

BOUND_TYPES = {Bounds.INTEGER: pa.int64(), Bounds.TIMESTAMP: pa.timestamp("us", tz="UTC"),
               Bounds.TIMESTAMP_NS: pa.timestamp("us", tz="UTC")}  # fmt: skip


class ArithmeticOverflow(CetqlError):
    """An integer went past 64 bits (Spark's ANSI mode fails the query)."""

    exit_code = 1


def says_overflow(e: BaseException) -> bool:
    """Does an engine's error say a number went past its type?  (Not an
    array past what Arrow's offsets hold — "overflowed binary array
    capacity", "offset overflow" —: said as the run's failure, in Arrow's
    words.)"""
    text = str(e).lower()
    return ("overflow" in text or "out of range" in text) and not ("capacity" in text or "offset" in text)


def output(plan: PhysicalPlan, kernel_schema: pa.Schema):
    """(schema, batch → batch) of the result's columns."""
    n, w = plan.names, plan.windows
    keys = [k for k in plan.partition.keys if isinstance(plan.root, Detect) or k.output is not None]
    bound = BOUND_TYPES[w.bounds]
    rest = ["events", "length"] if isinstance(plan.root, Detect) else [t.name for t in kernel_spec(plan).targets]
    fields = [pa.field("window_start", bound, nullable=False), pa.field("window_end", bound, nullable=False)]
    fields += [pa.field(k.attr, kernel_schema.field(k.column).type) for k in keys]
    fields += [kernel_schema.field(c).with_nullable(True) for c in rest]
    schema = pa.schema(fields)
    slide, length = int(w.slide), int(w.length)
    nanos = w.bounds == Bounds.TIMESTAMP_NS
    window = n.window
    columns = [key.column for key in keys] + rest

    def shown(x: pa.Array) -> pa.Array:
        if nanos:  # to the microsecond, floored
            x = pa.array(np.floor_divide(x.to_numpy(), 1000))
        return x.cast(bound)

    def project(batch: pa.RecordBatch) -> pa.RecordBatch:
        k = batch.column(window).cast(pa.int64())
        try:
            start = pc.multiply_checked(k, slide)
            end = pc.add_checked(start, length)
        except pa.ArrowInvalid as e:
            if says_overflow(e):
                raise ArithmeticOverflow(OVERFLOW_MESSAGE) from None
            raise
        arrays = [shown(start), shown(end)] + [batch.column(c) for c in columns]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    return schema, project
