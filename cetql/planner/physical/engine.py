"""Where a plan runs: in this process over Arrow (`planner.local`), or on
Spark (`planner.spark`) — decided once, here, and shown by `--explain`.

The in-process engine runs the very kernels Spark's Python workers run, on
one Arrow table, and spells every step before them (scan, filter, windows,
keys, sort) in numpy and Arrow with Spark SQL's meaning.  It is chosen only
where that meaning is certain and the data is small enough for one process:

- the caller writes the result as Parquet files itself (`cetql run --output
  DIR`, format parquet): a DataFrame, a printed table and CSV/JSON text are
  Spark's to make;
- batch inputs of local Parquet files whose columns the plan reads are
  64-bit whole numbers, doubles, text, booleans or timestamps to the microsecond
  (with a zone, or without one in UTC), each column of one Arrow type in
  every input, at most `LOCAL_MAX_BYTES` with every window copy;
- windows in 64-bit integers; detection by the local strategy, with an id
  column (Spark derives ids from its own partitioning: only named ids are
  the same in both engines), without `--with-rows`;
- every filter and column definition in the expressions `kind` types
  (comparisons, AND/OR/NOT, IS NOT NULL, arithmetic over numbers).

`--engine auto` (what `cetql run` asks for) takes the in-process engine
where all of that holds and says why not otherwise; `--engine local` is
refused with the reason where it does not hold.
"""

from __future__ import annotations

from decimal import Decimal

from cetql.base.errors import UsageError
from cetql.base.options import Engine, Sink, Strategy, format_size
from cetql.kernels import spec as K
from cetql.planner.logical import plan as L
from cetql.planner.physical.plan import Arithmetic, Detect, EngineChoice
from cetql.planner.physical.show import show

LOCAL_MAX_BYTES = 256 << 20  # the input's columns as Parquet encodes them uncompressed, times the windows an event is in

# Arrow types (as pyarrow prints them) the in-process engine reads, by kind
# (narrower numbers are Spark's own types: its arithmetic and comparisons on them differ from 64 bits')
_KINDS = {"int64": "int", "double": "float", "string": "string", "large_string": "string", "bool": "bool"}
_TIMESTAMPS = ("timestamp[s", "timestamp[ms", "timestamp[us")


def arrow_kind(arrow_type: str, time_zone: str) -> str | None:
    """The kind of value an input column of this Arrow type holds for the
    in-process engine: int, float, string, bool or timestamp; None where
    only Spark reads it as the contract says (decimals, dates, nanoseconds,
    unsigned or nested types, wall-clock times outside UTC)."""
    if arrow_type in _KINDS:
        return _KINDS[arrow_type]
    if arrow_type.startswith(_TIMESTAMPS):
        zoned = ", tz=" in arrow_type
        return "timestamp" if zoned or time_zone in ("UTC", "+00:00", "-00:00") else None
    return None


def kind(e: K.Expr | None, types: dict[str, str]) -> str | None:
    """The kind of an expression's value (int, float, string, bool,
    timestamp or null) where the in-process engine evaluates it as Spark
    does, else None.  `types`: each column's kind."""
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
        case K.Col(slot="self", column=c):
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
            if None in (ka, kb) or "timestamp" in (ka, kb):
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


def column_kinds(each: tuple[L.InputFacts, ...], names, time_zone: str) -> dict[str, str | None]:
    """Each column's kind for the in-process engine: the inputs' (None where
    two inputs hold it with two Arrow types: Spark would widen one), and the
    scan's own (time, id, type name)."""
    arrow: dict[str, set[str]] = {}
    for facts in each:
        for name, t in facts.files.arrow:
            arrow.setdefault(name, set()).add(t)
    out = {name: arrow_kind(next(iter(ts)), time_zone) if len(ts) == 1 else None for name, ts in arrow.items()}
    out[names.type] = "string"
    out[names.time] = "int"
    return out


def choose(logical: L.LogicalPlan, names, scan, filt, windows, root, stream) -> EngineChoice:
    """The engine and why (see the module); `--engine local` where it cannot
    run is a UsageError with the reason."""
    o = logical.options
    if o.engine == Engine.SPARK:
        why = "the result is a Spark DataFrame" if o.sink == Sink.DATAFRAME else "asked for (--engine spark)"
        return EngineChoice(Engine.SPARK, why)
    refusal = _why_not_local(logical, names, scan, filt, windows, root, stream)
    if refusal is None:
        each = logical.find(L.Scan).inputs.each
        rows, size = sum(f.files.rows for f in each), sum(f.files.size for f in each)
        copies = windows.per_event if windows.sharing is not None else 1
        return EngineChoice(Engine.LOCAL, f"in this process over Arrow, no Spark: {rows:,} rows of local Parquet, "
                                          f"{format_size(size * copies)} with window copies (at most "
                                          f"{format_size(LOCAL_MAX_BYTES)})")  # fmt: skip
    if o.engine == Engine.LOCAL:
        raise UsageError(f"--engine local cannot run this query: {refusal}; leave --engine out (or give --engine "
                         "spark) to run it on Spark")  # fmt: skip
    return EngineChoice(Engine.SPARK, f"default: {refusal}")


def _why_not_local(logical, names, scan, filt, windows, root, stream) -> str | None:
    o = logical.options
    inputs = logical.find(L.Scan).inputs
    if o.sink != Sink.PARQUET:
        return f"the result is {o.sink.value}, which Spark makes"
    if stream is not None or inputs.streaming:
        return "the input is a stream"
    if not inputs.known:
        return "the inputs are not known (no --input)"
    for facts in inputs.each:
        if facts.files is None:
            return f"input {facts.label} is not local Parquet files"
    size = sum(f.files.size for f in inputs.each)
    copies = windows.per_event if windows.sharing is not None else 1
    if size * copies > LOCAL_MAX_BYTES:
        return (f"the input is {format_size(size)} uncompressed, {format_size(size * copies)} with window copies: "
                f"more than {format_size(LOCAL_MAX_BYTES)} for one process")  # fmt: skip
    if windows.arithmetic != Arithmetic.INTEGER:
        return "windows need decimal arithmetic (fractional times or sizes)"
    types = column_kinds(inputs.each, names, o.time_zone)
    for c in (scan.time_col, *([scan.id_col] if scan.id_col else ()), *scan.checked):
        if types.get(c) is None:
            arrow = {t for f in inputs.each for name, t in f.files.arrow if name == c} or {"absent"}
            return f"column {c} is {' in one input and '.join(sorted(arrow))}, which only Spark reads as the query means"
    if isinstance(root, Detect):
        if root.strategy != Strategy.LOCAL:
            return "detection runs by the distributed strategy"
        if root.with_rows:
            return "--with-rows (the rows as structs are Spark's)"
        if scan.id_col is None:
            return "ids from input order are Spark's own (name an id column with --id-col)"
    types[names.id] = types.get(scan.id_col) if scan.id_col else "int"
    exprs = [("every event", filt.constant), *((m.column, m.definition) for m in filt.masks),
             *((d.column, d.definition) for d in root.derived)]  # fmt: skip
    for what, e in exprs:
        if e is not None and kind(e, types) is None:
            return f"{what} = {show(e)} is evaluated by Spark only"
    return None

