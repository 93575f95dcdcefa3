"""ISO-8601 times of text inputs read exactly by Spark (the rules and the
recognition are `inputs.times`'): Spark's own cast to the microsecond, the
digits below it, wall-clock times put in a zone explicitly."""

from __future__ import annotations

from cetql.backends.inputs.times import is_utc

EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def wall_micros(ntz, zone: str):
    """Microseconds since the epoch of a wall-clock time (TIMESTAMP_NTZ) in
    `zone` (a time in a daylight-saving gap moves forward, as java.time
    does)."""
    from pyspark.sql import functions as F

    utc = ntz if is_utc(zone) else F.convert_timezone(F.lit(zone), F.lit("UTC"), ntz)
    return utc_wall_micros(utc)


def utc_wall_micros(ntz):
    """Microseconds since the epoch of a TIMESTAMP_NTZ taken as a UTC wall
    clock, from its fields alone: Spark's timestamp_diff (as a cast of it to
    a TIMESTAMP) reads it in the session's zone, where a UTC wall time in
    that zone's daylight-saving gap moves an hour (a session in
    Europe/Berlin: 02:59 on 2026-03-29), so an input's meaning would depend
    on the session's zone."""
    from pyspark.sql import functions as F

    days = F.datediff(ntz.cast("date"), F.lit("1970-01-01").cast("date")).cast("long")
    seconds = F.extract(F.lit("SECOND"), ntz)  # decimal(8, 6): the second and its fraction
    return (days * F.lit(86_400_000_000) + F.hour(ntz).cast("long") * F.lit(3_600_000_000)
            + F.minute(ntz).cast("long") * F.lit(60_000_000) + (seconds * F.lit(1_000_000)).cast("long"))  # fmt: skip


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
