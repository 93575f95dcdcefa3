"""The distributed strategy for `E+`: ABI's pre-filter (Algorithm 3) and
join-based extraction (Algorithm 2), in DataFrame form.

Pre-filter — which events start a CET (no predecessor) and which end one (no
successor), without an edge list:

- one equal predicate `next.l = h(prev)`: per attribute vertex
  (window, keys, value), `mo` = latest time of an event whose l is the value,
  `mi` = earliest time of an event whose h is the value; i has a successor
  iff t_i < mo[h_i], j a predecessor iff mi[l_j] < t_j (two aggregates, two
  joins: O(n));
- one range predicate `next.l OP h(prev)`: prefix / suffix minima and maxima
  over the distinct times of a (window, keys) group (O(n log n));
- otherwise: semi-joins with the full condition, evaluated per partition.
  Where the GraphFrames JVM package is present and an equal predicate makes
  the edge list linear, its degree computation is used instead.

Extraction — paths start at sources; each round joins the open paths with
the events they may be extended by (the ABI to-edge → from-edge join, with
the attribute vertex as join key for an equal predicate), emits the paths
that reached a sink, and continues with the rest until none is left.  Each
round is one Spark job (its frontier is checkpointed); the emitted parts are
unioned into the result.
"""

from __future__ import annotations

import warnings
from functools import reduce

from . import detect as D
from .exprs import to_column
from .sources import ID, TIME, WINDOW

SRC, SNK = "__is_source", "__is_sink"
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _prefixed(df, prefix: str):
    return df.select(*[df[c].alias(prefix + c) for c in df.columns])


def _pair_condition(prepared, p="p_", n="n_"):
    """Column condition for an edge prev → next between prefixed copies."""
    from pyspark.sql import functions as F

    cfg = prepared.cfg
    cond = F.col(n + WINDOW) == F.col(p + WINDOW)
    for k in cfg.keys:
        cond = cond & (F.col(n + k) == F.col(p + k))
    cond = cond & (F.col(n + TIME) > F.col(p + TIME))
    for lc, hc in cfg.equal:
        cond = cond & (F.col(n + lc) == F.col(p + hc))
    for lc, op, hc in cfg.ranges:
        a, b = F.col(n + lc), F.col(p + hc)
        cond = cond & {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b, "!=": a != b}[op]
    prefix = {"prev": p, "next": n}
    for expr, roles in cfg.others:
        col = to_column(
            expr, lambda a, roles=roles: prefix[roles[(a.var, a.index)]] + D.ATTR.format(a.attr), cfg.params
        )
        cond = cond & F.coalesce(col, F.lit(False))
    return cond


def _group(prepared):
    return [WINDOW, *prepared.cfg.keys]


