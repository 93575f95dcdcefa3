"""`--explain` of a workload: what runs shared and why, what does not and
why, and the cost rule's estimate — then each query, as it runs (plain
text, one fact a line, as `explain` prints a query)."""

from __future__ import annotations

from cetql.language.printer import to_text
from cetql.planner.physical.show import show
from cetql.planner.workload.plan import Exchange, ScanGroup, WorkloadPlan, WorkloadSharing


def _head(w: WorkloadPlan) -> str:
    n = len(w.queries)
    if w.sharing == WorkloadSharing.NONE:
        how = "every query alone (--workload-sharing none)"
    elif _sharing(w):
        how = f"{len(_sharing(w))} of them shared"
    else:
        how = "every query alone"
    return f"workload of {n} quer{'y' if n == 1 else 'ies'}: {how}"


def _sharing(w: WorkloadPlan) -> set[int]:
    """The queries that share a scan with another (a group of one shares nothing)."""
    return {q for g in w.groups if len(g.queries) > 1 for q in g.queries}


def _exchange_lines(ex: Exchange) -> list[str]:
    lines = [ex.reason]
    for c in ex.columns:
        guard = f", where {c.guard}" if c.guard else ""
        lines.append(f"  {c.column} = {show(c.definition)}{guard} — {c.about}")
    lines += ["  " + t for t in ex.trees_text]
    lines += ["  " + t for t in ex.graphs_text]
    return lines


def _group_lines(w: WorkloadPlan, g: ScanGroup) -> list[str]:
    lines = [f"Scan       {g.reason}", f"{'':<10} checks a null time or an unreadable value in {', '.join(g.scan.checked)}"]
    spark = w.engine.engine.value == "spark"
    for k, ex in enumerate(g.exchanges):
        first, *rest = _exchange_lines(ex)
        where = "one Spark exchange (hash partitioned, sorted), one mapInArrow" if spark else "one DuckDB query, sorted"
        lines.append(f"Exchange   {first}: {where}")
        p = w.plan(ex.queries[0])
        keys = ", ".join(["block of windows" if p.windows.block else "window", *(k.attr for k in p.partition.keys)])
        lines.append(f"{'':<10}   by ({keys}): windows [k*{p.windows.slide}, k*{p.windows.slide} + {p.windows.length}) "
                     f"of the time column's units")  # fmt: skip
        lines += [f"{'':<10} {x}" for x in rest]
        if spark and k > 0:
            lines.append(f"{'':<10} Spark reads the scan again for this exchange (no cache is asked for)")
    return lines


def workload_lines(w: WorkloadPlan) -> list[str]:
    """The workload plan in words (the part `--explain` adds)."""
    lines = [_head(w), "", f"engine: {w.engine.engine.value} — {w.engine.reason}", "", "queries:"]
    for i, q in enumerate(w.queries):
        root = q.plan.logical.root
        how = getattr(root, "algorithm", None) or getattr(root, "strategy", None)
        run = "shared" if i in _sharing(w) else "alone" if i in w.alone else "alone, on a scan of its own"
        lines.append(f"  {q.name}: {q.plan.kind.value}, {how.choice.value}; runs {run}")
    if w.groups:
        lines += ["", "shared:" if _sharing(w) else "on scans of their own:"]
        for g in w.groups:
            lines += ["  " + x for x in _group_lines(w, g)]
    if w.apart:
        lines += ["", "not shared:"] + ["  " + x for x in w.apart]
    if w.estimate is not None:
        e = w.estimate
        verdict = "share" if _sharing(w) else "the workload's kernels, each query on a scan of its own" if w.groups \
            else "run apart"  # fmt: skip
        lines += ["", f"cost: shared {e.shared:.1f} against {e.apart:.1f} alone, in passes over the events "
                      f"(a guess before reading data): {verdict}"]  # fmt: skip
        lines += ["  " + x for x in e.lines]
    return lines


def workload_text(w: WorkloadPlan, asts: tuple) -> str:
    """The workload's plan, then each query's text."""
    lines = workload_lines(w)
    for q, ast in zip(w.queries, asts):
        lines += ["", f"query {q.name}:"] + ["  " + x for x in to_text(ast).splitlines()]
    return "\n".join(lines)
