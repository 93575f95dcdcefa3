"""How detection extracts trends, and, for the distributed strategy, how it
finds where trends start and end (ABI Algorithm 3)."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.options import Engine, Strategy, TrendSet, format_size
from cetql.planner.logical.plan import Decision, KeyMethod, Prefilter
from cetql.planner.logical.rules import Draft
from cetql.planner.logical.rules.memory import task_budget
from cetql.planner.semantics import ir

READS = ("query", "options", "inputs", "resources", "trend_set", "transitions", "variable_keys", "estimate")
SETS = ("strategy", "prefilter", "split")


def apply(d: Draft) -> Draft:
    if not d.detection:
        return replace(d, strategy=None, prefilter=None, split=None)
    q, o = d.query, d.options
    parts = any(k.method.choice == KeyMethod.PARTS for k in d.variable_keys)
    e_plus = q.template.single_kleene is not None and not q.of_kind(ir.CrossPredicate) and not parts
    if o.strategy == Strategy.DISTRIBUTED:
        chosen = Decision(Strategy.DISTRIBUTED, "forced by --strategy distributed: ABI Algorithm 2, one recursive "
                          "query extends the open paths by one join per round")  # fmt: skip
        return replace(d, strategy=chosen, prefilter=_prefilter(d) if e_plus else RUNS, split=None)
    if o.strategy == Strategy.LOCAL:
        return replace(d, strategy=Decision(Strategy.LOCAL, "forced by --strategy local"), prefilter=None, split=None)
    chosen = _by_cost(d)
    if chosen.choice == Strategy.LOCAL:
        return replace(d, strategy=chosen, prefilter=None, split=None)
    return replace(d, strategy=chosen, prefilter=_prefilter(d) if e_plus else RUNS, split=_split(d))


def _split(d: Draft) -> Decision:
    """The most events a group may have and still run locally: what the
    budget holds at the estimate's bytes an event."""
    est, (budget, why) = d.estimate.choice, task_budget(d)
    most = max(1, budget * est.events // max(1, est.bytes))
    return Decision(most, f"each group's events counted first: a group of at most {most:,} events (one task's budget "
                    f"{format_size(budget)}, {why}, at the estimate's ~{format_size(est.bytes // est.events)} an event) "
                    "runs locally, a larger one distributed, in one plan")  # fmt: skip


def _by_cost(d: Draft) -> Decision:
    """Local unless the largest group's estimated graph is over one task's budget."""
    local = "each (window, partition) group's graph is built and walked by one worker's kernel"
    est = d.estimate.choice
    if est is None:
        return Decision(Strategy.LOCAL, f"default: {local} (no estimate: {d.estimate.reason})")
    budget, why = task_budget(d)
    size = f"the largest group's estimate, ~{format_size(est.bytes)}, {{}} one task's budget {format_size(budget)} ({why})"
    if est.bytes <= budget:
        return Decision(Strategy.LOCAL, f"by cost: {size.format('fits')}: {local}")
    if d.options.engine == Engine.EMBEDDED or d.inputs.streaming:
        where = "a stream" if d.inputs.streaming else "--engine embedded"
        return Decision(Strategy.LOCAL, f"{size.format('is over')}, but {where} runs the local strategy only: {local}")
    return Decision(Strategy.DISTRIBUTED, f"by cost: {size.format('is over')}: ABI Algorithm 2, the group's paths "
                    "extended by joins across the cluster, one recursive query")  # fmt: skip


RUNS = Decision(Prefilter.RUNS, "not one Kleene variable alone: runs over the template's transitions (each path "
                "carries its state, bound keys and cross-predicate events); COMPLETE by runs one event earlier "
                "(prepend) and runs one event longer (append), MAXIMAL by runs with one event inserted")


def _prefilter(d: Draft) -> Decision:
    if d.trend_set.choice == TrendSet.ALL:
        return Decision(Prefilter.NONE, "ALL trends: every event starts a path and every path is a trend")
    (step,) = d.transitions
    equal = [p for p in step.predicates if p.op == ir.Op.EQUAL]
    ranges = [p for p in step.predicates if p.op == ir.Op.RANGE]
    others = [p for p in step.predicates if p.op == ir.Op.OTHER]
    if equal and d.resources.graphframes:
        return Decision(Prefilter.GRAPHFRAMES, "an equal predicate makes the edge list linear and the GraphFrames "
                        "JVM package is on the session's classpath: its in- and out-degrees")  # fmt: skip
    absent = "" if not equal else " (GraphFrames' JVM package is not on the classpath; same flags)"
    if len(equal) == 1 and not ranges and not others:
        return Decision(Prefilter.EQUAL, "one equal predicate: per attribute vertex the latest and earliest times, "
                        "two aggregates and two joins, O(n)" + absent)  # fmt: skip
    if len(ranges) == 1 and not equal and not others:
        return Decision(Prefilter.RANGE, "one range predicate: prefix and suffix extremes over each group's "
                        "distinct times, O(n log n)")  # fmt: skip
    return Decision(Prefilter.SEMI_JOIN, "several or other predicates: semi-joins with the whole step condition"
                    + absent)  # fmt: skip
