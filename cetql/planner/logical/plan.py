"""The logical plan: a frozen tree of typed operators, each decision with its
reason.  `--explain` prints it beside the physical plan derived from it.

    Scan → Filter → Windows → Partition → Detect | Aggregate

Built from a `BoundQuery`, the run options, what is known of the inputs and
of the resources they run on, by the rules of `rules/` (see `build.build`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from enum import Enum, StrEnum
from typing import Generic, TypeVar

from cetql.base.errors import UsageError
from cetql.base.options import Algorithm, Completeness, Index, RunOptions, Sharing, Strategy, TrendSet, format_size
from cetql.language.units import UNIT_ALIASES, UNIT_SECONDS
from cetql.planner.semantics import ir
from cetql.planner.semantics.schema import Schema
from cetql.planner.semantics.sources import FileStamp, Source
from cetql.planner.semantics.template import Template

T = TypeVar("T")


class InvalidRows(StrEnum):
    """What happens to rows with an invalid time or an unreadable value."""

    REJECT = "reject"
    DROP = "drop"


class Numbers(StrEnum):
    """How aggregates leave the kernel."""

    EXACT_DECIMAL = "exact decimal"
    EXACT_STRING = "exact string"
    APPROXIMATE = "approximate"


class KeyMethod(StrEnum):
    """How an equivalence attribute of one variable (`[b.k]`) is enforced."""

    FILTER = "filter"  # the variable binds one event per trend: its key must not be null
    EDGE = "edge"  # its events are consecutive in a trend: an equal predicate on its own step
    PARTS = "parts"  # its events are apart: the kernel splits each group by the key


class Prefilter(StrEnum):
    """How the distributed strategy finds sources and sinks (ABI Algorithm 3)."""

    EQUAL = "equal-index"  # per attribute vertex: latest and earliest times (two aggregates, two joins)
    RANGE = "range-index"  # prefix and suffix extremes over the group's distinct times
    SEMI_JOIN = "semi-join"  # semi-joins with the whole step condition
    GRAPHFRAMES = "graphframes"  # GraphFrames' degrees over the (linear) edge list
    NONE = "none"  # ALL trends: every event starts a path, none is a sink
    RUNS = "template runs"  # any other pattern: runs over the template's transitions, completeness by kinds of runs


def display(choice) -> str:
    """A choice as --explain prints it."""
    if choice is None:
        return "none"
    if isinstance(choice, bool):
        return "yes" if choice else "no"
    if isinstance(choice, Enum):
        return str(choice.value)
    if isinstance(choice, int):
        return f"{choice:,}"
    return str(choice)


@dataclass(frozen=True)
class Decision(Generic[T]):
    """A choice the planner made (typed: an enum, a number, a flag), and why."""

    choice: T
    reason: str

    def __str__(self) -> str:
        return f"{display(self.choice)} — {self.reason}"


@dataclass(frozen=True)
class InputFacts:
    """What is known of one input: how it is named, whether it is read as
    text (CSV, JSON: cast by the reader), and its time column's type."""

    type_name: str | None  # the event type it is bound to (None: a single-type stream)
    label: str  # path, table or "a DataFrame"
    text: bool = False
    time_type: str | None = None  # the time column's type as the reader or Spark gives it
    nanos: bool = False  # a timestamp column with nanoseconds (read as epoch nanoseconds)
    streaming: bool = False  # a stream (DataFrame.isStreaming; `cetql run --stream`)
    source: Source | None = None  # local files as the one reader described them (None: a table or DataFrame)
    stamps: tuple[FileStamp, ...] = ()  # each file as it was when the plan was made (none: not files)


class LateEvents(StrEnum):
    """What a stream does with an event behind the watermark."""

    DROP = "counted and dropped"  # never folded into a window already answered


