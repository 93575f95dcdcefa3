"""Where a plan runs — decided once, here, and shown by `--explain`.

What a plan needs of an engine (`Requirements`, read off the physical plan:
its inputs, sink, time casts, window arithmetic, strategy, expressions) is
held against what each engine declares it runs (`Capabilities`, a table
owned by the backend: `backends/embedded/capabilities.py`,
`backends/spark/capabilities.py`, as ibis backends declare the operations
they support).  `--engine auto` takes the first engine, in the order the
surface offers them, whose table covers every requirement; `--engine
embedded` or `spark` insists, and is refused with the requirement that is
not met.  Nothing else in the code asks which engine runs: a backend reads
`plan.engine`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from decimal import Decimal

from cetql.base.errors import UsageError
from cetql.base.options import Engine, Sink, Strategy, format_size
from cetql.kernels import spec as K
from cetql.planner.logical import plan as L
from cetql.planner.physical.plan import Arithmetic, Bounds, Detect, EngineChoice, TimeCast
from cetql.planner.physical.show import show
from cetql.planner.semantics.sources import Source

ANY = None  # a table entry that takes every value


@dataclass(frozen=True)
class Capabilities:
    """What an engine runs.  A `frozenset` entry lists the values it takes
    (`ANY`: all of them); a bool says whether it takes the feature at all."""

    engine: Engine
    name: str  # as `--explain` says it
    sinks: frozenset[Sink]
    formats: frozenset[str]  # input formats: csv, json, parquet, table, dataframe
    streams: bool
    spark_session: bool  # runs where a Spark session was asked for (--master, --remote, --partitions)
    time_casts: frozenset[TimeCast]
    arithmetic: frozenset[Arithmetic]
    bounds: frozenset[Bounds]
    strategies: frozenset[Strategy]
    with_rows: bool
    ids_from_order: bool  # ids derived from the input order (no --id-col)
    column_types: frozenset[str] | None  # Spark type names of the columns it reads (ANY: every type)
    named_zones: bool  # wall-clock times read in a named zone (daylight-saving rules)
    expressions: bool | None  # ANY: every expression; False: only those `kind` types (no decimal, no timestamp)
    max_bytes: int | None  # the inputs' size with window copies it takes (ANY: no limit)


@dataclass(frozen=True)
class Requirements:
    """What a plan needs of an engine, read off the plan (`requirements`)."""

    sink: Sink
    formats: frozenset[str]
    stream: bool
    spark_asked: str | None
    time_casts: frozenset[TimeCast]
    arithmetic: Arithmetic
    arithmetic_why: str  # why it is not INTEGER (the plan's Windows)
    bounds: Bounds
    strategy: Strategy | None
    with_rows: bool
    ids_from_order: bool
    column_types: tuple[tuple[str, str], ...]  # (column, Spark type) of the columns read
    named_zone: str | None  # a named zone naive times are read in (None: UTC or a fixed offset)
    untyped: str | None  # an expression `kind` cannot type ("what = text"), None if every one is typed
    bytes: int | None  # the inputs' size with window copies (None: not known)
    rows: int | None  # the inputs' rows (None: not known), without window copies
    copies: int = 1  # the rows an event becomes, a row a window it is in (1: windows shared as blocks)
    master: str | None = None  # the session's master (None: no session seen)
    parquet: str | None = None  # a setting of Spark's Parquet writer the session changed


def requirements(logical: L.LogicalPlan, names, scan, filt, windows, root, stream) -> Requirements:
    o = logical.options
    inputs = logical.find(L.Scan).inputs
    sources = [f.source for f in inputs.each]
    formats = frozenset(s.format if s is not None else ("dataframe" if f.label == "a DataFrame" else "table")
                        for s, f in zip(sources, inputs.each))  # fmt: skip
    if not inputs.known:
        formats = frozenset({"unknown"})
    read = (*scan.checked,) if not getattr(root, "with_rows", False) else tuple(
        c for s in sources if s is not None for c in (col.name for col in s.columns))  # fmt: skip
    types = {}
    for s in sources:
        for c in s.columns if s is not None else ():
            if c.name in read:
                types.setdefault(c.name, "timestamp(ns)" if c.nanos else c.type)
    known = all(s is not None for s in sources) and inputs.known
    copies = windows.per_event if windows.sharing is not None else 1
    size = sum(s.size for s in sources) * copies if known else None
    rows = sum(s.rows for s in sources) if known and all(s.rows is not None for s in sources) else None
    naive = any(c.naive or (s.text and c.cls == "timestamp") for s in sources if s is not None for c in s.columns
                if c.name in read)  # fmt: skip
    zone = o.time_zone if naive and not _fixed(o.time_zone) else None
    return Requirements(
        sink=o.sink, formats=formats, stream=stream is not None or inputs.streaming, spark_asked=o.spark_asked,
        time_casts=frozenset(si.time_cast for si in scan.inputs), arithmetic=windows.arithmetic,
        arithmetic_why=windows.why,
        bounds=windows.bounds, strategy=root.strategy if isinstance(root, Detect) else None,
        with_rows=isinstance(root, Detect) and root.with_rows,
        ids_from_order=scan.id_col is None and isinstance(root, Detect),
        column_types=tuple(sorted(types.items())), named_zone=zone,
        untyped=_untyped(names, scan, filt, root, sources), bytes=size, rows=rows, copies=copies,
        master=logical.resources.master, parquet=logical.resources.parquet,
    )  # fmt: skip


def _fixed(zone: str) -> bool:
    """UTC, or a fixed offset (`+05:30`): wall-clock times there are plain arithmetic."""
    return zone in ("UTC", "Etc/UTC", "GMT", "Z") or (len(zone) == 6 and zone[0] in "+-" and zone[3] == ":")


def refusal(need: Requirements, caps: Capabilities) -> str | None:
    """The first requirement `caps` does not meet, said as a reason; None
    when the engine runs the plan."""
    if need.spark_asked and not caps.spark_session:
        return f"a Spark session was asked for ({need.spark_asked})"
    if caps.column_types is not ANY:
        for name, t in need.column_types:
            if t not in caps.column_types:
                return f"column {name} is {t}"
    checks = [
        (need.sink in caps.sinks, f"the result is {need.sink.value}"),
        (not need.stream or caps.streams, "the input is a stream"),
        (caps.formats is ANY or need.formats <= caps.formats,
         f"the input is {' and '.join(sorted(need.formats - (caps.formats or frozenset())))}"),
        (caps.arithmetic is ANY or need.arithmetic in caps.arithmetic,
         f"windows need {need.arithmetic.value} arithmetic: {need.arithmetic_why}"),
        (caps.bounds is ANY or need.bounds in caps.bounds, f"window bounds are shown as {need.bounds.value}"),
        (caps.time_casts is ANY or need.time_casts <= caps.time_casts,
         f"times are read as {', '.join(sorted(t.value for t in need.time_casts))}"),
        (need.strategy is None or caps.strategies is ANY or need.strategy in caps.strategies,
         f"detection runs by the {need.strategy and need.strategy.value} strategy"),
        (not need.with_rows or caps.with_rows, "--with-rows"),
        (not need.ids_from_order or caps.ids_from_order,
         "ids from input order are Spark's own (name an id column with --id-col)"),
        (need.named_zone is None or caps.named_zones,
         f"times without a zone are read in {need.named_zone} (its daylight-saving rules)"),
        (caps.expressions is not False or need.untyped is None, f"{need.untyped} is evaluated by Spark only"),
    ]  # fmt: skip
    for ok, why in checks:
        if not ok:
            return why
    if caps.max_bytes is not ANY:
        if need.bytes is None:
            return "the inputs' size is not known"
        if need.bytes > caps.max_bytes:
            return (f"the input is {format_size(need.bytes)} with window copies: more than "
                    f"{format_size(caps.max_bytes)} for one process")  # fmt: skip
    return None


# Events (with window copies) from which a local driver JVM compiles with C2: C1 alone starts faster and
# wins a run of seconds, C2's code pays back from a few million events (bench/RESULTS.md, "Start-up
# settings", A1 W1000 exact: 33.2 -> 24.8 s at 5M events, 87.9 -> 47.4 s at 20M; at 1M the same).  A text input's rows are
# guessed from its bytes at TEXT_ROW_BYTES a row.
LONG_RUN_EVENTS = 2_000_000
TEXT_ROW_BYTES = 64


REMOTE = ("--remote", "SPARK_REMOTE")  # the flags that give the run to a Spark Connect server: no local JVM


def with_jvm(choice: EngineChoice, need: Requirements) -> EngineChoice:
    """`choice` with the local driver JVM's compiler decided (Spark only;
    none for a run a Spark Connect server takes, which starts no JVM here)."""
    if choice.engine != Engine.SPARK or need.spark_asked in REMOTE:
        return choice
    events = need.rows * need.copies if need.rows is not None else None
    how = f"{events:,} events with window copies" if events is not None else ""
    if events is None and need.bytes is not None:
        events = need.bytes // TEXT_ROW_BYTES
        how = f"~{events:,} events with window copies ({format_size(need.bytes)} of input)"
    if events is None:
        return replace(choice, jvm="C1 only: a short run (the inputs' size is not known)")
    long_run = events >= LONG_RUN_EVENTS
    why = f"a long run, {how}" if long_run else f"a short run, {how}"
    return replace(choice, long_run=long_run, jvm=f"{'C2' if long_run else 'C1 only'}: {why}")


def with_writer(choice: EngineChoice, need: Requirements) -> EngineChoice:
    """`choice` with the writer of Parquet files decided (Spark only): the
    kernels' Python workers write the result's files themselves where they
    share this machine's folders (a local master: cetql's own session, or
    a serve's whose master is local), the kernels' batches are the result
    (`backends/arrow`: integer window arithmetic, the local strategy, no
    rows carried) and the session keeps Spark's Parquet settings (the
    files are those Spark's writer writes by default), else Spark's writer."""
    if choice.engine != Engine.SPARK or need.sink != Sink.PARQUET:
        return choice
    why = None
    if need.stream:
        why = "a stream's files are Spark's checkpointed sink"
    elif need.spark_asked in ("--master", *REMOTE):
        why = f"{need.spark_asked}: the executors may not share this machine's folders"
    elif need.master is not None and not need.master.startswith("local"):
        why = f"the session's master is {need.master}: its executors may not share this machine's folders"
    elif need.parquet is not None:
        why = f"the session sets {need.parquet}"
    elif need.strategy not in (None, Strategy.LOCAL):
        why = "the distributed strategy's trends are joined by Spark, not made by a kernel"
    elif need.with_rows:
        why = "--with-rows carries each event's row, Spark's struct"
    elif need.arithmetic != Arithmetic.INTEGER:
        why = f"window bounds in {need.arithmetic.value} arithmetic are Spark's"
    if why is not None:
        return replace(choice, writer=f"Spark's Parquet writer: {why}")
    return replace(choice, workers_write=True,
                   writer="the kernels' Python workers write the Parquet files (a Spark on this machine): the "
                          "kernels' Arrow batches straight to the files, not through the JVM")  # fmt: skip


def choose(need: Requirements, offered: tuple[Capabilities, ...], asked: Engine) -> EngineChoice:
    """The engine and why: `asked` (refused with the reason where it cannot
    run the plan), or with AUTO the first of `offered` that can; on Spark,
    with the compiler of a local driver JVM cetql starts (`with_jvm`) and
    the writer of Parquet files (`with_writer`)."""
    return with_writer(with_jvm(_choose(need, offered, asked), need), need)


def _choose(need: Requirements, offered: tuple[Capabilities, ...], asked: Engine) -> EngineChoice:
    by_engine = {c.engine: c for c in offered}
    if asked != Engine.AUTO:
        caps = by_engine.get(asked)
        if caps is None:
            return EngineChoice(asked, _asked_reason(need, asked))
        why = refusal(need, caps)
        if why is not None:
            flag = asked.value
            raise UsageError(f"--engine {flag} cannot run this query: {why}; leave --engine out to run it where it "
                             "can")  # fmt: skip
        return EngineChoice(asked, _asked_reason(need, asked))
    refused = []
    for caps in offered:
        why = refusal(need, caps)
        if why is None:
            said = "; ".join(f"not {c}: {w}" for c, w in refused)
            return EngineChoice(caps.engine, said or _taken(need, caps))
        refused.append((caps.name, why))
    return EngineChoice(Engine.SPARK, "; ".join(f"not {c}: {w}" for c, w in refused) or "the only engine")


def _asked_reason(need: Requirements, asked: Engine) -> str:
    if asked == Engine.SPARK and need.sink == Sink.DATAFRAME:
        return "the result is a Spark DataFrame"
    return f"asked for (--engine {asked.value})"


def _taken(need: Requirements, caps: Capabilities) -> str:
    if caps.engine != Engine.EMBEDDED:
        return f"{caps.name}"
    size = f", {format_size(need.bytes)} with window copies" if need.bytes is not None else ""
    rows = f"{need.rows:,} rows of " if need.rows is not None else ""
    return f"{caps.name}, no Spark: {rows}{' and '.join(sorted(need.formats))}{size}"


def capability_fields() -> tuple[str, ...]:
    """The table's entries (the capability test walks them)."""
    return tuple(f.name for f in fields(Capabilities))


