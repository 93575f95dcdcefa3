"""The SQL dialects the backends speak, as tables of spellings (the shape of
sqlglot's generators: one expression tree, a table of spellings per
dialect).  A dialect says how to write what differs between engines — a
name, a literal, a division that is null on zero — never what a value
means: the meaning is Spark SQL's (`kernels.compare`), and each spelling
here is checked against the kernels' evaluator on generated expressions
(tests/engines/test_dialects.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Dialect:
    name: str
    quote_char: str  # around a name; doubled inside it
    int64: str  # the 64-bit integer type
    double: str
    wide_int: str  # an integer literal past 64 bits (refused by the planner; kept exact if it comes)
    nan: str
    infinity: str
    backslash_escapes: bool  # a backslash in a string literal escapes (Spark) or is itself (DuckDB, SQL)
    int_suffix: str | None  # a 64-bit integer literal written with a suffix (Spark's 5L), else cast
    try_divide: str  # "{a}", "{b}": a / b in doubles, null where b is 0
    try_mod: str  # a % b with the dividend's sign, null where b is 0
    pmod: str  # x mod s in [0, s) for s > 0, never overflowing
    exact_div: str  # x / s for an x that s divides, in whole numbers
    # A DECIMAL {x} as the whole number it is times {p} (a power of ten that makes it whole), exactly, where the
    # dialect's division of decimals is not exact (DuckDB's `//` on decimals gives a double); None where it is
    scaled: str | None = None
    # + - * and negation: where a comparison with a constant is rewritten around the operator (DuckDB moves
    # constants: x * 3 > 0 becomes x > 0, -x > 0 becomes x < 0), a spelling the rewrite leaves alone, so a 64-bit
    # overflow fails as Spark's ANSI arithmetic fails
    add: str = "({a} + {b})"
    subtract: str = "({a} - {b})"
    multiply: str = "({a} * {b})"
    negate: str = "(- {a})"

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def literal(self, v) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, int):
            if not -(2**63) <= v < 2**63:
                return f"CAST('{v}' AS {self.wide_int})"
            return f"{v}{self.int_suffix}" if self.int_suffix else f"CAST({v} AS {self.int64})"
        if isinstance(v, Decimal):  # a decimal literal is a double, as the kernels read it
            v = float(v)
        if isinstance(v, float):
            if math.isnan(v):
                return f"CAST('{self.nan}' AS {self.double})"
            if math.isinf(v):
                return f"CAST('{'-' if v < 0 else ''}{self.infinity}' AS {self.double})"
            return f"CAST({v!r} AS {self.double})"
        text = str(v)
        if self.backslash_escapes:  # Spark: a backslash escapes, a quote is escaped by one
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + text.replace("'", "''") + "'"


SPARK = Dialect(
    name="spark",
    quote_char="`",
    int64="BIGINT",
    double="DOUBLE",
    wide_int="DECIMAL(38, 0)",
    nan="NaN",
    infinity="Infinity",
    backslash_escapes=True,
    int_suffix="L",
    try_divide="try_divide({a}, {b})",
    try_mod="try_mod({a}, {b})",
    pmod="pmod({a}, {b})",
    exact_div="({a} div {b})",
)

DUCKDB = Dialect(
    name="duckdb",
    quote_char='"',
    int64="BIGINT",
    double="DOUBLE",
    wide_int="DECIMAL(38, 0)",
    nan="NaN",
    infinity="Infinity",
    backslash_escapes=False,
    int_suffix=None,
    try_divide="(CAST({a} AS DOUBLE) / NULLIF(CAST({b} AS DOUBLE), 0))",
    try_mod="({a} % NULLIF({b}, 0))",
    pmod="(CASE WHEN {a} % {b} < 0 THEN {a} % {b} + {b} ELSE {a} % {b} END)",
    exact_div="({a} // {b})",
    scaled="(CAST(trunc({x}) AS HUGEINT) * {p} + CAST(({x} - trunc({x})) * {p} AS HUGEINT))",
    add="add({a}, {b})",
    subtract="subtract({a}, {b})",
    multiply="multiply({a}, {b})",
    negate="multiply({a}, -1)",  # -1 an integer literal: the operand's own type (INTEGER stays INTEGER), -0.0 kept
)
