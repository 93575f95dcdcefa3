"""The run graph of every group as DataFrames, for the distributed strategy's
template runs (`runs`): the same nodes, flags and edges the local kernel
builds (`kernels.template`, `kernels.graph`), as joins.

- A node is (event, state) where the state's mask holds (and, for a keyed
  state `[b.k]`, its key is not null): one row of `nodes` with the state's
  index `__q`, and `__start` / `__end`: the node may begin / end a trend
  (its state is a start / end state and no negated trend lies before /
  after it, the negation's anchors as the kernel defines them).
- An edge is a step along a template transition: a join of the source
  state's nodes with the target state's on the group, the first equal
  predicate (an equi-join key, the ABI attribute vertex), a strictly later
  time and every other predicate; a negation between the two states
  removes the step when one of its trends lies strictly between (an
  anti-join on the span).
- A negation's trends are summarised as spans (latest start, end): a
  negated event is its own span (one filter); anything longer is
  summarised per group by the kernel's own propagation
  (`kernels.negations`).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from cetql.backends.spark.arrow import batch_schema
from cetql.backends.spark.exchange import sorted_groups
from cetql.backends.spark.exprs import holds, quote
from cetql.kernels import negations
from cetql.kernels import spec as K
from cetql.planner.physical.plan import PhysicalPlan

Q, START, END, SRC = "__q", "__start", "__end", "__src"
NS, NE, NEG = negations.START, negations.END, negations.NEG
OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def state_index(template: K.TemplateSpec) -> dict[str, int]:
    return {s.name: i for i, s in enumerate(template.states)}


def keys_of(spec: K.DetectSpec, state: str) -> list[str]:
    return [k.column for k in spec.state_keys if k.state == state]


# ---------------------------------------------------------------- negations


def _single_event(t: K.TemplateSpec) -> bool:
    """A negated template whose trends are its single events (`NOT E`)."""
    (s, *more) = t.states
    return not more and not t.transitions and not t.negations and not t.cross and s.name in t.start and s.name in t.end


def negation_spans(plan: PhysicalPlan, spec: K.DetectSpec, ev: DataFrame) -> DataFrame | None:
    """(group, __neg, __ns, __ne) of every negation's trends, or None without negations."""
    c, negs = spec.columns, spec.template.negations
    if not negs:
        return None
    group, time = list(c.group), c.time
    frames = [ev.filter(F.col(quote(n.template.states[0].mask)))
              .select(*group, F.lit(i).alias(NEG), F.col(time).alias(NS), F.col(time).alias(NE))
              for i, n in enumerate(negs) if _single_event(n.template)]  # fmt: skip
    longer = tuple(i for i, n in enumerate(negs) if not _single_event(n.template))
    if longer:
        table = sorted_groups(plan, ev)
        schema = negations.spans_schema(spec, batch_schema(table))
        frames.append(table.mapInArrow(negations.spans_fn(spec, longer), from_arrow_schema(schema)))
    return reduce(DataFrame.unionByName, frames)


# ---------------------------------------------------------------- nodes


def _anchored(nodes: DataFrame, spans: DataFrame | None, group: list[str], time: str, negs, which: str, flag: str,
              template: K.TemplateSpec) -> DataFrame:  # fmt: skip
    """`flag` cleared on nodes whose state a negation anchors (`which`:
    "starts" or "ends") when one of its trends ends before (starts after) it."""
    idx = state_index(template)
    for i, neg in enumerate(negs):
        states = [idx[s] for s in getattr(neg, which)]
        if not states or spans is None:
            continue
        s = spans.filter(F.col(NEG) == i)
        s = (s.groupBy(*group).agg(F.min(NE).alias("__x")) if which == "starts"
             else s.groupBy(*group).agg(F.max(NS).alias("__x")))  # fmt: skip
        nodes = nodes.join(s, group, "left")
        bad = (F.col("__x") < F.col(time)) if which == "starts" else (F.col("__x") > F.col(time))
        hit = F.col(Q).isin(states) & F.coalesce(bad, F.lit(False))
        nodes = nodes.withColumn(flag, F.col(flag) & ~hit).drop("__x")
    return nodes