# ---------------------------------------------------------------- expression kinds


def column_kind(spark_type: str) -> str | None:
    """The kind of value a column of this Spark type holds for `kind`."""
    return {"bigint": "int", "int": "int", "smallint": "int", "tinyint": "int", "double": "float",
            "float": "float", "string": "string", "boolean": "bool"}.get(spark_type)  # fmt: skip


def kind(e: K.Expr | None, types: dict[str, str]) -> str | None:
    """The kind of an expression's value (int, float, string, bool or null)
    where every engine evaluates it alike (no decimals, no timestamps, no
    comparison of text with a number), else None.  `types`: each column's kind."""
    match e:
        case None:
            return "bool"
        case K.Lit(value=v):
            if v is None:
                return "null"
            if isinstance(v, bool):
                return "bool"
            if isinstance(v, int):
                return "int" if -(2**63) <= v < 2**63 else None
            if isinstance(v, (float, Decimal)):
                return "float"
            return "string" if isinstance(v, str) else None
        case K.Col(column=c):
            return types.get(c)
        case K.Neg(operand=x):
            k = kind(x, types)
            return k if k in ("int", "float", "null") else None
        case K.Arith(op=op, left=a, right=b):
            ka, kb = kind(a, types), kind(b, types)
            if ka not in ("int", "float", "null") or kb not in ("int", "float", "null"):
                return None
            return "float" if op == "/" or "float" in (ka, kb) else "int" if "int" in (ka, kb) else "null"
        case K.Cmp(left=a, right=b):
            ka, kb = kind(a, types), kind(b, types)
            numbers = {"int", "float"}
            if None in (ka, kb):
                return None
            if "null" in (ka, kb) or ka == kb or (ka in numbers and kb in numbers):
                return "bool"
            return None
        case K.And(items=xs) | K.Or(items=xs):
            return "bool" if all(kind(x, types) in ("bool", "null") for x in xs) else None
        case K.Not(operand=x):
            return "bool" if kind(x, types) in ("bool", "null") else None
        case K.IsNotNull(operand=x):
            return "bool" if kind(x, types) is not None else None
    return None


def _untyped(names, scan, filt, root, sources: list[Source | None]) -> str | None:
    types: dict[str, str] = {}
    for s in sources:
        for c in s.columns if s is not None else ():
            k = column_kind("timestamp(ns)" if c.nanos else c.type)
            if c.name in types and types[c.name] != k:
                k = None
            types[c.name] = k
    types[names.type] = "string"
    types[names.time] = "int"
    types[names.id] = types.get(scan.id_col) if scan.id_col else "int"
    exprs = [("every event", filt.constant), *((m.column, m.definition) for m in filt.masks),
             *((d.column, d.definition) for d in root.derived)]  # fmt: skip
    for what, e in exprs:
        if e is not None and kind(e, types) is None:
            return f"{what} = {show(e)}"
    return None
