"""Plans as plain data (JSON) and back: `to_data` tags every dataclass,
enum, decimal and set so that `from_data` rebuilds the very value — the
physical plan `--explain --format json` prints is the plan, not a summary."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from enum import Enum

from cetql.base import options
from cetql.kernels import spec as K
from cetql.planner.logical import plan as L
from cetql.planner.physical import plan as P

_MODULES = (P, K, L, options)


def to_data(v, skip=("logical",)):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {"__type__": type(v).__name__}
        for f in dataclasses.fields(v):
            if f.name not in skip:
                out[f.name] = to_data(getattr(v, f.name), skip)
        return out
    if isinstance(v, Enum):
        return {"__enum__": type(v).__name__, "value": v.value}
    if isinstance(v, Decimal):
        return {"__decimal__": str(v)}
    if isinstance(v, frozenset):
        return {"__set__": sorted((to_data(x, skip) for x in v), key=repr)}
    if isinstance(v, (list, tuple)):
        return [to_data(x, skip) for x in v]
    if isinstance(v, float) and v != v:
        return {"__float__": "nan"}
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return {"__float__": str(v)}
    return v


def _cls(name: str):
    for m in _MODULES:
        found = getattr(m, name, None)
        if isinstance(found, type):
            return found
    raise ValueError(f"unknown plan type {name!r}")


def from_data(d):
    if isinstance(d, list):
        return tuple(from_data(x) for x in d)
    if not isinstance(d, dict):
        return d
    if "__type__" in d:
        cls = _cls(d["__type__"])
        kwargs = {k: from_data(v) for k, v in d.items() if k != "__type__"}
        for f in dataclasses.fields(cls):
            if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = None  # a field left out of the data (the logical plan)
        return cls(**kwargs)
    if "__enum__" in d:
        return _cls(d["__enum__"])(d["value"])
    if "__decimal__" in d:
        return Decimal(d["__decimal__"])
    if "__set__" in d:
        return frozenset(from_data(x) for x in d["__set__"])
    if "__float__" in d:
        return float(d["__float__"])
    return {k: from_data(v) for k, v in d.items()}
