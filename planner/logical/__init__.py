"""The logical plan (`plan`), the rules that decide it (`rules`) and the
builder that applies them (`build`).

(Transitional: the old single-module plan follows, for the old front end.)
"""


from __future__ import annotations

from dataclasses import dataclass, field

from ..analyze import AGGREGATION, Bound
from ..classify import CROSS, EDGE, EQUAL, EQUIVALENCE, RANGE, VERTEX, Predicate

STRATEGIES = ("local", "distributed")


@dataclass
class Step:
    op: str
    details: dict[str, object] = field(default_factory=dict)


@dataclass
class LogicalPlan:
    steps: list[Step]
    strategy: str
    strategy_reason: str

    def step(self, op: str) -> Step | None:
        return next((s for s in self.steps if s.op == op), None)

    def lines(self) -> list[str]:
        out = []
        for depth, s in enumerate(self.steps):
            facts = "; ".join(f"{k}={_fmt(v)}" for k, v in s.details.items())
            out.append("  " * depth + f"{s.op}" + (f" [{facts}]" if facts else ""))
        return out


def _fmt(v) -> str:
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_fmt(x) for x in v) + ")"
    return str(v)


_COST = {EQUAL: "O(n) hash on the attribute", RANGE: "O(n log n) attribute index with prefix sums"}


def partition_keys(bound: Bound, preds: list[Predicate]) -> list[str]:
    """Columns that partition the stream: equivalence attributes, then
    GROUP-BY attributes (shown as `attr` or `var.attr`)."""
    keys: list[str] = []
    for p in preds:
        if p.kind == EQUIVALENCE:
            for var, attr in p.keys:
                keys.append(attr if var is None else f"{var}.{attr}")
    for var, attr in bound.group_by:
        k = attr if var is None else f"{var}.{attr}"
        if k not in keys and attr not in keys:
            keys.append(k)
    return keys


def plan(bound: Bound, preds: list[Predicate], strategy: str | None = None) -> LogicalPlan:
    if strategy is not None and strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy '{strategy}'; expected one of {', '.join(STRATEGIES)}")
    vertex = [p for p in preds if p.kind == VERTEX]
    edges = [p for p in preds if p.kind == EDGE]
    cross = [p for p in preds if p.kind == CROSS]
    steps = [
        Step("Scan", {"time": bound.time_col, "types": sorted({p.type for p in bound.positions.values()})}),
        Step("Filter", {"vertex": [p.text for p in vertex]} if vertex else {"vertex": "none"}),
        Step("Windows", {"window": str(bound.window)}),
        Step("Partition", {"keys": partition_keys(bound, preds) or "none (one partition per window)"}),
    ]
    if bound.kind == AGGREGATION:
        from ..aggregation import aseq_applies

        algo = "A-Seq" if aseq_applies(bound, preds) else "GRETA"
        why = (
            "COUNT(*) of a fixed-length SEQ with no predicate between events: one prefix counter per prefix (A-Seq)"
            if algo == "A-Seq"
            else "propagate aggregates along the template from predecessors (GRETA): "
            + (
                "Kleene or nested pattern"
                if not bound.template.fixed_length
                else "predicates between events or other aggregates"
            )
        )
        costs = [f"{p.text}: {_COST.get(p.op, 'O(n^2) vectorised scan')}" for p in edges + cross]
        steps.append(
            Step(
                "Aggregate",
                {
                    "algorithm": algo,
                    "trends": bound.trend_set,
                    "aggregates": [_agg_text(a) for a in bound.aggregates],
                    "group_by": [a if v is None else f"{v}.{a}" for v, a in bound.group_by] or "none",
                    "numbers": "approximate DOUBLE" if bound.query.approx else "exact DECIMAL(38,0)",
                    "edge_costs": costs or "none",
                },
            )
        )
        return LogicalPlan(steps, algo, why)

    chosen = strategy or "local"
    why = (
        f"forced by --strategy {strategy}"
        if strategy
        else "default: each (window, partition) graph is extracted by one worker's kernel; "
        "'distributed' (ABI Algorithm 2, broadcast-join path expansion) spreads one window's trends over the cluster"
    )
    steps.append(
        Step(
            "Detect",
            {
                "trends": bound.trend_set,
                "index": [f"{p.text}: {p.op} ({_COST.get(p.op, 'pairs')})" for p in edges] or "none",
                "cross": [p.text for p in cross] or "none",
                "strategy": chosen,
                "prefilter": (
                    "none (ALL trends start anywhere)"
                    if bound.trend_set == "ALL"
                    else "GraphFrames in/out degrees where its JVM package is present, else ABI Algorithm 3"
                    if chosen == "distributed"
                    else "in the kernel: sources and sinks of each group's DAG"
                ),
            },
        )
    )
    return LogicalPlan(steps, chosen, why)


def _agg_text(a) -> str:
    from cetql.printer import aggregate_to_text

    return aggregate_to_text(a)
