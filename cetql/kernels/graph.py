"""The run graph of one group: its nodes, and the successors of each.

A node is (event, state) where the state's mask allows the event; its id
is `event * S + state` (`Nodes`), so ids grow with time and every edge runs
from a smaller id to a larger one: node order is a topological order, and
the nodes of events lo … hi-1 (a window of a block) are the ids
`Nodes.first(lo)` … `Nodes.first(hi) - 1`.  There is an edge (e, p) → (f, q)
where (p, q) is a template transition, t_e < t_f, every predicate of the
step holds and no negated trend lies strictly between (see `template`).

Successors come from the ABI index the plan chose per transition
(`StepIndex`): a hash on the value (equal), the later events sorted by value
(range: `index.later_in_range`), or every later event (scan); the
remaining predicates are checked per candidate pair.  Each successor list
is in increasing node order.

`facts` computes, in one backward pass, what every walk needs from the
graph: which end node each node reaches first (`need`), its first end
successor, and the last start node that leads into it (the *poison* of
COMPLETE: a start node leading into v can be prepended to a trend from v).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from cetql.kernels.index import count_in_range, later_in_range
from cetql.kernels.template import GroupTemplate, Step


class Nodes:
    """Node ids ↔ (event, state index): id = event * S + state.

    `split(v)` → (event, state), `event(v)` and `first(e)` (the
    smallest id of event e: the ids of events lo … hi-1 are first(lo) …
    first(hi) - 1) are the integer's own methods bound to S, so hot loops
    call them at C speed."""

    __slots__ = ("S", "split", "event", "first")

    def __init__(self, states: int):
        self.S = states
        self.split = states.__rdivmod__  # v → divmod(v, S)
        self.event = states.__rfloordiv__  # v → v // S
        self.first = states.__mul__  # e → e * S

    def id(self, e: int, q: int) -> int:
        return e * self.S + q

    def of_event(self, e: int) -> range:
        """The ids of event e's nodes, one per state."""
        return range(e * self.S, (e + 1) * self.S)

    def ids(self, events: list[int], q: int) -> list[int]:
        """The nodes of `events` at state q, in bulk."""
        S = self.S
        return events if S == 1 else [f * S + q for f in events]

    def per_node(self, values: list) -> list:
        """A list by event as a list by node id (each value S times), in bulk."""
        S = self.S
        return values if S == 1 else [v for v in values for _ in range(S)]

    def events(self, ids) -> np.ndarray:
        """The events of many node ids (an array), in bulk."""
        out = np.asarray(ids, dtype=np.int64)
        return out if self.S == 1 else out // self.S


class Facts(NamedTuple):
    """Per node id, from one backward pass (`facts`); n is the number of ids."""

    need: list[int]  # the first end node it reaches (itself if it is one), n if none
    first_end: list[int]  # its first successor that is an end node, n if none
    last_start: list[int]  # the last start node with an edge into it, -1 if none


