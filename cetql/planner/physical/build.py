"""Logical plan → physical plan (pure): internal column names chosen against
the input's, the column definitions Spark computes (masks, keys, the sides
of indexed edge predicates, attributes), how each input's time is cast, the
window arithmetic, the kernel's template — every fact the Spark compiler
and the kernels need, decided here once.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from itertools import count

from cetql.base.options import TIME_UNITS, Index, Sharing
from cetql.kernels import spec as K
from cetql.planner.logical import plan as L
from cetql.planner.physical import exprs as E
from cetql.planner.physical.plan import (
    Aggregate,
    Arithmetic,
    Bounds,
    Derived,
    Detect,
    Filter,
    KeyColumn,
    Mask,
    Names,
    Partition,
    PhysicalPlan,  # fmt: skip
    Scan,
    ScanInput,
    Stateful,
    StateKeyColumn,
    StreamState,
    StreamTimers,
    SubKeyColumn,
    TimeCast,
    TimeKind,
    WindowKeys,
    Windows,
)
from cetql.planner.physical.ranges import time_range
from cetql.planner.semantics import ir
from cetql.planner.semantics.template import Template

INTEGRAL = ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte")
DOUBLE_SCALE = 18  # decimal places a floating time keeps in window arithmetic


def choose_prefix(columns) -> str:
    """`__`, or a longer prefix if an input column already starts with it."""
    prefix, n = "__", 0
    while any(c.startswith(prefix) for c in columns):
        n += 1
        prefix = f"__c{n}_"
    return prefix


def physical(logical: L.LogicalPlan) -> PhysicalPlan:
    inputs = logical.find(L.Scan).inputs
    names = Names(choose_prefix(inputs.schema.names() if inputs.schema else ()))
    filt = _filter(logical, names)
    windows = _windows(logical)
    partition = _partition(logical, names)
    derived: dict[str, K.Expr] = {}
    root = logical.root
    template = _Templates(logical, names, derived).template(root.template)
    if isinstance(root, L.Detect):
        phys_root = Detect(root.strategy.choice, root.trends, template, (), root.guard.choice, root.max_edges,
                           root.batch_events, logical.find(L.Windows).shared_graph, root.with_rows,
                           root.prefilter.choice if root.prefilter else None,
                           root.split.choice if root.split else None)  # fmt: skip
    else:
        phys_root = Aggregate(root.trends, template, (), _targets(root, logical.query, names, derived),
                              root.algorithm.choice, root.complete.choice if root.complete else K.PER_STATE,
                              logical.options.kernel, root.numbers.choice, logical.find(L.Windows).propagate)  # fmt: skip
    phys_root = replace(phys_root, derived=tuple(Derived(c, e) for c, e in derived.items()),
                        compiled=logical.options.compiled)  # fmt: skip
    scan = _scan(logical, names, filt, partition, phys_root)
    stream = _stateful(logical, names, windows, partition)
    return PhysicalPlan(logical, names, scan, filt, windows, partition, phys_root, _assumed(logical), stream)


def _stateful(logical: L.LogicalPlan, names: Names, windows: Windows, part: Partition) -> Stateful | None:
    s = logical.stream.choice if logical.stream is not None else None
    if s is None:
        return None
    keys = WindowKeys.ONE if windows.sharing is None else WindowKeys.BLOCKS if windows.block else WindowKeys.COPY
    return Stateful(part.group, keys, names.event_time, s.clock, s.watermark.choice, StreamState.EVENTS,
                    StreamTimers.EARLIEST, s.late.choice)  # fmt: skip


def _assumed(logical: L.LogicalPlan) -> tuple[str, ...]:
    out = []
    if not logical.find(L.Scan).inputs.known:
        out.append("inputs: not known (no --input): typed-ness, columns and time type assumed")
    r = logical.resources
    if r.assumed:
        out.append(f"resources: {r.source} (executor memory {r.executor_memory or 'unset'}, {r.task_slots} task "
                   f"slot(s) an executor, {r.parallelism} at once)")  # fmt: skip
    return tuple(out)


# ---------------------------------------------------------------- Scan, Filter


def time_kind(inputs: L.Inputs) -> TimeKind:
    return TimeKind(inputs.time_kind or "numeric")


def _cast(kind: TimeKind, f: L.InputFacts) -> TimeCast:
    if kind == TimeKind.TIMESTAMP_NS:
        return TimeCast.NANOS if f.nanos else TimeCast.MICROS_TO_NANOS
    if kind == TimeKind.TIMESTAMP:
        return TimeCast.MICROS
    return TimeCast.EMPTY if f.time_type is None else TimeCast.NUMBER


def _scan(logical: L.LogicalPlan, names: Names, filt: Filter, part: Partition, root) -> Scan:
    op = logical.find(L.Scan)
    kind = time_kind(op.inputs)
    stamped = not op.inputs.streaming  # a stream's folder receives files: its files are not the plan's
    inputs = tuple(ScanInput(f.type_name, f.label, _cast(kind, f), f.text, f.stamps if stamped else ())
                   for f in op.inputs.each)  # fmt: skip
    checked = [op.time_col] + ([op.id_col] if op.id_col else [])
    exprs = [filt.constant, *(m.definition for m in filt.masks), *(d.definition for d in root.derived)]
    for e in exprs:
        checked += [c for c in E.columns(e) if not c.startswith(names.prefix)]
    checked += [k.attr for k in part.keys] + [k.attr for k in part.subkeys] + [k.attr for k in part.state_keys]
    floating = kind == TimeKind.NUMERIC and any(_family(f.time_type) != "integral" for f in op.inputs.each)
    return Scan(inputs, op.time_col, op.id_col, kind, tuple(dict.fromkeys(checked)), floating, op.invalid.choice,
                not op.inputs.streaming)  # fmt: skip


def _filter(logical: L.LogicalPlan, names: Names) -> Filter:
    op = logical.find(L.Filter)
    typed = bool(logical.find(L.Scan).inputs.typed)
    masks = []
    for sf in op.states:
        conds = [E.of_event(p.expr) for p in sf.predicates]
        if typed:
            conds.insert(0, E.eq(E.col(names.type), E.lit(sf.type)))
        masks.append(Mask(sf.position, names.mask(sf.position), E.conj(conds) or E.lit(True)))
    return Filter(E.conj([E.of_event(p.expr) for p in op.constant]), tuple(masks))


# ---------------------------------------------------------------- Windows


def _family(written: str | None) -> str:
    t = (written or "").lower()
    if t in INTEGRAL or t.startswith(("int", "uint")):
        return "integral"
    if t.startswith("decimal"):
        return "decimal"
    return "floating"


def _places(d: Decimal) -> int:
    return max(0, -d.normalize().as_tuple().exponent)


def units_per_second(logical: L.LogicalPlan) -> int:
    """Time-column units per second of the query's durations (1 for unitless
    durations, which are in the column's own units)."""
    kind = time_kind(logical.find(L.Scan).inputs)
    if kind == TimeKind.TIMESTAMP:
        return 1_000_000
    if kind == TimeKind.TIMESTAMP_NS:
        return 1_000_000_000
    return 1 if logical.query.window.unitless else TIME_UNITS[logical.options.time_unit]


