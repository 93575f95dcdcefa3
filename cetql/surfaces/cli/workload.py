"""`cetql compile|run` of a workload: several query files, or a workload
file (`workload_file`), planned together (`cetql.compile_many`).

Each query is planned for the inputs of its own types, as `cetql run`
plans it alone; the workload plan says what runs once for several.
Printed, each query's result follows its name; `--output DIR` writes each
query's result to `DIR/<name>/` (DIR is made if missing).  The engine is
the workload's: the embedded engine where it runs every query, else Spark.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

from cetql.base.errors import UsageError
from cetql.base.options import Engine, OutputFormat, OutputMode, Sink
from cetql.planner.explain import explain_data
from cetql.planner.semantics.schema import parse_ddl
from cetql.planner.workload.show import workload_lines, workload_text
from cetql.surfaces.api.workload import named
from cetql.surfaces.cli.flags import run_options
from cetql.surfaces.cli.said import say_dropped
from cetql.surfaces.cli.workload_common import accounted, planned, say_query_written, title
from cetql.surfaces.cli.workload_file import read_workload
from cetql.surfaces.output import check_append, resolve_output, write_batches, write_text_batches
from cetql.surfaces.render import print_result, sort_columns
from cetql.surfaces.serve.state import NOT_HERE


def cmd_compile_workload(args) -> int:
    options = replace(run_options(args), sink=Sink.PARQUET)  # planned as `run --output DIR` runs it
    if args.schema and args.input:
        raise UsageError("give either --schema or --input, not both")
    if not args.stream and args.watermark is not None:
        raise UsageError("--watermark is for streams: add --stream")
    schema = parse_ddl(args.schema) if args.schema else None
    cw, _, _ = planned(args, options, stream=args.stream, schema=schema, strict=bool(args.param))
    if args.format == "json":
        data = {"workload": workload_lines(cw.plan),
                "queries": {n: explain_data(c) for n, c in cw.queries}}  # fmt: skip
        for q in data["queries"].values():
            q.pop("ast", None)
        print(json.dumps(data, indent=2))
    elif args.explain or args.ast:
        print(workload_text(cw.plan, tuple(c.ast for _, c in cw.queries)))
    else:
        print(workload_lines(cw.plan)[0].replace("workload", "ok: workload", 1))
    return 0


def targets(args, names, fmt: OutputFormat, mode, inputs: list[str]) -> dict:
    """Each query's output folder, `DIR/<name>/`, checked before any work."""
    files = [args.query_file, *(args.more_queries or [])]
    root = workload_root(args, inputs)
    out = {}
    for name in names:
        out[name] = resolve_output(f"{root.rstrip('/')}/{name}", mode, inputs=inputs, query_file=files[0], fmt=fmt,
                                   make_parents=True)  # fmt: skip
    return out


def workload_root(args, inputs: list[str]) -> str:
    """`--output DIR` as a single run's output is checked (not empty, not
    the home, working or an input's folder, its parent there), `~` and
    `file://` read: the folder each query's `DIR/<name>/` is made in."""
    root = resolve_output(args.output, OutputMode.IGNORE, inputs=inputs, query_file=args.query_file)
    return root.uri if root.uri is not None else str(root.path)


def cmd_run_workload(args, fmt, mode, sink_of) -> int:
    options = run_options(args)
    given = [str(v) for v in (args.input or [])]
    names = tuple(read_workload(args))
    paths = [g.split("=", 1)[-1] for g in given]
    chosen = targets(args, names, fmt, mode, paths) if args.output is not None else None
    options = replace(options, sink=sink_of(fmt, next(iter(chosen.values())) if chosen else None))
    cw, data, typed = planned(args, options)
    made = None
    if chosen and (root := next(iter(chosen.values())).path) is not None:
        made = None if root.parent.exists() else root.parent
        root.parent.mkdir(exist_ok=True)
    try:
        if cw.plan.engine.engine == Engine.EMBEDDED:
            return run_embedded(cw, chosen, fmt, args)
        if args.only_in_process:
            return NOT_HERE
        from cetql.surfaces.cli.workload_spark import run_workload_on_spark  # start-up cost: pyspark, Spark's only

        return run_workload_on_spark(cw, data, typed, args, chosen, fmt)
    except BaseException:
        if made is not None and made.is_dir() and not any(made.iterdir()):
            made.rmdir()
        raise


def run_embedded(cw, chosen: dict | None, fmt, args) -> int:
    from cetql.backends.embedded import run  # start-up cost: DuckDB and the kernels, only for a run here
    from cetql.backends.embedded.results import RESULT  # start-up cost: as above
    from cetql.backends.embedded.workload import run_workload  # start-up cost: as above

    started = time.monotonic()
    dropped = 0
    made: list = []
    with run.failures(), run.closing(made), accounted([n for n, _ in cw.queries], chosen) as written:
        results = run_workload(cw.plan)
        made += results.values()
        for name, result in results.items() if chosen is not None else ():  # every query's, before any is written
            check_append(chosen[name], fmt, schema=result.schema)
        for k, (name, result) in enumerate(results.items()):
            kind = result.plan.kind.value
            dropped = max(dropped, result.dropped)
            with named(name), run.failures():  # an error met as this query's rows are made (a lazy one's) names it
                if chosen is not None:
                    rows = _write(run, result, chosen[name], fmt)
                    written.add(name, rows)
                    say_query_written(name, rows, kind, chosen[name], fmt, started)
                    continue
                result.connection.execute(f"DROP TABLE IF EXISTS {RESULT}").fetchall()
                title(name, k == 0)
                rows = run.rows(result, sort_columns(list(result.schema.names), kind))
                print_result(rows, limit=args.limit, fmt=args.format, show=None, stream=sys.stdout)
    say_dropped(dropped)
    return 0


def _write(run, result, target, fmt: OutputFormat) -> int | None:
    """One query's result as `run --output` writes it alone: Parquet, or
    CSV or JSON lines in Spark's own text form."""
    if fmt == OutputFormat.PARQUET:
        return write_batches(result.schema, result.batches, target)
    zone = run.zone_of(result.plan.logical.options.time_zone)
    return write_text_batches(result.schema, result.batches, target, fmt, zone)
