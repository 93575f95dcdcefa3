"""The distributed strategy: for `E+`, ABI's pre-filter (Algorithm 3) and
join-based extraction (Algorithm 2), as one lazy DataFrame.

Pre-filter — which events start a trend (no predecessor) and which end one
(no successor), without an edge list — the method is the plan's:

- `equal-index`, one equal predicate `next.l = h(prev)`: per attribute vertex
  (group, value), `mo` = latest time of an event whose l is the value, `mi` =
  earliest time of an event whose h is the value; i has a successor iff
  t_i < mo[h_i], j a predecessor iff mi[l_j] < t_j (two aggregates, two
  joins: O(n));
- `range-index`, one range predicate `next.l OP h(prev)`: prefix / suffix
  minima and maxima over the distinct times of a group (O(n log n));
- `semi-join`: semi-joins with the whole step condition;
- `graphframes`: GraphFrames' in- and out-degrees (the plan chose it because
  the JVM package is on the session's classpath).

Guard — each group's trends are counted by the local kernel's propagation
before any path is extended; a group over the limit fails the query with the
local strategy's message.

Any other pattern runs as template runs (`runs`, over the run graph of
`nodes`); the guard is the same.

Extraction — one recursive query (`WITH RECURSIVE`): paths start at the
sources and each round joins the open paths with the events that extend
them; a path that reaches a sink is a trend.  Spark runs the rounds when an
action asks for the result: building the DataFrame runs no job.
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.spark import runs
from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.exchange import sorted_groups
from cetql.backends.spark.exprs import holds, quote
from cetql.backends.spark.kept import keep
from cetql.backends.spark.nodes import negation_spans
from cetql.backends.sql.dialects import SPARK
from cetql.backends.sql.expressions import condition
from cetql.base.options import TrendSet
from cetql.kernels import process
from cetql.kernels import spec as K
from cetql.planner.logical.plan import Prefilter
from cetql.planner.physical.plan import PhysicalPlan

SRC, SNK = "__is_source", "__is_sink"
MAX_ROUNDS = 2**31 - 1  # a trend is at most a group's events long; the rounds end when no path grows


def _transition(spec: K.DetectSpec) -> K.Transition:
    (t,) = spec.template.transitions
    return t


def _prefixed(df, prefix: str):
    return df.select(*[df[quote(c)].alias(prefix + c) for c in df.columns])


def _pair_condition(spec: K.DetectSpec, p="p_", n="n_"):
    """Column condition for a step prev → next between prefixed copies."""
    c = spec.columns
    t = _transition(spec)
    cond = F.lit(True)
    for g in c.group:
        cond = cond & (F.col(n + g) == F.col(p + g))
    cond = cond & (F.col(n + c.time) > F.col(p + c.time))
    for lc, hc in t.equal:
        cond = cond & (F.col(n + lc) == F.col(p + hc))
    for lc, op, hc in t.ranges:
        a, b = F.col(n + lc), F.col(p + hc)
        cond = cond & {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    prefix = {"prev": p, "next": n}
    for e in t.others:
        cond = cond & holds(e, lambda slot, name: quote(prefix[slot] + name))
    return cond


def _pair_sql(spec: K.DetectSpec, p: str, n: str) -> str:
    """The same condition in SQL, between `p.<p prefix>col` and `n.col`."""
    c = spec.columns
    t = _transition(spec)
    prev = lambda name: f"{p}.{quote('p_' + name) if p == 'p' else quote(name)}"  # noqa: E731
    nxt = lambda name: f"{n}.{quote(name)}"  # noqa: E731
    parts = [f"{nxt(g)} = {prev(g)}" for g in c.group] + [f"{nxt(c.time)} > {prev(c.time)}"]
    parts += [f"{nxt(lc)} = {prev(hc)}" for lc, hc in t.equal]
    parts += [f"{nxt(lc)} {op} {prev(hc)}" for lc, op, hc in t.ranges]
    side = {"prev": prev, "next": nxt}
    parts += [condition(e, SPARK, lambda slot, name: side[slot](name)) for e in t.others]
    return " AND ".join(parts)


# ---------------------------------------------------------------- pre-filter


def prefilter(method: Prefilter, spec: K.DetectSpec, ev):
    """`ev` with boolean columns SRC (no predecessor) and SNK (no successor)."""
    if method == Prefilter.NONE:
        return ev.withColumn(SRC, F.lit(True)).withColumn(SNK, F.lit(False))
    if method == Prefilter.EQUAL:
        return _equal_flags(spec, ev)
    if method == Prefilter.RANGE:
        return _range_flags(spec, ev)
    if method == Prefilter.GRAPHFRAMES:
        return graphframes_degrees(spec, ev)
    return _semi_join_flags(spec, ev)


def _equal_flags(spec: K.DetectSpec, ev):
    g, time = list(spec.columns.group), spec.columns.time
    ((lc, hc),) = _transition(spec).equal
    mo = ev.groupBy(*g, F.col(lc).alias("__v")).agg(F.max(time).alias("__mo"))
    mi = ev.groupBy(*g, F.col(hc).alias("__v")).agg(F.min(time).alias("__mi"))
    out = ev.join(mo.withColumnRenamed("__v", hc), [*g, hc], "left")
    out = out.join(mi.withColumnRenamed("__v", lc), [*g, lc], "left")
    return (out.withColumn(SNK, F.coalesce(F.col("__mo") <= F.col(time), F.lit(True)))
            .withColumn(SRC, F.coalesce(F.col("__mi") >= F.col(time), F.lit(True))).drop("__mo", "__mi"))  # fmt: skip


def _range_flags(spec: K.DetectSpec, ev):
    from pyspark.sql import Window  # noqa: PLC0415 - only the range pre-filter uses it

    g, time = list(spec.columns.group), spec.columns.time
    ((lc, op, hc),) = _transition(spec).ranges
    per_time = ev.groupBy(*g, time).agg(F.max(lc).alias("__lmax"), F.min(lc).alias("__lmin"),
                                         F.max(hc).alias("__hmax"), F.min(hc).alias("__hmin"))  # fmt: skip
    w = Window.partitionBy(*g).orderBy(time)
    later, earlier = w.rowsBetween(1, Window.unboundedFollowing), w.rowsBetween(Window.unboundedPreceding, -1)
    per_time = per_time.select(*g, time, F.max("__lmax").over(later).alias("__later_lmax"),
                               F.min("__lmin").over(later).alias("__later_lmin"),
                               F.max("__hmax").over(earlier).alias("__earlier_hmax"),
                               F.min("__hmin").over(earlier).alias("__earlier_hmin"))  # fmt: skip
    out = ev.join(per_time, [*g, time], "left")
    lv, hv = F.col(lc), F.col(hc)
    # successor of i: some later l with l OP h_i; predecessor of j: some earlier h with l_j OP h
    if op in (">", ">="):
        has_succ = {">": F.col("__later_lmax") > hv, ">=": F.col("__later_lmax") >= hv}[op]
        has_pred = {">": lv > F.col("__earlier_hmin"), ">=": lv >= F.col("__earlier_hmin")}[op]
    else:
        has_succ = {"<": F.col("__later_lmin") < hv, "<=": F.col("__later_lmin") <= hv}[op]
        has_pred = {"<": lv < F.col("__earlier_hmax"), "<=": lv <= F.col("__earlier_hmax")}[op]
    return (out.withColumn(SNK, ~F.coalesce(has_succ, F.lit(False))).withColumn(SRC, ~F.coalesce(has_pred, F.lit(False)))
            .drop("__later_lmax", "__later_lmin", "__earlier_hmax", "__earlier_hmin"))  # fmt: skip


def _semi_join_flags(spec: K.DetectSpec, ev):
    c = spec.columns
    cond = _pair_condition(spec)
    keys = [*c.group, c.id]
    p, n = _prefixed(ev, "p_"), _prefixed(ev, "n_")
    with_succ = p.join(n, cond, "left_semi").select(*[F.col("p_" + k).alias(k) for k in keys])
    with_pred = n.join(p, cond, "left_semi").select(*[F.col("n_" + k).alias(k) for k in keys])
    out = ev.join(with_succ.withColumn("__s", F.lit(True)), keys, "left")
    out = out.join(with_pred.withColumn("__p", F.lit(True)), keys, "left")
    return out.withColumn(SNK, F.col("__s").isNull()).withColumn(SRC, F.col("__p").isNull()).drop("__s", "__p")


def graphframes_degrees(spec: K.DetectSpec, ev):
    """SRC/SNK flags from GraphFrames' inDegrees/outDegrees (the plan chose
    this where the JVM package is on the classpath)."""
    from graphframes import GraphFrame  # noqa: PLC0415 - an optional extra: imported only when the plan chose it

    c = spec.columns
    vid = F.concat_ws(":", *[F.col(x).cast("string") for x in (*c.group, c.id)])
    p, n = _prefixed(ev, "p_"), _prefixed(ev, "n_")
    edges = p.join(n, _pair_condition(spec)).select(
        F.concat_ws(":", *[F.col("p_" + x).cast("string") for x in (*c.group, c.id)]).alias("src"),
        F.concat_ws(":", *[F.col("n_" + x).cast("string") for x in (*c.group, c.id)]).alias("dst"))  # fmt: skip
    g = GraphFrame(ev.select(vid.alias("id")), edges)
    out = ev.withColumn("__vid", vid)
    out = out.join(g.inDegrees.withColumnRenamed("id", "__vid"), "__vid", "left")
    out = out.join(g.outDegrees.withColumnRenamed("id", "__vid"), "__vid", "left")
    return (out.withColumn(SRC, F.coalesce(F.col("inDegree"), F.lit(0)) == 0)
            .withColumn(SNK, F.coalesce(F.col("outDegree"), F.lit(0)) == 0).drop("__vid", "inDegree", "outDegree"))  # fmt: skip


# ---------------------------------------------------------------- guard and extraction


def guarded(plan: PhysicalPlan, spec: K.DetectSpec, ev, sources):
    """The sources, once every group's trends were counted within the limit
    (the local kernel's count; over the limit, its error)."""
    if not spec.max_trends:
        return sources
    counted = sorted_groups(plan, ev.drop(SRC, SNK))
    schema = process.guard_schema(spec, batch_schema(counted))
    over = counted.mapInArrow(process.guard_fn(spec), from_arrow_schema(schema))
    return sources.join(over, list(spec.columns.group), "left_anti")


def extract(plan: PhysicalPlan, spec: K.DetectSpec, ev):
    """ABI Algorithm 2 as one recursive query; the trends in the kernel's
    output layout (group columns, events, length[, rows])."""
    if plan.root.prefilter == Prefilter.RUNS:  # any other pattern: template runs (`runs`)
        ev = keep(ev)  # read by the guard, the negations, the nodes and edges: built once
        return runs.extract(spec, ev, negation_spans(plan, spec, ev), lambda anchors: guarded(plan, spec, ev, anchors))
    c = spec.columns
    ev = keep(prefilter(plan.root.prefilter, spec, ev))  # every round joins it: built once
    every = spec.trend_set == TrendSet.ALL
    sources = guarded(plan, spec, ev, ev.filter(F.col(SRC)))
    cols = ev.columns
    rows_start = f", array({quote(c.row)}) AS __rows" if c.row else ""
    rows_step = ", concat(p.__rows, array(n." + quote(c.row) + "))" if c.row else ""
    carried = ", ".join(f"{quote(x)} AS {quote('p_' + x)}" for x in cols)
    carried_n = ", ".join(f"n.{quote(x)}" for x in cols)
    split = ""
    if spec.trend_set == TrendSet.MAXIMAL:  # no event k between: p → k → n
        split = f" LEFT ANTI JOIN {{ev}} k ON {_pair_sql(spec, 'p', 'k')} AND {_pair_sql(spec, 'k', 'n')}"
    open_only = "" if every else f" WHERE NOT p.{quote('p_' + SNK)}"
    group = ", ".join(f"{quote('p_' + g)} AS {quote(g)}" for g in c.group)
    text = (
        f"WITH RECURSIVE paths MAX RECURSION LEVEL {MAX_ROUNDS} AS ("
        f" SELECT array({quote(c.id)}) AS __events{rows_start}, {carried} FROM {{sources}}"
        f" UNION ALL"
        f" SELECT concat(p.__events, array(n.{quote(c.id)})){rows_step}, {carried_n}"
        f" FROM paths p JOIN {{ev}} n ON {_pair_sql(spec, 'p', 'n')}{split}{open_only})"
        f" SELECT {group}, __events AS events, CAST(size(__events) AS INT) AS length"
        f"{', __rows AS rows' if c.row else ''} FROM paths"
        f"{'' if every else ' WHERE ' + quote('p_' + SNK)}"
    )
    return ev.sparkSession.sql(text, sources=sources, ev=ev)


def split_groups(plan: PhysicalPlan, ev):
    """(the events of groups over the plan's split, the others): each
    group's events counted (one aggregate), both lazy."""
    group = list(plan.partition.group)
    big = ev.groupBy(*group).count().filter(F.col("count") > F.lit(plan.root.split)).select(*group)
    return ev.join(big, group, "left_semi"), ev.join(big, group, "left_anti")