def nodes(spec: K.DetectSpec, ev: DataFrame, spans: DataFrame | None) -> DataFrame:
    """Every node of every group, with its state index and start / end flags."""
    t, c = spec.template, spec.columns
    masks = [s.mask for s in t.states]
    frames = []
    for i, s in enumerate(t.states):
        keep = F.col(quote(s.mask))
        for k in keys_of(spec, s.name):  # a keyed state takes only events with a key
            keep = keep & F.col(quote(k)).isNotNull()
        frames.append(ev.filter(keep).withColumn(Q, F.lit(i))
                      .withColumn(START, F.lit(s.name in t.start)).withColumn(END, F.lit(s.name in t.end)))  # fmt: skip
    out = reduce(DataFrame.unionByName, frames).drop(*dict.fromkeys(masks))
    group = list(c.group)
    out = _anchored(out, spans, group, c.time, t.negations, "starts", START, t)
    return _anchored(out, spans, group, c.time, t.negations, "ends", END, t)


# ---------------------------------------------------------------- edges


def _step_condition(spec: K.DetectSpec, tr: K.Transition) -> F.Column:
    """prev (`p_` columns) → next (`n_` columns) along `tr`."""
    c = spec.columns
    cond = reduce(lambda a, g: a & (F.col("n_" + g) == F.col("p_" + g)), c.group, F.lit(True))
    cond = cond & (F.col("n_" + c.time) > F.col("p_" + c.time))
    for lc, hc in tr.equal:
        cond = cond & (F.col(quote("n_" + lc)) == F.col(quote("p_" + hc)))
    for lc, op, hc in tr.ranges:
        cond = cond & OPS[op](F.col(quote("n_" + lc)), F.col(quote("p_" + hc)))
    prefix = {"prev": "p_", "next": "n_"}
    for e in tr.others:
        cond = cond & holds(e, lambda slot, name: quote(prefix[slot] + name))
    return cond


def _prefixed(df: DataFrame, prefix: str) -> DataFrame:
    return df.select(*[df[quote(x)].alias(prefix + x) for x in df.columns])


def edges(spec: K.DetectSpec, graph_nodes: DataFrame, spans: DataFrame | None, carried: list[str]) -> DataFrame:
    """Every step between two nodes of a group: the target node's columns,
    `__src` (the source event's id), `__sq` (its state) and the source's
    `carried` columns as `p_<column>`."""
    t, c = spec.template, spec.columns
    idx, group = state_index(t), list(c.group)
    frames = []
    for tr in t.transitions:
        p = _prefixed(graph_nodes.filter(F.col(Q) == idx[tr.source]), "p_")
        n = _prefixed(graph_nodes.filter(F.col(Q) == idx[tr.target]), "n_")
        step = p.join(n, _step_condition(spec, tr))
        between = [i for i, neg in enumerate(t.negations) if (tr.source, tr.target) in neg.pairs]
        if between and spans is not None:
            s = _prefixed(spans.filter(F.col(NEG).isin(between)), "x_")
            inside = reduce(lambda a, g: a & (F.col("x_" + g) == F.col("p_" + g)), group, F.lit(True))
            inside = inside & (F.col("x_" + NS) > F.col("p_" + c.time)) & (F.col("x_" + NE) < F.col("n_" + c.time))
            step = step.join(s, inside, "left_anti")
        cols = [F.col(quote("n_" + x)).alias(x) for x in graph_nodes.columns]
        cols += [F.col("p_" + c.id).alias(SRC), F.col("p_" + Q).alias("__sq")]
        cols += [F.col(quote("p_" + x)).alias("p_" + x) for x in carried]
        frames.append(step.select(*cols))
    if not frames:
        return None
    return reduce(DataFrame.unionByName, frames)
