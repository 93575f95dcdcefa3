"""The logical plan: a frozen tree of typed operators, each decision with its
reason.  This is the object `--explain` prints and the Spark compiler runs.

    Scan → Filter → Windows → Partition → Detect | Aggregate

Built from a `BoundQuery`, the run options and what is known of the inputs
by the rules in `rules.py` (see `build.build`).
"""

from __future__ import annotations

from dataclasses import dataclass

from cetql.options import RunOptions, TrendSet

from ..semantics import ir
from ..semantics.schema import Schema
from ..semantics.template import Template


@dataclass(frozen=True)
class Decision:
    """A choice the planner made, and why (shown by --explain)."""

    choice: str
    reason: str

    def __str__(self) -> str:
        return f"{self.choice} — {self.reason}"


@dataclass(frozen=True)
class Inputs:
    """What is known of the inputs when planning.  `typed` None: nothing is
    known yet (compile without --input)."""

    typed: bool | None = None  # inputs bound to type names, else one single-type stream
    types: tuple[str, ...] = ()  # the type names inputs are bound to
    schema: Schema | None = None  # their columns, merged
    time_kind: str | None = None  # "timestamp" or "numeric"
    names: tuple[str, ...] = ()  # how each input is described (path, table, DataFrame)
    executor_memory: str | None = None  # the session's executor memory as configured (where kernels run)
    task_slots: int = 1  # tasks one executor runs at once: they share that memory

    @property
    def known(self) -> bool:
        return self.typed is not None


# ---------------------------------------------------------------- operators


@dataclass(frozen=True)
class Scan:
    inputs: Inputs
    types: tuple[str, ...]  # the event types the pattern reads
    time_col: str
    id_col: str | None  # None: ids derived from input order
    invalid: Decision  # what happens to rows with an invalid time or value


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
    sharing: Decision  # "none" (tumbling), "copy" or "blocks"
    block: int = 0  # with "blocks": windows per block (the most windows an event falls in)
    propagate: bool = False  # with "blocks": COUNT(*) of E+ counts every window of a block in one pass
    shared_graph: bool = False  # with "blocks": detection builds a block's graph once, walks each window on it


@dataclass(frozen=True)
class Key:
    """A partition key: an attribute of every event; `output` names its
    output column (None: not in the output)."""

    attr: str
    output: str | None
    source: str  # "equivalence", "group-by" or both


@dataclass(frozen=True)
class SubKey:
    """An equivalence attribute that splits a group inside the kernel:
    of every event (`position` None) or of one position's events."""

    position: str | None
    attr: str


@dataclass(frozen=True)
class Partition:
    child: Windows
    keys: tuple[Key, ...]
    subkeys: tuple[SubKey, ...]
    reason: str


@dataclass(frozen=True)
class TransitionPlan:
    """One template transition and how a step along it is found."""

    source: str
    target: str
    predicates: tuple[ir.EdgePredicate, ...]
    index: Decision  # "hash", "range" or "scan"


@dataclass(frozen=True)
class Detect:
    child: Partition
    template: Template
    transitions: tuple[TransitionPlan, ...]
    cross: tuple[ir.CrossPredicate, ...]
    trend_set: Decision
    strategy: Decision
    guard: Decision
    with_rows: bool
    cost: str
    memory: Decision | None = None  # the local strategy: what one group may hold (--memory-budget)
    memory_bytes: int | None = None  # the budget, in bytes
    max_edges: int | None = None  # a group's graph stores its edges up to this many
    batch_events: int = 1_000_000  # event ids in one output batch

    @property
    def trends(self) -> TrendSet:
        return TrendSet(self.trend_set.choice)


@dataclass(frozen=True)
class Aggregate:
    child: Partition
    template: Template
    transitions: tuple[TransitionPlan, ...]
    aggregates: tuple[ir.AggregateRef, ...]
    group_by: tuple[ir.KeyAttr, ...]
    trend_set: Decision
    algorithm: Decision
    complete: Decision | None  # how COMPLETE trends are told apart (None: ALL trends)
    numbers: Decision  # "exact decimal", "exact string" or "approximate"
    cost: str

    @property
    def trends(self) -> TrendSet:
        return TrendSet(self.trend_set.choice)

    @property
    def approx(self) -> bool:
        return self.numbers.choice == "approximate"


Operator = Scan | Filter | Windows | Partition | Detect | Aggregate


@dataclass(frozen=True)
class LogicalPlan:
    query: ir.BoundQuery
    options: RunOptions
    root: Detect | Aggregate

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

    @property
    def detect(self) -> Detect | None:
        return self.root if isinstance(self.root, Detect) else None

    @property
    def aggregate(self) -> Aggregate | None:
        return self.root if isinstance(self.root, Aggregate) else None
