"""Trends where an event can take several states: sets of runs.

A trend is an event *sequence*; a pattern may match one sequence by several
runs (repeated types, `SEQ(A a, A+ b[])` on one stream), so the walk
follows event sequences, each carrying the set of runs (*configurations*)
that reach its last event:

- a START run: a run from a start node;
- a POISON run: a run from the sequence's first event at a state some
  earlier start node leads into — if it reaches an end node, that start
  node's event can be prepended, so the sequence is not complete;
- with cross predicates (`a.rate * 2 < b.rate`), a run keeps the events its
  predicates still need (`Cross`), and they are checked as states bind.

A sequence is emitted as `walks.accepts` says: some START run ends it at an
end node (ALL); and no POISON run does, and no START run has an edge to an
end node (COMPLETE); and no event can be inserted (MAXIMAL: `insertable`).
Pruning keeps the cost with the output: runs that cannot reach an end node
are dropped; a sequence whose START runs are all matched by POISON runs (same
state and bound events) can only ever be vetoed, and is not followed.

The walk is `walks.depth_first` over prefix ids: `Prefixes` gives each
prefix (its last event and its runs) an id while the walk is below it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import cache
from itertools import product

from cetql.base.options import TrendSet
from cetql.kernels import spec as K
from cetql.kernels.expr import Row, compile_expr
from cetql.kernels.graph import Graph, Nodes, facts
from cetql.kernels.template import GroupTemplate
from cetql.kernels.walks import Walk, accepts, depth_first

START, POISON = 0, 1
EVENTS = Nodes(1)  # ids that are events


# A run is a tuple (kind, state, bound), always unpacked by name: kind START
# or POISON, the state index it is at, and per state `Cross` keeps the
# events bound to it (() without cross predicates).  Plain tuples: a walk
# makes one per step of every run.


class Cross:
    """Cross predicates, and which states' events a run keeps."""

    def __init__(self, spec: K.TemplateSpec, cols: dict):
        self.cols = cols
        preds = [(c.states, compile_expr(c.expr)) for c in spec.cross]
        reach = _reachable(spec)
        keep = {x for states, _ in preds for x in states if any(y != x and y in reach[x] for y in states)}
        self.keep = sorted(keep)
        self.slot = {x: i for i, x in enumerate(self.keep)}
        self.empty = tuple(() for _ in self.keep)
        self.by_state: dict[str, list] = {}
        for states, f in preds:
            for x in states:
                self.by_state.setdefault(x, []).append((states, f))

    def ok(self, bound: tuple, q: str, f: int) -> bool:
        """The cross predicates that bind with event f at state q hold
        (against every bound element of the other states)."""
        for states, fn in self.by_state.get(q, ()):
            others = [x for x in states if x != q]
            events = [bound[self.slot[x]] if x in self.slot else () for x in others]
            if not all(events):
                continue  # a state not bound yet: checked when it binds
            for combo in product(*events):
                env = {q: Row(self.cols, f)}
                env.update({x: Row(self.cols, ev) for x, ev in zip(others, combo)})
                if fn(env) is not True:
                    return False
        return True

    def bind(self, bound: tuple, q: str, f: int) -> tuple:
        i = self.slot.get(q)
        if i is None:
            return bound
        return bound[:i] + (bound[i] + (f,),) + bound[i + 1 :]


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


@cache
def _acceptance(trend_set: TrendSet) -> tuple[dict, bool]:
    """`accepts` for every (ends, vetoed), and whether an appendable prefix fails."""
    table = {(a, b): accepts(trend_set, ends=a, vetoed=b) for a in (False, True) for b in (False, True)}
    return table, not accepts(trend_set, ends=True, appendable=True)


