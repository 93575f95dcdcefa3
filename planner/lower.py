"""Lowering: logical plan → physical names, column definitions and the
kernel spec.  Pure (no Spark): the Spark compiler turns the column
definitions into Spark columns and ships the spec to the workers; the tests
evaluate the same definitions in Python and run the same kernels without
Spark.

Internal column names start with a prefix that no input column starts with,
so they can never replace a user's column.
"""

from __future__ import annotations

from dataclasses import dataclass

from cetql.errors import ParameterError
from cetql.options import TIME_UNITS, TrendSet

from .kernels import spec as K
from .logical.plan import Aggregate, Detect, Filter, LogicalPlan, Partition, Scan, TransitionPlan, Windows
from .semantics import ir
from .semantics.template import Template

MICROS = 1_000_000


@dataclass(frozen=True)
class Names:
    """Internal column names, all starting with `prefix`."""

    prefix: str = "__"

    def __getattr__(self, what: str) -> str:  # id, time, type, window, row, window_lo, window_hi
        if what in ("id", "time", "type", "window", "row", "window_lo", "window_hi"):
            return self.prefix + {"id": "id", "time": "t", "type": "type", "window": "wk", "row": "row",
                                  "window_lo": "wlo", "window_hi": "whi"}[what]  # fmt: skip
        raise AttributeError(what)

    def key(self, i: int) -> str:
        return f"{self.prefix}k{i}"

    def mask(self, position: str) -> str:
        return f"{self.prefix}m_{position}"

    def lval(self, i: int) -> str:
        return f"{self.prefix}l{i}"

    def h(self, i: int) -> str:
        return f"{self.prefix}h{i}"

    def attr(self, name: str) -> str:
        return f"{self.prefix}a_{name}"

    def value(self, i: int) -> str:
        return f"{self.prefix}v{i}"

    def subkey(self, i: int) -> str:
        return f"{self.prefix}q{i}"


def choose_prefix(columns) -> str:
    """`__`, or a longer prefix if an input column already starts with it."""
    prefix, n = "__", 0
    while any(c.startswith(prefix) for c in columns):
        n += 1
        prefix = f"__c{n}_"
    return prefix


@dataclass(frozen=True)
class Physical:
    """What the Spark compiler needs beside the plan."""

    names: Names
    constant: K.Expr | None  # Filter: a condition on every event
    masks: tuple[tuple[str, K.Expr], ...]  # Filter: per position, its mask column and definition
    keys: tuple[tuple[str, str], ...]  # Partition: (key column, input attribute)
    subkeys: tuple[tuple[str, K.Expr], ...]  # Partition: sub-key columns
    derived: tuple[tuple[str, K.Expr], ...]  # Detect / Aggregate: lval, h, attribute and value columns
    time_kind: str  # "timestamp" or "numeric"
    window_length: int | float  # in time-column units (microseconds for timestamps)
    window_slide: int | float
    spec: K.DetectSpec | K.AggregateSpec


# ---------------------------------------------------------------- expressions


def expr(e: ir.IExpr, slot=lambda s: s, column=lambda slot, attr: attr) -> K.Expr:
    """A typed expression → a kernel expression.  `slot` renames slots,
    `column(slot, attr)` names the column an attribute is read from."""
    match e:
        case ir.Const(value=v):
            return K.Lit(v)
        case ir.Param(name=n):
            raise ParameterError(f"unbound parameter '{n}': give it a value with --param {n}=<value>")
        case ir.Ref(slot=s, attr=a):
            return K.Col(slot(s), column(s, a))
        case ir.Negate(operand=x):
            return K.Neg(expr(x, slot, column))
        case ir.Arith(op=op, left=a, right=b):
            return K.Arith(op, expr(a, slot, column), expr(b, slot, column))
        case ir.Cmp(op=op, left=a, right=b):
            return K.Cmp(op, expr(a, slot, column), expr(b, slot, column))
        case ir.Logic(op=op, items=items):
            return (K.And if op == "and" else K.Or)(tuple(expr(x, slot, column) for x in items))
        case ir.Not(operand=x):
            return K.Not(expr(x, slot, column))
    raise TypeError(e)


def _self(e: ir.IExpr) -> K.Expr:
    """An expression over one event, read from the input's columns."""
    return expr(e, slot=lambda s: "self")


def _and(items: list[K.Expr]) -> K.Expr | None:
    if not items:
        return None
    return items[0] if len(items) == 1 else K.And(tuple(items))


# ---------------------------------------------------------------- lowering


