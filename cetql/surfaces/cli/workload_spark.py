"""`cetql run` of a workload on Spark: one session, every query's
DataFrame from the workload plan (a shared exchange computed once, kept
for its other queries), each printed under its name or written to
`--output DIR/<name>/`; `--stream`: one streaming query, one checkpoint
(`workload_stream`).  Loaded only when the workload runs on Spark."""

from __future__ import annotations

import sys
import time

from cetql.backends.spark.compiler import count_invalid
from cetql.backends.spark.failures import describe
from cetql.backends.spark.results import SparkRows
from cetql.base.errors import CetqlError
from cetql.surfaces.cli.on_spark import _release, _session, printing_zone
from cetql.surfaces.cli.said import say_dropped
from cetql.surfaces.cli.workload_common import accounted, say_query_written, title
from cetql.surfaces.output import check_append, prepare_for_format, write
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result, sort_columns


def run_workload_on_spark(cw, data, typed: dict, args, chosen: dict | None, fmt) -> int:
    options = cw.queries[0][1].options
    spark, slot = _session(args, options)
    try:
        _run(spark, cw, data, typed, args, chosen, fmt)
    finally:
        _release(spark, slot)
    return 0


def _run(spark, cw, data, typed: dict, args, chosen: dict | None, fmt) -> None:
    started = time.monotonic()
    execution = None
    try:
        with progress(spark, f"running a workload of {len(cw.queries)} queries"):
            execution = cw.execution(data, spark=spark, **typed)
            try:
                with accounted(list(execution.frames), chosen) as written:
                    for name, df in execution.frames.items() if chosen is not None else ():  # all, before any write
                        check_append(chosen[name], fmt, df=prepare_for_format(df, fmt))
                    for k, (name, df) in enumerate(execution.frames.items()):
                        kind = execution.plan.plan(k).kind.value
                        if chosen is not None:
                            rows = write(df, chosen[name], fmt)
                            written.add(name, rows)
                            say_query_written(name, rows, kind, chosen[name], fmt, started)
                            continue
                        title(name, k == 0)
                        with printing_zone(cw.queries[0][1].options.time_zone):
                            rows = SparkRows(execution.execution(name), sort_columns(df.columns, kind))
                            print_result(rows, limit=args.limit, fmt=args.format, show=None, stream=sys.stdout)
            finally:
                execution.frames.unpersist()
            if cw.queries[0][1].options.drop_invalid:
                say_dropped(count_invalid(execution.plan.plan(0), execution.inputs))
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:
        raise describe(e) from None


def cmd_stream_workload(args) -> int:
    from cetql.surfaces.cli.workload_stream import run_workload_stream  # start-up cost: streams only

    return run_workload_stream(args)
