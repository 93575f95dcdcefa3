"""What one detection task may hold beyond its group's events: half the
budget for the graph's edges (stored while they fit, else found again at
each visit), half for the output batch being filled.  Trends themselves are
never held: the walk writes each as it finds it."""

from __future__ import annotations

from dataclasses import replace

from cetql.base.errors import UsageError
from cetql.base.options import (
    BATCH_EVENT_BYTES,
    DEFAULT_MEMORY_BUDGET,
    EDGE_BYTES,
    MAX_BATCH_EVENTS,
    Strategy,
    TrendSet,
    parse_size,  # fmt: skip
)
from cetql.planner.logical.plan import Decision
from cetql.planner.logical.rules import Draft

READS = ("options", "resources", "trend_set", "strategy", "split")
SETS = ("memory", "max_edges", "batch_events")


def task_budget(d: Draft) -> tuple[int, str]:
    """(bytes one detection task may hold, why): --memory-budget, else half
    the executor memory shared by its task slots."""
    o, r = d.options, d.resources
    slots = max(1, r.task_slots)
    per_slot = f" over its {slots} task slots" if slots > 1 else ""
    if o.memory_budget is not None:
        return o.memory_budget, "--memory-budget"
    if r.executor_memory:
        budget = max(1, parse_size(r.executor_memory, "executor memory", bare="m") // 2 // slots)
        return budget, f"default: half the executor memory ({r.executor_memory}){per_slot}"
    return DEFAULT_MEMORY_BUDGET, "default: half of Spark's default executor memory (1g)"


def apply(d: Draft) -> Draft:
    none = dict(memory=None, max_edges=None, batch_events=None)
    if not d.detection:
        return replace(d, **none)
    o = d.options
    if d.strategy.choice == Strategy.DISTRIBUTED and d.split is None:
        if o.memory_budget is not None and o.strategy == Strategy.DISTRIBUTED:
            raise UsageError("--memory-budget bounds the local strategy's groups; the distributed strategy keeps "
                             "its open paths in Spark: drop --memory-budget, or use --strategy local")  # fmt: skip
        return replace(d, **none)  # (chosen by cost: the budget is what the largest group was over)
    budget, why = task_budget(d)
    maximal = d.trend_set.choice == TrendSet.MAXIMAL
    edge_bytes = EDGE_BYTES * (2 if maximal else 1)  # MAXIMAL keeps a set of each node's successors too
    event_bytes = BATCH_EVENT_BYTES * (4 if o.with_rows else 1)  # --with-rows: each event's input row too
    edges = budget // 2 // edge_bytes
    batch = max(1, min(MAX_BATCH_EVENTS, budget // 2 // event_bytes))
    text = (f"{why}, per task; a group keeps its graph's edges up to {edges:,} (half the budget, ~{edge_bytes} B "
            "each), else none: each node's successors are found again at each visit (from the hash index; by range, "
            f"the few values in range sorted, else later events checked); output batches of at most {batch:,} event "
            "ids; trends are streamed as found, never held")  # fmt: skip
    return replace(d, memory=Decision(budget, text), max_edges=edges, batch_events=batch)
