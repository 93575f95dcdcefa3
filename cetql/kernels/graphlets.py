"""GRETA's propagation shared by several aggregation queries (Hamlet,
SIGMOD'21: Kleene sub-patterns shared among trend aggregation queries),
in GRETA's form: one pass over a merged template (`SharedGraph`) whose
nodes carry one value vector with the components of the members whose
state they are.

A node's vector is the sum of its predecessors' along the merged
transitions into its state, each transition carrying only the components
of the members that walk it; then each member whose state it is adds its
start (1 to its count) and its own targets (`greta._contribute`), and a
member's totals are the sum of its components over the nodes that may end
its trends.  A member's components thus take exactly the values they take
in its own propagation (GRETA Theorem 4.3, per member): the merged
template only lets members whose states and edge predicates agree read
one index (one predecessor scan, one Fenwick tree) instead of one each.

Windows, parts (equivalence sub-keys) and each member's final values are
as `aggregate.aggregate_table` gives them alone; a member's row is written
for the windows that hold an event it takes, as alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import localcontext

import pyarrow as pa

from cetql.kernels import greta
from cetql.kernels.aggregate import _combine, _final
from cetql.kernels.batches import window_groups
from cetql.kernels.columns import read_columns, template_columns
from cetql.kernels.doubles import EXACT
from cetql.kernels.errors import of_query
from cetql.kernels.index import Monoid
from cetql.kernels.parts import nothing, part_columns, parts
from cetql.kernels.template import GroupTemplate
from cetql.kernels.workload_spec import Member, SharedGraph, WorkloadSpec


class _Layout:
    """Where each member lives in the shared value vector, its targets in
    merged state names and shared columns, which states start and end its
    trends, and which components each transition carries (its walkers'
    only: a transition's index sums those, so a query's own edge costs what
    it costs alone, however many queries share the graph)."""

    def __init__(self, g: SharedGraph, members: list[Member]):
        self.template, self.members = g.template, members
        kinds: list[str] = []
        self.spans, self.targets, self.slots, self.starts, self.ends, self.monoids = [], [], [], [], [], []
        self.serving: dict[str, list[int]] = {s.name: [] for s in g.template.states}
        for k, (gm, m) in enumerate(zip(g.members, members)):
            merged, shared = dict(gm.states), dict(m.columns)
            targets = [(t.func, merged.get(t.state) if t.state else None, shared[t.value] if t.value else None)
                       for t in m.spec.targets]  # fmt: skip
            own_kinds, slots = greta._slots([greta.Target(f, s) for f, s, _ in targets])
            self.spans.append((len(kinds), len(kinds) + len(own_kinds)))
            kinds += own_kinds
            self.targets.append(targets)
            self.slots.append(slots)
            self.monoids.append(Monoid(own_kinds, 0))
            self.starts.append({merged[s] for s in m.spec.template.start})
            self.ends.append({merged[s] for s in m.spec.template.end})
            for _, s in gm.states:
                self.serving[s].append(k)
        walks = [set() for _ in g.template.transitions]
        for k, gm in enumerate(g.members):
            for t in gm.transitions:
                walks[t].add(k)
        # the components each transition carries: its walkers' (its index holds those alone)
        carried = [[c for k in sorted(w) for c in range(*self.spans[k])] for w in walks]
        self.tmonoids = [Monoid([kinds[c] for c in carry], 0) for carry in carried]
        # a node's vector: the components of the members whose state it is (theirs alone, so a node costs what
        # its members' nodes cost alone), each member's a span of it
        local = {s: [c for k in ks for c in range(*self.spans[k])] for s, ks in self.serving.items()}
        self.node_monoids = {s: Monoid([kinds[c] for c in cs], 0) for s, cs in local.items()}
        self.node_spans: dict[str, list[tuple[int, int, int]]] = {}
        for s, ks in self.serving.items():
            at = 0
            self.node_spans[s] = []
            for k in ks:
                width = self.spans[k][1] - self.spans[k][0]
                self.node_spans[s].append((k, at, at + width))
                at += width
        # where a transition's components are in its source's and its target's node vectors (None: all of them)
        ts = g.template.transitions
        self.gather = [_places(carry, local[t.source]) for t, carry in zip(ts, carried)]
        self.scatter = [_places(carry, local[t.target]) for t, carry in zip(ts, carried)]


def _places(carry: list[int], local: list[int]) -> list[int] | None:
    """The positions of the components `carry` in a node vector of `local`
    components; None when they are the whole vector, in order."""
    if carry == local:
        return None
    where = {c: i for i, c in enumerate(local)}
    return [where[c] for c in carry]


def _gather(v: list, at: list[int]) -> list:
    return [v[i] for i in at]


def _part(lay: _Layout, cols: dict, times: list) -> list[list]:
    """Each member's totals over one part (GRETA's forward pass, shared)."""
    gt = GroupTemplate(lay.template, times, cols)
    targets = [[greta.Target(f, s, cols[v] if v else None) for f, s, v in ts] for ts in lay.targets]
    finals = [list(mk.zero) for mk in lay.monoids]
    incoming: dict[str, list] = {}
    outgoing: dict[str, list] = {}
    for t, st in enumerate(gt.steps):
        idx = gt.index(lay.tmonoids[t], st)
        incoming.setdefault(st.target, []).append((lay.scatter[t], idx))
        outgoing.setdefault(st.source, []).append((lay.gather[t], idx))
    for group in gt.nodes_by_time():
        values = []
        for node in group:
            e, s = node
            m = lay.node_monoids[s]
            acc = list(m.zero)
            for at, idx in incoming.get(s, ()):
                if at is None:
                    m.add(acc, idx.query(node))
                else:
                    m.add_at(acc, idx.query(node), at)
            for k, lo, hi in lay.node_spans[s]:
                v = acc[lo:hi]
                if s in lay.starts[k]:
                    v[0] = (v[0] or 0) + 1
                greta._contribute(v, targets[k], lay.slots[k], e, s, False)
                acc[lo:hi] = v
                if s in lay.ends[k]:
                    lay.monoids[k].add(finals[k], v)
            values.append(acc)
        for node, v in zip(group, values):
            for at, idx in outgoing.get(node[1], ()):
                idx.insert(node, v if at is None else _gather(v, at))
    return [greta._results(f, ts, sl) for f, ts, sl in zip(finals, targets, lay.slots)]


def _window(lay: _Layout, g: SharedGraph, cols: dict, times: list, start: int, end: int) -> list[list]:
    """Each member's totals of one window, its parts' summed."""
    totals: list = [None] * len(lay.members)
    with localcontext(EXACT):  # exact sums of DECIMALs, as alone
        for part in parts(cols, start, end, g.template, g.subkeys) or [nothing(start, g.template, ())]:
            local, part_times = part_columns(cols, times, part)
            for k, got in enumerate(_part(lay, local, part_times)):
                totals[k] = got if totals[k] is None else _combine(lay.members[k].spec, totals[k], got)
    return totals


def graph_batches(spec: WorkloadSpec, g: SharedGraph, table: pa.Table, schemas: list[pa.Schema]) -> Iterator[tuple[int, pa.RecordBatch]]:  # fmt: skip
    """(member index, its output batch, in its own schema `schemas[k]`) of
    every member of the graph over whole groups of the shared input."""
    members = [spec.members[gm.member] for gm in g.members]
    lay = _Layout(g, members)
    names = template_columns(g.template) | set(g.subkeys) | {m.select for m in members}
    names |= {v for ts in lay.targets for _, _, v in ts if v}
    cols, times = read_columns(table, names, spec.columns)
    out = [[[] for _ in schema] for schema in schemas]
    c = spec.columns
    for _, _, _, windows in window_groups(table, list(c.group), c.block, c.window_lo, c.window_hi):
        for w_start, w_end, wk in windows:
            present = [any(cols[m.select][w_start:w_end]) for m in members]
            if not any(present):
                continue
            totals = _window(lay, g, cols, times, w_start, w_end)
            for k, m in enumerate(members):
                if present[k]:
                    group = [table.column(x)[w_start].as_py() for x in m.spec.output_keys]
                    with of_query(m.name):
                        row = [wk, *group, *(_final(m.spec, i, v, wk, group) for i, v in enumerate(totals[k]))]
                    for i, v in enumerate(row):
                        out[k][i].append(v)
    for k, (gm, schema) in enumerate(zip(g.members, schemas)):
        if out[k][0]:
            yield gm.member, pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(out[k], schema)],
                                                        schema=schema)  # fmt: skip
