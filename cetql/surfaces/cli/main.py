"""The `cetql` command.

    cetql compile QUERY [--explain] …      check a query and show its plan (no Spark)
    cetql run QUERY --input … [--output …]  run it (on Spark, or in process: --engine)
    cetql repl [--input …]                 an interactive shell on one warm session
    cetql gen SCENARIO --events N -o PATH  example data
    cetql draw QUERY --input … -o FILE     the relevance graph of one window
    cetql serve [--port 15002]             a warm Spark Connect server for `run --remote`

Everything that can be refused without data is refused before Spark
starts.  Exit status: 0 ok; 2 a query, schema, parameter or usage error; 1 a
failed Spark job; 130 cancelled (Ctrl-C).  Every error is one line (a query
error also shows its line and a caret), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from cetql.backends.inputs.facts import describe_paths
from cetql.backends.spark.compiler import count_invalid, diagnose_invalid
from cetql.backends.spark.failures import JobFailed, describe
from cetql.backends.spark.reader import NANOS_AS_LONG
from cetql.backends.spark.resources import default_resources
from cetql.backends.spark.session import get_spark, is_connect, log_path
from cetql.base.errors import CetqlError, QueryError, QuerySyntaxError, SchemaError, UsageError
from cetql.base.options import Engine, OutputFormat, OutputMode, RunOptions, Sink
from cetql.base.version import VERSION as __version__
from cetql.planner.explain import explain_data, explain_text, summary_text
from cetql.planner.logical.plan import Delay, Inputs
from cetql.planner.semantics.schema import parse_ddl
from cetql.surfaces import gen, repl
from cetql.surfaces.api.query import check_inputs, compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.cli import stream as streaming
from cetql.surfaces.draw import draw
from cetql.surfaces.output import resolve_output, write, write_batches
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result
from cetql.surfaces.serve import server as serve
from cetql.surfaces.serve import state as serve_state
from cetql.surfaces.serve.state import NOT_HERE

EXIT_CANCELLED = 130
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`
MAX_LIMIT = 2**31 - 1  # Spark's limit is a 32-bit number


# ---------------------------------------------------------------- arguments


def run_options(args) -> RunOptions:
    keywords = {
        "trends": getattr(args, "trends", None),
        "strategy": getattr(args, "strategy", None),
        "sharing": getattr(args, "sharing", None),
        "approx": getattr(args, "approx", False),
        "exact": getattr(args, "exact", None),
        "kernel": getattr(args, "kernel", None),
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
    return RunOptions.of(**keywords)


def _engine(args) -> str:
    """--engine (default auto); a Spark session asked for (--master,
    --remote, --partitions) is Spark's."""
    if not hasattr(args, "engine"):
        return None
    engine = args.engine or os.environ.get("CETQL_ENGINE") or "auto"
    if engine not in ("auto", "local", "spark"):
        raise UsageError(f"CETQL_ENGINE={engine!r}: expected auto, local or spark")
    spark_flags = [f for f in ("master", "remote", "partitions") if getattr(args, f, None) is not None]
    if os.environ.get("SPARK_REMOTE") and "remote" not in spark_flags:
        spark_flags.append("remote")
    if spark_flags and engine == "local":
        raise UsageError(f"--engine local runs without Spark: leave out --{spark_flags[0]}")
    return "spark" if spark_flags else engine


def known_inputs(data, typed: dict, time_col: str):
    """What can be learnt of path inputs without Spark (tables: nothing)."""
    return describe_paths({None: data} if data is not None else dict(typed), time_col)


def as_stream(inputs: Inputs | None, watermark: str | None) -> Inputs:
    """`--stream`: the inputs are streams, the watermark this far behind."""
    return (inputs or Inputs()).as_stream(Delay.parse(watermark))


# ---------------------------------------------------------------- compile


