"""The distributed strategy for `E+`: ABI's pre-filter (Algorithm 3) and
join-based extraction (Algorithm 2), in DataFrame form, on the columns the
plan's lowering named (one state: its mask, the `lval`/`h` columns of its
equal and range predicates, attribute columns for the others).

Pre-filter — which events start a CET (no predecessor) and which end one (no
successor), without an edge list:

- one equal predicate `next.l = h(prev)`: per attribute vertex
  (group, value), `mo` = latest time of an event whose l is the value,
  `mi` = earliest time of an event whose h is the value; i has a successor
  iff t_i < mo[h_i], j a predecessor iff mi[l_j] < t_j (two aggregates, two
  joins: O(n));
- one range predicate `next.l OP h(prev)`: prefix / suffix minima and maxima
  over the distinct times of a group (O(n log n));
- otherwise: semi-joins with the full condition.  Where the GraphFrames JVM
  package is present and an equal predicate makes the edge list linear, its
  degree computation is used instead.

Extraction — paths start at sources; each round joins the open paths with
the events they may be extended by, emits the paths that reached a sink, and
continues with the rest until none is left.  Each round is one Spark job
(its frontier is checkpointed); the emitted parts are unioned.
"""

from __future__ import annotations

import warnings
from functools import reduce

from pyspark.sql import functions as F

from cetql.options import TrendSet

from ..kernels import spec as K
from .exprs import column

SRC, SNK = "__is_source", "__is_sink"


def _prefixed(df, prefix: str):
    return df.select(*[df[f"`{c}`"].alias(prefix + c) for c in df.columns])


def _transition(spec: K.DetectSpec) -> K.Transition:
    (t,) = spec.template.transitions
    return t


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
        cond = cond & F.coalesce(column(e, lambda slot, name: F.col(prefix[slot] + name)), F.lit(False))
    return cond


def prefilter(spec: K.DetectSpec, ev):
    """`ev` with boolean columns SRC (no predecessor) and SNK (no successor)."""
    from pyspark.sql import Window

    c = spec.columns
    t = _transition(spec)
    g = list(c.group)
    time = c.time
    if len(t.equal) == 1 and not t.ranges and not t.others:
        ((lc, hc),) = t.equal
        mo = ev.groupBy(*g, F.col(lc).alias("__v")).agg(F.max(time).alias("__mo"))
        mi = ev.groupBy(*g, F.col(hc).alias("__v")).agg(F.min(time).alias("__mi"))
        out = ev.join(mo.withColumnRenamed("__v", hc), [*g, hc], "left")
        out = out.join(mi.withColumnRenamed("__v", lc), [*g, lc], "left")
        return (
            out.withColumn(SNK, F.coalesce(F.col("__mo") <= F.col(time), F.lit(True)))
            .withColumn(SRC, F.coalesce(F.col("__mi") >= F.col(time), F.lit(True)))
            .drop("__mo", "__mi")
        )
    if len(t.ranges) == 1 and not t.equal and not t.others:
        ((lc, op, hc),) = t.ranges
        per_time = ev.groupBy(*g, time).agg(
            F.max(lc).alias("__lmax"), F.min(lc).alias("__lmin"), F.max(hc).alias("__hmax"), F.min(hc).alias("__hmin")
        )
        w = Window.partitionBy(*g).orderBy(time)
        later = w.rowsBetween(1, Window.unboundedFollowing)
        earlier = w.rowsBetween(Window.unboundedPreceding, -1)
        per_time = per_time.select(
            *g,
            time,
            F.max("__lmax").over(later).alias("__later_lmax"),
            F.min("__lmin").over(later).alias("__later_lmin"),
            F.max("__hmax").over(earlier).alias("__earlier_hmax"),
            F.min("__hmin").over(earlier).alias("__earlier_hmin"),
        )
        out = ev.join(per_time, [*g, time], "left")
        lv, hv = F.col(lc), F.col(hc)
        # successor of i: some later l with l OP h_i; predecessor of j: some earlier h with l_j OP h
        if op in (">", ">="):
            has_succ = {">": F.col("__later_lmax") > hv, ">=": F.col("__later_lmax") >= hv}[op]
            has_pred = {">": lv > F.col("__earlier_hmin"), ">=": lv >= F.col("__earlier_hmin")}[op]
        else:
            has_succ = {"<": F.col("__later_lmin") < hv, "<=": F.col("__later_lmin") <= hv}[op]
            has_pred = {"<": lv < F.col("__earlier_hmax"), "<=": lv <= F.col("__earlier_hmax")}[op]
        return (
            out.withColumn(SNK, ~F.coalesce(has_succ, F.lit(False)))
            .withColumn(SRC, ~F.coalesce(has_pred, F.lit(False)))
            .drop("__later_lmax", "__later_lmin", "__earlier_hmax", "__earlier_hmin")
        )
    return _semi_join_flags(spec, ev)


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
    """SRC/SNK flags from GraphFrames' inDegrees/outDegrees, or None when the
    GraphFrames JVM package is absent (or the step has no equal predicate, so
    the edge list would not be linear)."""
    if not _transition(spec).equal:
        return None
    try:
        from graphframes import GraphFrame  # type: ignore
    except ImportError:
        return None  # not installed: the ABI pre-filter gives the same flags
    c = spec.columns
    vid = F.concat_ws(":", *[F.col(x).cast("string") for x in (*c.group, c.id)])
    vertices = ev.select(vid.alias("id"))
    p, n = _prefixed(ev, "p_"), _prefixed(ev, "n_")
    edges = p.join(n, _pair_condition(spec)).select(
        F.concat_ws(":", *[F.col("p_" + x).cast("string") for x in (*c.group, c.id)]).alias("src"),
        F.concat_ws(":", *[F.col("n_" + x).cast("string") for x in (*c.group, c.id)]).alias("dst"),
    )
    try:
        g = GraphFrame(vertices, edges)
        ind, outd = g.inDegrees, g.outDegrees
        ind.limit(1).collect()  # fails here when the JVM package is missing
    except Exception:
        warnings.warn(
            "graphframes is installed but its JVM package is not on Spark's classpath; "
            "using the ABI pre-filter instead (same results)",
            stacklevel=2,
        )
        return None
    out = ev.withColumn("__vid", vid)
    out = out.join(ind.withColumnRenamed("id", "__vid"), "__vid", "left").join(
        outd.withColumnRenamed("id", "__vid"), "__vid", "left"
    )
    return (
        out.withColumn(SRC, F.coalesce(F.col("inDegree"), F.lit(0)) == 0)
        .withColumn(SNK, F.coalesce(F.col("outDegree"), F.lit(0)) == 0)
        .drop("__vid", "inDegree", "outDegree")
    )


