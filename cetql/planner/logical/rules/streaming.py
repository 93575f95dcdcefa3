"""Streams: inputs that are streams (`DataFrame.isStreaming`, `cetql run
--stream`) run the same plan through a stateful operator — keyed as the
kernels' groups are, in Spark's event time, each window answered once by
the same kernels when the watermark passes its end, in append mode.

This rule decides it and how: the stream's keys (blocks of at least
`STREAM_BLOCK` windows: a stream pays per key and micro-batch, where batch
pays per group once), the event-time clock (milliseconds per unit of the
time column), the watermark's delay in that clock, and that events behind
the watermark are counted and dropped.  What a stream cannot run is refused
here, before anything starts.  The windows rule reads the keys.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from cetql.base.errors import UsageError
from cetql.base.options import TIME_UNITS, Sharing, Strategy
from cetql.planner.logical.plan import Decision, LateEvents, Streaming
from cetql.planner.logical.rules import Draft

READS = ("query", "options", "inputs", "strategy")
SETS = ("stream",)

STREAM_BLOCK = 64  # windows a stream's key holds at least


def apply(d: Draft) -> Draft:
    i = d.inputs
    if not i.streaming:
        return replace(d, stream=Decision(None, "batch inputs: every window answered once the input is read"))
    _refuse(d)
    what = ", ".join(i.names) if i.names else "the inputs"
    why = (f"{what} read as a stream: each window is answered once, when the watermark passes its end, by the "
           "batch kernels, and its rows appended; the state keeps the events of open windows only")  # fmt: skip
    clock = ms_per_unit(i.time_kind, d.options.time_unit)
    late = Decision(LateEvents.DROP, "an event at or behind the watermark may belong to a window already answered: "
                    "it is counted in the query's progress (observed metrics) and dropped, never folded in")  # fmt: skip
    return replace(d, stream=Decision(Streaming(_block(d), clock, _watermark(d, clock), late), why))


def ms_per_unit(time_kind: str | None, time_unit: str) -> Decimal:
    """Milliseconds of the event-time clock per unit of the internal time
    column: microseconds for timestamps, nanoseconds for nanosecond
    timestamps, else the column's own unit (--time-unit)."""
    if time_kind == "timestamp":
        return Decimal("0.001")
    if time_kind == "timestamp_ns":
        return Decimal("0.000001")
    return Decimal(1000) / Decimal(TIME_UNITS[time_unit])


def _refuse(d: Draft) -> None:
    if d.strategy is not None and d.strategy.choice == Strategy.DISTRIBUTED:
        raise UsageError("--strategy distributed runs batch joins; a stream runs each window on one worker (local)")
    if d.detection and not d.options.id_col:
        raise UsageError("a streaming detection query needs an id column (--id-col / id_col=): ids derived from the "
                         "input order repeat from one micro-batch to the next")  # fmt: skip


def _block(d: Draft) -> Decision[int]:
    if d.options.sharing == Sharing.COPY:
        return Decision(0, "forced by --sharing copy: a key per window (a state read, a timer and a kernel call a "
                        "window and micro-batch)")  # fmt: skip
    width = max(d.query.window.copies, STREAM_BLOCK)
    return Decision(width, f"a stream pays per key and micro-batch (a state read, a timer, a call into Python): a key "
                    f"holds a block of {width} consecutive windows (each event in at most 2 blocks, at least "
                    f"{STREAM_BLOCK} windows a block), and its one timer, at its earliest open window's end, answers "
                    "every window the watermark has passed in one kernel call")  # fmt: skip


def _watermark(d: Draft, clock: Decimal) -> Decision[int]:
    delay = d.inputs.watermark
    if delay is None or not delay.amount:
        return Decision(0, "default: a window closes once an event at or past its end has arrived (no delay)")
    own = clock if d.inputs.time_kind in (None, "numeric") else Decimal(1000)  # no unit: seconds for timestamps
    ms = delay.millis(own)
    unit = "" if delay.unit else (f" {d.options.time_unit}" if d.inputs.time_kind in (None, "numeric") else " s")
    return Decision(ms, f"given: {delay}{unit} behind the latest event time, rounded up to a millisecond")
