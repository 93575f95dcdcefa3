"""Every numeric flag of the command line, checked in one place
(`check_numbers`, before any command runs): its text read as the number it
stands for and held to its range, or one line naming the flag and the value
(a `UsageError`, exit 2) — never a default silently taken instead (`--until-idle
-1` stopped a stream at once, exit 0, nothing written), a raw Spark or Py4J
error later (`gen --events 10^20`), or argparse's usage screen.

argparse reads these flags as text, so that a word (`--until-idle soon`) is
refused as a negative number is.  Where a value has a rule of its own (a run
option, gen's number of events, a stream's durations), the rule here is
that one, so the command line and Python refuse the same values."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from cetql.base.errors import UsageError
from cetql.base.options import MAX_INT, MAX_LONG, count, parse_size
from cetql.planner.logical.plan import Delay
from cetql.surfaces.gen.write import MAX_EVENTS, MAX_SEED


def _number(text, name: str) -> Decimal:
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite():
        raise UsageError(f"--{name} {text!r}: must be a number")
    return value


def _seconds(name: str) -> Callable:
    def read(text) -> float:
        value = _number(text, name)
        if value <= 0:
            raise UsageError(f"--{name} {text}: must be a positive number of seconds")
        return float(value)

    return read


def _whole(name: str, lo: int, hi: int) -> Callable:
    def read(text) -> int:
        value = _number(text, name)
        if value != value.to_integral_value() or not lo <= value <= hi:
            raise UsageError(f"--{name} {text}: must be a whole number from {lo:,} to {hi:,}")
        return int(value)

    return read


def _count(name: str, allow_zero: bool, most: int = MAX_LONG) -> Callable:
    return lambda text: count(text, name.replace("-", "_"), allow_zero=allow_zero, most=most)


def _as_given(check: Callable) -> Callable:
    """A rule that checks the text and keeps it (the command reads it again)."""
    return lambda text: (check(text), text)[1]



def parse_interval(text: str | None) -> str | None:
    """--trigger: Spark's processing-time interval ('10 seconds')."""
    if text is None:
        return None
    delay = Delay.parse(text, what="--trigger")
    millis = delay.millis(Decimal(1000))  # a bare number: seconds
    if millis <= 0:
        raise UsageError(f"--trigger {text!r} must be a positive interval such as '10 seconds'")
    return f"{millis} milliseconds"


# argparse's name of a flag → how its text is read (every numeric flag of
# every command; a command without the flag has no such attribute).
RULES: dict[str, Callable] = {
    "limit": _count("limit", allow_zero=True, most=MAX_INT),  # Spark's limit is a 32-bit number
    "max_trends": _count("max-trends", allow_zero=True),
    "max_windows": _count("max-windows", allow_zero=True),
    "partitions": _count("partitions", allow_zero=False, most=MAX_INT),
    "memory_budget": lambda text: parse_size(text, "--memory-budget"),
    "until_idle": _seconds("until-idle"),
    "watermark": _as_given(lambda text: Delay.parse(text, what="--watermark")),
    "trigger": _as_given(parse_interval),
    "events": _count("events", allow_zero=False, most=MAX_EVENTS),
    "seed": _whole("seed", -MAX_SEED - 1, MAX_SEED),
    "trend": _count("trend", allow_zero=False),
    "max_nodes": _count("max-nodes", allow_zero=False),
    "port": _whole("port", 1, 65535),
    "start_timeout": _seconds("start-timeout"),
}


def check_numbers(args) -> None:
    """Read every numeric flag given into its number, in place, or refuse it."""
    for name, read in RULES.items():
        text = getattr(args, name, None)
        if text is not None:
            setattr(args, name, read(text))
