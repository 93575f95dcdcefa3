"""The planner's rules: small pure functions, each taking the draft plan and
returning it with one more decision made (or raising the refusal that the
decision implies).  `build.RULES` applies them in order, in the spirit of
sqlglot's optimizer: every decision is taken once, here, with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cetql.errors import QuerySemanticError, UsageError
from cetql.options import (
    BATCH_EVENT_BYTES,
    DEFAULT_MEMORY_BUDGET,
    EDGE_BYTES,
    MAX_BATCH_EVENTS,
    MAX_SHARED_CELLS,
    Algorithm,
    Completeness,
    Exact,
    Index,
    Kernel,
    RunOptions,
    Sharing,
    Strategy,
    TrendSet,
    format_size,
    parse_size,
)

from ..semantics import ir
from ..semantics.ir import Kind, Op
from .plan import Decision, Inputs, Key, SubKey, TransitionPlan

# Output columns of a detection query and of an aggregation query, beside keys.
DETECT_COLUMNS = ("window_start", "window_end", "events", "length", "rows")
AGGREGATE_COLUMNS = ("window_start", "window_end")


@dataclass(frozen=True)
class Draft:
    """A plan being built: the inputs of every rule and the decisions so far."""

    query: ir.BoundQuery
    options: RunOptions
    inputs: Inputs
    trend_set: Decision | None = None
    keys: tuple[Key, ...] = ()
    subkeys: tuple[SubKey, ...] = ()
    partition_reason: str = ""
    transitions: tuple[TransitionPlan, ...] = ()
    algorithm: Decision | None = None
    complete: Decision | None = None
    numbers: Decision | None = None
    strategy: Decision | None = None
    sharing: Decision | None = None
    propagate: bool = False  # blocks: COUNT(*) of E+ propagates every window of a block in one pass
    shared_graph: bool = False  # blocks: detection builds a block's graph once and walks each window on it
    guard: Decision | None = None
    memory: Decision | None = None
    memory_bytes: int | None = None
    max_edges: int | None = None
    batch_events: int = MAX_BATCH_EVENTS
    invalid: Decision | None = None
    cost: str = ""

    @property
    def detection(self) -> bool:
        return self.query.kind == Kind.DETECTION


# ---------------------------------------------------------------- trend set


def trend_set(d: Draft) -> Draft:
    q, o = d.query, d.options
    if d.detection:
        if o.trends is not None:
            why = f"asked for by --trends {o.trends.value.lower()}"
        elif q.trends is not None:
            why = "asked for by TRENDS"
        else:
            why = "default for detection: complete event trends (no event can be prepended or appended; ABI §3, CET §2.1)"
        chosen = o.trends or q.trends or TrendSet.COMPLETE
    else:
        if o.trends == TrendSet.MAXIMAL:
            raise UsageError("aggregates are over ALL or COMPLETE trends, not MAXIMAL")
        if o.trends is not None:
            why = f"asked for by --trends {o.trends.value.lower()}"
        elif q.trends is not None:
            why = "asked for by TRENDS"
        else:
            why = "default for aggregation: all trends, as GRETA and A-Seq define their aggregates"
        chosen = o.trends or q.trends or TrendSet.ALL
    return replace(d, trend_set=Decision(chosen.value, why))


# ---------------------------------------------------------------- what can run


def capabilities(d: Draft) -> Draft:
    """Refuse, before anything runs, what the engine would refuse later."""
    q, o = d.query, d.options
    if d.detection:
        if o.kernel != Kernel.INDEX:
            raise UsageError("--kernel chooses how aggregation finds predecessors; this is a detection query")
        if o.approx:
            raise UsageError("--approx applies to aggregates; a detection query returns its trends exactly")
        if o.exact != Exact.DECIMAL:
            raise UsageError("--exact applies to aggregates; a detection query returns event ids, not numbers")
    else:
        if o.strategy is not None:
            raise UsageError(
                "--strategy chooses how detection extracts trends; an aggregation query builds no trends "
                "(its algorithm is chosen by the plan: see --explain)"
            )
        if o.with_rows:
            raise UsageError("--with-rows adds each trend's events to detection output; an aggregation has no trends")
        if o.memory_budget is not None:
            raise UsageError("--memory-budget bounds what a detection group holds (its graph and output batch); "
                             "an aggregation holds a few values per event and builds no trends")  # fmt: skip
        for p in q.of_kind(ir.CrossPredicate):
            raise QuerySemanticError(
                f"'{p.text}' relates variables that are not adjacent in a trend; aggregation supports vertex, "
                "equivalence and adjacent (edge) predicates, as GRETA does",
                p.pos,
            )
        witness = q.template.ambiguity(_same_letter(d))
        if witness is not None:
            a, b = witness
            raise QuerySemanticError(
                f"the pattern can match one sequence of events in two ways ({a} and {b} can take the same event at "
                "the same step), so aggregating would count such a trend twice; write the pattern so each event "
                "has one place (e.g. SEQ(A+ x[], B y) rather than SEQ(A+ x[], A+ y[]))",
                q.ast.pattern.pos,
            )
    positions = q.template.all_positions
    for p in q.of_kind(ir.CrossPredicate):
        if any(positions[v].negated for v in p.positions):
            raise QuerySemanticError(
                f"'{p.text}' relates a negated event to another variable; a negated sub-pattern may only have "
                "predicates of its own (on its events and between them)",
                p.pos,
            )
    taken = DETECT_COLUMNS if d.detection else AGGREGATE_COLUMNS
    for k in (*[p for p in q.of_kind(ir.EquivalencePredicate) for p in p.keys], *q.group_by):
        if k.attr in taken:
            raise QuerySemanticError(
                f"the attribute '{k.attr}' would be an output column, but the output already has a column "
                f"'{k.attr}' ({', '.join(taken)}); rename the input column",
                None,
            )
    if not d.detection:
        names = [a.name for a in q.aggregates] + [k.attr for k in q.group_by]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise QuerySemanticError(f"the output would have two columns named {dup[0]}", None)
    return d


def _same_letter(d: Draft):
    """Can one event take both positions p and q?  On inputs bound to types,
    when they have the same type; on one single-type stream, always."""
    positions = d.query.template.all_positions
    single = d.inputs.typed is False or (d.inputs.typed is None and len({p.type for p in positions.values()}) == 1)
    return lambda p, q: single or positions[p].type == positions[q].type


# ---------------------------------------------------------------- keys


def keys(d: Draft) -> Draft:
    """Partition keys (Spark repartitions by them) and sub-keys (the kernel
    splits a group by them)."""
    q = d.query
    shared: list[str] = []
    specific: list[SubKey] = []
    for p in q.of_kind(ir.EquivalencePredicate):
        for k in p.keys:
            if k.position is None:
                shared.append(k.attr)
            else:
                specific.append(SubKey(k.position, k.attr))
    group = [k.attr for k in q.group_by]
    if d.detection:
        attrs = list(dict.fromkeys(shared + group))
        keys_ = tuple(Key(a, a, _source(a, shared, group)) for a in attrs)
        subkeys = tuple(dict.fromkeys(specific))
        reason = (
            "equivalence attributes: every event of a trend has the same values, so each (window, key) group is "
            "extracted on its own"
            if keys_
            else "no equivalence attribute: one group per window"
        )
    else:
        keys_ = tuple(Key(a, a, _source(a, shared, group)) for a in dict.fromkeys(group))
        inner = [SubKey(None, a) for a in dict.fromkeys(shared) if a not in group]
        subkeys = tuple(dict.fromkeys(inner + specific))
        reason = (
            "GROUP-BY attributes: one output row per (window, group)" if keys_ else "no GROUP-BY: one row per window"
        )
        if subkeys:
            reason += (
                "; equivalence attributes that are not grouped split each group inside the kernel, "
                "and the parts' aggregates are summed"
            )
    if subkeys and d.detection:
        reason += "; equivalence attributes of one variable split each group inside the kernel"
    return replace(d, keys=keys_, subkeys=subkeys, partition_reason=reason)


def _source(a, shared, group) -> str:
    return " and ".join(s for s, xs in (("equivalence", shared), ("group-by", group)) if a in xs)


# ---------------------------------------------------------------- indexes


_INDEX_COST = {
    Index.HASH: "a hash on the value (ABI attribute vertex per value): O(1) per step",
    Index.RANGE: "a sorted index over h(prev) values (ABI range index): O(log n) per step",
}


def indexes(d: Draft) -> Draft:
    """For each template transition, how a step along it is found."""
    q, o = d.query, d.options
    between = set()
    pairs = []

    def walk(t):
        between.update(pair for neg in t.negatives for pair in neg.pairs)
        pairs.extend((p, n) for p, n, _ in t.transitions)
        for neg in t.negatives:
            walk(neg.template)

    walk(q.template)
    plans = []
    for p, n in pairs:
        preds = tuple(e for e in q.of_kind(ir.EdgePredicate) if (e.source, e.target) == (p, n))
        equal = [e for e in preds if e.op == Op.EQUAL]
        ranges = [e for e in preds if e.op == Op.RANGE]
        if not d.detection and o.kernel == Kernel.SCAN:
            choice = Decision(Index.SCAN, "--kernel scan: GRETA's predecessor scan, O(n) per step (for comparisons)")
        elif not d.detection and (p, n) in between:
            choice = Decision(Index.SCAN, "a negation lies between these positions: every predecessor is checked, O(n)")
        elif equal:
            choice = Decision(Index.HASH, f"{equal[0].text}: {_INDEX_COST[Index.HASH]}")
        elif ranges:
            choice = Decision(Index.RANGE, f"{ranges[0].text}: {_INDEX_COST[Index.RANGE]}")
        elif preds:
            choice = Decision(Index.SCAN, "no equal or range predicate: candidate pairs, O(n) per step")
        else:
            choice = Decision(Index.SCAN, "no predicate: every later event follows, O(1) per step as a running total"
                              if not d.detection else "no predicate: every later event follows")  # fmt: skip
        plans.append(TransitionPlan(p, n, preds, choice))
    return replace(d, transitions=tuple(plans))


# ---------------------------------------------------------------- aggregation algorithm


def algorithm(d: Draft) -> Draft:
    if d.detection:
        return d
    q, o = d.query, d.options
    t = q.template
    trends = TrendSet(d.trend_set.choice)
    count_only = all(a.func == "COUNT" and a.position is None for a in q.aggregates)
    between_events = q.of_kind(ir.EdgePredicate) or q.of_kind(ir.CrossPredicate)
    if (
        t.fixed_length
        and trends == TrendSet.ALL
        and count_only
        and not between_events
        and all(len(n.template.positions) == 1 and not n.template.negatives for n in t.negatives)
    ):
        algo = Decision(
            Algorithm.ASEQ, "COUNT(*) of a fixed-length SEQ with no predicate between events: one counter per prefix (A-Seq)"
        )
    elif (
        t.single_kleene is not None
        and trends == TrendSet.ALL
        and count_only
        and len(d.transitions) == 1
        and len(d.transitions[0].predicates) <= 1
        and (not d.transitions[0].predicates or d.transitions[0].predicates[0].op != Op.OTHER)
    ):
        algo = Decision(
            Algorithm.KLEENE_COUNT,
            "COUNT(*) of E+ with at most one equal or range predicate: GRETA's propagation with plain numbers",
        )
    else:
        why = "Kleene or nested pattern" if not t.fixed_length else "predicates between events or other aggregates"
        algo = Decision(Algorithm.GRETA, f"propagate aggregates along the template from predecessors (GRETA): {why}")
    complete = None
    if trends == TrendSet.COMPLETE:
        positions = t.positions
        distinct = len({p.type for p in positions}) == len(positions)
        typed = d.inputs.typed if d.inputs.typed is not None else len({p.type for p in positions}) > 1
        if len(positions) == 1 or (typed and distinct):
            complete = Decision(
                Completeness.PER_STATE,
                "each event can take one position: a trend starts at an event no start event precedes, and ends at "
                "one no end event follows",
            )
        else:
            complete = Decision(
                Completeness.DETERMINIZED,
                "an event can take several positions: runs are followed as sets per event sequence, so a trend is "
                "complete exactly when no event can be prepended or appended",
            )
    if o.approx or q.approx:
        numbers = Decision("approximate", "DOUBLE, asked for by " + ("--approx" if o.approx else "APPROX"))
    else:
        numbers = Decision(
            f"exact {o.exact.value}",
            "exact integers, as DECIMAL(38, s) (a larger value is an error)"
            if o.exact == Exact.DECIMAL
            else "exact integers, as decimal strings of any length",
        )
    return replace(d, algorithm=algo, complete=complete, numbers=numbers)


# ---------------------------------------------------------------- detection strategy


def strategy(d: Draft) -> Draft:
    if not d.detection:
        return d
    q, o = d.query, d.options
    t = q.template
    e_plus = t.single_kleene is not None and not q.of_kind(ir.CrossPredicate) and not d.subkeys
    if o.strategy == Strategy.DISTRIBUTED:
        if not e_plus:
            raise UsageError(
                "the distributed strategy (ABI Algorithm 2) extracts E+ patterns (one Kleene variable, no negation, "
                "no predicate across variables); this pattern runs with --strategy local"
            )
        return replace(
            d,
            strategy=Decision(
                Strategy.DISTRIBUTED.value,
                "forced by --strategy distributed: ABI Algorithm 2, one join per round extends the open paths",
            ),
        )
    if o.strategy == Strategy.LOCAL:
        why = "forced by --strategy local"
    else:
        why = "default: each (window, partition) group's graph is built and walked by one worker's kernel"
    return replace(d, strategy=Decision(Strategy.LOCAL.value, why))


# ---------------------------------------------------------------- windows, guard, invalid rows


def windows(d: Draft) -> Draft:
    """Sliding windows: copy each event into every window it falls in (one
    kernel group per window), or into blocks of `copies` consecutive windows
    (at most two blocks per event; the kernel evaluates each window of a
    block on its own slice of the block's sorted events).  Either way each
    window's result is exactly its own."""
    w, o = d.query.window, d.options
    if w.tumbling:
        why = "tumbling windows: each event falls in one window"
        if o.sharing is not None:
            why += f" (--sharing {o.sharing.value} has nothing to share)"
        return replace(d, sharing=Decision("none", why))
    copies = w.copies
    copy = Decision(
        Sharing.COPY.value, f"each event is copied into each of the (up to) {copies} windows it falls in, evaluated apart"
    )
    blocks = Decision(
        Sharing.BLOCKS.value,
        f"each event is copied into at most 2 blocks of {copies} consecutive windows, not into each of the (up to) "
        f"{copies} windows it falls in; each window is evaluated apart, on its slice of the block",
    )
    distributed = d.strategy is not None and d.strategy.choice == Strategy.DISTRIBUTED.value
    # COUNT(*) of E+ counts every window of a block in one pass, unless a
    # variable's equivalence key splits the events (its parts are per window)
    propagate = (
        not d.detection
        and d.algorithm.choice == Algorithm.KLEENE_COUNT
        and o.kernel == Kernel.INDEX
        and not any(k.position is not None for k in d.subkeys)
    )
    if propagate:
        blocks = replace(blocks, reason=(
            f"each event is copied into at most 2 blocks of {copies} consecutive windows, not into each of the "
            f"(up to) {copies} windows it falls in; COUNT(*) propagates a count per window of the block in one "
            f"pass (GRETA §4.2), each window's count its own (window by window when the block's index would pass "
            f"{MAX_SHARED_CELLS:,} cells)"))  # fmt: skip
    shared_graph, why_not = _shared_graph(d) if d.detection else (False, "")
    if shared_graph:
        blocks = replace(blocks, reason=(
            f"each event is copied into at most 2 blocks of {copies} consecutive windows, not into each of the "
            f"(up to) {copies} windows it falls in; each block's graph is built once and each window walked on "
            f"its nodes (CET §5: the windows share the graphlets they hold), each window's trends its own"))  # fmt: skip
    elif d.detection:
        blocks = replace(blocks, reason=blocks.reason + f"; its graph built on its own ({why_not})")
    in_blocks = (d.partition_reason.replace("one group per window", "one group per block of windows")
                 + f"; a kernel group holds a block of {copies} windows, "
                 + ("each window walked on the block's one graph" if shared_graph
                    else "each window evaluated on its own slice"))  # fmt: skip
    if o.sharing == Sharing.BLOCKS:
        if distributed:
            raise UsageError(
                "--sharing blocks runs with the local strategy; the distributed strategy copies windows: "
                "drop --sharing blocks, or use --strategy local"
            )
        note = " (at most 2 windows an event: nothing saved)" if copies <= 2 else ""
        return replace(d, sharing=replace(blocks, reason="forced by --sharing blocks: " + blocks.reason + note),
                       propagate=propagate, shared_graph=shared_graph, partition_reason=in_blocks)  # fmt: skip
    if o.sharing == Sharing.COPY:
        return replace(d, sharing=replace(copy, reason="forced by --sharing copy: " + copy.reason))
    if distributed:
        return replace(d, sharing=replace(copy, reason=copy.reason + " (the distributed strategy joins per window)"))
    if copies <= 2:
        return replace(d, sharing=replace(copy, reason=copy.reason + " (at most 2 copies: blocks would not save any)"))
    return replace(d, sharing=replace(blocks, reason="default: " + blocks.reason), propagate=propagate,
                   shared_graph=shared_graph, partition_reason=in_blocks)  # fmt: skip


def _shared_graph(d: Draft) -> tuple[bool, str]:
    """Can the windows of a block share one graph?  When the walk is over
    single nodes and nothing of a trend depends on where its window starts
    or ends: every event takes at most one state (one positive variable, or
    typed inputs and a type per variable), no cross predicate, no negation
    before or after the pattern.  Then a window's graph is the block's
    restricted to the window's events (a negation between two events lies
    between them, so in every window holding both), and where a window's
    trends start and end is read from the block's graph.  Else ("why not")
    each window's graph is built on its own slice."""
    q = d.query
    positive = [p for p in q.template.all_positions.values() if not p.negated]
    if len(positive) > 1:
        if not d.inputs.typed:
            return False, "inputs not bound to types: an event may take two variables"
        if len({p.type for p in positive}) < len(positive):
            return False, "two variables of one type: an event may take either"
    if q.of_kind(ir.CrossPredicate):
        return False, "cross predicates: a trend carries the events they need"
    if any(n.starts or n.ends for n in q.template.negatives):
        return False, "a negation before or after the pattern: where a trend may start depends on the window"
    return True, ""


def guard(d: Draft) -> Draft:
    if not d.detection:
        return d
    n = d.options.max_trends
    if not n:
        return replace(d, guard=Decision("off", "no limit (--max-trends 0)"))
    trends = TrendSet(d.trend_set.choice)
    how = {
        TrendSet.ALL: "counted exactly by propagation",
        TrendSet.COMPLETE: "counted exactly by propagation",
        TrendSet.MAXIMAL: "bounded by the number of complete trends",
    }[trends]
    if d.query.of_kind(ir.CrossPredicate):
        how = "bounded by the number of all trends without the cross predicates"
    return replace(
        d,
        guard=Decision(
            f"{n:,}",
            f"a (window, group) with more than {n:,} trends is refused before any is built ({how})",
        ),
    )


def memory(d: Draft) -> Draft:
    """What one detection task may hold beyond its group's events: half the
    budget for the graph's edges (stored while they fit, else found again at
    each visit), half for the output batch being filled.  Trends themselves
    are never held: the walk writes each as it finds it."""
    if not d.detection or d.strategy.choice == Strategy.DISTRIBUTED.value:
        if d.options.memory_budget is not None:
            raise UsageError("--memory-budget bounds the local strategy's groups; the distributed strategy keeps "
                             "its open paths in Spark: drop --memory-budget, or use --strategy local")  # fmt: skip
        return d
    o, inputs = d.options, d.inputs
    slots = max(1, inputs.task_slots)
    per_slot = f" over its {slots} task slots" if slots > 1 else ""
    if o.memory_budget is not None:
        budget, why = o.memory_budget, "--memory-budget"
    elif inputs.executor_memory:
        budget = max(1, parse_size(inputs.executor_memory, "executor memory", bare="m") // 2 // slots)
        why = f"default: half the executor memory ({inputs.executor_memory}){per_slot}"
    else:
        budget = DEFAULT_MEMORY_BUDGET
        why = "default: half of Spark's default executor memory (1g); `run` reads its session's"
    maximal = d.trend_set.choice == TrendSet.MAXIMAL.value
    edge_bytes = EDGE_BYTES * (2 if maximal else 1)  # MAXIMAL keeps a set of each node's successors too
    event_bytes = BATCH_EVENT_BYTES * (4 if o.with_rows else 1)  # --with-rows: each event's input row too
    edges = budget // 2 // edge_bytes
    batch = max(1, min(MAX_BATCH_EVENTS, budget // 2 // event_bytes))
    text = (f"{why}, per task; a group keeps its graph's edges up to {edges:,} (half the budget, ~{edge_bytes} B "
            "each), else none: each node's successors are found again at each visit (from the hash index; by range, "
            f"the few values in range sorted, else later events checked); output batches of at most {batch:,} event ids; trends are streamed as found, "
            "never held")  # fmt: skip
    return replace(d, memory=Decision(format_size(budget), text), memory_bytes=budget, max_edges=edges,
                   batch_events=batch)  # fmt: skip


def invalid(d: Draft) -> Draft:
    if d.options.drop_invalid:
        dec = Decision("drop", "rows with a null, NaN or infinite time, or a value that cannot be read, are dropped "
                       "and counted (--drop-invalid)")  # fmt: skip
    else:
        dec = Decision("reject", "a null, NaN or infinite time, or a value that cannot be read as its column's type, "
                       "fails the query with the number of rows (--drop-invalid drops them)")  # fmt: skip
    return replace(d, invalid=dec)


def cost(d: Draft) -> Draft:
    if d.detection:
        if d.strategy.choice == Strategy.DISTRIBUTED.value:
            text = "one Spark job per round; each round joins the open paths with their next events"
        else:
            text = "per group: the index O(n log n), the graph O(n + steps), then O(output) to write each trend"
            if d.shared_graph:
                text = ("per block: the index O(n log n) and the graph O(n + steps) once; per window: O(its nodes) "
                        "to find where its trends start, then O(output) to write each trend")  # fmt: skip
            if d.query.of_kind(ir.CrossPredicate):
                text += "; cross predicates are checked on each extension"
    else:
        algo = d.algorithm.choice
        if algo == Algorithm.ASEQ:
            text = "per group: O(n · pattern length)"
        else:
            worst = max(
                (list(Index).index(tp.index.choice) for tp in d.transitions if tp.predicates or tp.index.choice != Index.SCAN),
                default=0,
            )
            text = {0: "per group: O(n) (hash lookups)", 1: "per group: O(n log n) (range index)",
                    2: "per group: O(n²) (predecessor scan)"}[worst]  # fmt: skip
            if d.propagate:
                text = text.replace("per group:", "per block:") + " vector operations of one entry per window"
            if d.complete is not None and d.complete.choice == Completeness.DETERMINIZED:
                text += "; COMPLETE over sets of runs: O(steps · sets)"
    return replace(d, cost=text)
