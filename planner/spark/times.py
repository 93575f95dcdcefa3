"""ISO-8601 times in text inputs (CSV, JSON lines), read exactly.

One grammar, used both to decide a column's type from a sample (Python) and
to read every value (Spark):

    YYYY-MM-DD[(T| )hh:mm[:ss[(.|,)f…]]][ ][Z | ±hh | ±hhmm | ±hh:mm]

with up to nine digits of fraction.  A time with an offset is that instant;
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
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?)?"
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
    if hours > 23 or minutes > 59:
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


def _fields(text):
    """Spark columns of an ISO time's parts (as text); null where `text` is
    not one."""
    from pyspark.sql import functions as F

    parts = F.split(F.regexp_replace(text, ISO, "$1-$2-$3|$4|$5|$6|$7|$8"), r"\|")
    ok = text.rlike(ISO)

    def part(i, default=None):
        p = F.when(ok, parts.getItem(i))
        return p if default is None else F.coalesce(F.nullif(p, F.lit("")), F.lit(default))

    wall = F.concat(part(0), F.lit("T"), part(1, "00"), F.lit(":"), part(2, "00"), F.lit(":"), part(3, "00"))
    return wall.try_cast("timestamp_ntz"), F.rpad(part(4, ""), 9, "0"), part(5, "")


def _offset_micros(zone):
    """Microseconds east of UTC of a written offset (`Z`, `+02`, `-0530`,
    `+05:30`); null when it is out of range."""
    from pyspark.sql import functions as F

    digits = F.regexp_replace(zone, "[^0-9]", "")
    hours = F.substring(digits, 1, 2).try_cast("int")
    minutes = F.coalesce(F.nullif(F.substring(digits, 3, 2), F.lit("")).try_cast("int"), F.lit(0))
    sign = F.when(zone.startswith("-"), F.lit(-1)).otherwise(F.lit(1))
    valid = (hours <= 23) & (minutes <= 59)
    return F.when(zone == "Z", F.lit(0).cast("long")).when(
        valid, (sign * (hours * 3600 + minutes * 60)).cast("long") * 1_000_000
    )


def wall_micros(ntz, zone: str):
    """Microseconds since the epoch of a wall-clock time (TIMESTAMP_NTZ) in
    `zone` (a time in a daylight-saving gap moves forward, as java.time
    does)."""
    from pyspark.sql import functions as F

    utc = ntz if is_utc(zone) else F.convert_timezone(F.lit(zone), F.lit("UTC"), ntz)
    return F.timestamp_diff("MICROSECOND", F.expr(EPOCH), utc)


def _micros_and_nanos(text, zone: str):
    """(microseconds since the epoch to the second, the fraction in
    nanoseconds) of an ISO time, null where it is not one."""
    from pyspark.sql import functions as F

    ntz, frac9, written = _fields(text)
    offset = _offset_micros(written)
    at = F.when(written == "", wall_micros(ntz, zone)).otherwise(
        F.timestamp_diff("MICROSECOND", F.expr(EPOCH), ntz) - offset
    )
    return at, frac9.try_cast("long")


def iso_nanos(text, zone: str):
    """Epoch nanoseconds (`bigint`) of ISO times; null where a value is not
    one or falls outside what 64 bits of nanoseconds hold."""
    micros, nanos = _micros_and_nanos(text, zone)
    return (micros.cast("decimal(38,0)") * 1000 + nanos).try_cast("bigint")


def iso_timestamp(text, zone: str):
    """A Spark timestamp of ISO times; null where a value is not one or has
    a digit below the microsecond (which a timestamp cannot hold)."""
    from pyspark.sql import functions as F

    micros, nanos = _micros_and_nanos(text, zone)
    exact = (nanos % 1000) == 0
    return F.when(exact, F.timestamp_micros(micros + F.floor(nanos / 1000).cast("long")))


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
