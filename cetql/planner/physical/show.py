"""The physical plan in plain text, Scan first, one operator a block: the
columns Spark computes, the casts, the window arithmetic, the exchange, and
what the kernel receives — every fact `kernel.kernel_spec` reads."""

from __future__ import annotations

from cetql.base.options import Engine, Strategy, TrendSet
from cetql.kernels import select
from cetql.kernels import spec as K
from cetql.planner.logical.plan import Prefilter
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Arithmetic, Detect, PhysicalPlan, TimeCast, WindowKeys


def show(e: K.Expr | None) -> str:
    """A kernel expression as text (`next.__l0 = prev.__h0`)."""
    match e:
        case None:
            return "true"
        case K.Lit(value=v):
            return repr(v) if isinstance(v, str) else str(v)
        case K.Col(slot=slot, column=c):
            return c if slot == "self" else f"{slot}.{c}"
        case K.Param(name=n):
            return f":{n} (unbound)"
        case K.Neg(operand=x):
            return f"-{show(x)}"
        case K.Arith(op=op, left=a, right=b) | K.Cmp(op=op, left=a, right=b):
            return f"({show(a)} {op} {show(b)})"
        case K.And(items=xs):
            return "(" + " AND ".join(show(x) for x in xs) + ")"
        case K.Or(items=xs):
            return "(" + " OR ".join(show(x) for x in xs) + ")"
        case K.Not(operand=x):
            return f"NOT {show(x)}"
        case K.IsNotNull(operand=x):
            return f"{show(x)} IS NOT NULL"
    raise TypeError(f"not a kernel expression: {e!r}")


def _op(out: list[str], name: str, first: str, *more: str) -> None:
    out.append(f"{name:<10} {first}")
    out.extend(f"{'':<10} {m}" for m in more)


def _scan(p: PhysicalPlan) -> list[str]:
    s, n = p.scan, p.names
    lines = []
    for i in s.inputs:
        read = "read as text, each column cast by the reader" if i.text else "read as typed"
        bound = f" (type {i.type_name})" if i.type_name else ""
        cast = {TimeCast.NUMBER: "as it is", TimeCast.EMPTY: "no value seen: text read as a double"}.get(
            i.time_cast, i.time_cast.value)
        lines.append(f"{i.label}{bound}: {read}; time {s.time_col} → {n.time}: {cast}")
    if not s.inputs:
        lines.append("inputs not known yet")
    how = "checked present and unique" if s.unique_ids else "checked present; a stream's ids are not checked unique"
    ids = f"{s.id_col} → {n.id} ({how})" if s.id_col else f"monotonically_increasing_id() → {n.id}"
    lines.append(f"ids: {ids}; time kind {s.time_kind.value}; type name → {n.type}")
    nan = "; NaN and infinite times too" if s.nan_times else ""
    lines.append(f"invalid rows ({s.invalid.value}): a null time or an unreadable value in {', '.join(s.checked)}{nan}")
    return lines


def _windows(p: PhysicalPlan) -> list[str]:
    w, t = p.windows, p.names.time
    how = "64-bit integers" if w.arithmetic == Arithmetic.INTEGER else f"decimals (times to {w.scale} places: {w.why})"
    lines = [f"{how}: {p.names.window} from floor(({t} - {w.length}) / {w.slide}) + 1 to floor({t} / {w.slide})",
             f"bounds {w.bounds.value}: [k * {w.slide}, k * {w.slide} + {w.length}); up to {w.per_event} window(s) "
             "an event"]  # fmt: skip
    if w.times is not None:
        lines.append(f"times {w.times.text}; a time outside is an invalid row")
    if w.sharing is None:
        lines.append("tumbling: one window an event")
    elif w.block:
        lines.append(f"blocks of {w.block} windows: {p.names.window} is the block; each event in at most 2 "
                     f"(its windows {p.names.window_lo} … {p.names.window_hi})")  # fmt: skip
    else:
        lines.append(f"copies: one row per (event, window) in {p.names.window}")
    return lines


def _partition(p: PhysicalPlan) -> list[str]:
    part = p.partition
    if p.stream is not None:  # Spark's stateful shuffle: its partitions are the checkpoint's
        lines = [f"hash({', '.join(part.group)}) into the stream's state partitions (spark.sql.shuffle.partitions, "
                 "kept by the checkpoint): a key per value"]  # fmt: skip
    elif p.engine.engine == Engine.EMBEDDED:
        lines = [f"sorted by ({', '.join(part.group)}, {p.names.time}, {p.names.id}) in DuckDB, cut at window "
                 "boundaries into a slice a core: a kernel group per value of the first"]  # fmt: skip
    else:
        lines = [f"hash({', '.join(part.group)}) into {part.partitions} partitions, each sorted by "
                 f"({', '.join(part.group)}, {p.names.time}, {p.names.id}): a kernel group per value of the first"]
    lines += [f"key {k.column} = {k.attr} (not null){'; output ' + k.output if k.output else ''}" for k in part.keys]
    lines += [f"sub-key {k.column} = {k.attr}: the kernel splits a group by it (null: in no trend)" for k in part.subkeys]
    lines += [f"state key {k.column} = {k.attr} of {k.state}: the kernel splits a group into one part per value"
              for k in part.state_keys]  # fmt: skip
    return lines