def _windows(logical: L.LogicalPlan) -> Windows:
    w, op = logical.query.window, logical.find(L.Windows)
    inputs = logical.find(L.Scan).inputs
    kind = time_kind(inputs)
    scale = units_per_second(logical)
    length, slide = w.length * scale, w.slide * scale
    sizes_integral = length == length.to_integral_value() and slide == slide.to_integral_value()
    families, time_scale = {"integral"}, 0  # unknown inputs: integral times assumed (--explain says so)
    if kind == TimeKind.NUMERIC and inputs.each:
        families = {_family(f.time_type) for f in inputs.each}  # an empty input (no type): read as a double
        for f in inputs.each:
            family = _family(f.time_type)
            if family == "floating":
                time_scale = max(time_scale, DOUBLE_SCALE)
            elif family == "decimal" and "," in f.time_type:
                time_scale = max(time_scale, int(f.time_type.split(",")[1].strip(") ")))
    integer = sizes_integral and families == {"integral"}
    why = "" if integer else _why_decimal(logical, sizes_integral)
    places = max(_places(length), _places(slide))
    if kind == TimeKind.TIMESTAMP:
        bounds = Bounds.TIMESTAMP
    elif kind == TimeKind.TIMESTAMP_NS:
        bounds = Bounds.TIMESTAMP_NS
    elif not sizes_integral:
        bounds = Bounds.DECIMAL
    elif "floating" in families:
        bounds = Bounds.DOUBLE
    else:
        bounds = Bounds.INTEGER
    arithmetic = Arithmetic.INTEGER if integer else Arithmetic.DECIMAL
    exact = (lambda d: int(d)) if integer else (lambda d: d.normalize())
    times = time_range(kind.value, None if integer else max(places, time_scale),
                       places if bounds == Bounds.DECIMAL else None, exact(length), exact(slide))  # fmt: skip
    return Windows(arithmetic, exact(length), exact(slide), max(places, time_scale), bounds, places, w.copies,
                   op.sharing.choice, op.block, times, why)  # fmt: skip