@dataclass(frozen=True)
class Delay:
    """How far behind the latest event time a stream's watermark runs, as
    given: `amount` in `unit` (ms, s, min, h, day, week), or with no unit in
    the time column's own units (seconds for timestamps), as WITHIN reads a
    duration."""

    amount: Decimal = Decimal(0)
    unit: str | None = None

    @classmethod
    def parse(cls, text, what: str = "watermark delay") -> Delay:
        """'10 minutes', '30s', 100 (None: 0); `what` names it in the message."""
        if text is None:
            return cls()

        words = str(text).strip().split()
        if len(words) == 1:  # "10s", "10"
            head = words[0].rstrip("abcdefghijklmnopqrstuvwxyz")
            words = [head, words[0][len(head) :]] if head != words[0] else words
        try:
            amount = Decimal(words[0])
            unit = UNIT_ALIASES[words[1].lower()] if len(words) == 2 else None
            ok = len(words) <= 2 and amount.is_finite() and amount >= 0
        except (InvalidOperation, KeyError, IndexError):
            ok = False
        if not ok:
            raise UsageError(f"{what} {text!r} is not a duration of zero or more, such as '10 minutes', '30 s' or 100")
        return cls(amount, unit)

    def millis(self, ms_per_unit: Decimal) -> int:
        """In milliseconds, rounded up: `ms_per_unit` is what one unit of
        the time column is (used when no unit was given)."""
        if self.unit is None:
            return math.ceil(self.amount * ms_per_unit)
        return math.ceil(self.amount * Decimal(str(UNIT_SECONDS[self.unit])) * 1000)

    def __str__(self) -> str:
        return f"{format(self.amount.normalize(), 'f')}{' ' + self.unit if self.unit else ''}"


@dataclass(frozen=True)
class Inputs:
    """What is known of the inputs when planning.  `typed` None: nothing is
    known yet (compile without --input)."""

    typed: bool | None = None  # inputs bound to type names, else one single-type stream
    types: tuple[str, ...] = ()  # the type names inputs are bound to
    schema: Schema | None = None  # their columns, merged
    time_kind: str | None = None  # "timestamp", "timestamp_ns" or "numeric"
    names: tuple[str, ...] = ()  # how each input is described (path, table, DataFrame)
    each: tuple[InputFacts, ...] = ()
    streaming: bool = False  # the inputs are streams: each window answered once, when the watermark passes it
    watermark: Delay | None = None  # streams: how far behind the latest event time the watermark runs (None: 0)

    @property
    def known(self) -> bool:
        return self.typed is not None

    def as_stream(self, watermark: Delay | None = None) -> Inputs:
        """These inputs read as streams (with this watermark delay)."""
        each = tuple(replace(f, streaming=True) for f in self.each)
        return replace(self, streaming=True, each=each, watermark=watermark or self.watermark)


@dataclass(frozen=True)
class Resources:
    """What is known of where the query runs.  `source` says where the facts
    came from; `assumed` that no session was seen (compile, explain before
    run): the plan then shows what it assumed."""

    executor_memory: str | None = None  # an executor's memory for Python, as Spark configures it
    task_slots: int = 1  # tasks one executor runs at once: they share that memory
    parallelism: int = 2  # tasks the whole session runs at once
    graphframes: bool = False  # the GraphFrames JVM package is on the session's classpath
    master: str | None = None  # the session's master (None: no session seen, the local one cetql starts)
    parquet: str | None = None  # a setting of Spark's Parquet writer the session changed ("key=value"), or None
    source: str = "Spark's defaults"
    assumed: bool = True


@dataclass(frozen=True)
class Streaming:
    """How a plan over streams runs (the `stream` rule): keyed by blocks of
    windows, in Spark's event time, each window answered once when the
    watermark passes its end."""

    block: Decision[int]  # windows a key holds (0: a key per window)
    clock: Decimal  # milliseconds of Spark's event-time clock per unit of the internal time column
    watermark: Decision[int]  # the watermark's delay, in milliseconds of that clock
    late: Decision[LateEvents]


# ---------------------------------------------------------------- operators


@dataclass(frozen=True)
class Scan:
    inputs: Inputs
    types: tuple[str, ...]  # the event types the pattern reads
    time_col: str
    id_col: str | None  # None: ids derived from input order
    invalid: Decision[InvalidRows]


@dataclass(frozen=True)
class StateFilter:
    """Which events may take one template position: its type (on typed
    inputs) and its vertex predicates."""

    position: str
    type: str
    negated: bool
    predicates: tuple[ir.VertexPredicate, ...]


@dataclass(frozen=True)
class Filter:
    child: Scan
    constant: tuple[ir.VertexPredicate, ...]  # on every event
    states: tuple[StateFilter, ...]