def _stateful(p: PhysicalPlan) -> list[str]:
    s, n = p.stream, p.names
    windows = {WindowKeys.ONE: "a window (tumbling)", WindowKeys.COPY: "a window (events copied into each)",
               WindowKeys.BLOCKS: f"a block of {p.windows.block} windows"}[s.windows]  # fmt: skip
    return [
        f"transformWithStateInPandas in event time, append mode; key ({', '.join(s.key)}): {windows} and its keys",
        f"event time {s.event_time} = timestamp_millis(floor({n.time} * {s.clock}) + 2^50) on every scanned event "
        f"(before the filter); watermark {s.watermark_ms:,} ms behind the latest",
        f"state: {s.state.value}",
        f"timers: {s.timers.value}",
        f"late events (at or behind the watermark): {s.late.value}; rows of closed windows leave as Arrow IPC "
        "chunks, unpacked to the kernel's output rows",
    ]


def _template(t: K.TemplateSpec, indent: str = "") -> list[str]:
    lines = [f"{indent}states: " + ", ".join(f"{s.name} (mask {s.mask}{', repeated' if s.repeated else ''})"
                                               for s in t.states),
             f"{indent}start {{{', '.join(sorted(t.start))}}}, end {{{', '.join(sorted(t.end))}}}"]  # fmt: skip
    for tr in t.transitions:
        preds = [f"next.{a} = prev.{b}" for a, b in tr.equal] + [f"next.{a} {op} prev.{b}" for a, op, b in tr.ranges]
        preds += [show(e) for e in tr.others]
        lines.append(f"{indent}step {tr.source} → {tr.target}: {tr.index.value}; {' AND '.join(preds) or 'any later event'}")
    lines += [f"{indent}cross {', '.join(c.states)}: {show(c.expr)}" for c in t.cross]
    for neg in t.negations:
        lines.append(f"{indent}negation (between {sorted(neg.pairs)}, before {sorted(neg.starts)}, after "
                     f"{sorted(neg.ends)}):")  # fmt: skip
        lines += _template(neg.template, indent + "  ")
    return lines


def _detect_head(p: PhysicalPlan, r: Detect) -> str:
    if p.stream is not None:
        return "local: one kernel call a key when its timer fires, over its closed windows' events"
    if r.strategy == Strategy.DISTRIBUTED and r.prefilter == Prefilter.RUNS:
        return ("distributed: template runs — the run graph's edges (a join a transition, negations anti-joined "
                "on their spans), then one recursive query extends every run by a join a round (START, POISON"
                f"{', PENDING, INSERTED' if r.trend_set == TrendSet.MAXIMAL else ''}), the trend set by one "
                "aggregation over the runs")  # fmt: skip
    if r.strategy == Strategy.DISTRIBUTED:
        return f"distributed: pre-filter {r.prefilter.value}, then one recursive query extends paths by a join per round"
    if p.engine.engine == Engine.EMBEDDED:
        return "local: one kernel call a slice (a thread each), groups walked one by one"
    return "local: mapInArrow, one kernel call per partition, groups walked one by one"


def _root(p: PhysicalPlan) -> tuple[str, list[str]]:
    r = p.root
    lines = [f"{d.column} = {show(d.definition)}" for d in r.derived]
    if isinstance(r, Detect):
        head = _detect_head(p, r)
        if r.strategy == Strategy.DISTRIBUTED and r.split:
            lines.append(f"groups of at most {r.split:,} events (each group's events counted first): local, "
                         "mapInArrow, one kernel call per partition; larger ones as above")  # fmt: skip
        lines.insert(0, f"{r.trend_set.value} trends; guard {r.max_trends:,} a (window, group) (0: none)")
        if r.strategy == Strategy.LOCAL:
            edges = "every edge" if r.max_edges is None else f"{r.max_edges:,} edges"
            lines.insert(1, f"stores up to {edges} a group, output batches of {r.batch_events:,} event ids; "
                         f"shared graph {'yes' if r.shared_graph else 'no'}; rows {'yes' if r.with_rows else 'no'}")  # fmt: skip
        return head, lines + _template(r.template)
    call = ("one kernel call a key when its timer fires" if p.stream is not None
            else "one kernel call a slice (a thread each)" if p.engine.engine == Engine.EMBEDDED
            else "mapInArrow, one kernel call per partition")  # fmt: skip
    head = f"{r.algorithm.value}: {call}; {r.trend_set.value} trends"
    lines.insert(0, "aggregates: " + ", ".join(f"{t.name} ({t.func}{' of ' + t.state if t.state else ''}"
                                                 f"{', ' + t.value if t.value else ''}; {t.kind})" for t in r.targets))  # fmt: skip
    lines.insert(1, f"numbers {r.numbers.value}; complete {r.complete.value}; kernel {r.kernel.value}; "
                 f"one pass a block {'yes' if r.propagate else 'no'}")  # fmt: skip
    return head, lines + _template(r.template)


def physical_lines(p: PhysicalPlan) -> list[str]:
    out: list[str] = []
    _op(out, "Engine", f"{p.engine.engine.value} — {p.engine.reason}",
        *([f"a local driver JVM cetql starts: {p.engine.jvm}"] if p.engine.jvm else []),
        *([f"writer: {p.engine.writer}"] if p.engine.writer else []))
    _op(out, "Scan", *_scan(p))
    masks = [f"{m.column} = {show(m.definition)}" for m in p.filter.masks]
    _op(out, "Filter", f"every event: {show(p.filter.constant)}", *masks)
    _op(out, "Windows", *_windows(p))
    _op(out, "Exchange", *_partition(p))
    if p.stream is not None:
        _op(out, "Stateful", *_stateful(p))
    head, lines = _root(p)
    _op(out, "Detect" if isinstance(p.root, Detect) else "Aggregate", head, *lines)
    if not (isinstance(p.root, Detect) and p.root.strategy == Strategy.DISTRIBUTED and not p.root.split):
        _op(out, "Kernel", select.describe(kernel_spec(p)))
    return out