def prefilter(prepared, ev):
    """`ev` with boolean columns SRC (no predecessor) and SNK (no successor)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cfg = prepared.cfg
    g = _group(prepared)
    single_equal = len(cfg.equal) == 1 and not cfg.ranges and not cfg.others
    single_range = len(cfg.ranges) == 1 and not cfg.equal and not cfg.others
    if single_equal:
        ((lc, hc),) = cfg.equal
        mo = ev.groupBy(*g, F.col(lc).alias("__v")).agg(F.max(TIME).alias("__mo"))
        mi = ev.groupBy(*g, F.col(hc).alias("__v")).agg(F.min(TIME).alias("__mi"))
        out = ev.join(mo.withColumnRenamed("__v", hc), [*g, hc], "left")
        out = out.join(mi.withColumnRenamed("__v", lc), [*g, lc], "left")
        return (
            out.withColumn(SNK, F.coalesce(F.col("__mo") <= F.col(TIME), F.lit(True)))
            .withColumn(SRC, F.coalesce(F.col("__mi") >= F.col(TIME), F.lit(True)))
            .drop("__mo", "__mi")
        )
    if single_range:
        ((lc, op, hc),) = cfg.ranges
        per_time = ev.groupBy(*g, TIME).agg(
            F.max(lc).alias("__lmax"), F.min(lc).alias("__lmin"), F.max(hc).alias("__hmax"), F.min(hc).alias("__hmin")
        )
        w = Window.partitionBy(*g).orderBy(TIME)
        later = w.rowsBetween(1, Window.unboundedFollowing)
        earlier = w.rowsBetween(Window.unboundedPreceding, -1)
        per_time = per_time.select(
            *g,
            TIME,
            F.max("__lmax").over(later).alias("__later_lmax"),
            F.min("__lmin").over(later).alias("__later_lmin"),
            F.max("__hmax").over(earlier).alias("__earlier_hmax"),
            F.min("__hmin").over(earlier).alias("__earlier_hmin"),
        )
        out = ev.join(per_time, [*g, TIME], "left")
        lv, hv = F.col(lc), F.col(hc)
        # successor of i: some later l with l OP h_i; predecessor of j: some earlier h with l_j OP h
        if op in (">", ">="):
            has_succ = {">": F.col("__later_lmax") > hv, ">=": F.col("__later_lmax") >= hv}[op]
            has_pred = {">": lv > F.col("__earlier_hmin"), ">=": lv >= F.col("__earlier_hmin")}[op]
        elif op in ("<", "<="):
            has_succ = {"<": F.col("__later_lmin") < hv, "<=": F.col("__later_lmin") <= hv}[op]
            has_pred = {"<": lv < F.col("__earlier_hmax"), "<=": lv <= F.col("__earlier_hmax")}[op]
        else:
            return _semi_join_flags(prepared, ev)
        return (
            out.withColumn(SNK, ~F.coalesce(has_succ, F.lit(False)))
            .withColumn(SRC, ~F.coalesce(has_pred, F.lit(False)))
            .drop("__later_lmax", "__later_lmin", "__earlier_hmax", "__earlier_hmin")
        )
    return _semi_join_flags(prepared, ev)


def _semi_join_flags(prepared, ev):
    from pyspark.sql import functions as F

    cond = _pair_condition(prepared)
    p, n = _prefixed(ev, "p_"), _prefixed(ev, "n_")
    with_succ = p.join(n, cond, "left_semi").select(F.col("p_" + WINDOW).alias(WINDOW), F.col("p_" + ID).alias(ID))
    with_pred = n.join(p, cond, "left_semi").select(F.col("n_" + WINDOW).alias(WINDOW), F.col("n_" + ID).alias(ID))
    out = ev.join(with_succ.withColumn("__s", F.lit(True)), [WINDOW, ID], "left")
    out = out.join(with_pred.withColumn("__p", F.lit(True)), [WINDOW, ID], "left")
    return out.withColumn(SNK, F.col("__s").isNull()).withColumn(SRC, F.col("__p").isNull()).drop("__s", "__p")


def graphframes_degrees(prepared, ev):
    """SRC/SNK flags from GraphFrames' inDegrees/outDegrees, or None when the
    GraphFrames JVM package is absent (or the pattern has no equal predicate,
    so the edge list would not be linear)."""
    from pyspark.sql import functions as F

    if not prepared.cfg.equal:
        return None
    try:
        from graphframes import GraphFrame  # type: ignore
    except ImportError:
        return None  # not installed: the ABI pre-filter gives the same flags
    vid = F.concat_ws(":", F.col(WINDOW).cast("string"), F.col(ID).cast("string"))
    vertices = ev.select(vid.alias("id"))
    p, n = _prefixed(ev, "p_"), _prefixed(ev, "n_")
    edges = p.join(n, _pair_condition(prepared)).select(
        F.concat_ws(":", F.col("p_" + WINDOW).cast("string"), F.col("p_" + ID).cast("string")).alias("src"),
        F.concat_ws(":", F.col("n_" + WINDOW).cast("string"), F.col("n_" + ID).cast("string")).alias("dst"),
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


def extract(prepared, use_graphframes: bool = True):
    """ABI Algorithm 2 over a DataFrame of open paths; returns the trends in
    the kernel's output layout (WINDOW, keys, events, length[, rows])."""
    from pyspark.sql import functions as F

    cfg = prepared.cfg
    ev = prepared.df
    trend_set = cfg.trend_set
    if trend_set != "ALL":
        flagged = graphframes_degrees(prepared, ev) if use_graphframes else None
        ev = flagged if flagged is not None else prefilter(prepared, ev)
    else:
        ev = ev.withColumn(SRC, F.lit(True)).withColumn(SNK, F.lit(False))
    ev = ev.localCheckpoint(eager=True)

    g = _group(prepared)
    last_cols = [c for c in ev.columns if c not in g]
    n_side = _prefixed(ev, "n_")

    def start_paths():
        cols = [F.col(c) for c in g] + [F.array(F.col(ID)).alias("events")]
        if cfg.with_rows:
            cols.append(F.array(F.col(D.ROW)).alias("rows"))
        cols += [F.col(c).alias("p_" + c) for c in last_cols]
        return ev.filter(F.col(SRC)).select(*cols)

    def emit(paths, condition):
        cols = [*g, "events", F.size("events").cast("int").alias("length")]
        if cfg.with_rows:
            cols.append("rows")
        return paths.filter(condition).select(*cols)

    paths = start_paths().localCheckpoint(eager=True)
    results = []
    while True:
        if trend_set == "ALL":
            results.append(emit(paths, F.lit(True)))
            frontier = paths
        else:
            results.append(emit(paths, F.col("p_" + SNK)))
            frontier = paths.filter(~F.col("p_" + SNK))
        pp = frontier
        for c in g:
            pp = pp.withColumnRenamed(c, "p_" + c)
        cond = _pair_condition(prepared)
        step = pp.join(n_side, cond)
        if trend_set == "MAXIMAL":
            k_side = _prefixed(ev, "k_")
            split = _pair_condition(prepared, "p_", "k_") & _pair_condition(prepared, "k_", "n_")
            step = step.join(k_side, split, "left_anti")
        cols = [F.col("n_" + c).alias(c) for c in g]
        cols.append(F.concat(F.col("events"), F.array(F.col("n_" + ID))).alias("events"))
        if cfg.with_rows:
            cols.append(F.concat(F.col("rows"), F.array(F.col("n_" + D.ROW))).alias("rows"))
        cols += [F.col("n_" + c).alias("p_" + c) for c in last_cols]
        paths = step.select(*cols).localCheckpoint(eager=True)
        if paths.isEmpty():
            break
    return reduce(lambda a, b: a.unionByName(b), results)
