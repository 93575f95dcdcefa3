"""Detection over the template graph, for every pattern the language accepts.

The run graph of one group has a node per (event, state) the state's mask
allows and an edge (e, p) → (f, q) where (p, q) is a transition, t_e < t_f,
every predicate of the step holds and no negated trend lies strictly
between (see `template`).  Successors come from the ABI index the plan chose
per transition: a hash on the value (equal), a sorted index swept backwards
in time (range: `index.later_in_range`), or every later event (scan); the
remaining predicates are checked per candidate pair.

A trend is an event *sequence*; a pattern may match one sequence by several
runs (repeated types), so sequences are enumerated carrying the set of runs
(*configurations*) that reach their last event:

- a START configuration: a run from a start node;
- a *poison* configuration: a run from τ's first event at a state q0 that
  some earlier start node leads into — if it reaches an end node, e·τ is a
  trend, so τ is prependable;
- cross predicates (`a.rate * 2 < b.rate`) are checked as states bind, with
  the events they still need kept in the configuration.

COMPLETE: some START configuration ends τ at an end node, no poison one
does, and no START configuration has an edge to an end node (nothing can be
appended).  ALL: some START configuration ends at an end node.  MAXIMAL:
complete, and no event can be inserted between two consecutive events.
Pruning keeps the cost with the output: configurations that cannot reach an
end node are dropped; a prefix whose START configurations are all matched by
poison ones (same state and context) can only ever be vetoed, and is dropped.

Where every event of a group can take one state and there are no cross
predicates (E+, SEQ over distinct types), the configurations are single
nodes and the walk is a DFS over nodes: from start nodes no start node
precedes (COMPLETE), emitting at end nodes with no edge to an end node; for
MAXIMAL along split-free edges only (no (k, r) between).  Every walk is
iterative (no recursion limit) and yields trends as it finds them.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator
from itertools import product

from . import spec as K
from .expr import Row, compile_expr
from .index import count_in_range, later_in_range, usable
from .template import GroupTemplate


class Graph:
    """The run graph of one group; node ids are `event * S + state index`.

    With `max_edges`, a graph whose edges would be more than that many keeps
    none: each node's successors are recomputed from the index whenever the
    walk asks (`stored` is False), so the graph takes O(n) memory however
    dense the group is, and the walk pays the index lookups again at each
    visit — CET's memory-optimal end (M-CET), where the stored graph is the
    CPU-optimal one."""

    def __init__(self, gt: GroupTemplate, max_edges: int | None = None):
        self.gt = gt
        times = gt.times
        n, names = gt.n, gt.names
        S = self.S = len(names)
        self.names = names
        self.index_of = {q: i for i, q in enumerate(names)}
        self.times = times
        self.first_later = [bisect.bisect_right(times, times[e]) for e in range(n)]
        self.elig = [[e for e in range(n) if gt.masks[q][e] is True] for q in names]
        self.node = bytearray(n * S)
        for qi, events in enumerate(self.elig):
            for e in events:
                self.node[e * S + qi] = 1
        self.start = bytearray(n * S)
        self.end = bytearray(n * S)
        for qi, q in enumerate(names):
            # without a negation before/after the pattern, every eligible node of a start/end state qualifies
            if q in gt.start:
                ok = (lambda e, q=q: True) if not gt.before else (lambda e, q=q: gt.start_ok(e, q))
                for e in self.elig[qi]:
                    if ok(e):
                        self.start[e * S + qi] = 1
            if q in gt.end:
                ok = (lambda e, q=q: True) if not gt.after else (lambda e, q=q: gt.end_ok(e, q))
                for e in self.elig[qi]:
                    if ok(e):
                        self.end[e * S + qi] = 1
        steps = [_Step(self, st) for st in gt.steps]
        steps = [st for st in steps if st.live]
        self.edges = sum(st.candidates() for st in steps)  # at least the edges (an upper bound if filtered)
        self.stored = max_edges is None or self.edges <= max_edges
        self._sets: dict[int, set] = {}
        self._left = max_edges or 0  # node ids a graph that stores no edges may still keep
        if not self.stored:
            self.succ = _Successors(self, steps)
            return
        self.succ: list[list[int]] = [[] for _ in range(n * S)]
        by_source: dict[int, int] = {}
        for st in steps:
            st.store(self.succ)
            by_source[st.p] = by_source.get(st.p, 0) + 1
        for qi, count in by_source.items():
            if count > 1:  # several transitions from one state: keep each list in event order
                for e in self.elig[qi]:
                    self.succ[e * S + qi].sort()

    def has_succ(self, v: int) -> bool:
        return next(iter(self.succ[v]), None) is not None

    def paths(self) -> int:
        """Start-to-end paths: the number of ALL trends when every event
        takes at most one state, an upper bound otherwise.  O(nodes + edges):
        edges run forward in time, so node order is a topological order."""
        count = [0] * len(self.succ)
        start, end, succ = self.start, self.end, self.succ
        total = 0
        for v, ws in enumerate(succ):
            c = count[v] + start[v]
            if not c:
                continue
            if end[v]:
                total += c
            for w in ws:
                count[w] += c
        return total

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

    def coreach(self, emit: bytearray) -> bytearray:
        """Nodes from which a node where `emit` holds can be reached."""
        succ, node = self.succ, self.node
        out = bytearray(len(succ))
        for v in range(len(succ) - 1, -1, -1):  # successors have larger ids
            if node[v] and (emit[v] or any(out[w] for w in succ[v])):
                out[v] = 1
        return out

    def sinks_emit(self, emit: bytearray) -> bool:
        """Does every node without a successor emit?  Then every node reaches
        one that emits (the graph is finite and acyclic): no pruning to do."""
        node, succ = self.node, self.succ
        return all(self.has_succ(v) for v in range(len(succ)) if node[v] and not emit[v])


class _Step:
    """One template transition of a group's graph: which events it leads
    from and to, and the index that finds them (the plan's choice)."""

    def __init__(self, g: Graph, st):
        self.g, self.st = g, st
        self.p, self.q = g.index_of[st.source], g.index_of[st.target]
        self.sources, self.targets = g.elig[self.p], g.elig[self.q]
        self.live = bool(self.sources and self.targets)
        rest = len(st.equal) + len(st.ranges) + len(st.others) + len(st.between)
        if st.index == K.HASH and st.equal:
            self.kind, self.skip = K.HASH, ("equal", 0)
            lv, self.h = st.equal[0]
            self.buckets: dict = {}
            if self.live:
                for f in self.targets:
                    v = lv[f]
                    if v is not None and v == v:  # usable(v), inlined: this loop is the hot one
                        self.buckets.setdefault(v, []).append(f)
        elif st.index == K.RANGE and st.ranges:
            self.kind, self.skip = K.RANGE, ("range", 0)
            self.range = st.ranges[0]
        else:
            self.kind, self.skip = K.SCAN, None
            rest += 1
        self.exact = rest <= 1  # the index predicate was the only one

    def _bucket(self, e: int):
        hv = self.h[e]
        if hv is None or hv != hv:
            return None
        return self.buckets.get(hv)

    def candidates(self) -> int:
        """How many pairs the index yields: the edges, or an upper bound on them
        when other predicates filter; O(n log n), building none."""
        first_later, total = self.g.first_later, 0
        if self.kind == K.HASH:
            for e in self.sources:
                bucket = self._bucket(e)
                if bucket:
                    total += len(bucket) - bisect.bisect_left(bucket, first_later[e])
        elif self.kind == K.RANGE:
            lv, op, h = self.range
            total = count_in_range(self.g.times, self.sources, self.targets, lv, op, h)
        else:
            m = len(self.targets)
            for e in self.sources:
                total += m - bisect.bisect_left(self.targets, first_later[e])
        return total

    def store(self, succ: list[list[int]]) -> None:
        g, S, p, q = self.g, self.g.S, self.p, self.q
        first_later = g.first_later
        if self.kind == K.HASH:
            found = {}
            for e in self.sources:
                bucket = self._bucket(e)
                if bucket:
                    i = bisect.bisect_left(bucket, first_later[e])
                    if i < len(bucket):
                        found[e] = bucket[i:]
        elif self.kind == K.RANGE:
            lv, op, h = self.range
            found = later_in_range(g.times, self.sources, self.targets, lv, op, h)
        else:
            found = {}
            targets = self.targets
            for e in self.sources:
                i = bisect.bisect_left(targets, first_later[e])
                if i < len(targets):
                    found[e] = targets[i:]
        holds, skip = self.st.holds, self.skip
        for e, cands in found.items():
            out = succ[e * S + p]
            if not self.exact:
                cands = [f for f in cands if holds(e, f, skip)]
            out.extend(cands if S == 1 else [f * S + q for f in cands])

    # A range step without stored edges sorts the few targets in range when
    # they are at most this many (and fewer than the later targets); else it
    # checks every later target.  A walk's stack holds one such list a level.
    FEW = 256

    def _in_range(self, e: int, start: int, later: int) -> list[int] | None:
        """The targets after `start` with `lval OP h[e]`, in event order, when
        there are at most FEW of them; None when checking later events is
        cheaper or the values do not sort."""
        by_value = getattr(self, "by_value", None)
        if by_value is None:
            lv = self.range[0]
            try:
                by_value = sorted((lv[f], f) for f in self.targets if usable(lv[f]))
            except TypeError:  # values that do not sort: every later target is checked
                by_value = ()
            self.by_value, self.values = by_value, [v for v, _ in by_value]
        if not by_value:  # nothing sorted: checking the later targets finds what there is
            return None
        hv = self.range[2][e]
        if not usable(hv):
            return []
        op, values = self.range[1], self.values
        try:
            lo = 0 if op in ("<", "<=") else (bisect.bisect_right if op == ">" else bisect.bisect_left)(values, hv)
            hi = len(values) if op in (">", ">=") else (bisect.bisect_left if op == "<" else bisect.bisect_right)(values, hv)
        except TypeError:  # values that do not compare: no match, as in the index
            return []
        if hi - lo > min(self.FEW, later - 1):
            return None
        return sorted(f for _, f in by_value[lo:hi] if f >= start)

    def iter_from(self, e: int) -> Iterator[int]:
        """The successors of node (e, p) along this step, in event order,
        found in the index again: nothing is kept between calls."""
        S, q, start = self.g.S, self.q, self.g.first_later[e]
        if self.kind == K.HASH:
            events = self._bucket(e)
            if not events:
                return
            holds, skip = self.st.holds, self.skip
        else:
            events = self.targets
            holds, skip = self.st.holds, None
            if self.kind == K.SCAN and self.exact:
                holds = None
            elif self.kind == K.RANGE:
                i = bisect.bisect_left(events, start)
                few = self._in_range(e, start, len(events) - i)
                if few is not None:  # the range holds for these: the other predicates are checked
                    for f in few:
                        if self.exact or holds(e, f, self.skip):
                            yield f * S + q
                    return
        i = bisect.bisect_left(events, start)
        check = holds if (holds is not None and not (self.exact and self.kind == K.HASH)) else None
        for k in range(i, len(events)):
            f = events[k]
            if check is None or check(e, f, skip):
                yield f * S + q


class _Successors:
    """The successor lists of a graph that stores no edges: `succ[v]` is an
    iterator over v's successors in event order, computed on each call."""

    def __init__(self, g: Graph, steps: list[_Step]):
        self.n = len(g.node)
        self.S = g.S
        self.node = g.node
        self.by_state: list[list[_Step]] = [[] for _ in range(g.S)]
        for st in steps:
            self.by_state[st.p].append(st)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, v: int) -> Iterator[int]:
        e, p = divmod(v, self.S)
        steps = self.by_state[p]
        if not steps or not self.node[v]:
            return iter(())
        if len(steps) == 1:
            return steps[0].iter_from(e)
        return heapq.merge(*(st.iter_from(e) for st in steps))

    def __iter__(self) -> Iterator[Iterator[int]]:
        for v in range(self.n):
            yield self[v]


