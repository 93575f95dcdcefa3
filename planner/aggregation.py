"""Aggregation queries on Spark: GRETA propagation per (window, group).

    sources ─events─▶ windows ─▶ prepare (state masks, lval/h, attributes)
        ─▶ repartition by (window, GROUP-BY and shared equivalence keys) + sort
        ─▶ mapInArrow: per group, per equivalence sub-partition, greta.aggregate
        ─▶ window_start, window_end, <group columns>, <aggregates>

Exact by default: counts and sums of integers are Python integers inside,
DECIMAL(38,0) outside, and a value that does not fit is an error naming the
aggregate, the window and the group (`exact="string"` gives every digit as a
string instead).  `approx` computes in floating point end to end (DOUBLE).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

from cetql import ast as A
from cetql.errors import CetqlError, QuerySemanticError

from . import greta as G
from .batches import group_starts, map_groups
from .detect import ATTR, KEY, MASK, _Cols, edge_specs
from .exprs import to_python
from .sources import ID, TIME, WINDOW

DEC38 = pa.decimal128(38, 0)
MAX38 = 10**38 - 1
SUBKEY = "__q{}"
VALUE = "__v{}"


class AggregateOverflow(CetqlError):
    """An exact aggregate does not fit its output type."""


@dataclass
class TemplateConfig:
    states: dict[str, str]  # state -> mask column
    start: list[str]
    end: list[str]
    edges: dict[tuple[str, str], dict] = field(
        default_factory=dict
    )  # {"equal": [(l, h)], "ranges": [...], "others": [(expr, roles)]}
    negatives: list[tuple[TemplateConfig, list[str], list[str]]] = field(default_factory=list)
    subkeys: dict[str, list[str]] = field(default_factory=dict)  # state -> sub-partition columns applying to it


@dataclass
class AggConfig:
    template: TemplateConfig
    targets: list[tuple[str, str | None, str | None, str]]  # (func, variable, value column, output name)
    value_kinds: list[str]  # per target: "int", "decimal:<scale>", "double", "other"
    group_keys: list[str]  # internal columns after WINDOW (GROUP-BY and shared equivalence keys)
    output_keys: list[str]  # which of group_keys are output (GROUP-BY)
    subkeys: list[str]  # columns of variable-specific equivalence keys (null: the event is not that variable's)
    complete: bool
    approx: bool
    exact: str  # "decimal" or "string"
    params: dict
    attrs: list[str]
    window_desc: tuple  # (kind, length, slide) for messages
    algorithm: str = "GRETA"  # or "A-Seq" (prefix counters)
    output_names: list[str] = field(default_factory=list)  # GROUP-BY attributes as the user wrote them
    kernel: str = "index"  # "scan": GRETA's O(n²) predecessor scan, for comparison
    shared_subkeys: list[str] = field(default_factory=list)  # equivalence attributes of every event, not grouped


# ---------------------------------------------------------------- worker side


def _build(tc: TemplateConfig, cols: dict[str, list], rows: list[int], params) -> G.Template:
    """A greta.Template over the rows of one sub-partition (`rows` maps local
    event index -> row of the group)."""

    def column(name):
        src = cols[name]
        return [src[r] for r in rows]

    local = {c: column(c) for c in cols}

    def eligible(mask):
        return lambda e: mask[e] is True

    states = {s: eligible(local[c]) for s, c in tc.states.items()}
    edges = {}
    for key, spec in tc.edges.items():
        others = []
        for expr, roles in spec["others"]:
            f = to_python(expr, lambda a, roles=roles: (roles[(a.var, a.index)], a.attr), params)
            others.append(lambda i, j, f=f: f({"prev": _Cols(local, i), "next": _Cols(local, j)}))
        edges[key] = G.Edge(
            equal=[(local[lc], local[hc]) for lc, hc in spec["equal"]],
            ranges=[(local[lc], op, local[hc]) for lc, op, hc in spec["ranges"]],
            others=others,
        )
    negatives = [(_build(sub, cols, rows, params), set(prev), set(follow)) for sub, prev, follow in tc.negatives]
    return G.Template(states, set(tc.start), set(tc.end), edges, negatives)


def _subpartitions(cfg: AggConfig, cols, start: int, end: int) -> list[list[int]]:
    """Rows of each equivalence sub-partition of a group.  Equivalence
    attributes of every event split the group (a null one: the event is in no
    trend); a variable-specific one ([P.vehicle]) splits that variable's events,
    the other events belonging to every part."""
    if not cfg.subkeys and not cfg.shared_subkeys:
        return [list(range(start, end))]
    by_shared: dict[tuple, list[int]] = {}
    for r in range(start, end):
        key = tuple(cols[c][r] for c in cfg.shared_subkeys)
        if any(k is None for k in key):
            continue
        by_shared.setdefault(key, []).append(r)
    parts = []
    for rows_in in by_shared.values():
        if not cfg.subkeys:
            parts.append(rows_in)
            continue
        keyed: dict[tuple, list[int]] = {}
        shared: list[int] = []
        for r in rows_in:
            key = tuple(cols[c][r] for c in cfg.subkeys)
            if all(k is None for k in key):
                shared.append(r)
            elif any(k is None for k in key):
                continue  # a null key: in no trend
            else:
                keyed.setdefault(key, []).append(r)
        parts += [sorted(rows + shared) for rows in keyed.values()] or [shared]
    return parts or [[]]


def _final_value(cfg: AggConfig, k: int, value, wk, group) -> object:
    func, _var, _col, name = cfg.targets[k]
    if func == "AVG":
        total, n = value
        if not n:
            return None
        return float(total) / n if cfg.approx or isinstance(total, float) else float(Decimal(total) / n)
    if func in ("MIN", "MAX"):
        return None if value is None else float(value)
    if cfg.approx or isinstance(value, float):
        return float(value)
    if cfg.exact == "string":
        return str(value)
    if abs(value) > MAX38:
        kind, length, slide = cfg.window_desc
        start = wk * slide
        where = f"window [{start}, {start + length})" + (
            " (microseconds since the epoch)" if kind == "timestamp" else ""
        )
        grp = ", ".join(f"{k}={v!r}" for k, v in zip(cfg.output_names, group)) or "the whole window"
        raise AggregateOverflow(
            f"{name} = {str(value)[:12]}… ({len(str(abs(value)))} digits) in {where}, group {grp}, does not fit "
            "DECIMAL(38,0); ask for approximate results (APPROX / --approx) or every digit as a string (--exact string)"
        )
    return value


def output_schema(cfg: AggConfig, table_schema: pa.Schema) -> pa.Schema:
    fields = [pa.field(WINDOW, pa.int64())]
    fields += [table_schema.field(k) for k in cfg.output_keys]
    for (func, _v, _c, name), kind in zip(cfg.targets, cfg.value_kinds):
        if func in ("AVG", "MIN", "MAX") or cfg.approx or kind == "double":
            t = pa.float64()
        elif cfg.exact == "string":
            t = pa.string()
        elif kind.startswith("decimal:"):
            t = pa.decimal128(38, int(kind.split(":")[1]))
        else:
            t = DEC38
        fields.append(pa.field(name, t))
    return pa.schema(fields)


def process_table(cfg: AggConfig, table: pa.Table) -> Iterator[pa.RecordBatch]:
    n = table.num_rows
    if n == 0:
        return
    starts = group_starts(table, [WINDOW, *cfg.group_keys])
    names = set(_columns(cfg.template)) | {VALUE.format(k) for k in range(len(cfg.targets))}
    names |= set(cfg.subkeys) | set(cfg.shared_subkeys) | {ATTR.format(a) for a in cfg.attrs}
    cols = {c: table.column(c).to_pylist() for c in names if c in table.column_names}
    for a in cfg.attrs:
        cols[a] = cols[ATTR.format(a)]
    times = table.column(TIME).to_pylist()
    wks = table.column(WINDOW).to_pylist()
    out_cols = {k: table.column(k).to_pylist() for k in cfg.output_keys}
    schema = output_schema(cfg, table.schema)
    rows_out: list[list] = [[] for _ in schema]
    for start, end in zip(starts, [*starts[1:], n]):
        totals = None
        for rows in _subpartitions(cfg, cols, start, end):
            if _scalar_count(cfg):
                t = _build(cfg.template, cols, rows, cfg.params)
                ((edge,),) = [list(t.edges.values())]
                got = [G.kleene_count([times[r] for r in rows], edge, cfg.approx, cfg.kernel)]
                totals = got if totals is None else _combine(cfg, totals, got)
                continue
            if cfg.algorithm == "A-Seq":
                got = [_aseq(cfg.template, cols, rows, [times[r] for r in rows], cfg.approx)]
                totals = got if totals is None else _combine(cfg, totals, got)
                continue
            t = _build(cfg.template, cols, rows, cfg.params)
            targets = []
            for func, var, vcol, _name in cfg.targets:
                st = None if var is None else {var}
                vals = None if vcol is None else [cols[vcol][r] for r in rows]
                targets.append(G.Target(func, st, vals))
            got = G.aggregate(t, [times[r] for r in rows], targets, cfg.complete, cfg.approx)
            totals = got if totals is None else _combine(cfg, totals, got)
        wk = wks[start]
        group = [out_cols[k][start] for k in cfg.output_keys]
        row = [wk, *group, *(_final_value(cfg, k, v, wk, group) for k, v in enumerate(totals))]
        for i, v in enumerate(row):
            rows_out[i].append(v)
    yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(rows_out, schema)], schema=schema)


def _scalar_count(cfg: AggConfig) -> bool:
    """COUNT(*) of all trends of `E+` with at most one equal or range
    predicate: greta.kleene_count with plain numbers."""
    tc = cfg.template
    if cfg.complete or tc.negatives or len(tc.states) != 1 or [t[0] for t in cfg.targets] != ["COUNT"]:
        return False
    if cfg.targets[0][1] is not None:
        return False
    (state,) = tc.states
    if set(tc.edges) != {(state, state)} or tc.start != [state] or tc.end != [state]:
        return False
    spec = tc.edges[(state, state)]
    return not spec["others"] and len(spec["equal"]) + len(spec["ranges"]) <= 1


def _aseq(tc: TemplateConfig, cols, rows, times, approx):
    """COUNT(*) of a fixed-length SEQ by A-Seq's prefix counters."""
    from .aseq import count

    order = _chain(tc)
    masks = {s: [cols[c][r] is True for r in rows] for s, c in tc.states.items()}
    states = [masks[s].__getitem__ for s in order]
    negations = []
    for sub, prev, _follow in tc.negatives:
        ((_s, col),) = sub.states.items()
        m = [cols[col][r] is True for r in rows]
        k = order.index(prev[0]) + 1 if prev else 0
        negations.append((k, m.__getitem__))
    return count(states, negations, times, approx)