class Graph:
    """The run graph of one group.

    With `max_edges`, a graph whose edges would be more than that many keeps
    none: each node's successors are recomputed from the index whenever the
    walk asks (`stored` is False), so the graph takes O(n) memory however
    dense the group is, and the walk pays the index lookups again at each
    visit — CET's memory-optimal end (M-CET), where the stored graph is the
    CPU-optimal one."""

    def __init__(self, gt: GroupTemplate, max_edges: int | None = None):
        self.gt = gt
        self.times = times = gt.times
        n, names = gt.n, gt.names
        self.names = names
        self.S = len(names)
        self.nodes = nodes = Nodes(self.S)
        self.index_of = {q: i for i, q in enumerate(names)}
        self.first_later = [bisect.bisect_right(times, times[e]) for e in range(n)]
        self.elig = [[e for e in range(n) if gt.masks[q][e] is True] for q in names]
        self.node = bytearray(n * self.S)
        self.start = bytearray(n * self.S)
        self.end = bytearray(n * self.S)
        first = nodes.first
        for qi, q in enumerate(names):
            # without a negation before / after the pattern, every node of a start / end state qualifies
            starts, ends = q in gt.start, q in gt.end
            for e in self.elig[qi]:
                v = first(e) + qi
                self.node[v] = 1
                if starts and (not gt.before or gt.start_ok(e, q)):
                    self.start[v] = 1
                if ends and (not gt.after or gt.end_ok(e, q)):
                    self.end[v] = 1
        steps = [StepIndex(self, st) for st in gt.steps]
        steps = [st for st in steps if st.live]
        self.edges = sum(st.candidates() for st in steps)  # at least the edges (an upper bound if filtered)
        self.stored = max_edges is None or self.edges <= max_edges
        self._sets: dict[int, set] = {}
        self._left = max_edges or 0  # node ids a graph that stores no edges may still keep
        if not self.stored:
            self.succ = LazySuccessors(self, steps)
            return
        self.succ: list[list[int]] = [[] for _ in range(n * self.S)]
        by_source: dict[int, int] = {}
        for st in steps:
            st.store(self.succ)
            by_source[st.p] = by_source.get(st.p, 0) + 1
        for qi, count in by_source.items():
            if count > 1:  # several transitions from one state: keep each list in node order
                for e in self.elig[qi]:
                    self.succ[first(e) + qi].sort()

    def __len__(self) -> int:
        """The number of node ids (n * S)."""
        return len(self.node)

    def succ_set(self, v: int) -> set:
        s = self._sets.get(v)
        if s is None:
            s = set(self.succ[v])
            if self.stored or self.keep(len(s)):  # a graph that stores no edges keeps sets within its budget
                self._sets[v] = s
        return s

    def keep(self, size: int) -> bool:
        """May a graph that stores no edges keep `size` more node ids (sets,
        lists derived from its edges)?  Within its edge budget, yes."""
        if self._left < size:
            return False
        self._left -= size
        return True


def facts(g: Graph) -> Facts:
    """`Facts` of every node, in one pass over the edges (ids descending:
    successors have larger ids, so theirs are known)."""
    n = len(g)
    succ, node, start, end = g.succ, g.node, g.start, g.end
    need, first_end, last_start = [n] * n, [n] * n, [-1] * n
    for v in range(n - 1, -1, -1):
        if not node[v]:
            continue
        found, best, s = n, v if end[v] else n, start[v]
        for w in succ[v]:
            nw = need[w]
            if nw < best:
                best = nw
            if found == n and end[w]:
                found = w
            if s and last_start[w] < 0:  # v descending: the first start node found is the last one
                last_start[w] = v
        need[v], first_end[v] = best, found
    return Facts(need, first_end, last_start)


def paths(g: Graph, lo: int = 0, hi: int | None = None) -> int:
    """Start-to-end paths among the nodes of events lo … hi-1 (all the
    group's by default): the number of ALL trends there when every event
    takes at most one state, an upper bound otherwise.  O(nodes + edges)."""
    first = g.nodes.first(lo)
    limit = len(g) if hi is None else g.nodes.first(hi)
    count = [0] * (limit - first)
    start, end, succ = g.start, g.end, g.succ
    total = 0
    for v in range(first, limit):
        c = count[v - first] + start[v]
        if not c:
            continue
        if end[v]:
            total += c
        for w in succ[v]:
            if w >= limit:
                break
            count[w - first] += c
    return total


