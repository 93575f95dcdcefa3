"""The command line's options as the compiler's values: run options, the
engine asked for, what path inputs hold (learnt without an engine), and
the options every query command shares."""

from __future__ import annotations

import os
from dataclasses import replace

from cetql.backends.inputs.facts import describe_paths
from cetql.base.errors import UsageError
from cetql.base.options import RunOptions
from cetql.planner.logical.plan import Delay, Inputs

ENGINES = ("auto", "embedded", "spark")


def run_options(args) -> RunOptions:
    keywords = {
        "trends": getattr(args, "trends", None),
        "strategy": getattr(args, "strategy", None),
        "sharing": getattr(args, "sharing", None),
        "approx": getattr(args, "approx", False),
        "exact": getattr(args, "exact", None),
        "kernel": getattr(args, "kernel", None),
        "compiled": getattr(args, "compiled", None),
        "with_rows": getattr(args, "with_rows", False),
        "time_col": args.time_col,
        "time_unit": getattr(args, "time_unit", None),
        "id_col": getattr(args, "id_col", None),
        "drop_invalid": getattr(args, "drop_invalid", False),
        "max_trends": getattr(args, "max_trends", None),
        "max_windows": getattr(args, "max_windows", None),
        "memory_budget": getattr(args, "memory_budget", None),
        "partitions": getattr(args, "partitions", None),
        "time_zone": getattr(args, "time_zone", None),
        "engine": _engine(args),
    }
    return replace(RunOptions.of(**keywords), spark_asked=_spark_asked(args))


def _engine(args) -> str | None:
    """--engine (default auto, or CETQL_ENGINE): the planner decides with it."""
    if not hasattr(args, "engine"):
        return None
    engine = args.engine or os.environ.get("CETQL_ENGINE") or "auto"
    if engine not in ENGINES:
        raise UsageError(f"CETQL_ENGINE={engine!r}: expected {', '.join(ENGINES)}")
    return engine


def _spark_asked(args) -> str | None:
    """The flag that asks for a Spark session (--master, --remote,
    SPARK_REMOTE, --partitions): a requirement the planner weighs."""
    for flag in ("master", "remote"):
        if getattr(args, flag, None) is not None:
            return f"--{flag}"
    if hasattr(args, "engine") and os.environ.get("SPARK_REMOTE"):  # before --partitions: where the run goes
        return "SPARK_REMOTE"
    return "--partitions" if getattr(args, "partitions", None) is not None else None


def known_inputs(data, typed: dict, time_col: str, time_zone: str = "UTC"):
    """What can be learnt of path inputs without Spark (tables: nothing)."""
    return describe_paths({None: data} if data is not None else dict(typed), time_col, time_zone)


def as_stream(inputs: Inputs | None, watermark: str | None) -> Inputs:
    """`--stream`: the inputs are streams, the watermark this far behind."""
    return (inputs or Inputs()).as_stream(Delay.parse(watermark))


def _common(p) -> None:
    p.add_argument("query_file", help="a .cet file, or - for standard input")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    p.add_argument("--time-col", default="ts", help="the time column: a timestamp or a number (default: ts)")
    p.add_argument("--time-unit", choices=["s", "ms", "us", "ns"],
                   help="what one unit of a numeric time column is, for durations with units (default: s)")
    p.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    p.add_argument("--time-zone", metavar="ZONE",
                   help="the zone of times written without one, e.g. Europe/Berlin or +05:30 (default: UTC)")
    p.add_argument("--strategy", choices=["local", "distributed"], help="force a detection strategy")
    p.add_argument("--trends", choices=["complete", "maximal", "all"], help="override the query's trend set")
    p.add_argument("--sharing", choices=["copy", "blocks"],
                   help="sliding windows: copy each event into every window, or into blocks of windows "
                        "(default: chosen by the plan)")  # fmt: skip
    p.add_argument("--with-rows", action="store_true", help="detection: add the events' input rows to each trend")
    p.add_argument("--max-trends", metavar="N",
                   help="detection: refuse a (window, group) with more than N trends (default 10,000,000; 0: no limit)")
    p.add_argument("--max-windows", metavar="N",
                   help="refuse WITHIN/SLIDE that put an event in more than N windows (default 100,000; 0: no limit)")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="detection: what one task may hold beyond its group's events, e.g. 256m or 2g: its graph's "
                        "edges while they fit in half, and the output batch (default: half the executor memory over "
                        "its task slots)")  # fmt: skip
    p.add_argument("--approx", action="store_true", help="aggregation: DOUBLE instead of exact numbers (as APPROX)")
    p.add_argument("--exact", choices=["decimal", "string"],
                   help="aggregation: exact numbers as DECIMAL(38,s) (default; larger is an error) or as text")
    p.add_argument("--compiled", choices=["auto", "always", "never"],
                   help="the kernels' compiled loops (numba), for the shapes they cover: auto (default: tasks of 4,096 "
                        "rows or more), always, or never (the reference kernels); --explain's Kernel line says which")  # fmt: skip
    p.add_argument("--kernel", choices=["index", "scan"],
                   help="aggregation: the attribute index (default) or GRETA's O(n^2) predecessor scan, to compare")
    p.add_argument("--engine", choices=ENGINES,
                   help="where it runs: auto (default; also CETQL_ENGINE) runs in this process on the embedded "
                        "engine (DuckDB, no Spark) where it can — local CSV, JSON or Parquet printed or written as "
                        "Parquet: --explain says why or why not — else on Spark; embedded or spark insists")  # fmt: skip
    p.add_argument("--drop-invalid", action="store_true",
                   help="drop rows with a null/NaN/infinite time or an unreadable value instead of failing (counted)")