def _chain(tc: TemplateConfig) -> list[str]:
    """The states of a fixed-length SEQ, first to last."""
    nxt = {p: q for (p, q) in tc.edges}
    order = [tc.start[0]]
    while order[-1] in nxt:
        order.append(nxt[order[-1]])
    return order


def aseq_applies(bound, preds) -> bool:
    """A-Seq's domain: COUNT(*) of a fixed-length SEQ over all trends, with
    no predicate between events (equivalence partitions) and negations of
    single events."""
    from .classify import CROSS, EDGE

    t = bound.template
    return (
        t.fixed_length
        and bound.trend_set == "ALL"
        and all(a.func == "COUNT" and a.arg is None for a in bound.aggregates)
        and not any(p.kind in (EDGE, CROSS) for p in preds)
        and all(len(n.template.positions) == 1 and not n.template.negatives for n in t.negatives)
    )


def _combine(cfg: AggConfig, a: list, b: list) -> list:
    out = []
    for (func, *_), x, y in zip(cfg.targets, a, b):
        if func == "AVG":
            out.append((x[0] + y[0], x[1] + y[1]))
        elif func in ("MIN", "MAX"):
            vals = [v for v in (x, y) if v is not None]
            out.append((min if func == "MIN" else max)(vals) if vals else None)
        else:
            out.append(x + y)
    return out