def lower(plan: LogicalPlan, columns: tuple[str, ...] = ()) -> Physical:
    """`columns`: the input's column names (internal names avoid them)."""
    names = Names(choose_prefix(columns))
    scan: Scan = plan.find(Scan)
    filt: Filter = plan.find(Filter)
    part: Partition = plan.find(Partition)
    root = plan.root
    query = plan.query
    typed = bool(scan.inputs.typed)

    constant = _and([_self(p.expr) for p in filt.constant])
    masks = []
    for sf in filt.states:
        conds = [_self(p.expr) for p in sf.predicates]
        if typed:
            conds.insert(0, K.Cmp("=", K.Col("self", names.type), K.Lit(sf.type)))
        masks.append((names.mask(sf.position), _and(conds) or K.Lit(True)))
    mask_of = {sf.position: names.mask(sf.position) for sf in filt.states}

    keys = tuple((names.key(i), k.attr) for i, k in enumerate(part.keys))
    subkeys = [(names.subkey(i), K.Col("self", sk.attr)) for i, sk in enumerate(part.subkeys)]

    derived: dict[str, K.Expr] = {}
    transitions = {(tp.source, tp.target): tp for tp in root.transitions}

    def attr_column(slot, attr):
        col = names.attr(attr)
        derived[col] = K.Col("self", attr)
        return col

    counter = iter(range(10**9))

    def transition(tp: TransitionPlan) -> K.Transition:
        equal, ranges, others = [], [], []
        for p in tp.predicates:
            if p.op in (ir.Op.EQUAL, ir.Op.RANGE):
                k = next(counter)
                lc, hc = names.lval(k), names.h(k)
                derived[lc] = _self(p.lval)
                derived[hc] = _self(p.h)
                if p.op == ir.Op.EQUAL:
                    equal.append((lc, hc))
                else:
                    ranges.append((lc, p.comparator, hc))
            else:
                others.append(expr(p.expr, column=attr_column))
        index = tp.index.choice
        if (index == K.HASH and not equal) or (index == K.RANGE and not ranges):
            index = K.SCAN
        return K.Transition(tp.source, tp.target, tuple(equal), tuple(ranges), tuple(others), index)

    def template(t: Template) -> K.TemplateSpec:
        states = tuple(K.State(p.name, mask_of[p.name], p.repeated) for p in t.positions)
        own = {p.name for p in t.positions}
        cross = tuple(
            K.Cross(c.positions, expr(c.expr, column=attr_column))
            for c in query.of_kind(ir.CrossPredicate)
            if set(c.positions) <= own
        )
        return K.TemplateSpec(
            states=states,
            start=t.start,
            end=t.end,
            transitions=tuple(transition(transitions[(p, q)]) for p, q, _ in t.transitions),
            cross=cross,
            negations=tuple(K.Negation(template(n.template), n.pairs, n.starts, n.ends) for n in t.negatives),
        )

    tspec = template(root.template)
    time_kind = scan.inputs.time_kind or "numeric"
    window = query.window
    length, slide = _number(window.length * scale_of(plan)), _number(window.slide * scale_of(plan))
    context = K.Context(time_kind, length, slide, tuple(k.attr for k in part.keys))
    block = plan.find(Windows).block
    cols = K.Columns(
        group=(names.window, *[c for c, _ in keys]),
        time=names.time,
        id=names.id,
        row=names.row if isinstance(root, Detect) and root.with_rows else None,
        block=block,
        window_lo=names.window_lo if block else None,
        window_hi=names.window_hi if block else None,
    )
    if isinstance(root, Detect):
        spec = K.DetectSpec(
            columns=cols,
            template=tspec,
            trend_set=root.trends,
            context=context,
            max_trends=plan.options.max_trends,
            max_edges=root.max_edges,
            batch_events=root.batch_events,
            shared_graph=plan.find(Windows).shared_graph,
        )
    else:
        spec = _aggregate_spec(root, plan, names, cols, tspec, context, derived, subkeys, part)
    return Physical(
        names=names,
        constant=constant,
        masks=tuple(masks),
        keys=keys,
        subkeys=tuple(subkeys),
        derived=tuple(derived.items()),
        time_kind=time_kind,
        window_length=length,
        window_slide=slide,
        spec=spec,
    )


def _aggregate_spec(root: Aggregate, plan, names, cols, tspec, context, derived, subkeys, part) -> K.AggregateSpec:
    schema = plan.query.schema
    targets = []
    for i, a in enumerate(root.aggregates):
        value = None
        kind = "int"
        if a.attr is not None:
            value = names.value(i)
            derived[value] = K.Col("self", a.attr)
            kind = _value_kind(schema, a.attr)
        targets.append(K.Target(a.func, a.position, value, kind, a.name))
    shared = tuple(c for (c, _), sk in zip(subkeys, part.subkeys) if sk.position is None)
    specific = tuple(K.StateKey(sk.position, c) for (c, _), sk in zip(subkeys, part.subkeys) if sk.position is not None)
    output = tuple(c for (c, _), k in zip(((names.key(i), k.attr) for i, k in enumerate(part.keys)), part.keys)
                   if k.output is not None)  # fmt: skip
    return K.AggregateSpec(
        columns=cols,
        template=tspec,
        targets=tuple(targets),
        trend_set=root.trends,
        context=context,
        algorithm=root.algorithm.choice,
        complete=root.complete.choice if root.complete else K.PER_STATE,
        kernel=plan.options.kernel,
        approx=root.approx,
        exact=plan.options.exact,
        output_keys=output,
        output_names=tuple(k.output for k in part.keys if k.output is not None),
        shared_subkeys=shared,
        state_keys=specific,
        propagate=plan.find(Windows).propagate,
    )


def _value_kind(schema, attr: str) -> str:
    """"int", "decimal:<scale>" or "double" for an aggregated attribute."""
    if schema is None:
        return "double"
    found = schema.lookup(attr)
    written = (found[1] if found else "").lower()
    if written in ("bigint", "int", "smallint", "tinyint", "long", "integer", "short", "byte") or written.startswith(
        ("int", "uint")
    ):
        return "int"
    if written.startswith("decimal"):
        inner = written[written.index("(") + 1 : written.index(")")] if "(" in written else "38,0"
        return f"decimal:{int(inner.split(',')[1])}"
    return "double"


def scale_of(plan: LogicalPlan) -> int:
    """Time-column units per second of the query's durations (1 for unitless
    durations, which are in the column's own units)."""
    kind = plan.find(Scan).inputs.time_kind or "numeric"
    if kind == "timestamp":
        return MICROS
    if kind == "timestamp_ns":
        return 1_000_000_000
    return 1 if plan.query.window.unitless else TIME_UNITS[plan.options.time_unit]


def _number(d):
    return int(d) if d == d.to_integral_value() else float(d)


def trend_set(plan: LogicalPlan) -> TrendSet:
    return plan.root.trends
