"""Times, durations and windows of a drawn group, in the user's units."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation

from cetql.base.errors import UsageError

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _stamp(value, kind: str) -> dt.datetime:
    micros = value if kind == "timestamp" else value / 1000
    return EPOCH + dt.timedelta(microseconds=micros)


def time_text(value, kind: str, span=None) -> str:
    """A time as results print it: a number as a number, a timestamp as a
    date and time (only the time of day with `span` under a day)."""
    if kind == "numeric":
        return _number(value)
    t = _stamp(value, kind).replace(tzinfo=None)
    second = 1_000_000 if kind == "timestamp" else 1_000_000_000
    if span is None:
        return t.isoformat(sep=" ", timespec="microseconds" if t.microsecond else "seconds")
    # a tick: to the second in a window of a minute or more, else finer
    text = t.isoformat(sep=" ", timespec="seconds" if span >= 60 * second else "milliseconds")
    return text[11:] if span < 86_400 * second else text[:16]


def _number(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return f"{v:,}" if isinstance(v, int) and abs(v) >= 10**6 else str(v)


def duration_text(d, kind: str) -> str:
    """A length of time in the user's units: a number, or 50 s, 10 min, 1 day."""
    if kind == "numeric":
        return _number(d)
    seconds = Decimal(d) / (1_000_000 if kind == "timestamp" else 1_000_000_000)
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60), ("s", 1), ("ms", Decimal("0.001"))):
        if seconds >= size and seconds % size == 0 or unit == "ms":
            n = seconds / size
            text = f"{n:f}".rstrip("0").rstrip(".") if "." in f"{n:f}" else f"{n:f}"
            return f"{text} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    raise AssertionError(d)


def window_text(k: int, phys) -> str:
    start = k * phys.window_slide
    end = start + phys.window_length
    if phys.time_kind == "numeric":
        return f"window [{_number(start)}, {_number(end)})"
    a, b = time_text(start, phys.time_kind), time_text(end, phys.time_kind)
    if a[:10] == b[:10]:
        b = b[11:]
    return f"window [{a}, {b})"


def _window_index(value: str, phys) -> int:
    """The window whose start is `value`, written as results print it."""
    kind, slide = phys.time_kind, phys.window_slide
    try:
        if kind == "numeric":
            start = Decimal(value)
        else:
            t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            t = t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t
            micros = (t - EPOCH) // dt.timedelta(microseconds=1)
            start = Decimal(micros * (1000 if kind == "timestamp_ns" else 1))
    except (InvalidOperation, ValueError):
        example = "a number" if kind == "numeric" else "a time such as 2026-01-01 00:10:00"
        raise UsageError(f"--window-start '{value}' is not a time of this input ({example})") from None
    k = start / Decimal(str(slide))
    if k != k.to_integral_value():
        lo = int(k.to_integral_value(rounding="ROUND_FLOOR"))
        near = " and ".join(time_text(i * slide, kind) for i in (lo, lo + 1))
        raise UsageError(
            f"--window-start {value} is not the start of a window: windows start every "
            f"{duration_text(slide, kind)}; the nearest start at {near}"
        )
    return int(k)
