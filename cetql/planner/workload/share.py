"""The workload planner: one pure function from the queries' physical
plans to the workload plan.

    workload([(name, PhysicalPlan), …], sharing) → WorkloadPlan

1. One engine for the workload: the embedded engine when it runs every
   query, else Spark (a query that needs Spark takes the others along).
2. Scans: queries read one scan when they read the same inputs the same
   way (time, ids, invalid rows, internal names; with --drop-invalid, the
   same columns, since rows are dropped by the columns a query reads).
3. Exchanges: within a scan, queries share one kernel input when their
   windows, keys and partitions are the same (`exchange`), and A-Seq's
   prefix trees over their common prefixes (`trees`).
4. The cost rule (`cost`): the workload runs shared when its estimate is
   below the queries' alone; else, or with `--workload-sharing none`,
   every query runs by its own plan.

Every query that does not share says why (`WorkloadPlan.apart`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cetql.base.options import Engine, Strategy
from cetql.planner.logical import plan as L
from cetql.planner.physical.plan import Detect, EngineChoice, PhysicalPlan
from cetql.planner.workload import cost
from cetql.planner.workload.exchange import exchange
from cetql.planner.workload.plan import Named, ScanGroup, WorkloadPlan, WorkloadSharing


def workload(named: Sequence[tuple[str, PhysicalPlan]], sharing: WorkloadSharing = WorkloadSharing.AUTO) -> WorkloadPlan:
    queries = tuple(Named(n, p) for n, p in named)
    engine = _engine(queries)
    queries = tuple(replace(q, plan=replace(q.plan, engine=engine)) for q in queries)
    stream = any(q.plan.stream is not None for q in queries)
    if sharing == WorkloadSharing.NONE and stream:
        groups = tuple(_group(queries, [i], [[i]], f"{queries[i].name} alone (--workload-sharing none)")
                       for i in range(len(queries)))  # fmt: skip
        return WorkloadPlan(queries, sharing, groups, (STREAM_NONE,), None, engine)
    if sharing == WorkloadSharing.NONE:
        return WorkloadPlan(queries, sharing, (), ("--workload-sharing none: every query runs alone, by its own plan",),
                            None, engine)  # fmt: skip
    groups, apart = _groups(queries, keep_single=stream)
    estimate = cost.estimate(queries, groups, engine.engine)
    if stream:
        apart.append("a stream runs as one streaming query, one checkpoint: every query in an exchange, whatever "
                     "the estimate")  # fmt: skip
    elif groups and not estimate.shares:
        apart.append(f"the estimate shared ({estimate.shared:.1f}) is not below alone ({estimate.apart:.1f}): "
                     "every query runs alone")  # fmt: skip
        groups = ()
    return WorkloadPlan(queries, sharing, groups, tuple(apart), estimate, engine)


def _engine(queries: tuple[Named, ...]) -> EngineChoice:
    spark = [q for q in queries if q.plan.engine.engine != Engine.EMBEDDED]
    if not spark:
        return EngineChoice(Engine.EMBEDDED, f"it runs every query — {queries[0].plan.engine.reason}")
    first = spark[0]
    if len(spark) == len(queries) and first.plan.engine.workers_write:  # one query's own writer, not a workload's
        return replace(first.plan.engine, workers_write=False,
                       writer="Spark's Parquet writer: a workload's results are written by Spark")  # fmt: skip
    if len(spark) == len(queries):
        return first.plan.engine
    return EngineChoice(Engine.SPARK, f"{first.name} runs on Spark ({first.plan.engine.reason}), and the workload "
                        "runs on one engine")  # fmt: skip


def _alone(p: PhysicalPlan) -> str | None:
    if isinstance(p.root, Detect) and p.root.strategy == Strategy.DISTRIBUTED:
        return "the distributed strategy extends paths by joins of its own, not over a shared kernel input"
    return None


def _scan_facts(p: PhysicalPlan) -> list[tuple[str, object]]:
    """What two queries must agree on to read one scan (beside their inputs: `_inputs_fit`)."""
    s = p.scan
    facts = [("time column", s.time_col), ("id column", s.id_col), ("time kind", (s.time_kind, s.nan_times)),
             ("time zone", p.logical.options.time_zone), ("invalid rows", s.invalid),
             ("internal column names", p.names.prefix), ("streaming", p.stream is not None),
             ("checked unique ids", s.unique_ids)]  # fmt: skip
    if s.invalid == L.InvalidRows.DROP:
        facts.append(("the columns whose invalid values --drop-invalid drops rows by", s.checked))
    return facts


def _inputs_fit(wide: PhysicalPlan, p: PhysicalPlan) -> bool:
    """Does `wide` read every input `p` reads, each the same way?  (A scan
    of the wider inputs then checks only what the wider query checks alone.)"""
    return set(p.scan.inputs) <= set(wide.scan.inputs)


def _exchange_facts(p: PhysicalPlan) -> list[tuple[str, object]]:
    w, part = p.windows, p.partition
    return [("windows", (w.length, w.slide)), ("window arithmetic", (w.arithmetic, w.scale, w.bounds)),
            ("how windows reach the kernels", (w.sharing, w.block)),
            ("partition keys", tuple(k.attr for k in part.keys)), ("partitions", part.partitions),
            ("stream state", p.stream)]  # fmt: skip


def _differs(a: list[tuple[str, object]], b: list[tuple[str, object]]) -> str | None:
    for (label, x), (_, y) in zip(a, b):
        if x != y:
            return label
    return None


def _place(found: list[list[int]], facts, queries, i: int, what: str, apart: list[str]) -> None:
    """Put query i in the first list whose facts are its own, else a new one (saying why)."""
    mine = facts(queries[i].plan)
    for members in found:
        if _differs(facts(queries[members[0]].plan), mine) is None:
            members.append(i)
            return
    for members in found:
        first = queries[members[0]]
        label = _differs(facts(first.plan), mine)
        apart.append(f"{queries[i].name} does not share {first.name}'s {what}: {label} differ")
    found.append([i])


def _place_scan(found: list[list[int]], queries, i: int, apart: list[str]) -> None:
    """A query joins a scan whose reader (its first query, the widest) reads
    its inputs the same way, or whose reader's inputs it reads all of (it
    becomes the reader)."""
    p = queries[i].plan
    why: dict[int, str] = {}
    for k, members in enumerate(found):
        wide = queries[members[0]].plan
        if _differs(_scan_facts(wide), _scan_facts(p)) is not None:
            continue
        joined = [*members, i] if _inputs_fit(wide, p) else [i, *members] if _inputs_fit(p, wide) else None
        if joined is not None:
            why[k] = _checks_fit(queries, joined) or ""
            if not why[k]:
                members[:] = joined
                return
    for k, members in enumerate(found):
        first = queries[members[0]]
        label = _differs(_scan_facts(first.plan), _scan_facts(p)) or "inputs (neither reads all of the other's)"
        apart.append(f"{queries[i].name} does not share {first.name}'s scan: " + (why.get(k) or f"{label} differ"))
    found.append([i])


def _checks_fit(queries, members: list[int]) -> str | None:
    """Why one scan of these queries' inputs (its reader's, the first's)
    would refuse a row none of them refuses alone: it checks every column
    any of them reads, in every input, so a column one query reads is
    checked in an input only others read (typed inputs) — None when every
    input that has such a column is read by a query that checks it alone
    (an input whose columns are not known is taken to have them all)."""
    inputs = {f.type_name: f.source for f in queries[members[0]].plan.logical.find(L.Scan).inputs.each}
    reads = {m: {si.type_name for si in queries[m].plan.scan.inputs} for m in members}
    for m in members:
        for t, source in inputs.items():
            if t in reads[m]:
                continue
            has = None if source is None else {c.name for c in source.columns}
            own = {c for k in members if t in reads[k] for c in queries[k].plan.scan.checked}
            for c in queries[m].plan.scan.checked:
                if (has is None or c in has) and c not in own:
                    return (f"{c}, which {queries[m].name} reads, would be checked in input {t} too, which "
                            f"{queries[m].name} does not read (a value there it cannot read would fail the scan)")  # fmt: skip
    return None


STREAM_NONE = ("--workload-sharing none: every query reads its own scan into its own stateful operator, in one "
               "streaming query (one checkpoint)")


def _group(queries, members: list[int], exchanges: list[list[int]], reason: str) -> ScanGroup:
    made = tuple(exchange(queries, tuple(e), _reason(queries, e)) for e in exchanges)
    checked = tuple(dict.fromkeys(c for i in members for c in queries[i].plan.scan.checked))
    scan = replace(queries[members[0]].plan.scan, checked=checked)
    return ScanGroup(tuple(sorted(members)), scan, made, reason, members[0])


def _groups(queries: tuple[Named, ...], keep_single: bool = False) -> tuple[tuple[ScanGroup, ...], list[str]]:
    apart: list[str] = []
    scans: list[list[int]] = []
    for i, q in enumerate(queries):
        why = _alone(q.plan)
        if why is not None:
            apart.append(f"{q.name} runs alone: {why}")
            continue
        _place_scan(scans, queries, i, apart)
    groups = []
    for members in scans:
        exchanges: list[list[int]] = []
        for i in sorted(members):
            _place(exchanges, _exchange_facts, queries, i, "exchange", apart)
        group = _group(queries, members, exchanges, _scan_reason(queries, members))
        if len(members) == 1 and not group.exchanges[0].trees and not keep_single:
            apart.append(f"{queries[members[0]].name} runs alone: it shares its scan with no other query")
            continue
        groups.append(group)
    return tuple(groups), apart


def _scan_reason(queries, members: list[int]) -> str:
    names = ", ".join(queries[i].name for i in members)
    if len(members) == 1:
        return f"{names} alone"
    reader = queries[members[0]]
    inputs = ", ".join(i.label for i in reader.plan.scan.inputs) or "the inputs"
    return (f"{names} read their inputs the same way: one scan of {inputs} (as {reader.name} reads them), checking "
            "every column any of them reads")  # fmt: skip


def _reason(queries, members: list[int]) -> str:
    names = ", ".join(queries[i].name for i in members)
    if len(members) == 1:
        return f"{names}: windows or keys of its own"
    return f"{names}: the same windows, keys and partitions — one kernel input, each query's events selected"
