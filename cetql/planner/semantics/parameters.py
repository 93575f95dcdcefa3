"""Query parameters: read from the command line (`--param k=v`), checked
as values, and checked against the names a query reads as parameters — a
value for a name the query does not read is refused by name, with the
nearest name it reads (`base.words`): a misspelling is caught, not ignored."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from cetql.base.errors import ParameterError, Pos, QuerySemanticError
from cetql.base.words import closest


def parse_param(text: str) -> tuple[str, object]:
    """`k=v` from the command line; v is a number, TRUE/FALSE, or a string
    (quoted, or anything that is not a number)."""
    if "=" not in text:
        raise ParameterError(f"--param '{text}' is not of the form name=value")
    k, v = text.split("=", 1)
    k, v = k.strip(), v.strip()
    if not k.isidentifier():
        raise ParameterError(f"--param name '{k}' is not an identifier")
    if v.lower() in ("true", "false"):
        return k, v.lower() == "true"
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return k, v[1:-1]
    try:
        return k, int(v)
    except ValueError:
        pass
    try:
        d = Decimal(v)
    except (InvalidOperation, ValueError):
        return k, v
    if not d.is_finite():
        raise ParameterError(f"--param {k}={v}: a parameter must be a finite number, not {v}")
    return k, d


INT64 = (-(2**63), 2**63 - 1)
_DOUBLE_MAX = Decimal("1.7976931348623157e308")


def number_range_error(v) -> str | None:
    """Why a number cannot be used in a query (it cannot be spelled to
    Spark and the kernels exactly), or None: a whole number must fit 64
    bits; any other must be finite and within a double's range."""
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
        return None
    if isinstance(v, int):
        if INT64[0] <= v <= INT64[1]:
            return None
        return (f"{_short(v)} does not fit a 64-bit integer (at most {INT64[1]:,}); write it as a decimal "
                f"(e.g. {Decimal(v):.3e}) to compare it as a number")  # fmt: skip
    if isinstance(v, float) and not math.isfinite(v):
        return f"{v} is not a finite number"
    if isinstance(v, Decimal) and (not v.is_finite() or abs(v) > _DOUBLE_MAX):
        return f"{_short(v)} is not a finite number a double can hold (at most about 1.8e308)"
    return None


def _short(v) -> str:
    text = str(v)
    return text if len(text) <= 24 else f"{text[:10]}…{text[-6:]} ({len(text.lstrip('-'))} digits)"


def check_params(params: dict[str, object]) -> dict[str, object]:
    """Parameter values from Python: numbers must be finite and fit the
    types they are compared as."""
    out = {}
    for k, v in params.items():
        if isinstance(v, float):
            if not math.isfinite(v):
                raise ParameterError(f"parameter {k}={v}: a parameter must be a finite number")
        elif isinstance(v, Decimal) and not v.is_finite():
            raise ParameterError(f"parameter {k}={v}: a parameter must be a finite number")
        elif not isinstance(v, (bool, int, float, Decimal, str)):
            raise ParameterError(f"parameter {k}={v!r}: give a number, a string or a boolean")
        problem = number_range_error(v)
        if problem:
            raise ParameterError(f"parameter {k}: {problem}")
        out[k] = v
    return out


def check_given(params: dict[str, object], read: list[str], missing: tuple[str, Pos | None] | None) -> None:
    """Refuse a parameter given that the query does not read, and — when
    every value is required — `missing`, the first name it reads without
    a value.  A given name near one the query reads without a value is the
    misspelling of it, and is refused first."""
    unread = [k for k in params if k not in read]
    lacking = [n for n in read if n not in params]
    for k in unread:
        near = closest(k, lacking)
        if near is not None:
            raise ParameterError(_unread(k, read, near))
    if missing is not None:
        name, pos = missing
        raise QuerySemanticError(
            f"unbound parameter '{name}': give it a value with --param {name}=<value> "
            "(or, if it is meant to be an attribute, write it as var.attr)",
            pos,
        )
    if unread:
        raise ParameterError(_unread(unread[0], read))


def _unread(name: str, read: list[str], near: str | None = None) -> str:
    hint = f"; did you mean {near}?" if near else ""
    has = f"its parameters: {', '.join(read)}" if read else "it has none"
    return f"--param {name}: the query has no parameter {name}{hint} ({has})"