def cmd_compile(args) -> int:
    text = read_query(args.query_file)
    options = run_options(args)
    params = parse_params(args.param)
    if args.schema and args.input:
        raise UsageError("give either --schema or --input, not both")
    data, typed = parse_inputs(args.input)
    check_inputs(data if data is not None else typed)
    inputs = known_inputs(data, typed, options.time_col) if args.input else None
    if args.input and inputs is None:
        missing = [v for v in ([data] if data else typed.values()) if not Path(str(v)).exists()]
        raise UsageError(f"input '{missing[0]}' does not exist")
    schema = parse_ddl(args.schema) if args.schema else (inputs.schema if inputs else None)
    if args.stream:  # planned as `run --stream` runs it: the plan's stateful operator
        inputs = as_stream(inputs or Inputs(schema=schema), args.watermark)
    elif args.watermark is not None:
        raise UsageError("--watermark is for streams: add --stream")
    # planned for the session `cetql run` starts by default (local[*], its driver memory), for a result written as
    # Parquet files (`run --output DIR`): the plan that runs there
    options = replace(options, sink=Sink.PARQUET)
    compiled = compile(text, params, schema, options=options, inputs=inputs, resources=default_resources(),
                       strict_params=bool(args.param))  # fmt: skip
    if args.format == "json":
        data_out = explain_data(compiled)
        if not args.ast:
            data_out.pop("ast", None)
        print(json.dumps(data_out, indent=2))
        return 0
    if args.explain or args.ast:
        print(explain_text(compiled, ast=args.ast))
    else:
        print(summary_text(compiled))
    return 0


# ---------------------------------------------------------------- run


def cmd_run(args) -> int:
    text = read_query(args.query_file)
    options = run_options(args)
    params = parse_params(args.param)
    data, typed = parse_inputs(args.input)
    if args.stream:
        return cmd_stream(args, text, options, params, data, typed)
    for flag in ("checkpoint", "watermark", "trigger", "until_idle"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag.replace('_', '-')} is for streams: add --stream")
    fmt = None
    if args.output is not None:
        if args.format == "table":
            raise UsageError("--format table prints the result; with --output give parquet, csv or json")
        fmt = OutputFormat(args.format or "parquet")
    elif args.format == "parquet":
        raise UsageError("--format parquet writes files: give --output PATH (or --format table, csv or json to print)")
    mode = OutputMode(args.mode)
    if args.output is None and args.mode != OutputMode.ERROR.value:
        raise UsageError("--mode says what to do with an existing --output path; give --output too")
    # everything that needs no data is refused now, before Spark starts
    inputs = known_inputs(data, typed, options.time_col)
    target = None
    if args.output is not None:
        target = resolve_output(args.output, mode, inputs=[str(v) for v in ([data] if data else typed.values())],
                                query_file=args.query_file, fmt=fmt)  # fmt: skip
    options = replace(options, sink=Sink.PARQUET if fmt == OutputFormat.PARQUET and target.uri is None else Sink.TEXT)
    compiled = compile(text, params, options=options, inputs=inputs, strict_params=True)
    check_inputs(data if data is not None else typed, compiled.types)
    show = _show_attrs(args.show, inputs)
    if compiled.plan.engine.engine == Engine.LOCAL:
        return run_in_process(compiled.plan, target, args)
    if args.only_in_process:
        return NOT_HERE

    remote = args.remote
    found = None if args.no_serve else serve_state.discovered(args.master, remote)
    slot = None
    if found:
        print(f"using cetql serve at {found}; --no-serve to start a local Spark", file=sys.stderr)
        slot = serve_state.session_slot()
        spark = _on_server(found, slot, args.verbose, options.time_zone)
    else:
        spark = get_spark(args.master, remote=remote, verbose=args.verbose, time_zone=options.time_zone)
    _ACTIVE["spark"] = spark
    execution = None
    started = time.monotonic()
    label = "running " + (Path(args.query_file).name if args.query_file != "-" else "the query")
    try:
        with progress(spark, label):
            execution = compiled.execution(data if data is not None else typed, spark=spark, options=options)
            if args.output is not None:
                rows = write(execution.dataframe, target, fmt)
                noun = "trends" if compiled.kind == "detection" else "rows"
                if rows is None:
                    print(f"'{args.output}' exists; nothing written (--mode ignore)" if mode == OutputMode.IGNORE
                          else f"wrote {noun} to {args.output} ({fmt.value})")  # fmt: skip
                else:
                    print(f"wrote {rows:,} {noun} to {args.output} ({fmt.value}) in {time.monotonic() - started:.1f} s")
            else:
                with printing_zone(options.time_zone):
                    print_result(execution, limit=args.limit, fmt=args.format, show=show, stream=sys.stdout)
            if options.drop_invalid:
                dropped = count_invalid(execution.plan, execution.inputs)
                if dropped:
                    print(f"dropped {dropped:,} input row(s) with an invalid time or value (--drop-invalid)",
                          file=sys.stderr)  # fmt: skip
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:
        raise describe(e, execution and (lambda: diagnose_invalid(execution.plan, execution.inputs))) from None
    finally:
        if is_connect(spark):  # release this client's session on the server (its Python workers too)
            _ACTIVE.pop("spark", None)
            try:
                spark.client.set_retry_policies([])  # a server that is gone is not waited for again
                spark.release_session_on_close = slot is None  # a slot's session stays for the next run
                spark.stop()
            except Exception:  # noqa: BLE001 - the server may be gone: nothing to release
                pass
        if slot is not None:
            slot.release()
    return 0


