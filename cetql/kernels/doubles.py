"""Every DOUBLE an aggregate returns passes one check, `as_double`.

The invariant (SEMANTICS.md, Engines and workloads): an approximate value
(APPROX / --approx) is finite or refused, intermediates included; an exact
aggregate whose output type is DOUBLE (AVG, MIN, MAX, SUM of a DOUBLE
column) is the exact value rounded once, refused when that value is past a
double's range.  A NaN or an infinity that the input itself holds (a DOUBLE
column's NaN) is a value of an exact aggregate, never of an approximate one.

Exact arithmetic is exact for DECIMAL inputs too: Python's default decimal
context keeps 28 digits, so sums over counts are made inside `EXACT`
(as many digits as the operands need; no division is made inside it).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from decimal import Decimal

from cetql.kernels.errors import AggregateOverflow

# Sums and products of Decimals, exactly (every digit kept; infinities and
# NaN of a DOUBLE input propagate as IEEE arithmetic does, never trap).
EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])
# A quotient to more digits than a double holds, then rounded once by float().
_QUOTIENT = decimal.Context(prec=40, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])


def exact(x):
    """A value as the exact arithmetic adds it: a double as its exact Decimal."""
    return Decimal(x) if isinstance(x, float) else x


def finite(value) -> bool:
    """Whether a running total (a number, None, or AVG's (sum, count) pair)
    holds no NaN or infinity."""
    if isinstance(value, tuple):
        return all(finite(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Decimal):
        return value.is_finite()
    return True


def mean(total, n):
    """AVG's quotient: floats divided as floats, exact numbers to more
    digits than a double holds (None without values)."""
    if not n:
        return None
    if isinstance(total, float) or isinstance(n, float):
        return float(total) / float(n)  # approximate: NaN of inf / inf, caught by `as_double`
    return _QUOTIENT.divide(Decimal(total), Decimal(n))


def _rounded(value) -> float:
    try:
        return float(value)
    except OverflowError:  # an exact integer past a double's range
        return math.inf if value > 0 else -math.inf


def as_double(value, *, approx: bool, name: str, where: Callable[[], str], exact_as: str = "") -> float:
    """`value` (a float, an exact int or Decimal) as the DOUBLE the output
    holds, or `AggregateOverflow` naming the aggregate `name`, its window
    and group (`where()`, formatted only then) and how to get it (`exact_as`: the exact output's
    type): refused when it is approximate and not finite, or when an exact
    value is past a double's range."""
    x = _rounded(value)
    if math.isfinite(x) or not (approx or finite(value)):
        return x  # finite, or an exact aggregate of a NaN / infinite input
    if approx:
        shown = "NaN" if x != x else ("-" if x < 0 else "") + "Infinity"
        raise AggregateOverflow(
            f"{name} in {where()}, has no finite approximate value (it would be {shown}: an intermediate passed "
            "a double's range, about 1.8e308, or the input holds NaN or infinity); drop --approx (APPROX) to get "
            f"the exact value{exact_as}"
        )
    raise AggregateOverflow(
        f"{name} in {where()}, is past a double's range (about 1.8e308), its output type; "
        "cast the column to DECIMAL to get the exact value"
    )