def extract(spec: K.DetectSpec, ev, use_graphframes: bool = True):
    """ABI Algorithm 2 over a DataFrame of open paths; returns the trends in
    the kernel's output layout (group columns, events, length[, rows])."""
    c = spec.columns
    trend_set = spec.trend_set
    if trend_set != TrendSet.ALL:
        flagged = graphframes_degrees(spec, ev) if use_graphframes else None
        ev = flagged if flagged is not None else prefilter(spec, ev)
    else:
        ev = ev.withColumn(SRC, F.lit(True)).withColumn(SNK, F.lit(False))
    ev = ev.localCheckpoint(eager=True)

    g = list(c.group)
    last_cols = [x for x in ev.columns if x not in g]
    n_side = _prefixed(ev, "n_")

    def start_paths():
        cols = [F.col(x) for x in g] + [F.array(F.col(c.id)).alias("events")]
        if c.row:
            cols.append(F.array(F.col(c.row)).alias("rows"))
        cols += [F.col(x).alias("p_" + x) for x in last_cols]
        return ev.filter(F.col(SRC)).select(*cols)

    def emit(paths, condition):
        cols = [*g, "events", F.size("events").cast("int").alias("length")]
        if c.row:
            cols.append("rows")
        return paths.filter(condition).select(*cols)

    paths = start_paths().localCheckpoint(eager=True)
    results = []
    while True:
        if trend_set == TrendSet.ALL:
            results.append(emit(paths, F.lit(True)))
            frontier = paths
        else:
            results.append(emit(paths, F.col("p_" + SNK)))
            frontier = paths.filter(~F.col("p_" + SNK))
        pp = frontier
        for x in g:
            pp = pp.withColumnRenamed(x, "p_" + x)
        step = pp.join(n_side, _pair_condition(spec))
        if trend_set == TrendSet.MAXIMAL:
            k_side = _prefixed(ev, "k_")
            split = _pair_condition(spec, "p_", "k_") & _pair_condition(spec, "k_", "n_")
            step = step.join(k_side, split, "left_anti")
        cols = [F.col("n_" + x).alias(x) for x in g]
        cols.append(F.concat(F.col("events"), F.array(F.col("n_" + c.id))).alias("events"))
        if c.row:
            cols.append(F.concat(F.col("rows"), F.array(F.col("n_" + c.row))).alias("rows"))
        cols += [F.col("n_" + x).alias("p_" + x) for x in last_cols]
        paths = step.select(*cols).localCheckpoint(eager=True)
        if paths.isEmpty():
            break
    return reduce(lambda a, b: a.unionByName(b), results)