def run_in_process(plan, target, args) -> int:
    """A plan the in-process engine runs (`planner.local`): no Spark."""
    from cetql.backends.embedded.compiler import (
        run,  # start-up cost: pyarrow and the kernels, only for a run in this process
    )

    if args.only_in_process:
        print(f"using cetql serve's warm process (pid {os.getppid()}); --no-serve runs it in this one",
              file=sys.stderr)  # fmt: skip
    started = time.monotonic()
    try:
        result = run(plan)
        rows = write_batches(result.schema, result.batches, target)
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as e:  # a full disk, a file gone: what the system said, and where
        raise JobFailed(f"the run failed: {e}") from None
    except Exception as e:  # noqa: BLE001 - a file pyarrow cannot read, else a bug: one line either way
        if type(e).__module__.startswith("pyarrow"):
            raise JobFailed(f"the run failed reading or writing Parquet: {str(e).strip().splitlines()[0][:400]}") \
                from None  # fmt: skip
        raise describe(e) from None
    noun = "trends" if plan.kind == "detection" else "rows"
    if rows is None:
        print(f"'{args.output}' exists; nothing written (--mode ignore)")
    else:
        print(f"wrote {rows:,} {noun} to {args.output} (parquet) in {time.monotonic() - started:.1f} s")
    if result.dropped:
        print(f"dropped {result.dropped:,} input row(s) with an invalid time or value (--drop-invalid)", file=sys.stderr)
    return 0


def _on_server(found: str, slot, verbose: bool, time_zone: str):
    """A session on a found `cetql serve`: the slot's (its Python workers
    started by an earlier run, `serve.session_slot`), else a new one.  A
    slot's session the server has closed (idle past its timeout) is
    replaced by a new id, once."""
    if slot is None:
        return get_spark(remote=found, verbose=verbose, time_zone=time_zone)
    try:
        return _slot_session(found, slot, verbose, time_zone)
    except BaseException:
        slot.release()  # the run ends here: the next one may take the slot
        raise


def _slot_session(found: str, slot, verbose: bool, time_zone: str):
    try:
        spark = get_spark(remote=f"{found}/;session_id={slot.session_id}", verbose=verbose, time_zone=time_zone)
    except Exception as e:  # noqa: BLE001 - only a closed session is retried
        if "SESSION_CLOSED" not in str(e) and "SESSION_CHANGED" not in str(e):
            raise
        _forget_session()
        slot.renew()
        spark = get_spark(remote=f"{found}/;session_id={slot.session_id}", verbose=verbose, time_zone=time_zone)
    spark.conf.unset(NANOS_AS_LONG)  # what an earlier run's reader set is not this run's
    return spark


def _forget_session() -> None:
    """Drop the Connect client's default session (one the server refused), so
    that the next `getOrCreate` makes a new one."""
    from pyspark.sql.connect.session import SparkSession as Connect

    spark = Connect.getActiveSession() or getattr(Connect, "_default_session", None)
    if spark is not None:
        spark.release_session_on_close = False
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - a refused session has nothing to release
            pass


