"""`cetql run` on Spark: a found `cetql serve`'s session (a kept slot), or
one of its own; `--stream`.  Loaded only when the plan runs on Spark
(`run.cmd_run` imports it then: pyspark's start-up cost is not the
embedded engine's; a serve's warm-up loads it, for the runs it takes)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from cetql.backends.spark import kept
from cetql.backends.spark.compiler import count_invalid, diagnose_invalid
from cetql.backends.spark.connect import is_connect
from cetql.backends.spark.failures import describe
from cetql.backends.spark.reader import NANOS_AS_LONG
from cetql.backends.spark.results import SparkRows
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError
from cetql.base.options import OutputFormat, RunOptions
from cetql.surfaces.api.query import compile
from cetql.surfaces.cli import stream as streaming
from cetql.surfaces.cli.flags import as_stream, known_inputs
from cetql.surfaces.cli.said import ACTIVE, own_ctrl_c, say_dropped, say_written
from cetql.surfaces.output import write_result
from cetql.surfaces.progress import progress
from cetql.surfaces.render import print_result, sort_columns
from cetql.surfaces.serve import state as serve_state


def run_on_spark(compiled, given, options, args, target, fmt: OutputFormat | None, show,
                 served: str | None = None) -> int:  # fmt: skip
    """`served`: the serve's server a serve's child runs it on (found by `run`), none other."""
    spark, slot = _session(args, options, compiled.plan.engine.long_run, served)
    try:
        _run_on_spark(spark, compiled, given, options, args, target, fmt, show)
    finally:
        _release(spark, slot)
    return 0


def _session(args, options, long_run: bool = False, served: str | None = None):
    """(the Spark session a run uses, the serve's session slot it holds or None):
    `served` (a serve's child: its server), else a found `cetql serve`'s, else one of its own."""
    found = served or serve_state.serve_for(args.no_serve, args.master, args.remote)
    slot = None
    if found:
        print(f"using cetql serve at {found}; --no-serve to start a local Spark", file=sys.stderr)
        slot = serve_state.session_slot()
        spark = _on_server(found, slot, args.verbose, options.time_zone)
    else:
        spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone,
                          token_for=serve_state.token_for, long_run=long_run)
    ACTIVE["spark"] = spark
    own_ctrl_c()
    return spark, slot


def _release(spark, slot) -> None:
    """Release this client's session on a server (its Python workers too); a slot's stays for the next run,
    without what this run cached (the distributed strategy persists its events and edges)."""
    if is_connect(spark):
        ACTIVE.pop("spark", None)
        try:
            spark.client.set_retry_policies([])  # a server that is gone is not waited for again
            if slot is not None and kept.take():  # a run that kept nothing leaves nothing to clear
                spark.catalog.clearCache()  # the session is cetql's: nothing of the user's is cached in it
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
                rows = write_result(execution, target, fmt)
                say_written(rows, compiled.kind, args, fmt, started)
            else:
                with printing_zone(options.time_zone):
                    rows = SparkRows(execution, sort_columns(execution.dataframe.columns, compiled.kind))
                    print_result(rows, limit=args.limit, fmt=args.format, show=show, stream=sys.stdout)
            if options.drop_invalid:
                say_dropped(count_invalid(execution.plan, execution.inputs))
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:
        raise describe(e, execution and (lambda: diagnose_invalid(execution.plan, execution.inputs))) from None


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
    fmt, checkpoint = streaming.check_stream_args(args)
    known = as_stream(known_inputs(data, typed, options.time_col, options.time_zone), args.watermark)
    compiled = compile(text, params, options=options, inputs=known, strict_params=True)
    spark = get_spark(args.master, remote=args.remote, verbose=args.verbose, time_zone=options.time_zone,
                      token_for=serve_state.token_for)
    ACTIVE["spark"] = spark
    own_ctrl_c()
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
