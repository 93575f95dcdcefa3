"""`cetql run`: a query over its inputs, printed or written, where the
plan says (`plan.engine`, chosen once by the planner): in this process on
the embedded engine, or on Spark (`on_spark`, loaded only then)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace

from cetql.base.errors import SchemaError, UsageError
from cetql.base.options import Engine, OutputFormat, OutputMode, Sink
from cetql.base.words import did_you_mean
from cetql.surfaces.api.query import check_inputs, compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.cli.flags import known_inputs, run_options
from cetql.surfaces.cli.said import say_dropped, say_written
from cetql.surfaces.cli.workload import cmd_run_workload
from cetql.surfaces.cli.workload_file import is_workload
from cetql.surfaces.output import resolve_output, write_batches, write_text_batches
from cetql.surfaces.render import print_result, sort_columns
from cetql.surfaces.serve.state import NOT_HERE, serve_for

EXIT_CANCELLED = 130


def cmd_run(args) -> int:
    if is_workload(args):
        return _run_workload(args)
    text = read_query(args.query_file)
    options = run_options(args)
    params = parse_params(args.param)
    data, typed = parse_inputs(args.input)
    if args.stream:
        if args.only_in_process:
            return NOT_HERE
        from cetql.surfaces.cli.on_spark import cmd_stream  # start-up cost: streams run on Spark

        return cmd_stream(args, text, options, params, data, typed)
    for flag in ("checkpoint", "watermark", "trigger", "until_idle"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag.replace('_', '-')} is for streams: add --stream")
    fmt, mode = _output_format(args)
    # everything that needs no data is refused now, before any engine starts
    inputs = known_inputs(data, typed, options.time_col, options.time_zone)
    target = None
    if args.output is not None:
        target = resolve_output(args.output, mode, inputs=[str(v) for v in ([data] if data else typed.values())],
                                query_file=args.query_file, fmt=fmt)  # fmt: skip
    options = replace(options, sink=_sink(fmt, target))
    compiled = compile(text, params, options=options, inputs=inputs, strict_params=True)
    given = data if data is not None else typed
    check_inputs(given, compiled.types)
    show = _show_attrs(args.show, inputs)
    if compiled.plan.engine.engine == Engine.EMBEDDED:
        return run_embedded(compiled.plan, target, fmt, args, show)
    served = None
    if args.only_in_process:
        served = _served(args)
        if served is None:
            return NOT_HERE
    from cetql.surfaces.cli.on_spark import run_on_spark  # start-up cost: pyspark, only for a plan Spark runs

    return run_on_spark(compiled, given, options, args, target, fmt, show, served=served)


def _served(args) -> str | None:
    """In a serve's warm process (`only_in_process`): the found serve's
    Connect server, when a plan for Spark would run there as the client
    would run it — then it runs here, on that server and no other (found
    once: a serve stopping meanwhile fails the run, it never starts a Spark
    here), pyspark's Connect client already loaded (0.6–0.7 s of the
    client's own start); None for a run that would start a Spark of its own
    (`--master`) or reach another server (`--remote`): it goes back
    (NOT_HERE)."""
    return serve_for(args.no_serve, args.master, args.remote)


def _run_workload(args) -> int:
    """Several queries (`cli.workload`): the same refusals, then the workload's run."""
    if args.show is not None:
        raise UsageError("--show prints one query's trends as chains: run that query alone")
    if args.stream:
        if args.only_in_process:
            return NOT_HERE
        from cetql.surfaces.cli.workload_spark import cmd_stream_workload  # start-up cost: streams run on Spark

        return cmd_stream_workload(args)
    for flag in ("checkpoint", "watermark", "trigger", "until_idle"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag.replace('_', '-')} is for streams: add --stream")
    fmt, mode = _output_format(args)
    return cmd_run_workload(args, fmt, mode, _sink)


def _sink(fmt: OutputFormat | None, target) -> Sink:
    if fmt is None:
        return Sink.PRINTED
    if target.uri is not None:
        return Sink.URI
    return Sink.PARQUET if fmt == OutputFormat.PARQUET else Sink.TEXT_FILES


def _output_format(args) -> tuple[OutputFormat | None, OutputMode]:
    """(--format of files written, --mode), checked against --output."""
    fmt = None
    if args.output is not None:
        if args.format == "table":
            raise UsageError("--format table prints the result; with --output give parquet, csv or json")
        fmt = OutputFormat(args.format or "parquet")
    elif args.format == "parquet":
        raise UsageError("--format parquet writes files: give --output PATH (or --format table, csv or json to print)")
    if args.output is None and args.mode != OutputMode.ERROR.value:
        raise UsageError("--mode says what to do with an existing --output path; give --output too")
    return fmt, OutputMode(args.mode)


def run_embedded(plan, target, fmt: OutputFormat | None, args, show) -> int:
    """A plan the embedded engine runs: in this process, no Spark."""
    from cetql.backends.embedded import run  # start-up cost: DuckDB and the kernels, only for a run here

    if args.only_in_process:
        print(f"using cetql serve's warm process (pid {os.getppid()}); --no-serve runs it in this one",
              file=sys.stderr)  # fmt: skip
    started = time.monotonic()
    made: list = []
    with run.failures(), run.closing(made):
        result = run.execute(plan)
        made.append(result)
        if target is not None and fmt == OutputFormat.PARQUET:
            rows = write_batches(result.schema, result.batches, target, result.parts)
            say_written(rows, plan.kind, args, fmt, started)
        elif target is not None:  # CSV or JSON lines, as Spark's writers write them
            zone = run.zone_of(plan.logical.options.time_zone)
            rows = write_text_batches(result.schema, result.batches, target, fmt, zone)
            say_written(rows, plan.kind, args, fmt, started)
        else:
            rows = run.rows(result, sort_columns(list(result.schema.names), plan.kind.value))
            print_result(rows, limit=args.limit, fmt=args.format, show=show, stream=sys.stdout)
    say_dropped(result.dropped)
    return 0


def _show_attrs(text: str | None, inputs=None):
    if text is None:
        return None
    attrs = [a.strip() for a in text.split(",") if a.strip()]
    if not attrs:
        raise UsageError("--show needs attribute names, e.g. --show src,dst")
    names = inputs.schema.names() if inputs is not None and inputs.schema is not None else None
    missing = [a for a in attrs if names is not None and a not in names]
    if missing:
        raise SchemaError(f"--show: no column {missing[0]} in the input{did_you_mean(missing[0], names)} "
                          f"(columns: {', '.join(names)})")  # fmt: skip
    return attrs