def _columns(tc: TemplateConfig) -> list[str]:
    names = list(tc.states.values())
    for spec in tc.edges.values():
        names += [c for pair in spec["equal"] for c in pair] + [c for lc, _, hc in spec["ranges"] for c in (lc, hc)]
    for sub, _, _ in tc.negatives:
        names += _columns(sub)
    return names


def map_partition(cfg: AggConfig):
    """The function given to `mapInArrow`."""
    return map_groups([WINDOW, *cfg.group_keys], lambda table: process_table(cfg, table))


# ---------------------------------------------------------------- driver side


def prepare(bound, preds, sources, *, id_col=None, exact="decimal", kernel="index"):
    from pyspark.sql import functions as F

    from .classify import CROSS, EDGE, EQUIVALENCE, VERTEX
    from .exprs import to_column
    from .sources import TYPE, assign_windows, events
    from .template import Template

    ev, axis = events(sources, bound.time_col, id_col, bound.window)
    params = bound.params
    typed = any(k is not None for k in sources)
    column_of = lambda a: a.attr  # noqa: E731
    to_col = lambda e: to_column(e, column_of, params)  # noqa: E731

    for p in preds:
        if p.kind == CROSS:
            raise QuerySemanticError(
                f"'{p.text}' relates variables that are not adjacent in a trend; aggregation supports vertex, "
                "equivalence and adjacent (edge) predicates, as GRETA does",
                p.expr.pos,
            )
        if p.kind == EDGE and (p.prev_var, p.next_var) not in _all_transitions(bound.template):
            raise QuerySemanticError(f"'{p.text}' relates variables that are never adjacent in a trend", p.expr.pos)

    # keys: GROUP-BY and equivalence attributes shared by every variable partition the stream;
    # variable-specific equivalence attributes ([P.vehicle]) sub-partition inside the kernel.
    shared: list[str] = []
    specific: list[tuple[str, str]] = []
    for p in preds:
        if p.kind != EQUIVALENCE:
            continue
        if isinstance(p.expr, A.Equivalence):
            for var, attr in p.keys:
                (specific.append((var, attr)) if var is not None else shared.append(attr))
        else:
            attrs = {a for _, a in p.keys}
            if len(attrs) == 1:
                shared.append(next(iter(attrs)))
            else:
                specific += list(p.keys)
    group_out = [attr for _, attr in bound.group_by]
    group_keys = list(dict.fromkeys(group_out))
    shared_sub = [a for a in dict.fromkeys(shared) if a not in group_keys]

    extra: dict[str, object] = {}
    attrs: set[str] = set()

    def python_attrs(e):
        attrs.update(n.attr for n in A.walk(e) if isinstance(n, A.Attr))

    counter = iter(range(10**6))

    def template_config(t: Template) -> TemplateConfig:
        states = {}
        for name, pos in t.positions.items():
            cond = F.lit(True) if not typed else (F.col(TYPE) == F.lit(pos.type))
            for p in preds:
                if p.kind == VERTEX and p.variables == (name,):
                    cond = cond & to_col(p.expr)
            col = MASK.format(next(counter))
            extra[col] = F.coalesce(cond, F.lit(False))
            states[name] = col
        tc = TemplateConfig(states, sorted(t.start), sorted(t.end))
        tc.edges = edge_specs(preds, t.transitions, to_col, extra, python_attrs)
        tc.negatives = [(template_config(n.template), sorted(n.previous), sorted(n.following)) for n in t.negatives]
        return tc

    tc = template_config(bound.template)
    for p in preds:
        if p.kind == VERTEX and not p.variables:
            ev = ev.filter(to_col(p.expr))

    shared_cols = []
    for n, attr in enumerate(shared_sub):
        col = SUBKEY.format(f"s{n}")
        extra[col] = F.col(attr)
        shared_cols.append(col)
    subkeys = []
    if specific:
        by_var: dict[str, list[str]] = {}
        for var, attr in specific:
            by_var.setdefault(var, []).append(attr)
        attrs_order = sorted({a for _, a in specific})
        for n, attr in enumerate(attrs_order):
            col = SUBKEY.format(n)
            owners = [v for v, a in specific if a == attr]
            owner_masks = [F.col(_mask_of(tc, v)) for v in owners if _mask_of(tc, v)]
            cond = owner_masks[0]
            for m in owner_masks[1:]:
                cond = cond | m
            extra[col] = F.when(cond, F.col(attr))
            subkeys.append(col)

    targets, kinds = [], []
    schema = {f.name: f.dataType for f in ev.schema.fields}
    for k, agg in enumerate(bound.aggregates):
        from cetql.printer import aggregate_to_text

        var = bound.aggregate_vars.get(id(agg))
        vcol = None
        kind = "int"
        if isinstance(agg.arg, A.Attr):
            vcol = VALUE.format(k)
            extra[vcol] = F.col(agg.arg.attr)
            dtype = schema[agg.arg.attr].simpleString()
            kind = "int" if dtype in ("bigint", "int", "smallint", "tinyint") else (
                f"decimal:{schema[agg.arg.attr].scale}" if dtype.startswith("decimal") else "double"
            )  # fmt: skip
        targets.append((agg.func, var, vcol, aggregate_to_text(agg)))
        kinds.append(kind)

    for name, col in extra.items():
        ev = ev.withColumn(name, col)
    for a in sorted(attrs):
        ev = ev.withColumn(ATTR.format(a), F.col(a))
    keys_internal = []
    for n, k in enumerate(group_keys):
        ev = ev.filter(F.col(k).isNotNull()).withColumn(KEY.format(n), F.col(k))
        keys_internal.append(KEY.format(n))
    any_state = None
    for c in _columns_masks(tc):
        any_state = F.col(c) if any_state is None else any_state | F.col(c)
    ev = assign_windows(ev.filter(any_state), axis)
    keep = [WINDOW, *keys_internal, TIME, ID, *extra.keys(), *[ATTR.format(a) for a in sorted(attrs)]]
    cfg = AggConfig(
        template=tc,
        targets=targets,
        value_kinds=kinds,
        group_keys=keys_internal,
        output_keys=[KEY.format(group_keys.index(a)) for a in group_out],
        subkeys=subkeys,
        shared_subkeys=shared_cols,
        complete=bound.trend_set == "COMPLETE",
        approx=bound.query.approx,
        exact=exact,
        params=dict(params),
        attrs=sorted(attrs),
        window_desc=(axis.kind, _num(axis.length), _num(axis.slide)),
        algorithm="A-Seq" if aseq_applies(bound, preds) else "GRETA",
        output_names=group_out,
        kernel=kernel,
    )
    return ev.select(*dict.fromkeys(keep)), cfg, group_out, axis


