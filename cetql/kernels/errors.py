"""Errors a kernel raises inside a Spark worker.  Each message is one line
that names the window and the group and says what to do; the driver shows it
as it is (`cetql.failures`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from cetql.base.errors import CetqlError, said_of
from cetql.kernels.spec import Context


class TrendLimitExceeded(CetqlError):
    """A (window, group) would return more trends than --max-trends allows."""


class AggregateOverflow(CetqlError):
    """An exact aggregate does not fit its output type."""


class ValueOverflow(CetqlError):
    """A 64-bit integer result of + - * or negation in an expression the
    kernel evaluates (a predicate across two events) left 64 bits: Spark's
    ANSI arithmetic fails the query, and so does the kernel."""


class SharedKeyedEvent(CetqlError):
    """An event may take a keyed state and another state (`parts`)."""


@contextmanager
def of_query(name: str | tuple[str, ...]) -> Iterator[None]:
    """A kernel's error inside a workload names its query, as the query's
    errors at planning do (`said_of`); of work several share, the queries."""
    try:
        yield
    except CetqlError as e:
        said_of(e, name)
        raise


def describe_window(context: Context, k: int) -> str:
    start = k * context.window_slide
    end = start + context.window_length
    if context.time_kind in ("timestamp", "timestamp_ns"):
        import datetime as dt

        scale = 1_000_000 if context.time_kind == "timestamp" else 1_000_000_000
        epoch = dt.datetime(1970, 1, 1)
        a = epoch + dt.timedelta(microseconds=start * 1_000_000 / scale)
        b = epoch + dt.timedelta(microseconds=end * 1_000_000 / scale)
        return f"window [{a.isoformat(sep=' ')}, {b.isoformat(sep=' ')})"
    return f"window [{start}, {end})"


def describe_group(names, values) -> str:
    pairs = [f"{n}={v!r}" for n, v in zip(names, values)]
    return "group " + ", ".join(pairs) if pairs else "the whole window"


def digits(n: int) -> str:
    """Every digit of an integer, however long (Python refuses to print one
    of more than 4,300 digits unless asked; a count of trends can be)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(n)
    finally:
        sys.set_int_max_str_digits(limit)


def magnitude(n: int) -> str:
    """A count for a message: exact, its digits grouped, up to the 4,300
    digits Python prints by default; past that, its first digits and its
    number of digits."""
    text = digits(abs(n))
    if len(text) <= 4300:
        return f"{n:,}"
    return f"{'-' if n < 0 else ''}{text[0]}.{text[1:4]}e{len(text) - 1} ({len(text):,} digits)"
