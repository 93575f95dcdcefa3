"""What `cetql run` says when it ends, whichever engine ran it, and the
Spark session a run holds (for Ctrl-C and a closed pipe to cancel)."""

from __future__ import annotations

import signal
import sys
import threading
import time

from cetql.base.options import OutputFormat, OutputMode

ACTIVE: dict = {}  # "spark": the session a run holds, to cancel its jobs


def say_written(rows: int | None, kind: str, args, fmt: OutputFormat, started: float) -> None:
    noun = "trends" if kind == "detection" else "rows"
    if rows is None:
        print(f"'{args.output}' exists; nothing written (--mode ignore)" if args.mode == OutputMode.IGNORE.value
              else f"wrote {noun} to {args.output} ({fmt.value})")  # fmt: skip
    else:
        print(f"wrote {rows:,} {noun} to {args.output} ({fmt.value}) in {time.monotonic() - started:.1f} s")


def say_dropped(dropped: int) -> None:
    if dropped:
        print(f"dropped {dropped:,} input row(s) with an invalid time or value (--drop-invalid)", file=sys.stderr)


def cancel(wait: float = 5.0) -> None:
    """Cancel the jobs of the session a run holds (Ctrl-C, a closed pipe),
    waiting at most `wait` seconds: a JVM that does not answer (still
    starting, or stuck) is not waited for; it ends with this process."""
    spark = ACTIVE.get("spark")
    if spark is None:
        return
    worker = threading.Thread(target=_cancel_jobs, args=(spark,), name="cetql-cancel", daemon=True)
    worker.start()
    worker.join(wait)


def own_ctrl_c() -> None:
    """Ctrl-C raises KeyboardInterrupt at once, the jobs cancelled on the
    way out (`cancel`).  pyspark's own handler, which a new SparkContext
    installs, first cancels them over the main thread's JVM connection,
    where the answer waits behind the call in progress (a whole job)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.SIG_DFL, None):  # fmt: skip
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _cancel_jobs(spark) -> None:
    try:
        if hasattr(spark, "interruptAll") and type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - a session already gone has nothing to cancel
        pass