@dataclass(frozen=True)
class Windows:
    child: Filter
    window: ir.Window
    sharing: Decision[Sharing | None]  # None: tumbling windows, nothing to share
    block: int = 0  # with blocks: windows per block (the most windows an event falls in)
    propagate: bool = False  # with blocks: COUNT(*) of E+ counts every window of a block in one pass
    shared_graph: bool = False  # with blocks: detection builds a block's graph once, walks each window on it


@dataclass(frozen=True)
class Key:
    """A partition key: an attribute of every event; `output` names its
    output column (None: not in the output)."""

    attr: str
    output: str | None
    source: str  # "equivalence", "group-by" or both


@dataclass(frozen=True)
class SubKey:
    """An equivalence attribute of every event that splits a group inside
    the kernel (aggregation: keys that are not GROUP-BY columns)."""

    attr: str


@dataclass(frozen=True)
class VariableKey:
    """`[v.k]`: the events bound to `position` all share `attr`."""

    position: str
    attr: str
    method: Decision[KeyMethod]


@dataclass(frozen=True)
class Partition:
    child: Windows
    keys: tuple[Key, ...]
    subkeys: tuple[SubKey, ...]
    variable_keys: tuple[VariableKey, ...]
    partitions: Decision[int]  # Spark partitions the kernels run in
    reason: str


@dataclass(frozen=True)
class TransitionPlan:
    """One template transition and how a step along it is found."""

    source: str
    target: str
    predicates: tuple[ir.EdgePredicate, ...]
    index: Decision[Index]


@dataclass(frozen=True)
class GroupEstimate:
    """The largest (window, partition) group a detection would build, as
    estimated from the inputs' statistics before anything runs: its
    events, the run graph's nodes and edges, and the bytes one task would
    hold for them (the local strategy's graph)."""

    events: int
    nodes: int
    edges: int
    bytes: int

    def __str__(self) -> str:
        return f"{self.events:,} events, {self.nodes:,} nodes, {self.edges:,} edges, ~{format_size(self.bytes)} a group"


@dataclass(frozen=True)
class Detect:
    child: Partition
    template: Template
    transitions: tuple[TransitionPlan, ...]
    cross: tuple[ir.CrossPredicate, ...]
    trend_set: Decision[TrendSet]
    strategy: Decision[Strategy]
    guard: Decision[int]  # the most trends a (window, group) may return; 0: no limit
    with_rows: bool
    cost: str
    memory: Decision[int] | None = None  # the local strategy: bytes one task may hold (--memory-budget)
    max_edges: int | None = None  # a group's graph stores its edges up to this many
    batch_events: int = 1_000_000  # event ids in one output batch
    prefilter: Decision[Prefilter] | None = None  # the distributed strategy: sources and sinks
    estimate: Decision[GroupEstimate | None] | None = None  # the largest group, from the inputs' statistics
    split: Decision[int] | None = None  # distributed by cost: groups of at most this many events run locally

    @property
    def trends(self) -> TrendSet:
        return self.trend_set.choice


@dataclass(frozen=True)
class Aggregate:
    child: Partition
    template: Template
    transitions: tuple[TransitionPlan, ...]
    aggregates: tuple[ir.AggregateRef, ...]
    group_by: tuple[ir.KeyAttr, ...]
    trend_set: Decision[TrendSet]
    algorithm: Decision[Algorithm]
    complete: Decision[Completeness] | None  # how COMPLETE trends are told apart (None: ALL trends)
    numbers: Decision[Numbers]
    cost: str

    @property
    def trends(self) -> TrendSet:
        return self.trend_set.choice

    @property
    def approx(self) -> bool:
        return self.numbers.choice == Numbers.APPROXIMATE


Operator = Scan | Filter | Windows | Partition | Detect | Aggregate


@dataclass(frozen=True)
class LogicalPlan:
    query: ir.BoundQuery
    options: RunOptions
    resources: Resources
    root: Detect | Aggregate
    stream: Decision[Streaming | None] | None = None  # None (or a None choice): batch inputs

    def operators(self) -> list[Operator]:
        """Scan first, the root last."""
        out, node = [], self.root
        while node is not None:
            out.append(node)
            node = getattr(node, "child", None)
        return out[::-1]

    def find(self, cls):
        return next((op for op in self.operators() if isinstance(op, cls)), None)

    @property
    def kind(self) -> ir.Kind:
        return self.query.kind
