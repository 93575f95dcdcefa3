"""The physical plan: what runs, as frozen values with typed fields — the
one object every later stage reads.

    PhysicalPlan(scan, filter, windows, partition, root)

Built from the logical plan by `build.physical` (pure), printed by
`--explain` beside the logical plan, compiled to Spark by
`planner.spark.compiler` (which decides nothing), and the kernels' spec is
derived from it by `kernel.kernel_spec` (pure).  Column names are internal
names chosen against the input's (`Names`), expressions are kernel
expressions (`kernels.spec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from cetql.base.options import Algorithm, Compiled, Completeness, Engine, Exact, Kernel, Sharing, Strategy, TrendSet
from cetql.kernels import spec as K
from cetql.planner.logical.plan import FileStamp, InvalidRows, LateEvents, LogicalPlan, Numbers, Prefilter
from cetql.planner.physical.ranges import TimeRange


class TimeKind(StrEnum):
    """What the internal time column holds."""

    NUMERIC = "numeric"  # the time column's own numbers
    TIMESTAMP = "timestamp"  # microseconds since the epoch
    TIMESTAMP_NS = "timestamp_ns"  # nanoseconds since the epoch


class TimeCast(StrEnum):
    """How one input's time column becomes the internal time."""

    NUMBER = "number"  # a number, as it is
    MICROS = "timestamp to microseconds"  # unix_micros(ts)
    MICROS_TO_NANOS = "timestamp to nanoseconds"  # unix_micros(ts) * 1000 (beside a nanosecond input)
    NANOS = "nanoseconds"  # the reader's epoch nanoseconds, as they are
    EMPTY = "empty text"  # no value seen (an empty input): text read as a double


class Arithmetic(StrEnum):
    """How events are assigned to windows: exactly, either way."""

    INTEGER = "integer"  # integral times and window sizes: 64-bit integers
    DECIMAL = "decimal"  # fractional sizes or times: decimals (the sizes as written, never binary fractions)


class Bounds(StrEnum):
    """How window_start / window_end are shown."""

    INTEGER = "integer"  # bigint
    DOUBLE = "double"  # a double time column and integral sizes
    DECIMAL = "decimal"  # DECIMAL(38, scale): fractional sizes, printed as the decimals they are
    TIMESTAMP = "timestamp"  # from microseconds
    TIMESTAMP_NS = "timestamp from nanoseconds"  # shown to the microsecond


@dataclass(frozen=True)
class Names:
    """Internal column names, all starting with `prefix` (which no input
    column starts with, so they can never replace a user's column)."""

    prefix: str = "__"

    @property
    def id(self) -> str:
        return self.prefix + "id"

    @property
    def time(self) -> str:
        return self.prefix + "t"

    @property
    def type(self) -> str:
        return self.prefix + "type"

    @property
    def window(self) -> str:
        return self.prefix + "wk"

    @property
    def row(self) -> str:
        return self.prefix + "row"

    @property
    def window_lo(self) -> str:
        return self.prefix + "wlo"

    @property
    def window_hi(self) -> str:
        return self.prefix + "whi"

    @property
    def bad(self) -> str:
        return self.prefix + "bad"

    def key(self, i: int) -> str:
        return f"{self.prefix}k{i}"

    def mask(self, position: str) -> str:
        return f"{self.prefix}m_{position}"

    def lval(self, i: int) -> str:
        return f"{self.prefix}l{i}"

    def h(self, i: int) -> str:
        return f"{self.prefix}h{i}"

    def attr(self, name: str) -> str:
        return f"{self.prefix}a_{name}"

    def value(self, i: int) -> str:
        return f"{self.prefix}v{i}"

    def subkey(self, i: int) -> str:
        return f"{self.prefix}q{i}"

    def state_key(self, i: int) -> str:
        return f"{self.prefix}s{i}"

    @property
    def event_time(self) -> str:
        return self.prefix + "et"


# ---------------------------------------------------------------- operators


@dataclass(frozen=True)
class ScanInput:
    """One input and how its time column is read."""

    type_name: str | None  # the event type it is bound to (None: a single-type stream)
    label: str
    time_cast: TimeCast
    text: bool  # read as text and cast by the reader
    stamps: tuple[FileStamp, ...] = ()  # its files as planned: reading them refuses a file changed since


@dataclass(frozen=True)
class Scan:
    inputs: tuple[ScanInput, ...]
    time_col: str
    id_col: str | None  # None: ids derived from input order (monotonically_increasing_id)
    time_kind: TimeKind
    checked: tuple[str, ...]  # input columns the plan reads: an unreadable value there is an invalid row
    nan_times: bool  # the internal time is floating: NaN and infinite times are invalid too
    invalid: InvalidRows
    unique_ids: bool = True  # a user's ids checked unique across the inputs (not a stream's: no end to check over)


@dataclass(frozen=True)
class Mask:
    position: str
    column: str
    definition: K.Expr


@dataclass(frozen=True)
class Filter:
    constant: K.Expr | None  # a condition on every event
    masks: tuple[Mask, ...]  # per position: may an event take it (its type and vertex predicates)


