"""Which kernel runs a task's table — decided here alone, from the spec the
plan derived (`--explain` prints `describe(spec)`) and the table's size.

    Variant.COUNT      COUNT(*) of E+ (one transition, at most one equal or
                       range predicate, no negation): numba loops in int64
                       (doubles when approximate), exact counts past 64 bits
                       in limbs (`jit_wide`), past those the reference's
                       Python integers (`compiled_count`)
    Variant.WALK       detection of E+ with one equal predicate, ALL or
                       COMPLETE trends: a numba walk writing Arrow buffers
                       (`compiled_walk`)
    Variant.REFERENCE  the reference kernels, pure Python (greta, aseq,
                       kleene, graph, walks, runs): every shape, and what
                       the property tests hold the compiled ones against

A shape's compiled variant runs where numba imports and the spec's
`compiled` allows: AUTO from `MIN_ROWS` rows a task (a first compile on a
machine takes 5–11 s, then a cache load of up to 1 s a new worker, more
than the reference spends on a small table), ALWAYS on every table, NEVER
nowhere.  A compiled variant that meets what it cannot hold (a null time;
a count past the widest limbs) gives that table or window to the
reference, which raises the one error with its numbers.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import threading
from enum import StrEnum
from functools import cache

from cetql.base.options import Compiled, TrendSet
from cetql.kernels import spec as K

MIN_ROWS = 4_096


class Variant(StrEnum):
    COUNT = "numba COUNT(*) of E+: int64 (doubles when approximate), exact past 64 bits in limbs"
    WALK = "numba walk of E+ over one equal predicate"
    REFERENCE = "the reference kernels (Python)"


def shape(spec: K.DetectSpec | K.AggregateSpec) -> Variant:
    """The variant the spec's shape allows (before numba and table size)."""
    if isinstance(spec, K.AggregateSpec):
        return Variant.COUNT if _counts(spec) else Variant.REFERENCE
    return Variant.WALK if _walks(spec) else Variant.REFERENCE


def _counts(spec: K.AggregateSpec) -> bool:
    t = spec.template
    return (spec.algorithm == K.KLEENE_COUNT and spec.kernel != K.Kernel.SCAN and len(spec.targets) == 1
            and not spec.propagate and not spec.state_keys and not spec.shared_subkeys and not t.negations
            and len(t.transitions) == 1)  # fmt: skip


def _walks(spec: K.DetectSpec) -> bool:
    t = spec.template
    if spec.trend_set not in (TrendSet.ALL, TrendSet.COMPLETE) or spec.state_keys:
        return False
    if (spec.shared_graph and spec.columns.block) or t.negations or t.cross or len(t.states) != 1:
        return False
    (state,) = t.states
    if t.start != {state.name} or t.end != {state.name} or len(t.transitions) != 1:
        return False
    (tr,) = t.transitions
    return (tr.source == tr.target == state.name and len(tr.equal) == 1 and not tr.ranges and not tr.others
            and tr.index == K.HASH)  # fmt: skip


def variant(spec: K.DetectSpec | K.AggregateSpec, rows: int) -> Variant:
    """The variant that runs a task's table of `rows` rows."""
    found = _wanted(spec, rows)
    return found if found == Variant.REFERENCE or available() else Variant.REFERENCE


def _wanted(spec: K.DetectSpec | K.AggregateSpec, rows: int) -> Variant:
    """The variant the spec and a table of `rows` rows ask for, numba aside."""
    found = shape(spec)
    if found == Variant.REFERENCE or spec.compiled == Compiled.NEVER:
        return Variant.REFERENCE
    if spec.compiled == Compiled.AUTO and rows < MIN_ROWS:
        return Variant.REFERENCE
    return found


@cache
def available() -> bool:
    """Does numba import (installed and working)?  Asked only where a
    compiled variant may run, so that a process that never runs one never
    imports it."""
    if importlib.util.find_spec("numba") is None:
        return False
    from cetql.kernels import jit  # start-up cost: numba's import, only where a compiled loop may run

    return jit.COMPILED


def preload(spec: K.DetectSpec | K.AggregateSpec, events: int, warm=None) -> threading.Thread | None:
    """Import the compiled loops in a thread where a compiled variant may run
    on `events` events (the kernels' tables hold at least those): numba's
    import (a fifth of a second of CPU) then overlaps the engine's work on
    its input, which releases the GIL, instead of following it.  Then, if
    numba imported, `warm()`: a kernel run on a few rows of the input, which
    loads the compiled loops it calls from numba's cache with the argument
    types the run will pass (another fifth of a second, paid by each thread
    that first calls them otherwise); its result and errors are dropped.
    What runs is still decided by `variant`, on each table.  The thread, if
    started."""
    if not may_compile(spec, events):
        return None

    def load() -> None:
        if available() and warm is not None:
            try:
                warm()
            except Exception:  # noqa: BLE001 - a warm-up only: the run meets and reports its own errors
                pass

    thread = threading.Thread(target=load, name="cetql-compiled-loops", daemon=True)
    thread.start()
    return thread


def may_compile(spec: K.DetectSpec | K.AggregateSpec, rows: int) -> bool:
    """Whether a compiled variant may run on a table of `rows` rows (numba aside)."""
    return _wanted(spec, rows) != Variant.REFERENCE


def always(spec: K.DetectSpec | K.AggregateSpec) -> K.DetectSpec | K.AggregateSpec:
    """The spec with its compiled variant on every table (a warm-up's few rows)."""
    return dataclasses.replace(spec, compiled=Compiled.ALWAYS)


def describe(spec: K.DetectSpec | K.AggregateSpec) -> str:
    """What `--explain` says of the kernel."""
    found = shape(spec)
    if found == Variant.REFERENCE:
        return Variant.REFERENCE.value
    if spec.compiled == Compiled.NEVER:
        return f"{Variant.REFERENCE.value} (compiled loops turned off)"
    when = "on every table" if spec.compiled == Compiled.ALWAYS else f"on tasks of {MIN_ROWS:,} rows or more"
    return f"{found.value}, {when} where numba imports; else {Variant.REFERENCE.value}"