class Prefixes:
    """The prefixes the configuration walk visits, by id: a prefix's id
    indexes its last event, its runs and `emit_at` (`limit` when it is
    emitted, -1 if not) — lists `depth_first` reads as it reads a graph's.
    `prefixes[x]` gives the ids of x's extensions that may still become
    trends: a block of ids after x's own block, where the blocks of the
    prefixes walked before x (its earlier siblings' extensions) are dropped
    first, so the lists hold the walk's current branch only."""

    limit = sys.maxsize  # no window: every prefix is below it

    def __init__(self, g: Graph, trend_set: TrendSet, spec: K.TemplateSpec, cols: dict):
        self.g, self.trend_set = g, trend_set
        self.cross = Cross(spec, cols) if spec.cross else None
        found = facts(g)
        n = len(g)
        self.alive = [x < n for x in found.need]  # reaches an end node (a sound pruning, cross predicates aside)
        # a start node leading into a node poisons runs from it (none for ALL); with cross predicates, which
        # start nodes do matters (their events are bound)
        poisons = not accepts(trend_set, ends=True, vetoed=True)
        self.poisoned = [x >= 0 and poisons and not spec.cross for x in found.last_start]
        self.poison_from: dict[int, list[int]] = {}
        if spec.cross and poisons:
            for v in range(n):
                if g.start[v]:
                    for w in g.succ[v]:
                        self.poison_from.setdefault(w, []).append(v)
        self.accept, self.appends = _acceptance(trend_set)
        self.event: list[int] = []
        self.runs: list[set] = []
        self.emit_at: list[int] = []
        self.block_end: list[int] = []  # where the block of ids holding each id ends
        self.need: list[int] = []  # zeros: only prefixes that may become trends get an id

    def _store(self, start: int, found: list[tuple]) -> range:
        """Ids start … for the prefixes found, (last event, runs, emit_at)
        each, dropping whatever was stored from start on."""
        if len(self.event) > start:
            del self.event[start:], self.runs[start:], self.emit_at[start:], self.block_end[start:]
        for f, runs, emit in found:
            self.event.append(f)
            self.runs.append(runs)
            self.emit_at.append(emit)
        end = start + len(found)
        self.block_end += [end] * len(found)
        if len(self.need) < end:
            self.need += [0] * (end - len(self.need))
        return range(start, end)

    def first_runs(self, e: int) -> set:
        g, cross, names = self.g, self.cross, self.g.names
        runs = set()
        for qi, v in enumerate(g.nodes.of_event(e)):
            if not g.node[v] or not self.alive[v]:
                continue
            q = names[qi]
            if cross is None:
                if g.start[v]:
                    runs.add((START, qi, ()))
                if self.poisoned[v]:
                    runs.add((POISON, qi, ()))
                continue
            empty = cross.empty
            if g.start[v] and cross.ok(empty, q, e):
                runs.add((START, qi, cross.bind(empty, q, e)))
            for u in self.poison_from.get(v, ()):
                ep, s0 = g.nodes.split(u)
                q0 = names[s0]
                c0 = cross.bind(empty, q0, ep)
                if cross.ok(c0, q, e):
                    runs.add((POISON, qi, cross.bind(c0, q, e) if q0 in cross.slot else cross.bind(empty, q, e)))
        return runs

    def step(self, runs, last: int) -> dict[int, set]:
        """The runs at each event that follows `last`, by event."""
        g, cross, alive, names = self.g, self.cross, self.alive, self.g.names
        split, succ, base = g.nodes.split, g.succ, g.nodes.first(last)
        nexts: dict[int, set] = {}
        for kind, qi, bound in runs:
            for w in succ[base + qi]:
                if not alive[w]:
                    continue
                f, qj = split(w)
                if cross is not None:
                    if not cross.ok(bound, names[qj], f):
                        continue
                    nexts.setdefault(f, set()).add((kind, qj, cross.bind(bound, names[qj], f)))
                else:
                    nexts.setdefault(f, set()).add((kind, qj, bound))
        return nexts

    def emission(self, f: int, runs) -> int | None:
        """None when the prefix ending at f with these runs cannot become a
        trend (no START run, or every one matched by a POISON run: it can
        only be vetoed); else its `emit_at`, as `walks.accepts` decides."""
        end, base = self.g.end, self.g.nodes.first(f)
        goods, poisons = set(), set()
        ends = vetoed = False
        for kind, qi, bound in runs:
            if kind == START:
                goods.add((qi, bound))
                ends = ends or end[base + qi]
            else:
                poisons.add((qi, bound))
                vetoed = vetoed or end[base + qi]
        if not goods or goods <= poisons:
            return None
        if not self.accept[bool(ends), bool(vetoed)] or (self.appends and self._appendable(f, runs)):
            return -1
        return self.limit

    def roots(self) -> Iterator[int]:
        """Each first event that may begin a trend, as prefix id 0."""
        for e in range(self.g.gt.n):
            runs = self.first_runs(e)
            emit = self.emission(e, runs) if runs else None
            if emit is not None:
                yield from self._store(0, [(e, runs, emit)])

    def __getitem__(self, x: int) -> range:
        """The ids of x's extensions that may still become trends."""
        nexts = self.step(self.runs[x], self.event[x])
        found = []
        for f in sorted(nexts):
            runs = nexts[f]
            emit = self.emission(f, runs)
            if emit is not None:
                found.append((f, runs, emit))
        return self._store(self.block_end[x], found)

    def _appendable(self, f: int, runs) -> bool:
        g, cross, names = self.g, self.cross, self.g.names
        end, base = g.end, g.nodes.first(f)
        for kind, qi, bound in runs:
            if kind != START:
                continue
            for w in g.succ[base + qi]:
                if end[w]:
                    if cross is None:
                        return True
                    k, q = g.nodes.split(w)
                    if cross.ok(bound, names[q], k):
                        return True
        return False

    def complete_maximal(self, path: list[int]) -> bool:
        """No event can be inserted into the prefix `path` (ids)."""
        events = [self.event[x] for x in path]
        history = [self.runs[x] for x in path]
        if self.cross is None:
            return not insertable(self.g, events, history)
        return not insertable_cross(self.g, events, history, self.cross)


