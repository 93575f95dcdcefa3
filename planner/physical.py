"""Compiled query + sources → a lazy Spark DataFrame of trends.

    sources ─events─▶ filter (vertex) ─windows─▶ prepare (keys, lval/h, masks)
        ─▶ local:       repartition by (window, keys) + sort + mapInArrow kernel
        ─▶ distributed: ABI Algorithm 2 (see distributed.py)
        ─▶ window_start, window_end, <keys>, events, length[, rows]

DataFrame API only: no RDDs and no JVM handles, so the same plan runs on
classic Spark and on Spark Connect.
"""

from __future__ import annotations

from dataclasses import dataclass

from cetql import ast as A
from cetql.errors import QuerySemanticError, UsageError

from . import detect as D
from .analyze import Bound
from .classify import CROSS, EDGE, EQUIVALENCE, VERTEX, Predicate
from .exprs import to_column
from .sources import ID, TIME, TYPE, WINDOW, assign_windows, events

LOCAL, DISTRIBUTED = "local", "distributed"


@dataclass
class Prepared:
    df: object  # events with WINDOW, key columns, TIME, ID, predicate columns
    cfg: D.DetectConfig
    key_names: list[str]  # output names of the key columns
    axis: object


def _column_of(a: A.Attr) -> str:
    return a.attr


def detection_mode(bound: Bound) -> str:
    t = bound.template
    if t.negatives:
        raise QuerySemanticError(
            "negation in a detection query is not supported yet; it is supported in aggregation queries",
            t.negatives[0].pos,
        )
    nested = [p for p in t.positions.values() if p.repeated and not p.kleene_self]
    if nested:
        raise QuerySemanticError(
            "nested Kleene patterns (SEQ(...)+) are supported in aggregation queries, not yet in detection",
            nested[0].pos,
        )
    if len(t.positions) == 1 and next(iter(t.positions.values())).kleene_self:
        return "kleene"
    return "generic"


def _keys(bound: Bound, preds: list[Predicate], mode: str) -> tuple[list[str], list[Predicate]]:
    """Partition columns, and equivalence predicates that cannot partition
    (kept as cross predicates)."""
    keys: list[str] = []
    leftover: list[Predicate] = []
    single_type = len({p.type for p in bound.positions.values()}) == 1
    for p in preds:
        if p.kind != EQUIVALENCE:
            continue
        attrs = {attr for _, attr in p.keys}
        qualified = [v for v, _ in p.keys if v is not None]
        if isinstance(p.expr, A.Equivalence):
            if qualified and not single_type and mode != "kleene":
                raise QuerySemanticError(
                    "an equivalence on one variable's attribute ([P.x]) is supported in detection only when every "
                    "variable has the same type; write [x] to require it of every event",
                    p.expr.pos,
                )
            keys += [a for _, a in p.keys]
        elif len(attrs) == 1:
            keys.append(next(iter(attrs)))
        else:
            leftover.append(p)
    for _, attr in bound.group_by:
        keys.append(attr)
    return list(dict.fromkeys(keys)), leftover


