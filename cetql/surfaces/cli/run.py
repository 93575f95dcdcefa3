"""`cetql run`: a query over its inputs, printed or written — in this
process where the plan runs here, else on Spark (a found `cetql serve`, or
a session of its own); `--stream` over a folder that receives files."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from cetql.backends.spark.compiler import count_invalid, diagnose_invalid
from cetql.backends.spark.connect import is_connect
from cetql.backends.spark.failures import JobFailed, describe
from cetql.backends.spark.reader import NANOS_AS_LONG
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError, SchemaError, UsageError
from cetql.base.options import Engine, OutputFormat, OutputMode, RunOptions, Sink
from cetql.surfaces.api.query import check_inputs, compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.cli import stream as streaming
from cetql.surfaces.cli.flags import as_stream, known_inputs, run_options
from cetql.surfaces.output import resolve_output, write, write_batches
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result
from cetql.surfaces.serve import state as serve_state
from cetql.surfaces.serve.state import NOT_HERE

EXIT_CANCELLED = 130


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
    fmt, mode = _output_format(args)
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
    spark, slot = _session(args, options)
    try:
        _run_on_spark(spark, compiled, data if data is not None else typed, options, args, target, fmt, show)
    finally:
        _release(spark, slot)
    return 0


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


def _session(args, options):
    """(the Spark session a run uses, the serve's session slot it holds or None):
    a found `cetql serve`'s, else one of its own."""
    found = None if args.no_serve else serve_state.discovered(args.master, args.remote)
    slot = None
    if found:
        print(f"using cetql serve at {found}; --no-serve to start a local Spark", file=sys.stderr)
        slot = serve_state.session_slot()
        spark = _on_server(found, slot, args.verbose, options.time_zone)
    else:
        spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone,
                          token_for=serve_state.token_for)
    _ACTIVE["spark"] = spark
    return spark, slot


def _release(spark, slot) -> None:
    """Release this client's session on a server (its Python workers too); a slot's stays for the next run."""
    if is_connect(spark):
        _ACTIVE.pop("spark", None)
        try:
            spark.client.set_retry_policies([])  # a server that is gone is not waited for again
            spark.release_session_on_close = slot is None  # a slot's session stays for the next run
            spark.stop()
        except Exception:  # noqa: BLE001 - the server may be gone: nothing to release
            pass
    if slot is not None:
        slot.release()


def _run_on_spark(spark, compiled, given, options, args, target, fmt, show) -> None:
    execution = None
    started = time.monotonic()
    label = "running " + (Path(args.query_file).name if args.query_file != "-" else "the query")
    try:
        with progress(spark, label):
            execution = compiled.execution(given, spark=spark, options=options)
            if args.output is not None:
                rows = write(execution.dataframe, target, fmt)
                _say_written(rows, compiled.kind, args, fmt, started)
            else:
                with printing_zone(options.time_zone):
                    print_result(execution, limit=args.limit, fmt=args.format, show=show, stream=sys.stdout)
            if options.drop_invalid:
                _say_dropped(count_invalid(execution.plan, execution.inputs))
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:
        raise describe(e, execution and (lambda: diagnose_invalid(execution.plan, execution.inputs))) from None


def _say_written(rows: int | None, kind: str, args, fmt: OutputFormat, started: float) -> None:
    noun = "trends" if kind == "detection" else "rows"
    if rows is None:
        print(f"'{args.output}' exists; nothing written (--mode ignore)" if args.mode == OutputMode.IGNORE.value
              else f"wrote {noun} to {args.output} ({fmt.value})")  # fmt: skip
    else:
        print(f"wrote {rows:,} {noun} to {args.output} ({fmt.value}) in {time.monotonic() - started:.1f} s")


def _say_dropped(dropped: int) -> None:
    if dropped:
        print(f"dropped {dropped:,} input row(s) with an invalid time or value (--drop-invalid)", file=sys.stderr)


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
    _say_written(rows, plan.kind, args, OutputFormat.PARQUET, started)
    _say_dropped(result.dropped)
    return 0


def _on_server(found: str, slot, verbose: bool, time_zone: str):
    """A session on a found `cetql serve`: the slot's (its Python workers
    started by an earlier run, `serve.session_slot`), else a new one.  A
    slot's session the server has closed (idle past its timeout) is
    replaced by a new id, once."""
    if slot is None:
        return get_spark(remote=found, verbose=verbose, time_zone=time_zone, token_for=serve_state.token_for)
    try:
        return _slot_session(found, slot, verbose, time_zone)
    except BaseException:
        slot.release()  # the run ends here: the next one may take the slot
        raise


def _slot_session(found: str, slot, verbose: bool, time_zone: str):
    try:
        spark = get_spark(remote=f"{found}/;session_id={slot.session_id}", verbose=verbose, time_zone=time_zone,
                          token_for=serve_state.token_for)
    except Exception as e:  # noqa: BLE001 - only a closed session is retried
        if "SESSION_CLOSED" not in str(e) and "SESSION_CHANGED" not in str(e):
            raise
        _forget_session()
        slot.renew()
        spark = get_spark(remote=f"{found}/;session_id={slot.session_id}", verbose=verbose, time_zone=time_zone,
                          token_for=serve_state.token_for)
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
    spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone,
                      token_for=serve_state.token_for)
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
