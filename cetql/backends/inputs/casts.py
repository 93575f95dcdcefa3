"""How a text input's value is read as its column's type — the rule every
engine applies, spelled once in SQL for each dialect.

A value is read when it has the type's shape (a regular expression, the
same one `sources.decide` samples with), then cast; a value present but
not read is invalid (the query fails naming the column, or the row is
dropped).  Surrounding spaces are ignored; an empty value is null.

- bigint, decimal(38,0): `[+-]digits` (within the type's range)
- double: a decimal or exponent number, `nan`, `inf`, `infinity` (any case),
  signed but `nan` (a sign only before `NaN` so written: Java's parse, which
  Spark's cast tries first, takes `-NaN`, and its own rule takes no sign)
- boolean: `true` or `false` (any case)
- timestamp: ISO-8601 (`times.ISO`), each engine computing the instant
  (`spark.times`, `embedded.reader`)

Spark matches with Java's `$`, which also matches before one line
terminator that ends the value (`5\\n`, `5\\r\\n`), and its cast then reads
the number (and its cast of times reads a time so ended); DuckDB's RE2 does
not, so the DuckDB dialect matches the value without that terminator.
"""

from __future__ import annotations

import re

from cetql.backends.sql.dialects import Dialect

INT = r"^[+-]?[0-9]+$"
NUMBER = (
    r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?([iI][nN][fF]|[iI][nN][fF][iI][nN][iI][tT][yY])$"
    r"|^([nN][aA][nN]|[+-]NaN)$"
)
INT_RE, NUMBER_RE = re.compile(INT), re.compile(NUMBER)
JAVA_END = r"(\r\n|\r|\n)$"  # the line terminator Java's $ matches before, where Spark's cast reads the value
BOOLEANS = ("true", "false")


def matches(dialect: Dialect, value: str, pattern: str) -> str:
    """SQL: `value` (text) matches `pattern` (anchored: each alternative
    between ^ and $).  Where `$` is not Java's, the value may end in one
    line terminator (`unterminated`), matched in the same expression (one
    pass of the regular expression a value: a third of reading a CSV
    column of numbers otherwise went to removing the terminator first)."""
    if dialect.name == "spark":
        return f"({value} RLIKE {dialect.literal(pattern)})"
    return f"regexp_full_match({value}, {dialect.literal(full_with_end(pattern))})"


def full_with_end(pattern: str) -> str:
    """`pattern`'s alternatives without their anchors, then one optional
    line terminator: what Java's `$` matches, for a full match."""
    bare = "|".join(a.removeprefix("^").removesuffix("$") for a in pattern.split("|^"))
    return f"(?:{bare})" + r"(?:\r\n|\r|\n)?"


def unterminated(dialect: Dialect, value: str) -> str:
    """SQL: `value` (text) without one line terminator that ends it, where
    the dialect's `$` does not match before it as Java's does (and Spark's
    cast, of numbers and of times, reads the value)."""
    if dialect.name == "spark":
        return value
    return f"regexp_replace({value}, {dialect.literal(JAVA_END)}, '')"


def trimmed(dialect: Dialect, name: str) -> str:
    return f"trim({dialect.quote(name)})"


def typed_text(dialect: Dialect, name: str, spark_type: str) -> str | None:
    """SQL of column `name` (text) read as `spark_type`, null where it is
    not read; None for a type this module does not read (text, timestamps)."""
    t = trimmed(dialect, name)
    if spark_type == "bigint" or spark_type.startswith("decimal"):
        target = dialect.int64 if spark_type == "bigint" else "DECIMAL(38, 0)"
        return f"CASE WHEN {matches(dialect, t, INT)} THEN TRY_CAST({t} AS {target}) END"
    if spark_type == "double":
        return f"CASE WHEN {matches(dialect, t, NUMBER)} THEN TRY_CAST({t} AS {dialect.double}) END"
    if spark_type == "boolean":
        return f"CASE lower({t}) WHEN 'true' THEN TRUE WHEN 'false' THEN FALSE END"
    return None


def invalid(dialect: Dialect, name: str, value: str) -> str:
    """SQL: the raw text of column `name` is present but `value` (its read
    value) is null."""
    return f"({dialect.quote(name)} IS NOT NULL AND {trimmed(dialect, name)} <> '' AND {value} IS NULL)"