def prepare(bound: Bound, preds: list[Predicate], sources: dict, *, id_col=None, with_rows=False) -> Prepared:
    from pyspark.sql import functions as F

    mode = detection_mode(bound)
    params = bound.params
    ev, axis = events(sources, bound.time_col, id_col, bound.window)
    key_names, leftover = _keys(bound, preds, mode)
    vertex = [p for p in preds if p.kind == VERTEX]
    typed = any(k is not None for k in sources)

    cfg = D.DetectConfig(mode=mode, trend_set=bound.trend_set, keys=[], params=dict(params), with_rows=with_rows)
    attrs: set[str] = set()

    def python_attrs(e):
        attrs.update(n.attr for n in A.walk(e) if isinstance(n, A.Attr))

    if with_rows:
        originals = [c for c in ev.columns if c not in (ID, TIME, TYPE)]
        ev = ev.withColumn(D.ROW, F.struct(*[F.col(c) for c in originals]))

    if mode == "kleene":
        (pos,) = bound.template.positions.values()
        cond = F.lit(True)
        if typed:
            cond = F.col(TYPE) == F.lit(pos.type)
        for p in vertex:
            cond = cond & to_column(p.expr, _column_of, params)
        ev = ev.filter(cond)
        extra = {}
        (spec,) = D.edge_specs(
            preds, [(pos.name, pos.name)], lambda e: to_column(e, _column_of, params), extra, python_attrs
        ).values()
        cfg.equal, cfg.ranges, cfg.others = spec["equal"], spec["ranges"], spec["others"]
        for name, col in extra.items():
            ev = ev.withColumn(name, col)
    else:
        t = bound.template
        const = [p for p in vertex if not p.variables]
        for p in const:
            ev = ev.filter(to_column(p.expr, _column_of, params))
        any_pos = F.lit(False)
        for name, pos in t.positions.items():
            cond = F.lit(True) if not typed else (F.col(TYPE) == F.lit(pos.type))
            for p in vertex:
                if p.variables == (name,):
                    cond = cond & to_column(p.expr, _column_of, params)
            col = D.MASK.format(len(cfg.positions))
            ev = ev.withColumn(col, F.coalesce(cond, F.lit(False)))
            cfg.positions[name] = col
            any_pos = any_pos | F.col(col)
        ev = ev.filter(any_pos)
        cfg.start, cfg.end = sorted(t.start), sorted(t.end)
        for a, b in t.transitions:
            cfg.follow.setdefault(a, []).append(b)
        cfg.kleene = sorted(n for n, p in t.positions.items() if p.repeated)
        for p in preds:
            if p.kind == EDGE:
                cfg.edge.setdefault((p.prev_var, p.next_var), []).append((p.expr, p.roles))
                python_attrs(p.expr)
            elif p.kind == CROSS or p in leftover:
                var_of = {r.var: bound.resolve(r.var) for r in A.walk(p.expr) if isinstance(r, A.Attr)}
                vars_ = tuple(dict.fromkeys(var_of.values()))
                cfg.cross.append((vars_, p.expr, var_of))
                python_attrs(p.expr)

    for a in sorted(attrs):
        ev = ev.withColumn(D.ATTR.format(a), F.col(a))
    cfg.attrs = sorted(attrs)

    for n, k in enumerate(key_names):
        ev = ev.filter(F.col(k).isNotNull()).withColumn(D.KEY.format(n), F.col(k))
    cfg.keys = [D.KEY.format(n) for n in range(len(key_names))]

    ev = assign_windows(ev, axis)
    keep = [WINDOW, *cfg.keys, TIME, ID, *D._needed_columns(cfg)]
    if with_rows:
        keep.append(D.ROW)
    return Prepared(ev.select(*dict.fromkeys(keep)), cfg, key_names, axis)


def _spark_output_schema(prepared: Prepared):
    from pyspark.sql.types import ArrayType, IntegerType, LongType, StructField, StructType

    fields = {f.name: f for f in prepared.df.schema.fields}
    out = [StructField(WINDOW, LongType(), False)]
    out += [StructField(k, fields[k].dataType, True) for k in prepared.cfg.keys]
    out += [StructField("events", ArrayType(fields[ID].dataType, False), False)]
    out += [StructField("length", IntegerType(), False)]
    if prepared.cfg.with_rows:
        out.append(StructField("rows", ArrayType(fields[D.ROW].dataType, False), False))
    return StructType(out)


def local(prepared: Prepared, partitions: int | None = None):
    df = prepared.df
    keys = [WINDOW, *prepared.cfg.keys]
    # An explicit count: adaptive execution would otherwise coalesce small
    # shuffles into fewer partitions than cores and leave the kernel on one.
    partitions = partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    df = df.repartition(partitions, *keys)
    df = df.sortWithinPartitions(*keys, TIME, ID)
    return df.mapInArrow(D.map_partition(prepared.cfg), _spark_output_schema(prepared))


def finish(prepared: Prepared, trends):
    """Window bounds and key names on the kernel's output."""
    from pyspark.sql import functions as F

    start, end = prepared.axis.window_bounds(F.col(WINDOW))
    cols = [start.alias("window_start"), end.alias("window_end")]
    cols += [F.col(k).alias(name) for k, name in zip(prepared.cfg.keys, prepared.key_names)]
    cols += [F.col("events"), F.col("length")]
    if prepared.cfg.with_rows:
        cols.append(F.col("rows"))
    return trends.select(*cols)


def detect(
    bound: Bound,
    preds: list[Predicate],
    sources: dict,
    *,
    strategy: str = LOCAL,
    id_col=None,
    with_rows=False,
    partitions=None,
):
    prepared = prepare(bound, preds, sources, id_col=id_col, with_rows=with_rows)
    if strategy == LOCAL:
        return finish(prepared, local(prepared, partitions))
    if strategy == DISTRIBUTED:
        from .distributed import extract

        if prepared.cfg.mode != "kleene":
            raise UsageError(
                "the distributed strategy (ABI Algorithm 2) extracts E+ patterns; this pattern runs with --strategy local"
            )
        return finish(prepared, extract(prepared))
    raise UsageError(f"unknown strategy '{strategy}'; expected local or distributed")
