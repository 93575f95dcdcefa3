"""ISO-8601 times in text inputs (CSV, JSON lines), read exactly.

A column is a time column when most sampled values follow

    YYYY-MM-DD[(T| )hh:mm[:ss[.f…]]][ ][Z | ±hh | ±hhmm | ±hh:mm]

with up to nine digits of fraction; every value is then read by Spark's own
cast (which also takes a zone name after the time, `… Europe/Berlin`), and
the digits below the microsecond are read beside it.  A time with an offset is that instant;
one without is a wall-clock time in the reader's time zone (UTC unless the
user names one), given to Spark explicitly: neither the session's time zone
nor the machine's changes a value.

A column is read to the nanosecond (epoch nanoseconds, a `bigint`) when a
sampled value has a digit below the microsecond; otherwise as a Spark
timestamp (microseconds).  A value that its column's type cannot hold — a
nanosecond digit in a microsecond column, a year outside 1677–2262 in a
nanosecond one — is not rounded: it cannot be read, and is refused (or
dropped) as any unreadable value is.

Parquet timestamps without a zone (Spark's TIMESTAMP_NTZ, pandas'
nanoseconds) are wall-clock times too, and are read in the same zone.
"""

from __future__ import annotations

import re
from datetime import datetime

ISO = (
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.]([0-9]{1,9}))?)?)?"
    r" ?(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?$"
)
_ISO = re.compile(ISO)
UTC_NAMES = ("UTC", "Etc/UTC", "Z", "GMT", "Etc/GMT", "UCT", "Universal", "Zulu", "+00:00")


def iso_parts(value: str) -> tuple | None:
    """(datetime of the wall clock to the second, nanoseconds, offset seconds
    or None) of an ISO time, or None when `value` is not one."""
    m = _ISO.match(value)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, zone = m.groups()
    try:
        wall = datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    except ValueError:
        return None
    nanos = int((frac or "").ljust(9, "0"))
    offset = None
    if zone:
        offset = 0 if zone == "Z" else _offset_seconds(zone)
        if offset is None:
            return None
    return wall, nanos, offset


def _offset_seconds(zone: str) -> int | None:
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if minutes > 59 or hours * 60 + minutes > 18 * 60:  # java.time's range of offsets
        return None
    return (-1 if zone[0] == "-" else 1) * (hours * 3600 + minutes * 60)


def is_time(value: str) -> bool:
    return iso_parts(value) is not None


def is_utc(zone: str) -> bool:
    return zone in UTC_NAMES