def _why_decimal(logical: L.LogicalPlan, sizes_integral: bool) -> str:
    """Why windows are computed in decimals: the sizes, or the first input
    whose time column is not of whole numbers."""
    if not sizes_integral:
        return "the window sizes are fractional in the time column's units"
    scan = logical.find(L.Scan)
    for f in scan.inputs.each:
        where = f" of input {f.type_name}" if f.type_name else ""
        if f.time_type is None:
            return f"time column '{scan.time_col}'{where} has no value to tell its type (read as a double)"
        if _family(f.time_type) != "integral":
            return f"time column '{scan.time_col}'{where} is {f.time_type}"
    return "the times are not whole numbers"


# ---------------------------------------------------------------- Partition


def _partition(logical: L.LogicalPlan, names: Names) -> Partition:
    op = logical.find(L.Partition)
    keys = tuple(KeyColumn(names.key(i), k.attr, k.output) for i, k in enumerate(op.keys))
    subkeys = tuple(SubKeyColumn(names.subkey(i), k.attr) for i, k in enumerate(op.subkeys))
    parts = [k for k in op.variable_keys if k.method.choice == L.KeyMethod.PARTS]
    state_keys = tuple(StateKeyColumn(k.position, names.state_key(i), k.attr) for i, k in enumerate(parts))
    group = (names.window, *(k.column for k in keys))
    return Partition(keys, subkeys, state_keys, op.partitions.choice, group)


# ---------------------------------------------------------------- the kernel's template


class _Templates:
    """The kernel's template spec, naming the derived columns it reads."""

    def __init__(self, logical: L.LogicalPlan, names: Names, derived: dict):
        self.names, self.derived, self.query = names, derived, logical.query
        self.plans = {(tp.source, tp.target): tp for tp in logical.root.transitions}
        self.counter = count()

    def attr_column(self, _slot, attr):
        c = self.names.attr(attr)
        self.derived[c] = E.col(attr)
        return c

    def transition(self, tp: L.TransitionPlan) -> K.Transition:
        equal, ranges, others = [], [], []
        for p in tp.predicates:
            if p.op in (ir.Op.EQUAL, ir.Op.RANGE):
                k = next(self.counter)
                lc, hc = self.names.lval(k), self.names.h(k)
                self.derived[lc] = E.of_event(p.lval)
                self.derived[hc] = E.of_event(p.h)
                if p.op == ir.Op.EQUAL:
                    equal.append((lc, hc))
                else:
                    ranges.append((lc, p.comparator, hc))
            else:
                others.append(E.lower(p.expr, column=self.attr_column))
        index = tp.index.choice
        if (index == Index.HASH and not equal) or (index == Index.RANGE and not ranges):
            index = Index.SCAN
        return K.Transition(tp.source, tp.target, tuple(equal), tuple(ranges), tuple(others), index)

    def template(self, t: Template) -> K.TemplateSpec:
        states = tuple(K.State(p.name, self.names.mask(p.name), p.repeated) for p in t.positions)
        own = {p.name for p in t.positions}
        cross = tuple(K.Cross(c.positions, E.lower(c.expr, column=self.attr_column))
                      for c in self.query.of_kind(ir.CrossPredicate) if set(c.positions) <= own)  # fmt: skip
        return K.TemplateSpec(
            states=states,
            start=t.start,
            end=t.end,
            transitions=tuple(self.transition(self.plans[(p, q)]) for p, q, _ in t.transitions),
            cross=cross,
            negations=tuple(K.Negation(self.template(n.template), n.pairs, n.starts, n.ends) for n in t.negatives),
        )


def _targets(root: L.Aggregate, query: ir.BoundQuery, names: Names, derived: dict) -> tuple[K.Target, ...]:
    out = []
    for i, a in enumerate(root.aggregates):
        value, kind = None, "int"
        if a.attr is not None:
            value = names.value(i)
            derived[value] = E.col(a.attr)
            kind = value_kind(query.schema, a.attr)
        out.append(K.Target(a.func, a.position, value, kind, a.name))
    return tuple(out)


def value_kind(schema, attr: str) -> str:
    """"int", "decimal:<scale>" or "double" for an aggregated attribute."""
    if schema is None:
        return "double"
    found = schema.lookup(attr)
    written = (found[1] if found else "").lower()
    if _family(written) == "integral":
        return "int"
    if written.startswith("decimal"):
        inner = written[written.index("(") + 1 : written.index(")")] if "(" in written else "38,0"
        return f"decimal:{int(inner.split(',')[1])}"
    return "double"


def blocks(p: PhysicalPlan) -> bool:
    return p.windows.sharing == Sharing.BLOCKS
