"""The workload plan: several queries' physical plans and what they share,
as frozen values beside `PhysicalPlan` — made by one pure function
(`share.workload`), printed by `--explain` (`show`), spelled by the
backends, which decide nothing.

    WorkloadPlan(queries, groups, apart, estimate, engine)
      ScanGroup: queries reading one scan of the same inputs
        Exchange: queries with the same windows and keys: one kernel input
          (one Spark exchange), their columns computed once each, every
          query's kernel on its own rows, A-Seq's prefix trees shared,
          GRETA propagations shared where templates share states (Hamlet)

A query in no group runs alone, by its own plan.  Sharing changes cost,
never answers: every query's rows are those it gives alone
(SEMANTICS.md, Engines and workloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cetql.kernels import spec as K
from cetql.kernels.workload_spec import Member, PrefixTree, SharedGraph
from cetql.planner.physical.plan import EngineChoice, PhysicalPlan, Scan


class WorkloadSharing(StrEnum):
    """Whether a workload's queries may share work (`--workload-sharing`)."""

    AUTO = "auto"  # the planner shares where it keeps every answer and its estimate says it costs less
    NONE = "none"  # every query runs alone, as `cetql run` runs it (for comparison)


@dataclass(frozen=True)
class Named:
    """One query of the workload: its name (its output folder) and plan."""

    name: str
    plan: PhysicalPlan


@dataclass(frozen=True)
class SharedColumn:
    """A column of a shared kernel input, computed once for every query
    that reads it: `definition` over the scanned event's columns, where the
    boolean column `guard` holds (else null, never evaluated: a query's
    expression never runs on rows only another query takes)."""

    column: str
    definition: K.Expr
    guard: str | None
    boolean: bool  # a condition (true only where the definition is true) or a value
    about: str  # what it is and whose, for --explain


@dataclass(frozen=True)
class Exchange:
    """Queries with one kernel input: the representative's windows and
    partition, the shared columns (in the order they are computed), each
    query a member, the prefix trees over the members that share counters."""

    queries: tuple[int, ...]
    columns: tuple[SharedColumn, ...]
    members: tuple[Member, ...]
    trees: tuple[PrefixTree, ...]
    trees_text: tuple[str, ...]  # the trees in words (--explain)
    reason: str
    graphs: tuple[SharedGraph, ...] = ()
    graphs_text: tuple[str, ...] = ()  # the shared propagations in words (--explain)

    @property
    def selection(self) -> tuple[str, ...]:
        return tuple(m.select for m in self.members)


@dataclass(frozen=True)
class ScanGroup:
    """Queries that read one scan: the reader's (a query reading every input
    any of them reads, each the same way), checking every column any of
    them reads."""

    queries: tuple[int, ...]
    scan: Scan
    exchanges: tuple[Exchange, ...]
    reason: str
    reader: int  # the query whose plan reads the inputs (it reads every input of the group)


@dataclass(frozen=True)
class Estimate:
    """The cost rule's guess, in passes over the input's events."""

    shared: float
    apart: float
    lines: tuple[str, ...]  # how each was reckoned

    @property
    def shares(self) -> bool:
        return self.shared < self.apart


@dataclass(frozen=True)
class WorkloadPlan:
    queries: tuple[Named, ...]
    sharing: WorkloadSharing
    groups: tuple[ScanGroup, ...]  # queries that run shared (none: every query alone)
    apart: tuple[str, ...]  # why queries do not share, one line each
    estimate: Estimate | None
    engine: EngineChoice

    @property
    def alone(self) -> tuple[int, ...]:
        """The queries that run by their own plan."""
        shared = {q for g in self.groups for q in g.queries}
        return tuple(i for i in range(len(self.queries)) if i not in shared)

    def plan(self, i: int) -> PhysicalPlan:
        return self.queries[i].plan

    def names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.queries)