def _num(d):
    return int(d) if d == d.to_integral_value() else float(d)


def _mask_of(tc: TemplateConfig, var: str) -> str | None:
    if var in tc.states:
        return tc.states[var]
    for sub, _, _ in tc.negatives:
        found = _mask_of(sub, var)
        if found:
            return found
    return None


def _columns_masks(tc: TemplateConfig) -> list[str]:
    out = list(tc.states.values())
    for sub, _, _ in tc.negatives:
        out += _columns_masks(sub)
    return out


def _all_transitions(t) -> set:
    out = set(t.transitions)
    for n in t.negatives:
        out |= _all_transitions(n.template)
    return out


def run(bound, preds, sources, *, id_col=None, exact="decimal", partitions=None, kernel="index"):
    """The aggregate rows as a lazy DataFrame."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        DecimalType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    if exact not in ("decimal", "string"):
        raise CetqlError(f"exact must be 'decimal' or 'string', not {exact!r}")
    if kernel not in ("index", "scan"):
        raise CetqlError(f"kernel must be 'index' or 'scan', not {kernel!r}")
    df, cfg, group_out, axis = prepare(bound, preds, sources, id_col=id_col, exact=exact, kernel=kernel)
    keys = [WINDOW, *cfg.group_keys]
    partitions = partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    df = df.repartition(partitions, *keys).sortWithinPartitions(*keys, TIME, ID)
    dtypes = {f.name: f.dataType for f in df.schema.fields}
    fields = [StructField(WINDOW, LongType(), False)]
    fields += [StructField(k, dtypes[k], True) for k in cfg.output_keys]
    for (func, _v, _c, name), kind in zip(cfg.targets, cfg.value_kinds):
        if func in ("AVG", "MIN", "MAX") or cfg.approx or kind == "double":
            t = DoubleType()
        elif cfg.exact == "string":
            t = StringType()
        elif kind.startswith("decimal:"):
            t = DecimalType(38, int(kind.split(":")[1]))
        else:
            t = DecimalType(38, 0)
        fields.append(StructField(name, t, True))
    out = df.mapInArrow(map_partition(cfg), StructType(fields))
    start, end = axis.window_bounds(F.col(WINDOW))
    cols = [start.alias("window_start"), end.alias("window_end")]
    cols += [F.col(k).alias(name) for k, name in zip(cfg.output_keys, group_out)]
    cols += [F.col(f"`{name}`") for _f, _v, _c, name in cfg.targets]
    return out.select(*cols)