def cmd_stream(args, text: str, options: RunOptions, params: dict, data, typed: dict) -> int:
    """`run --stream`: each window written (or printed) once, when the watermark passes it."""
    if args.only_in_process:
        return NOT_HERE
    fmt, checkpoint = streaming.check_stream_args(args)
    known = as_stream(known_inputs(data, typed, options.time_col), args.watermark)
    compiled = compile(text, params, options=options, inputs=known, strict_params=True)
    spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone)
    _ACTIVE["spark"] = spark
    streaming.configure(spark)
    try:
        inputs = streaming.stream_inputs(spark, data, typed, options.time_zone)
        execution = compiled.execution(inputs, spark=spark, options=options, watermark=args.watermark or 0)
        return streaming.run_stream(execution, args, fmt, checkpoint)
    except (CetqlError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise describe(e) from None


@contextmanager
def printing_zone(zone: str):
    """Times printed in `zone` (--time-zone, UTC by default), the session's
    zone, whatever the machine's: pyspark hands timestamps to Python as the
    process's local time."""
    import re

    m = re.fullmatch(r"([+-])(\d\d):(\d\d)", zone)
    posix = f"<{m[1]}{m[2]}{m[3]}>{'-' if m[1] == '+' else '+'}{m[2]}:{m[3]}" if m else zone  # POSIX: west is +
    before = os.environ.get("TZ")
    os.environ["TZ"] = posix
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def _show_attrs(text: str | None, inputs=None):
    if text is None:
        return None
    attrs = [a.strip() for a in text.split(",") if a.strip()]
    if not attrs:
        raise UsageError("--show needs attribute names, e.g. --show src,dst")
    names = inputs.schema.names() if inputs is not None and inputs.schema is not None else None
    missing = [a for a in attrs if names is not None and a not in names]
    if missing:
        raise SchemaError(f"--show: no column {missing[0]} in the input (columns: {', '.join(names)})")
    return attrs


# ---------------------------------------------------------------- the parser


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
    p.add_argument("--max-trends", type=int, metavar="N",
                   help="detection: refuse a (window, group) with more than N trends (default 10,000,000; 0: no limit)")
    p.add_argument("--max-windows", type=int, metavar="N",
                   help="refuse WITHIN/SLIDE that put an event in more than N windows (default 100,000; 0: no limit)")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="detection: what one task may hold beyond its group's events, e.g. 256m or 2g: its graph's "
                        "edges while they fit in half, and the output batch (default: half the executor memory over "
                        "its task slots)")  # fmt: skip
    p.add_argument("--approx", action="store_true", help="aggregation: DOUBLE instead of exact numbers (as APPROX)")
    p.add_argument("--exact", choices=["decimal", "string"],
                   help="aggregation: exact numbers as DECIMAL(38,s) (default; larger is an error) or as text")
    p.add_argument("--kernel", choices=["index", "scan"],
                   help="aggregation: the attribute index (default) or GRETA's O(n^2) predecessor scan, to compare")
    p.add_argument("--engine", choices=["auto", "local", "spark"],
                   help="where it runs: auto (default; also CETQL_ENGINE) runs a result written as Parquet files in "
                        "this process, without Spark, where the plan can (small local Parquet inputs: --explain says "
                        "why or why not); local insists; spark always starts Spark")  # fmt: skip
    p.add_argument("--drop-invalid", action="store_true",
                   help="drop rows with a null/NaN/infinite time or an unreadable value instead of failing (counted)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cetql", description="Complete Event Trend queries on Apache Spark.")
    parser.add_argument("--version", action="version", version=f"cetql {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="check a query and show how it will run (no Spark)")
    _common(c)
    c.add_argument("--explain", action="store_true", help="show the plan, the predicates and the template")
    c.add_argument("--ast", action="store_true", help="also show the syntax tree")
    c.add_argument("--schema", help="input columns, e.g. 'ts timestamp, src string, dst string'")
    c.add_argument("--input", action="append", metavar="[TYPE=]PATH",
                   help="plan for these inputs: their columns and types are read (no Spark)")
    c.add_argument("--format", choices=["text", "json"], default="text", help="text (default) or json")
    c.add_argument("--stream", action="store_true", help="plan the inputs as streams, as `run --stream` runs them")
    c.add_argument("--watermark", metavar="DELAY", help="with --stream: the watermark's delay, as for run")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("run", help="run a query (on Spark, or in this process where the plan can: --engine)")
    _common(r)
    r.add_argument("--input", action="append", required=True, metavar="[TYPE=]PATH",
                   help="CSV (with a header), Parquet or JSON-lines file or folder, or a table/view name; "
                        "Type=PATH binds an input to one event type (repeatable)")  # fmt: skip
    r.add_argument("--output", help="write the result here (a folder) instead of printing it")
    r.add_argument("--format", choices=["parquet", "csv", "json", "table"],
                   help="with --output: parquet (default), csv or json; without: table (on a terminal), "
                        "csv (when piped) or json")  # fmt: skip
    r.add_argument("--mode", choices=[m.value for m in OutputMode], default=OutputMode.ERROR.value,
                   help="if --output exists: error (default), overwrite, append or ignore")
    r.add_argument("--limit", type=int,
                   help="rows to print without --output (default: 20 on a terminal, all otherwise; 0: all)")
    r.add_argument("--show", metavar="ATTR,…", help="print each trend as the chain of these attributes' values")
    r.add_argument("--master", help="Spark master URL (default: the active session, else local[*])")
    r.add_argument("--remote", help="a Spark Connect server, sc://host:port (also: SPARK_REMOTE)")
    r.add_argument("--no-serve", action="store_true",
                   help="start a local Spark even where a `cetql serve` of this Python and cetql runs on this "
                        "machine (by default the query is sent to it)")  # fmt: skip
    r.add_argument("--partitions", type=int, help="Spark partitions for the kernels (default: shuffle partitions)")
    r.add_argument("--verbose", action="store_true", help="let Spark's own log reach the terminal")
    s = r.add_argument_group("streams (--stream)")
    s.add_argument("--stream", action="store_true",
                   help="read --input as a stream (a folder that receives files, or a table): each window is written "
                        "or printed once, when the watermark passes its end; runs until Ctrl-C or --until-idle")
    s.add_argument("--checkpoint", metavar="PATH",
                   help="the stream's progress and open windows; the same path resumes it (needed with --output)")
    s.add_argument("--watermark", metavar="DELAY",
                   help="how far behind the latest event time a window still takes events, e.g. '10 minutes' "
                        "(a bare number: the time column's units; default 0); later events are counted and dropped")
    s.add_argument("--trigger", metavar="INTERVAL",
                   help="start a micro-batch every INTERVAL, e.g. '10 seconds' (default: as soon as files arrive)")
    s.add_argument("--until-idle", type=float, metavar="SECONDS", help="stop after SECONDS without new input")
    r.set_defaults(func=cmd_run)

    repl.add_parser(sub)
    gen.add_parser(sub)
    draw.add_parser(sub)
    serve.add_parser(sub, main)
    return parser


def _json_error(kind: str, message: str, pos=None) -> str:
    import json

    error = {"kind": kind, "message": message}
    if pos is not None:
        error.update(line=pos.line, column=pos.column)
    return json.dumps({"error": error})


_ACTIVE: dict = {}


def _cancel() -> None:
    spark = _ACTIVE.get("spark")
    if spark is None:
        return
    try:
        if hasattr(spark, "interruptAll") and type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:
        pass


def _quiet_python_logging(verbose: bool) -> None:
    """py4j and pyspark log through Python's logging (a Ctrl-C makes py4j log
    a traceback): to the log file, not the terminal, unless verbose."""
    if verbose:
        return
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) in (sys.stderr, sys.stdout):
            root.removeHandler(h)
    if not any(isinstance(h, logging.FileHandler) for h in root.handlers):
        root.addHandler(logging.FileHandler(log_path()))
    for name in ("py4j", "pyspark"):
        logging.getLogger(name).propagate = True


