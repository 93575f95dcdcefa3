"""What the workers of a shared exchange receive (`workload`): plain
frozen values, as `spec` is for one query — the members (each query's own
kernel spec, the column selecting its events, where its columns are) and
A-Seq's prefix trees over the members whose counters the plan shares
(with their suffix counters where members are chopped), and Hamlet's shared
propagation graphs over the members whose GRETA templates share states."""

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
    name: str = ""  # the query's name: its kernel's errors say it (`errors.of_query`)


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
class SuffixNode:
    """A suffix counter (A-Seq's Chop-Connect, §4.2), counted backward from
    a window's end: the events of its position (`mask`) add the count of
    the next position's node (`child`; -1: the last position, 1 each);
    `clears`: negated events between this position and the next (at the
    last: after it), which clear the child's count as the Pre-Tree's do."""

    child: int
    mask: str
    clears: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeChop:
    """A member chopped at one position: its COUNT(*) is the sum, over the
    events of that position, of prefix node `node`'s contribution (the
    prefix matches ending there) times suffix node `suffix`'s (the suffix
    matches starting there) — connected by start time (Lemma 7)."""

    member: int
    node: int
    suffix: int


@dataclass(frozen=True)
class PrefixTree:
    """Prefix counters shared by members with common prefixes: nodes listed
    parents first; every member of it counts COUNT(*) exactly (no
    approximate numbers, no per-variable keys), split by `subkeys`."""

    nodes: tuple[TreeNode, ...]
    ends: tuple[TreeEnd, ...]
    subkeys: tuple[str, ...] = ()  # shared columns: equivalence attributes every event shares
    suffixes: tuple[SuffixNode, ...] = ()  # the Suffix-Tree: children (later positions) first
    chops: tuple[TreeChop, ...] = ()

    @property
    def members(self) -> tuple[int, ...]:
        """Every member counted by this tree (read at an end or chopped)."""
        return tuple(e.member for e in self.ends) + tuple(c.member for c in self.chops)


@dataclass(frozen=True)
class GraphMember:
    """A member propagated in a shared graph: which merged state each of its
    own states is, and the merged transitions it walks (its value vector's
    components travel along those only)."""

    member: int  # index into WorkloadSpec.members
    states: tuple[tuple[str, str], ...]  # (its own state, the merged state)
    transitions: tuple[int, ...]  # indices into the graph's template.transitions


@dataclass(frozen=True)
class SharedGraph:
    """GRETA's propagation shared by several aggregation members (Hamlet's
    shared graphlets, in GRETA's form): one template whose states and
    transitions are the members', merged where two members' are the same
    (the same mask column; the same edge predicates between merged states),
    in the shared columns' names.  Each node carries the components of the
    members whose state it is; a transition carries the components of the
    members that walk it, so each member's values are those it has alone."""

    template: K.TemplateSpec
    members: tuple[GraphMember, ...]
    subkeys: tuple[str, ...] = ()  # shared columns: equivalence attributes every event shares


@dataclass(frozen=True)
class WorkloadSpec:
    columns: K.Columns  # the shared group, time and id columns (and blocks' window bounds)
    members: tuple[Member, ...]
    trees: tuple[PrefixTree, ...] = ()
    graphs: tuple[SharedGraph, ...] = ()
    query: str = "__query"  # the output column naming each row's query (a plan's internal name)
