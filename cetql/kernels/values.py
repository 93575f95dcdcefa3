"""What a comparison means in the kernels: Spark SQL's, in one place.

- A comparison with null is null (not true): `compare` returns None.
- NaN equals NaN and is larger than every other number (so `x > 1` holds
  for NaN, and `x < NaN` for every number); -0.0 equals 0.0.
- A DECIMAL (or an integer) against a DOUBLE is compared as doubles.
- Values that cannot be compared (text against a number) compare as null.

Python's own operators agree with this except for NaN, so values are
compared through their *keys*: `key(v)` is v, except that a NaN becomes the
one `NAN` object, which sorts after every number and equals itself (and
hashes alike).  Keys can be sorted, bisected and used in dicts, so every
index (hash, sorted, Fenwick) reads them: `ranks` turns the two sides of a
predicate into integers in one SQL order, after which every comparison is
one between integers.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from decimal import Decimal
from numbers import Number

COMPARATORS = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


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
        if other is self or isinstance(other, Number):
            return False
        return NotImplemented

    def __le__(self, other):
        if other is self:
            return True
        if isinstance(other, Number):
            return False
        return NotImplemented

    def __gt__(self, other):
        if other is self:
            return False
        if isinstance(other, Number):
            return True
        return NotImplemented

    def __ge__(self, other):
        if other is self or isinstance(other, Number):
            return True
        return NotImplemented

    def __reduce__(self):
        return "NAN"  # one object per process, also after pickling


NAN = _NaN()


def key(v):
    """The comparison key of one value (None stays None)."""
    return NAN if v != v else v  # NaN is the one value unequal to itself


def keys(values: Sequence) -> Sequence:
    """The keys of a column (the column itself when it holds no NaN)."""
    if not all(map(operator.eq, values, values)):  # C speed: only a NaN is unequal to itself
        return [NAN if v != v else v for v in values]
    return values


def _first(values: Sequence):
    for v in values:
        if v is not None:
            return v
    return None


def _as_double(values: Sequence) -> list:
    return [None if v is None else float(v) for v in values]


def comparable(a: Sequence, b: Sequence) -> tuple[Sequence, Sequence]:
    """Two columns compared with each other, as keys: a DECIMAL or integer
    column against a DOUBLE one as doubles (a column holds one type); only
    a DOUBLE column can hold a NaN."""
    x, y = _first(a), _first(b)
    fx, fy = x.__class__ is float, y.__class__ is float
    if fy and not fx and isinstance(x, (Decimal, int)) and not isinstance(x, bool):
        a, fx = _as_double(a), True
    elif fx and not fy and isinstance(y, (Decimal, int)) and not isinstance(y, bool):
        b, fy = _as_double(b), True
    return (keys(a) if fx else a), (keys(b) if fy else b)


def ranks(a: Sequence, b: Sequence) -> tuple[list, list, int]:
    """(ranks of a, ranks of b, the number of distinct values): each value
    of both columns replaced by its position among their distinct values in
    SQL order (None stays None), so that `a[i] OP b[j]` holds exactly when
    `ra[i] OP rb[j]` does.  Columns whose values cannot be compared with
    each other have no rank (every comparison is null)."""
    a, b = comparable(a, b)
    same = a == b  # one attribute on both sides (`s[i].x > s[i-1].x`): one pass
    distinct = set(a)
    if not same:
        distinct.update(b)
    distinct.discard(None)
    try:
        order = sorted(distinct)
    except TypeError:  # text against numbers: nothing holds
        return [None] * len(a), [None] * len(b), 0
    at = dict(zip(order, range(len(order))))
    at[None] = None
    get = at.__getitem__
    ra = list(map(get, a))
    return ra, (ra if same else list(map(get, b))), len(order)


def _pair(a, b):
    """Both values as the same kind of number where Spark would convert."""
    if isinstance(a, float):
        if isinstance(b, (Decimal, int)) and not isinstance(b, bool):
            b = float(b)
    elif isinstance(b, float) and isinstance(a, (Decimal, int)) and not isinstance(a, bool):
        a = float(a)
    return (NAN if a != a else a), (NAN if b != b else b)


def compare(op: str, a, b):
    """`a OP b` as Spark SQL evaluates it: True, False, or None (null)."""
    if a is None or b is None:
        return None
    if a.__class__ is not b.__class__ or a != a or b != b:
        a, b = _pair(a, b)
    try:
        return COMPARATORS[op](a, b)
    except TypeError:
        return None


def holds(op: str, a, b) -> bool:
    """`a OP b` is true (null and not comparable: false)."""
    return compare(op, a, b) is True


def smaller(a, b) -> bool:
    """a < b in SQL order, for MIN (NaN is larger than every number)."""
    return compare("<", a, b) is True