def main(argv: list[str] | None = None, *, only_in_process: bool = False) -> int:
    """The command; `only_in_process`: a run whose plan is Spark's returns
    `serve.state.NOT_HERE` at once, having said and written nothing (`surfaces.serve.runner`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.only_in_process = only_in_process
    _quiet_python_logging(getattr(args, "verbose", False))
    if (getattr(args, "limit", None) or 0) < 0:
        parser.error("--limit must be zero (all rows) or positive")
    if getattr(args, "limit", 0) is not None and getattr(args, "limit", 0) > MAX_LIMIT:
        parser.error(f"--limit must be at most {MAX_LIMIT:,} (0 prints every row)")
    as_json = getattr(args, "format", None) == "json" and args.command == "compile"
    try:
        return args.func(args)
    except QueryError as e:
        name = getattr(args, "query_file", None)
        if as_json:
            print(_json_error(e.kind, e.message, e.pos), file=sys.stderr)
        else:
            print(e.render(name if name and name != "-" else None), file=sys.stderr)
        return e.exit_code
    except CetqlError as e:
        print(_json_error("error", e.text("cli")) if as_json else e.render(), file=sys.stderr)
        return e.exit_code
    except RecursionError:
        err = QuerySyntaxError("the query nests too deeply (parentheses or patterns); simplify it")
        print(err.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _cancel()
        print("cancelled", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CANCELLED)  # py4j threads would print their own tracebacks on a normal exit
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """Standard output was closed by its reader (`cetql run … | head`): stop
    the Spark job and end without a word, as a POSIX tool killed by SIGPIPE
    ends (status 141 = 128 + 13).  In a real process nothing may be flushed
    to the closed pipe at exit (Python would complain on standard error)."""
    _cancel()
    if sys.stdout is sys.__stdout__:
        sys.stderr.flush()
        os._exit(EXIT_CLOSED_PIPE)
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