# ---------------------------------------------------------------- per-state walk


def _dfs(starts, walk, emit: bytearray, alive: bytearray, S: int) -> Iterator[list[int]]:
    """Paths from each start along `walk`, through `alive` nodes, yielded as
    event lists at each node where `emit` is set."""
    for s in starts:
        if not alive[s]:
            continue
        path = [s]
        stack = [iter(walk[s])]
        if emit[s]:
            yield [s]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                path.pop()
                continue
            if not alive[nxt]:
                continue
            path.append(nxt)
            if emit[nxt]:
                yield path[:]
            stack.append(iter(walk[nxt]))


def split_free(g: Graph):
    """Each node's edges to nodes no other successor leads to: a step (v, w)
    with some u, v → u → w, could take one more event in between.  A graph
    that stores no edges gets them node by node, as the walk asks."""
    if not g.stored:
        return _SplitFree(g)
    out = []
    for ws in g.succ:
        if len(ws) <= 1:
            out.append(ws)
            continue
        keep = []
        for w in ws:
            tw = g.times[w // g.S]
            split = False
            for u in ws:
                if g.times[u // g.S] >= tw:
                    break
                if w in g.succ_set(u):
                    split = True
                    break
            if not split:
                keep.append(w)
        out.append(keep)
    return out


class _SplitFree:
    """`split_free` of a graph that stores no edges: v's kept successors
    computed when asked — one pass over them, adding what each earlier one
    leads to into a set — and kept while the group's edge budget lasts."""

    def __init__(self, g: Graph):
        self.g = g
        self.cache: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.g.succ)

    def __getitem__(self, v: int) -> list[int]:
        kept = self.cache.get(v)
        if kept is not None:
            return kept
        g = self.g
        S, times = g.S, g.times
        ws = list(g.succ[v])
        kept = []
        reach: set = set()
        i = 0
        for w in ws:
            tw = times[w // S]
            while i < len(ws) and times[ws[i] // S] < tw:  # successors strictly before w: where w may be reached from
                reach.update(g.succ[ws[i]])
                i += 1
            if w not in reach:
                kept.append(w)
        if g.keep(len(kept)):
            self.cache[v] = kept
        return kept


def per_state_walk(g: Graph, trend_set) -> Iterator[list[int]]:
    """Trends as lists of node ids (event = node // S)."""
    S, succ, end, start = g.S, g.succ, g.end, g.start
    starts = [v for v in range(len(succ)) if start[v]]
    if str(trend_set) == "ALL":
        alive = g.node if g.sinks_emit(end) else g.coreach(end)
        yield from _dfs(starts, succ, end, alive, S)
        return
    preceded = bytearray(len(succ))  # a start node leads into it: prependable
    for v in starts:
        for w in succ[v]:
            preceded[w] = 1
    emit = bytearray(end)  # an end node that leads to no end node: nothing can be appended
    for v, ws in enumerate(succ):
        if emit[v]:
            for w in ws:
                if end[w]:
                    emit[v] = 0
                    break

    walk = split_free(g) if str(trend_set) == "MAXIMAL" else succ
    if walk is succ:
        alive = g.node if g.sinks_emit(emit) else g.coreach(emit)
    else:
        alive = bytearray(len(succ))
        for v in range(len(succ) - 1, -1, -1):
            if g.node[v] and (emit[v] or any(alive[w] for w in walk[v])):
                alive[v] = 1
    yield from _dfs([v for v in starts if not preceded[v]], walk, emit, alive, S)


class SharedWalk:
    """The windows of a block walked on the block's one graph (CET §5: the
    windows share the graphlets they hold), for the per-state walk with no
    negation before or after the pattern.  A window is a range of the
    block's events, [lo, hi), so its graph is the block's nodes in that
    range and the edges between them: edges run forward in time, successor
    lists are in node order, and a path from a node of the window stays in
    it until a node at or past hi.  Three facts per node, computed once
    (O(nodes + edges)), say what the window changes:

    - `need[v]`: the first end node v reaches (itself if it is one).  v can
      lead to a trend of the window iff need[v] is in it: from an end node,
      following end successors inside the window reaches one with none,
      which emits; and a split edge refines into split-free ones between
      its events (MAXIMAL), so the same holds along split-free edges.
    - `emit_at[v]`: for an end node, its first end successor (COMPLETE,
      MAXIMAL: v ends a trend iff that is past the window), -1 otherwise.
    - `last_start[v]`: the last start node leading into v: a start node is
      prependable in the window iff that one is in it.

    Split-free edges do not depend on the window either: an event between
    two events lies in every window holding both."""

    def __init__(self, g: Graph, trend_set):
        n = len(g.succ)
        self.g, self.S, self.n = g, g.S, n
        self.all = str(trend_set) == "ALL"
        succ, node, start, end = g.succ, g.node, g.start, g.end
        need, emit_at, last_start = [n] * n, [-1] * n, [-1] * n
        for v in range(n - 1, -1, -1):
            if not node[v]:
                continue
            first_end, best, s = n, v if end[v] else n, start[v]
            for w in succ[v]:
                nw = need[w]
                if nw < best:
                    best = nw
                if end[w] and first_end == n:
                    first_end = w
                if s and last_start[w] < 0:  # v descending: the first start node found is the last one
                    last_start[w] = v
            need[v] = best
            if end[v]:
                emit_at[v] = n if self.all else first_end
        self.need, self.emit_at, self.last_start = need, emit_at, last_start
        self.starts = [v for v in range(n) if start[v]]
        self.walk = split_free(g) if str(trend_set) == "MAXIMAL" else succ

    def window(self, lo: int, hi: int) -> Iterator[list[int]]:
        """The trends of the window of events lo … hi - 1, as node ids."""
        S = self.S
        first, limit = lo * S, hi * S
        starts = self.starts[bisect.bisect_left(self.starts, first) : bisect.bisect_left(self.starts, limit)]
        if not self.all:
            last_start = self.last_start
            starts = [v for v in starts if last_start[v] < first]
        need, emit_at, walk = self.need, self.emit_at, self.walk
        for s in starts:
            if need[s] >= limit:
                continue
            if emit_at[s] >= limit:
                yield [s]
            path = [s]
            stack = [iter(walk[s])]
            while stack:
                nxt = next(stack[-1], limit)
                if nxt >= limit:  # successors come in node order: the rest are past the window
                    stack.pop()
                    path.pop()
                    continue
                if need[nxt] >= limit:
                    continue
                path.append(nxt)
                if emit_at[nxt] >= limit:
                    yield path[:]
                stack.append(iter(walk[nxt]))

    def paths(self, lo: int, hi: int) -> int:
        """Start-to-end paths of the window (ALL trends: the guard's bound)."""
        S, g = self.S, self.g
        first, limit = lo * S, hi * S
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


class _Cross:
    """Cross predicates, and which states' events a configuration keeps."""

    def __init__(self, g: Graph, spec: K.TemplateSpec, cols: dict):
        self.g = g
        self.cols = cols
        self.preds = [(c.states, compile_expr(c.expr)) for c in spec.cross]
        reach = _reachable(spec)
        keep = set()
        for states, _ in self.preds:
            for x in states:
                if any(y != x and y in reach[x] for y in states):
                    keep.add(x)
        self.keep = sorted(keep)
        self.slot = {x: i for i, x in enumerate(self.keep)}
        self.empty = tuple(() for _ in self.keep)
        self.by_state: dict[str, list] = {}
        for states, f in self.preds:
            for x in states:
                self.by_state.setdefault(x, []).append((states, f))

    def ok(self, ctx: tuple, q: str, f: int) -> bool:
        """The cross predicates that bind with event f at state q hold
        (against every bound element of the other states)."""
        for states, fn in self.by_state.get(q, ()):
            others = [x for x in states if x != q]
            bound = []
            for x in others:
                i = self.slot.get(x)
                events = ctx[i] if i is not None else ()
                if not events:
                    break
                bound.append(events)
            else:
                for combo in product(*bound):
                    env = {q: Row(self.cols, f)}
                    env.update({x: Row(self.cols, ev) for x, ev in zip(others, combo)})
                    if fn(env) is not True:
                        return False
        return True

    def bind(self, ctx: tuple, q: str, f: int) -> tuple:
        i = self.slot.get(q)
        if i is None:
            return ctx
        return ctx[:i] + (ctx[i] + (f,),) + ctx[i + 1 :]


def _reachable(spec: K.TemplateSpec) -> dict[str, set]:
    nxt: dict[str, set] = {s.name: set() for s in spec.states}
    for t in spec.transitions:
        nxt[t.source].add(t.target)
    out = {}
    for s in nxt:
        seen, todo = set(), list(nxt[s])
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo += nxt[x]
        out[s] = seen
    return out


START, POISON = 0, 1


def config_walk(g: Graph, trend_set, spec: K.TemplateSpec, cols: dict) -> Iterator[list[int]]:
    """Trends over sets of runs (see the module's docstring)."""
    S, succ, end, start, names = g.S, g.succ, g.end, g.start, g.names
    ts = str(trend_set)
    cross = _Cross(g, spec, cols) if spec.cross else None
    alive = g.coreach(end)  # ignoring cross predicates: a sound pruning
    # the start nodes that lead into each node (with cross predicates: which
    # ones, for their bound events; without: only whether any does)
    poison_from: dict[int, list[int]] = {}
    poisoned = bytearray(len(succ))
    if ts != "ALL":
        for v in range(len(succ)):
            if start[v]:
                for w in succ[v]:
                    if cross is None:
                        poisoned[w] = 1
                    else:
                        poison_from.setdefault(w, []).append(v)

    def first_configs(e: int):
        configs = set()
        for qi in range(S):
            v = e * S + qi
            if not g.node[v] or not alive[v]:
                continue
            q = names[qi]
            empty = cross.empty if cross else ()
            if start[v] and (cross is None or cross.ok(empty, q, e)):
                configs.add((START, qi, cross.bind(empty, q, e) if cross else ()))
            if poisoned[v]:
                configs.add((POISON, qi, ()))
            for u in poison_from.get(v, ()):
                ep, s0 = divmod(u, S)
                q0 = names[s0]
                c0 = cross.bind(empty, q0, ep)
                if cross.ok(c0, q, e):
                    c1 = cross.bind(c0, q, e) if q0 in cross.slot else cross.bind(empty, q, e)
                    configs.add((POISON, qi, c1))
        return configs

    def step(configs, last: int) -> dict[int, set]:
        nexts: dict[int, set] = {}
        for kind, qi, ctx in configs:
            for w in succ[last * S + qi]:
                if not alive[w]:
                    continue
                f, qj = divmod(w, S)
                if cross is not None:
                    q = names[qj]
                    if not cross.ok(ctx, q, f):
                        continue
                    c2 = cross.bind(ctx, q, f)
                else:
                    c2 = ctx
                nexts.setdefault(f, set()).add((kind, qj, c2))
        return nexts

    def viable(configs) -> bool:
        goods = {(qi, ctx) for kind, qi, ctx in configs if kind == START}
        if not goods:
            return False
        poisons = {(qi, ctx) for kind, qi, ctx in configs if kind == POISON}
        return not goods <= poisons  # every good run matched by a vetoing one: never complete

    def complete(configs, f: int) -> bool:
        good = poison = False
        for kind, qi, _ctx in configs:
            if end[f * S + qi]:
                if kind == START:
                    good = True
                else:
                    poison = True
        if not good:
            return False
        if ts == "ALL":
            return True
        if poison:
            return False
        for kind, qi, ctx in configs:  # nothing may be appended
            if kind != START:
                continue
            for w in succ[f * S + qi]:
                if end[w] and (cross is None or cross.ok(ctx, names[w % S], w // S)):
                    return False
        return True

    for e0 in range(g.gt.n):
        c0 = first_configs(e0)
        if not viable(c0) if ts != "ALL" else not any(k == START for k, _, _ in c0):
            continue
        path = [e0]
        history = [c0]
        if complete(c0, e0) and (ts != "MAXIMAL" or not _insertable(g, path, history, cross)):
            yield list(path)
        nexts = step(c0, e0)
        stack = [(nexts, iter(sorted(nexts)))]
        while stack:
            nexts, it = stack[-1]
            f = next(it, None)
            if f is None:
                stack.pop()
                path.pop()
                history.pop()
                continue
            configs = nexts[f]
            if ts == "ALL":
                configs = {c for c in configs if c[0] == START}
                if not configs:
                    continue
            elif not viable(configs):
                continue
            path.append(f)
            history.append(configs)
            if complete(configs, f) and (ts != "MAXIMAL" or not _insertable(g, path, history, cross)):
                yield list(path)
            more = step(configs, f)
            stack.append((more, iter(sorted(more))))


def _insertable(g: Graph, path: list[int], history: list[set], cross) -> bool:
    """Can one event be inserted between two consecutive events of `path`
    such that the result is again a trend?  `history[j]`: the configurations
    at path[j]; only START ones matter."""
    S, succ, end, names, times = g.S, g.succ, g.end, g.names, g.times
    m = len(path) - 1
    if m < 1:
        return False
    if cross is None:
        # states at each position from which the rest of the path reaches an end node
        back = [set() for _ in path]
        back[m] = {qi for qi in range(S) if end[path[m] * S + qi]}
        for j in range(m - 1, -1, -1):
            nxt = path[j + 1]
            back[j] = {qi for qi in range(S) if g.node[path[j] * S + qi]
                       and any((nxt * S + q2) in g.succ_set(path[j] * S + qi) for q2 in back[j + 1])}  # fmt: skip
        for j in range(m):
            tn = times[path[j + 1]]
            targets = {path[j + 1] * S + q2 for q2 in back[j + 1]}
            for kind, qi, _ in history[j]:
                if kind != START:
                    continue
                for w in succ[path[j] * S + qi]:
                    if times[w // S] >= tn:
                        break
                    if targets & g.succ_set(w):
                        return True
        return False
    for j in range(m):
        tn = times[path[j + 1]]
        for kind, qi, ctx in history[j]:
            if kind != START:
                continue
            for w in succ[path[j] * S + qi]:
                k, r = divmod(w, S)
                if times[k] >= tn:
                    break
                if not cross.ok(ctx, names[r], k):
                    continue
                configs = {(r, cross.bind(ctx, names[r], k))}
                last = k
                for nxt in path[j + 1 :]:
                    moved = set()
                    for qa, ca in configs:
                        for w2 in succ[last * S + qa]:
                            if w2 // S == nxt and cross.ok(ca, names[w2 % S], nxt):
                                moved.add((w2 % S, cross.bind(ca, names[w2 % S], nxt)))
                    configs, last = moved, nxt
                    if not configs:
                        break
                if any(end[last * S + qa] for qa, _ in configs):
                    return True
    return False


def trends(gt: GroupTemplate, trend_set, spec: K.TemplateSpec, graph: Graph | None = None) -> Iterator[list[int]]:
    """The trends of one group, as lists of event offsets, as they are found."""
    found, per_event = trend_nodes(gt, trend_set, spec, graph)
    if per_event == 1:
        return found
    return ([v // per_event for v in path] for path in found)


def trend_nodes(gt: GroupTemplate, trend_set, spec: K.TemplateSpec,
                graph: Graph | None = None) -> tuple[Iterator[list[int]], int]:  # fmt: skip
    """(the trends of one group as they are found, k): each trend a list of
    ids whose event offsets are id // k — node ids, which the caller divides
    in bulk, rather than one division per event here."""
    g = graph or Graph(gt)
    if not spec.cross and gt.unique_states():
        return per_state_walk(g, trend_set), g.S
    return config_walk(g, trend_set, spec, gt.cols), 1


# ---------------------------------------------------------------- counting over sets of runs


def complete_classes(g: Graph, *, one, zero, contribute, add, trend_set="COMPLETE") -> Iterator[list]:
    """The determinized propagation (no cross predicates): per event, the
    classes of prefixes ending there (same set of runs), each with its count
    and, per run from a start, the aggregate vector along it.  Yields the
    vector of every class of prefixes that are complete (or, for trend_set
    "ALL", trends) — summed, these are the aggregates over those trends."""
    S, succ, end, start = g.S, g.succ, g.end, g.start
    alive = g.coreach(end)
    every = trend_set == "ALL"
    poison_from = bytearray(len(succ))
    if not every:
        for v in range(len(succ)):
            if start[v]:
                for w in succ[v]:
                    poison_from[w] = 1
    classes: list[dict] = [dict() for _ in range(g.gt.n)]  # event -> {R: (count, {qi: vector})}
    for e in range(g.gt.n):
        runs = []
        vectors = {}
        for qi in range(S):
            v = e * S + qi
            if not g.node[v] or not alive[v]:
                continue
            if start[v]:
                runs.append((START, qi))
                vec = list(zero)
                vec[0] = one
                contribute(vec, e, g.names[qi])
                vectors[qi] = vec
            if poison_from[v]:
                runs.append((POISON, qi))
        if vectors:
            _merge(classes[e], frozenset(runs), one, vectors, add)
        for R, (count, vecs) in classes[e].items():
            if _accept(R, e, g, every):
                for qi, vec in vecs.items():
                    if end[e * S + qi]:
                        yield vec
                        break
            nexts: dict[int, tuple[set, dict]] = {}
            for kind, qi in R:
                for w in succ[e * S + qi]:
                    if not alive[w]:
                        continue
                    f, qj = divmod(w, S)
                    runs2, vecs2 = nexts.setdefault(f, (set(), {}))
                    runs2.add((kind, qj))
                    if kind == START and qi in vecs and qj not in vecs2:
                        vec = list(vecs[qi])
                        contribute(vec, f, g.names[qj])
                        vecs2[qj] = vec
            for f, (runs2, vecs2) in nexts.items():
                goods = {qi for k, qi in runs2 if k == START}
                if not goods or (not every and goods <= {qi for k, qi in runs2 if k == POISON}):
                    continue
                _merge(classes[f], frozenset(runs2 if not every else {r for r in runs2 if r[0] == START}), count,
                       vecs2, add)  # fmt: skip
        classes[e] = None  # done with this event


def _merge(target: dict, R, count, vectors: dict, add) -> None:
    found = target.get(R)
    if found is None:
        target[R] = (count, {qi: list(v) for qi, v in vectors.items()})
        return
    c0, vecs = found
    for qi, v in vectors.items():
        if qi in vecs:
            add(vecs[qi], v)
        else:
            vecs[qi] = list(v)
    target[R] = (c0 + count, vecs)


def _accept(R, e: int, g: Graph, every: bool) -> bool:
    S, end, succ = g.S, g.end, g.succ
    good = poison = False
    for kind, qi in R:
        if end[e * S + qi]:
            if kind == START:
                good = True
            else:
                poison = True
    if not good:
        return False
    if every:
        return True
    if poison:
        return False
    for kind, qi in R:
        if kind == START and any(end[w] for w in succ[e * S + qi]):
            return False
    return True
