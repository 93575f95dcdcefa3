"""The window arithmetic of the plan (`physical.plan.Windows`) as SQL, in a
dialect: each event's windows [k*s, k*s + w) are k_lo … k_hi with

    k_hi = floor(t / s)        k_lo = floor((t - w) / s) + 1

computed exactly — in 64-bit integers, or in decimals for fractional times
or sizes — never through a double (wrong for epoch nanoseconds and for
0.1), and failing where 64 bits overflow (Spark's ANSI arithmetic, DuckDB's
checks), as both engines do."""

from __future__ import annotations

from decimal import Decimal

from cetql.backends.sql.dialects import Dialect
from cetql.planner.physical.plan import Arithmetic, PhysicalPlan


def number(v: int | Decimal) -> str:
    """An exact number as a SQL literal: an integer, or a decimal written out
    (never an exponent, which SQL reads as a double)."""
    return str(v) if isinstance(v, int) else format(v, "f")


def floor_div(d: Dialect, x: str, s: int | Decimal) -> str:
    """floor(x / s), exactly (s > 0)."""
    s = number(s)
    return d.exact_div.format(a=f"(({x}) - {d.pmod.format(a=f'({x})', b=s)})", b=s)


def exact_time(plan: PhysicalPlan, d: Dialect) -> str:
    """The internal time as SQL in the plan's arithmetic."""
    t = d.quote(plan.names.time)
    if plan.windows.arithmetic == Arithmetic.INTEGER:
        return t
    return f"TRY_CAST({t} AS DECIMAL(38, {plan.windows.scale}))"


def last_window(plan: PhysicalPlan, d: Dialect) -> str:
    """k_hi: the last window an event is in (its only one when tumbling)."""
    return _floor(plan, d, 0)


def first_window(plan: PhysicalPlan, d: Dialect) -> str:
    """k_lo: the first window an event is in."""
    return f"({_floor(plan, d, plan.windows.length)} + 1)"


def _floor(plan: PhysicalPlan, d: Dialect, minus: int | Decimal) -> str:
    """floor((t - minus) / slide), exactly: in integers, in the dialect's
    decimals where it divides them exactly, else in whole numbers scaled by
    10^scale (every time and size has at most `scale` places), as a bigint."""
    w, t = plan.windows, exact_time(plan, d)
    if w.arithmetic == Arithmetic.INTEGER or d.scaled is None:
        return floor_div(d, f"{t} - {number(minus)}" if minus else t, w.slide)
    p = 10**w.scale
    x, m, s = d.scaled.format(x=t, p=p), minus * p, w.slide * p
    assert m == int(m) and s == int(s), (minus, w.slide, w.scale)  # the plan's scale holds the sizes' places
    return f"CAST({floor_div(d, f'{x} - {int(m)}' if minus else x, int(s))} AS {d.int64})"


def block_of(d: Dialect, k: str, block: int) -> str:
    """The block of windows window `k` is in."""
    return floor_div(d, k, block)


def window_start(plan: PhysicalPlan, k: str) -> str:
    """k * slide, in the time column's units."""
    return f"({k} * {number(plan.windows.slide)})"


def window_end(plan: PhysicalPlan, k: str) -> str:
    """k * slide + length."""
    w = plan.windows
    return f"({k} * {number(w.slide)} + {number(w.length)})"
