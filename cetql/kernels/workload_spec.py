"""What the workers of a shared exchange receive (`workload`): plain
frozen values, as `spec` is for one query — the members (each query's own
kernel spec, the column selecting its events, where its columns are) and
A-Seq's prefix trees over the members whose counters the plan shares."""

from __future__ import annotations

from dataclasses import dataclass

from cetql.kernels import spec as K


@dataclass(frozen=True)
class Member:
    """One query of the exchange: its kernel spec (as it runs alone), the
    column selecting its events, and where its own columns are."""

    query: int  # its index in the workload
    spec: K.DetectSpec | K.AggregateSpec
    select: str  # boolean column: the query takes this row (null: no)
    columns: tuple[tuple[str, str], ...]  # (its own column, the shared column holding it)


@dataclass(frozen=True)
class TreeNode:
    """A prefix counter of A-Seq's Pre-Tree: the events of its position
    (`mask`) add their parent's count (1 at a root); `clears`: negated
    events between the parent's position and this one (at a root: before
    the first), which clear the parent's count (stop new starts)."""

    parent: int  # -1: a root
    mask: str
    clears: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeEnd:
    """Where a member reads its COUNT(*): node `node`'s count, cleared by
    `clears` (negated events after the pattern's last position)."""

    member: int  # index into WorkloadSpec.members
    node: int
    clears: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrefixTree:
    """Prefix counters shared by members with common prefixes: nodes listed
    parents first; every member of it counts COUNT(*) exactly (no
    approximate numbers, no per-variable keys), split by `subkeys`."""

    nodes: tuple[TreeNode, ...]
    ends: tuple[TreeEnd, ...]
    subkeys: tuple[str, ...] = ()  # shared columns: equivalence attributes every event shares


@dataclass(frozen=True)
class WorkloadSpec:
    columns: K.Columns  # the shared group, time and id columns (and blocks' window bounds)
    members: tuple[Member, ...]
    trees: tuple[PrefixTree, ...] = ()
    query: str = "__query"  # the output column naming each row's query (a plan's internal name)
