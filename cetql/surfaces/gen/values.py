"""Deterministic values from the event number and a seed, as SQL column
expressions over `spark.range` (`N`): hashed draws, picks, running sums, names."""

from __future__ import annotations

import datetime as dt

MASK53 = (1 << 53) - 1
T0 = int(dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()) * 1_000_000  # micros

N = "n"  # the event number, from spark.range


class Hashed:
    """Random values of one seed: functions of a hash of (seed, keys, field)."""

    def __init__(self, seed: int):
        self.seed = int(seed)

    def hash(self, field: str, *keys: str) -> str:
        args = ", ".join(f"CAST({k} AS BIGINT)" for k in (keys or (N,)))
        return f"xxhash64(CAST({self.seed} AS BIGINT), {args}, '{field}')"

    def u(self, field: str, *keys: str) -> str:
        """Uniform in [0, 1): the hash's low 53 bits."""
        return f"(CAST(({self.hash(field, *keys)} & {MASK53}) AS DOUBLE) / {float(1 << 53)!r})"

    def uniform(self, field: str, lo: float, hi: float, *keys: str) -> str:
        """Uniform in [lo, hi)."""
        return f"({float(lo)!r} + {float(hi - lo)!r} * {self.u(field, *keys)})"

    def int(self, field: str, lo: int, hi: int, *keys: str) -> str:
        """Integer in [lo, hi]."""
        return f"({lo} + pmod({self.hash(field, *keys)}, {hi - lo + 1}))"


def _pick(u: str, choices: list[tuple[str, float]]) -> str:
    """The first choice whose cumulative weight exceeds `u` (weights sum to 1)."""
    out, acc = "CASE", 0.0
    for name, weight in choices[:-1]:
        acc += weight
        out += f" WHEN {u} < {acc!r} THEN '{name}'"
    return f"{out} ELSE '{choices[-1][0]}' END"


def _ts(seconds: str) -> str:
    """A timestamp `seconds` after 2026-01-01 00:00 UTC, to the millisecond."""
    return f"timestamp_micros({T0} + CAST(round(({seconds}) * 1000) * 1000 AS BIGINT))"


def _running_sum(value: str, *entity: str) -> str:
    """Sum of `value` over the entity's events up to this one, in event order."""
    return (
        f"sum({value}) OVER (PARTITION BY {', '.join(entity)} ORDER BY {N} "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )


def _name(prefix: str, number: str, width: int) -> str:
    """'acct00042': a prefix and a zero-padded number."""
    return f"concat('{prefix}', lpad(CAST({number} AS STRING), {width}, '0'))"
