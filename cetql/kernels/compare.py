"""What a comparison means — Spark SQL's — written once: every evaluator of
the kernels reads it (the row evaluator `expr`, the attribute index
`index`, the keys of `parts`, MIN and MAX, the compiled kernels' int64
keys), and the SQL dialects test what they generate against it (`CASES`).

- A comparison with null is null (not true): `compare` returns None.
- NaN equals NaN and is larger than every other number (so `x > 1` holds
  for NaN, and `x < NaN` for every number); -0.0 equals 0.0; ±infinity are
  numbers (below NaN).
- An integer or a DECIMAL against a DOUBLE is compared as doubles (Spark
  casts it, rounding to the nearest double: 2^53 + 1 = 2^53 holds); an
  integer against a DECIMAL, or two DECIMALs, exactly.
- Text by its UTF-8 bytes (Spark's UTF8String; the code point order, not
  Java's UTF-16 order), binary by its bytes (unsigned).
- A boolean only with a boolean (false < true); values of different kinds
  (text against a number, a boolean against a number) are not comparable:
  null.  The plan refuses such a comparison before anything runs, so the
  SQL dialects never have to spell one.

Python's own operators agree with this except for NaN, mixed kinds and
int against double, so values are compared through their *keys*: `key(v)`
is v, except that a NaN becomes the one `NAN` object, which sorts after
every number and equals itself (and hashes alike).  Keys can be sorted,
bisected and used in dicts, so every index reads them: `ranks` turns the
two sides of a predicate into integers in one SQL order, after which every
comparison is one between integers.  `arrow_keys` does the same for Arrow
columns as int64 keys for the compiled kernels (`jit`), for every type.

The small API a SQL generator tests against: `compare(op, a, b)`, `key`,
`order_key` (ORDER BY … ASC NULLS FIRST) and `CASES`.
"""

from __future__ import annotations

import datetime as dt
import math
import operator
from collections.abc import Sequence
from decimal import Decimal
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OPS = ("=", "!=", "<", "<=", ">", ">=")
COMPARATORS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
               ">=": operator.ge}  # fmt: skip
MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}  # a OP b  ⇔  b MIRROR[OP] a


class _NaN:
    """The key of every NaN: equal to itself, larger than every number."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NAN"

    def __hash__(self) -> int:
        return 0x7FF8

    def __eq__(self, other):
        return other is self

    def __ne__(self, other):
        return other is not self

    def __lt__(self, other):
        if other is self or _is_number(other):
            return False
        return NotImplemented

    def __le__(self, other):
        if other is self:
            return True
        if _is_number(other):
            return False
        return NotImplemented

    def __gt__(self, other):
        if other is self:
            return False
        if _is_number(other):
            return True
        return NotImplemented

    def __ge__(self, other):
        if other is self or _is_number(other):
            return True
        return NotImplemented

    def __reduce__(self):
        return "NAN"  # one object per process, also after pickling


NAN = _NaN()

# ---------------------------------------------------------------- kinds

_KINDS = {bool: "boolean", int: "number", float: "number", Decimal: "number", str: "text", bytes: "binary",
          dt.datetime: "timestamp", dt.date: "date", dt.time: "time", dt.timedelta: "interval"}  # fmt: skip
_ORDERED = (bool, int, float, Decimal, str, bytes, dt.datetime, dt.date, dt.time, dt.timedelta)  # subclasses first


def kind(v) -> str | None:
    """What a value compares as: "number", "text", "boolean", … (None: null)."""
    if v is None:
        return None
    found = _KINDS.get(v.__class__)
    if found is None:  # a subclass (numpy's float64, pandas' Timestamp …)
        found = next((_KINDS[c] for c in _ORDERED if isinstance(v, c)), "other")
    return found


def _is_number(v) -> bool:
    return kind(v) == "number"


def _double(v) -> float:
    """v as Spark casts it to a double (rounded to the nearest)."""
    try:
        return float(v)
    except OverflowError:  # an integer past a double's range
        return math.inf if v > 0 else -math.inf


def key(v):
    """The comparison key of one value (None stays None)."""
    return NAN if v != v else v  # NaN is the one value unequal to itself


def order_key(v) -> tuple:
    """A sort key in Spark's ORDER BY v ASC NULLS FIRST, for values of one kind."""
    return (v is not None, key(v))


def keys(values: Sequence) -> Sequence:
    """The keys of a column (the column itself when it holds no NaN)."""
    if not all(map(operator.eq, values, values)):  # C speed: only a NaN is unequal to itself
        return [NAN if v != v else v for v in values]
    return values


# ---------------------------------------------------------------- two values