class StepIndex:
    """One template transition of a group's graph: which events it leads
    from and to, and the index that finds them (the plan's choice)."""

    # A range step without stored edges sorts the few targets in range when
    # they are at most this many (and fewer than the later targets); else it
    # checks every later target.  A walk's stack holds one such list a level.
    FEW = 256

    def __init__(self, g: Graph, st: Step):
        self.g, self.st = g, st
        self.p, self.q = g.index_of[st.source], g.index_of[st.target]
        self.sources, self.targets = g.elig[self.p], g.elig[self.q]
        self.live = bool(self.sources and self.targets)
        self.idx = idx = st.keyed
        self.exact = st.exact  # the index alone decides a step
        self.buckets: dict[int, list[int]] = {}
        self.codes: list[int] | None = None  # range, no stored edges: targets sorted by (lval rank, event)
        if idx is not None and idx.op == "=" and self.live:
            for f in self.targets:
                r = idx.lval[f]
                if r is not None:
                    self.buckets.setdefault(r, []).append(f)

    @property
    def hashed(self) -> bool:
        return self.idx is not None and self.idx.op == "="

    def _bucket(self, e: int) -> list[int] | None:
        r = self.idx.h[e]
        return None if r is None else self.buckets.get(r)

    def candidates(self) -> int:
        """How many pairs the index yields: the edges, or an upper bound on them
        when other predicates filter; O(n log n), building none."""
        first_later, total = self.g.first_later, 0
        if self.hashed:
            for e in self.sources:
                bucket = self._bucket(e)
                if bucket:
                    total += len(bucket) - bisect.bisect_left(bucket, first_later[e])
        elif self.idx is not None:
            total = count_in_range(self.g.times, self.sources, self.targets, self.idx)
        else:
            m = len(self.targets)
            for e in self.sources:
                total += m - bisect.bisect_left(self.targets, first_later[e])
        return total

    def store(self, succ: list[list[int]]) -> None:
        """Append every edge of this step to the successor lists."""
        g, p, q = self.g, self.p, self.q
        first_later, left = g.first_later, bisect.bisect_left
        if self.hashed:
            found = {}
            for e in self.sources:
                bucket = self._bucket(e)
                if bucket:
                    found[e] = bucket[left(bucket, first_later[e]) :]
        elif self.idx is not None:
            found = later_in_range(g.times, self.sources, self.targets, self.idx)
        else:
            targets = self.targets
            found = {e: targets[left(targets, first_later[e]) :] for e in self.sources}
        holds, exact, indexed = self.st.holds, self.exact, self.idx is not None
        first, ids = g.nodes.first, g.nodes.ids
        for e, cands in found.items():
            if not exact:
                cands = [f for f in cands if holds(e, f, indexed)]
            if cands:
                succ[first(e) + p].extend(ids(cands, q))

    def _in_range(self, e: int, start: int, later: int) -> list[int] | None:
        """The targets after `start` whose lval is in e's range, in event
        order, when there are at most FEW of them; None when checking the
        later events is cheaper."""
        n = len(self.g.times)
        if self.codes is None:
            lval = self.idx.lval
            self.codes = sorted(lval[f] * n + f for f in self.targets if lval[f] is not None)
        lo, hi = self.idx.later(e)
        if lo >= hi:
            return []
        a, b = bisect.bisect_left(self.codes, lo * n), bisect.bisect_left(self.codes, hi * n)
        if b - a > min(self.FEW, later - 1):
            return None
        return sorted(f for c in self.codes[a:b] if (f := c % n) >= start)

    def iter_from(self, e: int) -> Iterator[int]:
        """The successors of node (e, p) along this step, in node order,
        found in the index again: nothing is kept between calls."""
        nodes, q, holds = self.g.nodes, self.q, self.st.holds
        start = self.g.first_later[e]
        if self.hashed:  # the bucket's pairs hold the keyed predicate
            events, decided, indexed = self._bucket(e) or [], self.exact, True
        elif self.idx is not None:  # a range: the few in range, or every later target checked
            events, decided, indexed = self.targets, False, False
            i = bisect.bisect_left(events, start)
            few = self._in_range(e, start, len(events) - i)
            if few is not None:
                for f in few:
                    if self.exact or holds(e, f, True):
                        yield nodes.id(f, q)
                return
        else:
            events, decided, indexed = self.targets, self.exact, False
        for k in range(bisect.bisect_left(events, start), len(events)):
            f = events[k]
            if decided or holds(e, f, indexed):
                yield nodes.id(f, q)


class LazySuccessors:
    """The successor lists of a graph that stores no edges: `succ[v]` is an
    iterator over v's successors in node order, computed on each call."""

    def __init__(self, g: Graph, steps: list[StepIndex]):
        self.n = len(g.node)
        self.nodes = g.nodes
        self.node = g.node
        self.by_state: list[list[StepIndex]] = [[] for _ in range(g.S)]
        for st in steps:
            self.by_state[st.p].append(st)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, v: int) -> Iterator[int]:
        e, p = self.nodes.split(v)
        steps = self.by_state[p]
        if not steps or not self.node[v]:
            return iter(())
        if len(steps) == 1:
            return steps[0].iter_from(e)
        return heapq.merge(*(st.iter_from(e) for st in steps))

    def __iter__(self) -> Iterator[Iterator[int]]:
        for v in range(self.n):
            yield self[v]
