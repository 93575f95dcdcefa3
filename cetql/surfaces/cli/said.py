"""What `cetql run` says when it ends, whichever engine ran it, and the
Spark session a run holds (for Ctrl-C and a closed pipe to cancel)."""

from __future__ import annotations

import sys
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


def cancel() -> None:
    """Cancel the jobs of the session a run holds (Ctrl-C, a closed pipe)."""
    spark = ACTIVE.get("spark")
    if spark is None:
        return
    try:
        if hasattr(spark, "interruptAll") and type(spark).__module__.startswith("pyspark.sql.connect"):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - a session already gone has nothing to cancel
        pass