def _pair(a, b):
    """Both values as what they are compared as, or None when they cannot be."""
    ka, kb = kind(a), kind(b)
    if ka != kb or ka == "other":
        return None
    if ka == "number" and (a.__class__ is float) is not (b.__class__ is float):
        a, b = _double(a), _double(b)  # an integer or a DECIMAL against a DOUBLE: as doubles
    return (NAN if a != a else a), (NAN if b != b else b)


def compare(op: str, a, b) -> bool | None:
    """`a OP b` as Spark SQL evaluates it: True, False, or None (null)."""
    if a is None or b is None:
        return None
    if a.__class__ is not b.__class__ or a != a or b != b:
        pair = _pair(a, b)
        if pair is None:
            return None
        a, b = pair
    try:
        return COMPARATORS[op](a, b)
    except TypeError:  # e.g. a zoned against a naive time
        return None


def holds(op: str, a, b) -> bool:
    """`a OP b` is true (null and not comparable: false)."""
    return compare(op, a, b) is True


def smaller(a, b) -> bool:
    """a < b in SQL order, for MIN (NaN is larger than every number)."""
    return compare("<", a, b) is True


# ---------------------------------------------------------------- two columns


def _first(values: Sequence):
    return next((v for v in values if v is not None), None)


def comparable(a: Sequence, b: Sequence) -> tuple[Sequence, Sequence]:
    """Two columns as keys that compare with each other as their values do
    (a column holds one kind): an integer or DECIMAL column against a DOUBLE
    one as doubles; columns that cannot be compared with each other as
    nulls (every comparison null)."""
    x, y = _first(a), _first(b)
    if x is not None and y is not None and _pair(x, y) is None:
        return [None] * len(a), [None] * len(b)
    fx, fy = isinstance(x, float), isinstance(y, float)
    if fx is not fy and x is not None and y is not None:
        a, b = ([None if v is None else _double(v) for v in c] for c in (a, b))
    return keys(a), keys(b)


def ranks(a: Sequence, b: Sequence) -> tuple[list, list, int]:
    """(ranks of a, ranks of b, the number of distinct values): each value
    of both columns replaced by its position among their distinct values in
    SQL order (None stays None), so that `a[i] OP b[j]` holds exactly when
    `ra[i] OP rb[j]` does.  Columns whose values cannot be compared with
    each other have no rank (every comparison is null)."""
    same = a is b
    a, b = comparable(a, b)
    same = same or a == b  # one attribute on both sides (`s[i].x > s[i-1].x`): one pass
    distinct = set(a)
    if not same:
        distinct.update(b)
    distinct.discard(None)
    try:
        order = sorted(distinct)
    except TypeError:  # zoned against naive times: nothing holds
        return [None] * len(a), [None] * len(b), 0
    at = dict(zip(order, range(len(order))))
    at[None] = None
    get = at.__getitem__
    ra = list(map(get, a))
    return ra, (ra if same else list(map(get, b))), len(order)


# ---------------------------------------------------------------- Arrow columns as int64 keys (compiled kernels)


def _numeric(a: pa.Array, dtype) -> np.ndarray:
    return np.asarray(pc.fill_null(a, 0).to_numpy(zero_copy_only=False), dtype=dtype)


def double_keys(x: np.ndarray) -> np.ndarray:
    """Doubles as int64 in SQL order: -0.0 as 0.0, every NaN one key above +inf."""
    x = x + 0.0  # -0.0 → 0.0 (and a copy)
    x[np.isnan(x)] = np.nan  # one NaN
    bits = x.view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


def _valid(a: pa.Array) -> np.ndarray:
    if a.null_count == 0:
        return np.ones(len(a), dtype=bool)
    return np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _int64(t: pa.DataType) -> bool:
    return (pa.types.is_signed_integer(t) or pa.types.is_boolean(t) or pa.types.is_date(t)
            or pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time(t))  # fmt: skip


