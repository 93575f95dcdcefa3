"""The times whose windows a plan computes exactly, in one place: an event
outside them is an invalid row (refused, or dropped with --drop-invalid),
never given a window index that wrapped, a null window or a bound no reader
can show.

Every window index k = floor(t / slide) is a 64-bit integer and so is every
bound k * slide + length the plan prints as a whole number; decimal
arithmetic holds 38 digits; and a bound shown as a timestamp lies between
0001-01-02 and 9999-12-30 (Python's local-time conversion, through which
Spark hands a timestamp to Python, looks a day to either side).  A time
one window (length + slide) inside those limits keeps each of its windows'
indexes and bounds inside them."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

LONG = 2**63 - 1
FIRST_MICROS = -62135510400000000  # 0001-01-02T00:00:00Z, in microseconds since the epoch
LAST_MICROS = 253402214400000000 - 86400000000 - 1  # 9999-12-30T23:59:59.999999Z


@dataclass(frozen=True)
class TimeRange:
    """Internal times from `lo` to `hi` (inclusive) have exact windows."""

    lo: int | Decimal
    hi: int | Decimal
    text: str  # as a message says it


def time_range(kind: str, decimal_scale: int | None, bounds_scale: int | None, length, slide) -> TimeRange:
    """The range for internal times of `kind` ("numeric", "timestamp" in
    microseconds, "timestamp_ns"), windows of `length` and `slide` in their
    units; `decimal_scale`: decimal arithmetic's places (None: 64-bit
    integers); `bounds_scale`: the places of bounds printed as DECIMAL(38, s)
    (None: otherwise)."""
    span = length + slide
    index = (LONG - 2) * slide - span  # window indexes are bigints
    if kind == "timestamp":
        return TimeRange(max(FIRST_MICROS + span, -index), min(LAST_MICROS - span, index),
                         "from 0001-01-02 to 9999-12-30, less one window at each end")  # fmt: skip
    limits = [LONG - span, index]  # bigint bounds, bigint window indexes
    if decimal_scale is not None:
        limits.append(Decimal(10) ** (38 - decimal_scale) - 1 - span)
    if bounds_scale is not None:
        limits.append(Decimal(10) ** (38 - bounds_scale) - 1 - span)
    hi = min(limits)
    hi = int(hi) if kind == "timestamp_ns" or decimal_scale is None else hi
    unit = " nanoseconds since the epoch" if kind == "timestamp_ns" else ""
    return TimeRange(-hi, hi, f"from {-hi:,} to {hi:,}{unit}, where a window's index and bounds are exact")
