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
EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
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


def below_micros(value: str) -> bool:
    """An ISO time with a digit below the microsecond (`.123456789`)."""
    parts = iso_parts(value)
    return parts is not None and parts[1] % 1000 != 0


def is_utc(zone: str) -> bool:
    return zone in UTC_NAMES


# ---------------------------------------------------------------- Spark


def wall_micros(ntz, zone: str):
    """Microseconds since the epoch of a wall-clock time (TIMESTAMP_NTZ) in
    `zone` (a time in a daylight-saving gap moves forward, as java.time
    does)."""
    from pyspark.sql import functions as F

    utc = ntz if is_utc(zone) else F.convert_timezone(F.lit(zone), F.lit("UTC"), ntz)
    return F.timestamp_diff("MICROSECOND", F.expr(EPOCH), utc)


def _micros_and_nanos(text, zone: str):
    """(microseconds since the epoch, the digits below the microsecond as
    nanoseconds) of ISO times; null where a value is not one.  Spark's own
    cast reads the text to the microsecond: with the value's zone when it
    names one (a letter, + or - after the date), else as a wall-clock time
    put in `zone` explicitly.  Plain string functions, and a regular
    expression only for a value with digits below the microsecond: this runs
    on every value of a time column."""
    from pyspark.sql import functions as F

    zoned = F.translate(text.substr(F.lit(12), F.lit(64)), "0123456789:. ", "") != ""
    at = F.when(zoned, F.unix_micros(text.try_cast("timestamp"))).otherwise(
        wall_micros(text.try_cast("timestamp_ntz"), zone)
    )
    dot = F.instr(text, ".")
    seven = text.substr(dot + 1, F.lit(7))  # a digit below the microsecond: seven digits after the point
    finer = (dot > 0) & (F.length(seven) == 7) & (F.translate(seven, "0123456789", "") == "")
    digits = F.regexp_extract(text, r"[.][0-9]{6}([0-9]{1,3})", 1)  # only where `finer`: a regex costs
    below = F.when(finer, F.rpad(digits, 3, "0").try_cast("int")).otherwise(F.lit(0))
    return at, below


def iso_nanos(text, zone: str):
    """Epoch nanoseconds (`bigint`) of ISO times; null where a value is not
    one or falls outside what 64 bits of nanoseconds hold."""
    micros, below = _micros_and_nanos(text, zone)
    return (micros.cast("decimal(38,0)") * 1000 + below).try_cast("bigint")


def iso_timestamp(text, zone: str):
    """A Spark timestamp of ISO times; null where a value is not one or has
    a digit below the microsecond (which a timestamp cannot hold)."""
    from pyspark.sql import functions as F

    micros, below = _micros_and_nanos(text, zone)
    return F.when(below == 0, F.timestamp_micros(micros))


def ntz_instant(ntz, zone: str):
    """A TIMESTAMP_NTZ column as the instants its wall-clock times are in
    `zone` (a TIMESTAMP), to the microsecond."""
    from pyspark.sql import functions as F

    return F.timestamp_micros(wall_micros(ntz, zone))


def wall_nanos_instant(nanos, zone: str):
    """Epoch nanoseconds of wall-clock times written as nanoseconds since
    1970-01-01 00:00 (pandas' timestamps without a zone) read in `zone`."""
    from pyspark.sql import functions as F

    if is_utc(zone):
        return nanos
    rest = F.pmod(nanos, F.lit(1_000_000_000))
    seconds = ((nanos - rest).cast("decimal(20,0)") / F.lit(1_000_000_000)).cast("long")  # exact: no double
    wall = F.timestamp_add("SECOND", seconds, F.expr(EPOCH))
    micros = wall_micros(wall, zone)
    return (micros.cast("decimal(38,0)") * 1000 + rest).try_cast("bigint")


def epoch_nanos(column, nanos: bool):
    """Epoch nanoseconds of an input's time column: as read for a
    nanosecond column, else from its timestamp.  Where inputs mix
    nanosecond and microsecond timestamps the plan's time kind is
    nanoseconds, and every input's time is this."""
    from pyspark.sql import functions as F

    if nanos:
        return column.cast("long")
    return (F.unix_micros(column.cast("timestamp")).cast("decimal(38,0)") * 1000).try_cast("bigint")
