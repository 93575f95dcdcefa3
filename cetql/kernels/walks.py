"""Walking the run graph: trends as paths, found depth first.

Every walk of detection is `depth_first`: paths from roots along successor
lists, entering a node only when a trend can still end below it, and
emitting the path at each node where `accepts` says it is a trend of the
set asked for.  Where every event takes at most one state (E+, SEQ over
distinct types) the trends are paths of nodes and `Walk` finds them; where
an event can take several states the prefixes carry sets of runs
(`runs`), and the same driver walks those.

What makes a path a trend (`accepts`): ALL — it runs from a start node to
an end node; COMPLETE — also, no event can be prepended (no start node
leads into its first node: the *poison* of `graph.facts`) and none appended
(its last node has no end successor); MAXIMAL — also, no event can be
inserted between two of its events (the walk follows *split-free* edges
only: no node k with v → k → w).

Worked example: `PATTERN (SEQ(A+ a[], B b))+` on a1 b2 a3 b4 (letter: type,
digit: time).  States a (0) and b (1), S = 2; transitions a→a, a→b, b→a;
starts {a}, ends {b}.  Nodes (id = event * 2 + state): a1 = 0, b2 = 3,
a3 = 4, b4 = 7; edges a1→b2, a1→a3, a1→b4, b2→a3, a3→b4.

    node  need  first end successor  last start into it  emit_at (COMPLETE)
    a1     3         3 (b2)                 -1                  -1
    b2     3         8 (none)                0 (a1)              8
    a3     7         7 (b4)                  0 (a1)             -1
    b4     7         8 (none)                4 (a3)              8

ALL: from a1 and a3, every path to b2 or b4 — (a1 b2), (a1 b2 a3 b4),
(a1 a3 b4), (a1 b4), (a3 b4).  COMPLETE: a3 is not a root (a1 leads into
it), and b2 and b4 have no end successor (b2 → a3 does not make b2
appendable: a3 ends nothing): the first four.  MAXIMAL: a1→a3 and a1→b4
are split (by b2 and by a3): (a1 b2) and (a1 b2 a3 b4).

Windows of a block share its graph (CET §5): the window of events
lo … hi-1 is the ids first(lo) … first(hi)-1, `limit` = first(hi).  A node
is entered when need < limit (a trend can still end in the window), a path
emitted at v when emit_at[v] >= limit (v's first end successor, if any, is
past the window), and roots are the start nodes in the window whose last
start is before it.  In the window a3 b4 (ids 4 … 7, limit 8): a3's last
start a1 = 0 is outside, so a3 is a root, and (a3 b4) is complete there.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from cetql.base.options import TrendSet
from cetql.kernels.graph import Graph, facts


def accepts(trend_set: TrendSet, *, ends: bool, vetoed: bool = False, appendable: bool = False) -> bool:
    """Is a prefix emitted as a trend of `trend_set`?  `ends`: a run from a
    start node ends it at an end node; `vetoed`: an event can be prepended
    (a run from an earlier start ends it as well); `appendable`: an event
    can follow it to an end node.  MAXIMAL asks what COMPLETE does; the
    walks also keep insertions out (split-free edges, `runs.insertable`)."""
    if not ends:
        return False
    if trend_set is TrendSet.ALL:
        return True
    return not vetoed and not appendable


def depth_first(roots: Iterable[int], successors, need, emit_at, limit: int) -> Iterator[list]:
    """Every path from a root along `successors` through nodes v with
    need[v] < limit, yielded (a new list) at each v with emit_at[v] >= limit.
    Each successor list is in increasing order; the ones at or past `limit`
    are not followed.  Iterative: no recursion limit, one iterator a level."""
    for root in roots:
        if need[root] >= limit:
            continue
        path = [root]
        if emit_at[root] >= limit:
            yield [root]
        stack = [iter(successors[root])]
        while stack:
            nxt = next(stack[-1], limit)
            if nxt >= limit:  # successors come in order: the rest are past the window
                stack.pop()
                path.pop()
                continue
            if need[nxt] >= limit:
                continue
            path.append(nxt)
            if emit_at[nxt] >= limit:
                yield path[:]
            stack.append(iter(successors[nxt]))


class Walk:
    """The trends of a graph whose events take one state each, as node
    paths: of the whole group (`trends`) or of a window of a block sharing
    the block's graph (`window`).  The facts it reads (need, emit_at, last
    start) do not depend on the window, and neither do split-free edges (an
    event between two events lies in every window holding both): computed
    once, O(nodes + edges)."""

    def __init__(self, g: Graph, trend_set: TrendSet):
        n = len(g)
        self.g = g
        found = facts(g)
        self.need, self.last_start = found.need, found.last_start
        always = accepts(trend_set, ends=True, appendable=True)  # ALL: an end node emits whatever follows
        first_end, end = found.first_end, g.end
        self.emit_at = [(n if always else first_end[v]) if end[v] else -1 for v in range(n)]
        self.vetoes = not accepts(trend_set, ends=True, vetoed=True)  # a prependable root emits nothing
        self.starts = [v for v in range(n) if g.start[v]]
        self.walk = split_free(g) if trend_set is TrendSet.MAXIMAL else g.succ

    def trends(self) -> Iterator[list[int]]:
        """The trends of the whole group, as node ids."""
        return self.window(0, self.g.gt.n)

    def window(self, lo: int, hi: int) -> Iterator[list[int]]:
        """The trends of the window of events lo … hi - 1, as node ids."""
        first, limit = self.g.nodes.first(lo), self.g.nodes.first(hi)
        roots = self.starts[bisect.bisect_left(self.starts, first) : bisect.bisect_left(self.starts, limit)]
        if self.vetoes:
            last_start = self.last_start
            roots = [v for v in roots if last_start[v] < first]
        return depth_first(roots, self.walk, self.need, self.emit_at, limit)


# ---------------------------------------------------------------- MAXIMAL: split-free edges


def split_free(g: Graph):
    """Each node's edges to nodes no other successor leads to: a step (v, w)
    with some u, v → u → w, could take one more event in between.  A graph
    that stores no edges gets them node by node, as the walk asks."""
    if not g.stored:
        return _SplitFree(g)
    when = g.nodes.per_node(g.times)
    out = []
    for ws in g.succ:
        if len(ws) <= 1:
            out.append(ws)
            continue
        keep = []
        for w in ws:
            tw = when[w]
            for u in ws:
                if when[u] >= tw:
                    keep.append(w)
                    break
                if w in g.succ_set(u):
                    break
            else:
                keep.append(w)
        out.append(keep)
    return out


class _SplitFree:
    """`split_free` of a graph that stores no edges: v's kept successors
    computed when asked — one pass over them, adding what each earlier one
    leads to into a set — and kept while the group's edge budget lasts."""

    def __init__(self, g: Graph):
        self.g = g
        self.when = g.nodes.per_node(g.times)
        self.cache: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.g)

    def __getitem__(self, v: int) -> list[int]:
        kept = self.cache.get(v)
        if kept is not None:
            return kept
        g, when = self.g, self.when
        ws = list(g.succ[v])
        kept = []
        reach: set = set()
        i = 0
        for w in ws:
            tw = when[w]
            while i < len(ws) and when[ws[i]] < tw:  # successors strictly before w: where w may be reached from
                reach.update(g.succ[ws[i]])
                i += 1
            if w not in reach:
                kept.append(w)
        if g.keep(len(kept)):
            self.cache[v] = kept
        return kept