def config_walk(g: Graph, trend_set: TrendSet, spec: K.TemplateSpec, cols: dict) -> Iterator[list[int]]:
    """Trends over sets of runs (see the module), as event lists."""
    p = Prefixes(g, trend_set, spec, cols)
    maximal = trend_set is TrendSet.MAXIMAL
    event = p.event
    for path in depth_first(p.roots(), p, p.need, p.emit_at, p.limit):
        if not maximal or p.complete_maximal(path):  # the walk is still below `path`: its ids stand
            yield [event[x] for x in path]


def insertable(g: Graph, path: list[int], history: list) -> bool:
    """Can one event be inserted between two consecutive events of `path`
    such that the result is again a trend?  `history[j]`: the runs at
    path[j]; only START ones matter.  No cross predicates: a state at each
    position from which the rest of the path reaches an end node is enough."""
    m = len(path) - 1
    if m < 1:
        return False
    nodes, S, succ, times = g.nodes, g.S, g.succ, g.times
    back = [set() for _ in path]
    back[m] = {qi for qi in range(S) if g.end[nodes.id(path[m], qi)]}
    for j in range(m - 1, -1, -1):
        nxt = path[j + 1]
        back[j] = {qi for qi in range(S) if g.node[nodes.id(path[j], qi)]
                   and any(nodes.id(nxt, q2) in g.succ_set(nodes.id(path[j], qi)) for q2 in back[j + 1])}  # fmt: skip
    for j in range(m):
        tn = times[path[j + 1]]
        targets = {nodes.id(path[j + 1], q2) for q2 in back[j + 1]}
        for kind, qi, _ in history[j]:
            if kind != START:
                continue
            for w in succ[nodes.id(path[j], qi)]:
                if times[nodes.event(w)] >= tn:
                    break
                if targets & g.succ_set(w):
                    return True
    return False


def insertable_cross(g: Graph, path: list[int], history: list, cross: Cross) -> bool:
    """`insertable` with cross predicates: each candidate is followed along
    the rest of the path with its bound events."""
    nodes, succ, times, names = g.nodes, g.succ, g.times, g.names
    for j in range(len(path) - 1):
        tn = times[path[j + 1]]
        for kind, qi, bound in history[j]:
            if kind != START:
                continue
            for w in succ[nodes.id(path[j], qi)]:
                k, q = nodes.split(w)
                if times[k] >= tn:
                    break
                if not cross.ok(bound, names[q], k):
                    continue
                runs, last = {(q, cross.bind(bound, names[q], k))}, k
                for nxt in path[j + 1 :]:
                    moved = set()
                    for qa, ca in runs:
                        for w2 in succ[nodes.id(last, qa)]:
                            f2, q2 = nodes.split(w2)
                            if f2 == nxt and cross.ok(ca, names[q2], nxt):
                                moved.add((q2, cross.bind(ca, names[q2], nxt)))
                    runs, last = moved, nxt
                    if not runs:
                        break
                if any(g.end[nodes.id(last, qa)] for qa, _ in runs):
                    return True
    return False


# ---------------------------------------------------------------- the trends of one group


def trend_nodes(gt: GroupTemplate, trend_set: TrendSet, spec: K.TemplateSpec,
                graph: Graph | None = None) -> tuple[Iterator[list[int]], object]:  # fmt: skip
    """(the trends of one group as they are found, the `Nodes` their ids
    are): node paths where each event takes one state, event lists
    otherwise; the caller converts ids to events in bulk."""
    g = graph or Graph(gt)
    if not spec.cross and gt.unique_states():
        return Walk(g, trend_set).trends(), g.nodes
    return config_walk(g, trend_set, spec, gt.cols), EVENTS


def trends(gt: GroupTemplate, trend_set: TrendSet, spec: K.TemplateSpec, graph: Graph | None = None):
    """The trends of one group, as lists of event offsets, as they are found."""
    found, nodes = trend_nodes(gt, trend_set, spec, graph)
    return found if nodes.S == 1 else (nodes.events(path).tolist() for path in found)