@dataclass(frozen=True)
class Windows:
    """Windows [k*slide, k*slide + length) in time-column units; an event's
    windows are k_lo … k_hi with k_hi = floor(t / slide) and
    k_lo = floor((t - length) / slide) + 1, computed in `arithmetic`."""

    arithmetic: Arithmetic
    length: int | Decimal  # in time-column units (microseconds or nanoseconds for timestamps)
    slide: int | Decimal
    scale: int  # DECIMAL arithmetic: the decimal places of the times (the sizes' own, or 18 for doubles)
    bounds: Bounds
    bounds_scale: int  # Bounds.DECIMAL: decimal places of the bounds
    per_event: int  # the most windows an event falls in
    sharing: Sharing | None  # None: tumbling
    block: int  # blocks: windows per block (0: each window its own group)
    times: TimeRange | None = None  # the internal times these windows are exact for; others are invalid rows
    why: str = ""  # why the arithmetic is DECIMAL (fractional sizes, or the time column's type); "" for INTEGER


@dataclass(frozen=True)
class KeyColumn:
    column: str
    attr: str
    output: str | None  # its output column (None: not in the output)


@dataclass(frozen=True)
class SubKeyColumn:
    column: str
    attr: str


@dataclass(frozen=True)
class StateKeyColumn:
    state: str
    column: str
    attr: str


@dataclass(frozen=True)
class Partition:
    """Spark partitions the rows by `group` into `partitions` partitions and
    sorts each by `group`, time, id; a kernel group is one value of `group`."""

    keys: tuple[KeyColumn, ...]  # rows with a null key are in no trend
    subkeys: tuple[SubKeyColumn, ...]  # of every event: split a group in the kernel (aggregation)
    state_keys: tuple[StateKeyColumn, ...]  # of one variable's events: split a group in the kernel
    partitions: int
    group: tuple[str, ...]  # the window (or block) column, then the key columns


@dataclass(frozen=True)
class Derived:
    column: str
    definition: K.Expr


@dataclass(frozen=True)
class Detect:
    strategy: Strategy
    trend_set: TrendSet
    template: K.TemplateSpec
    derived: tuple[Derived, ...]  # lval, h and attribute columns the kernel reads
    max_trends: int  # 0: no limit
    max_edges: int | None
    batch_events: int
    shared_graph: bool
    with_rows: bool
    prefilter: Prefilter | None  # the distributed strategy
    split: int | None = None  # distributed: groups of at most this many events run locally (None: none does)
    compiled: Compiled = Compiled.AUTO  # where the kernels' compiled loops run (`kernels.select`)


@dataclass(frozen=True)
class Aggregate:
    trend_set: TrendSet
    template: K.TemplateSpec
    derived: tuple[Derived, ...]
    targets: tuple[K.Target, ...]
    algorithm: Algorithm
    complete: Completeness
    kernel: Kernel
    numbers: Numbers
    propagate: bool
    compiled: Compiled = Compiled.AUTO  # where the kernels' compiled loops run (`kernels.select`)

    @property
    def approx(self) -> bool:
        return self.numbers == Numbers.APPROXIMATE

    @property
    def exact(self) -> Exact:
        return Exact.STRING if self.numbers == Numbers.EXACT_STRING else Exact.DECIMAL


class WindowKeys(StrEnum):
    """How a stream's windows reach its keys (the Windows operator's choice)."""

    ONE = "one"  # tumbling: an event is in one window, a key per window
    COPY = "copy"  # a key per window, an event copied into each of its windows
    BLOCKS = "blocks"  # a key per block of windows, an event in at most two blocks


class StreamState(StrEnum):
    """What the stateful operator keeps for a key."""

    EVENTS = "its events of open windows, as Arrow IPC chunks (a list state), and the watermark it last closed at"


class StreamTimers(StrEnum):
    """When a key's windows are answered."""

    EARLIEST = "one a key, at its earliest open window's end: it answers every window the watermark has passed"


@dataclass(frozen=True)
class Stateful:
    """A stream's stateful operator (transformWithStateInPandas in event
    time, append mode), between the kernel input and the kernel: keyed by
    the kernel's group, the events of open windows kept in state, the same
    kernels run on a key's windows once the watermark passes their end."""

    key: tuple[str, ...]  # the kernel's group: the window (or block) column, then the key columns
    windows: WindowKeys
    event_time: str  # Spark's event-time column: a timestamp of the clock, watermarked
    clock: Decimal  # milliseconds of the event-time clock per unit of the internal time
    watermark_ms: int  # the watermark's delay behind the latest event time
    state: StreamState
    timers: StreamTimers
    late: LateEvents


@dataclass(frozen=True)
class EngineChoice:
    """Where a plan runs, and why (`engine.choose` decides it)."""

    engine: Engine  # LOCAL or SPARK, never AUTO
    reason: str
    # Spark: a driver JVM cetql starts itself (local master) compiles with C2 for a long run, C1 only for a
    # short one (`engine.LONG_RUN_EVENTS`); the reason as `--explain` says it ("" where it does not apply)
    long_run: bool = False
    jvm: str = ""
    # Spark, Parquet files: the kernels' Python workers write them (a Spark on this machine), else Spark's
    # writer; the reason as `--explain` says it ("" where the result is not Parquet files on Spark)
    workers_write: bool = False
    writer: str = ""


@dataclass(frozen=True)
class PhysicalPlan:
    logical: LogicalPlan
    names: Names
    scan: Scan
    filter: Filter
    windows: Windows
    partition: Partition
    root: Detect | Aggregate
    assumed: tuple[str, ...] = ()  # facts the plan assumed, not knew (no input or session seen)
    stream: Stateful | None = None  # streams: the stateful operator (None: batch)
    engine: EngineChoice = EngineChoice(Engine.SPARK, "the result is a Spark DataFrame")  # where it runs (`engine`)

    @property
    def detect(self) -> Detect | None:
        return self.root if isinstance(self.root, Detect) else None

    @property
    def kind(self):
        return self.logical.kind

    @property
    def query(self):
        return self.logical.query