def _codes(a: pa.Array, b: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Text or binary of both columns: each value's rank among the distinct
    values of both, in byte order (Arrow's order of binary values)."""
    big = pa.large_binary() if pa.types.is_binary(a.type) or pa.types.is_large_binary(a.type) else pa.large_string()
    both = pa.concat_arrays([a.cast(big), b.cast(big)])
    distinct = pc.unique(both).drop_null()
    codes = _numeric(pc.index_in(both, value_set=distinct.take(pc.sort_indices(distinct))), np.int64)
    return codes[: len(a)], codes[len(a) :]


def _text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _bytes(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def arrow_keys(a: pa.Array, b: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both columns as int64 keys whose order and equality are `compare`'s
    between them, and their validity (null, or not comparable: False), for
    every pair of Arrow types: numbers in O(n) (a double's bits, ordered as
    integers), text and binary by their rank among the distinct values,
    anything else (DECIMALs, mixed units) by `ranks` over the Python values."""
    ta, tb = a.type, b.type
    floating = pa.types.is_floating(ta) or pa.types.is_floating(tb)
    numeric = all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in (ta, tb))
    if ta == tb and _int64(ta):
        ka, kb = _numeric(a.cast(pa.int64()), np.int64), _numeric(b.cast(pa.int64()), np.int64)
    elif numeric and not floating and all(pa.types.is_signed_integer(t) for t in (ta, tb)):
        ka, kb = _numeric(a, np.int64), _numeric(b, np.int64)
    elif numeric and floating:
        ka, kb = double_keys(_numeric(a, np.float64)), double_keys(_numeric(b, np.float64))
    elif (_text(ta) and _text(tb)) or (_bytes(ta) and _bytes(tb)):
        ka, kb = _codes(a, b)
    else:  # DECIMALs (rounded as Spark rounds them, which Arrow's cast does not), unsigned, mixed kinds
        ra, rb, _ = ranks(a.to_pylist(), b.to_pylist())
        ka, kb = (np.fromiter((-1 if r is None else r for r in rs), dtype=np.int64, count=len(rs)) for rs in (ra, rb))
        return ka, ka >= 0, kb, kb >= 0
    return ka, _valid(a), kb, _valid(b)


def time_keys(a: pa.Array) -> np.ndarray:
    """A time column (never null: the plan refuses null times) as int64
    keys in its order, for the compiled kernels' ties and steps."""
    return np.ascontiguousarray(arrow_keys(a, a)[0])


# ---------------------------------------------------------------- the table of cases


class Case(NamedTuple):
    op: str
    a: object
    b: object
    want: bool | None  # True, False, or None (null)


_nan, _inf = math.nan, math.inf
CASES: tuple[Case, ...] = (
    # null: never true
    Case("=", None, None, None), Case("!=", None, 1, None), Case("<", 1.0, None, None), Case("=", _nan, None, None),
    Case("=", "a", None, None), Case(">=", None, True, None),
    # NaN equals NaN and is above every number
    Case("=", _nan, _nan, True), Case("!=", _nan, _nan, False), Case("<", _nan, _nan, False),
    Case("<=", _nan, _nan, True), Case(">", _nan, 1.0, True), Case(">", _nan, _inf, True),
    Case("<", -_inf, _nan, True), Case("<", 5.0, _nan, True), Case("=", _nan, 1.0, False),
    Case(">", 1, _nan, False), Case("<", 1, _nan, True), Case(">", _nan, Decimal("1e30"), True),
    # -0.0 equals 0.0
    Case("=", -0.0, 0.0, True), Case("<", -0.0, 0.0, False), Case(">=", 0.0, -0.0, True), Case("=", 0, -0.0, True),
    Case("=", Decimal("0"), -0.0, True),
    # infinities are numbers
    Case("=", _inf, _inf, True), Case("<", -_inf, _inf, True), Case(">", _inf, 1.7976931348623157e308, True),
    Case("<", 10**18, _inf, True), Case(">", -_inf, -(10**18), False),
    # an integer against a double: as doubles
    Case("=", 1, 1.0, True), Case("<", 3, 2.5, False), Case("=", 2**53 + 1, float(2**53), True),
    Case(">", 2**53 + 1, float(2**53), False), Case("=", -(2**63), -9.223372036854776e18, True),
    # DECIMALs: against a double as doubles, against an integer or a DECIMAL exactly
    Case("=", Decimal("0.1"), 0.1, True), Case(">", Decimal("2.5"), 2.4, True),
    Case("=", Decimal("9007199254740993"), 2**53 + 1, True), Case(">", Decimal("9007199254740993"), 2**53, True),
    Case("=", Decimal("1.0"), Decimal("1.00"), True), Case("<", Decimal("-1"), Decimal("-0.5"), True),
    # integers exactly
    Case("<", 2**62, 2**62 + 1, True), Case("=", 0, 0, True), Case(">=", -5, 3, False),
    # text by UTF-8 bytes
    Case("<", "a", "b", True), Case("<", "Z", "a", True), Case(">", "é", "z", True), Case("<", "a", "ab", True),
    Case("<", "", "a", True), Case("=", "a", "a", True), Case("!=", "a", "A", True),
    Case("<", "\uff5e", "\U0001f600", True),  # byte order; Java's UTF-16 order says the opposite
    Case("<", "\u20ac", "\U0001f600", True), Case("=", "e\u0301", "\u00e9", False),  # no normalisation
    # binary by unsigned bytes
    Case("<", b"\x7f", b"\x80", True), Case("<", b"", b"\x00", True),
    # booleans only with booleans
    Case("<", False, True, True), Case("=", True, True, True), Case("=", True, 1, None), Case("=", False, 0.0, None),
    Case(">", True, Decimal("0"), None),
    # text against a number: not comparable
    Case("=", "1", 1, None), Case("<", "a", 1.0, None), Case("!=", "a", Decimal("1"), None),
)  # fmt: skip
