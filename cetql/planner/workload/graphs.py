"""Hamlet's shared propagation (SIGMOD'21), in GRETA's form, over the
members of one exchange (pure): aggregation queries whose GRETA templates
walk the same edges — a Kleene part with the same events and the same
edge predicates, under heads of their own, or one pattern under several
aggregates — propagate once, over a merged template whose nodes carry
every member's values (`kernels.graphlets`).

Two members' states merge when they take the same events (the same mask
column) and repeat alike; two transitions merge when they join merged
states under the same edge predicates (in the shared columns' names).  A
member's states never merge with each other.  A member joins a graph when
one of its transitions is another member's too (one predecessor index
read for both); the rest propagate alone, and the plan says why.

Not shared, and said: COMPLETE trends (a node's completeness depends on
the member's own other states), approximate numbers (shared sums could
add doubles in another order), per-variable keys, negations, predicates
across variables, the predecessor scan asked for.
"""

from __future__ import annotations

from dataclasses import fields, replace

from cetql.base.options import Algorithm, TrendSet
from cetql.kernels import spec as K
from cetql.kernels.workload_spec import GraphMember, Member, SharedGraph
from cetql.planner.workload.trees import sums_refusal


def graph_refusal(s: K.AggregateSpec) -> str | None:
    """Why a GRETA member propagates alone (None: it may share)."""
    if s.trend_set != TrendSet.ALL:
        return f"{s.trend_set.value} trends: which nodes start and end a trend depends on its own states"
    if (why := sums_refusal(s)) is not None:
        return why
    if s.template.negations or s.template.cross:
        return "a negation or a predicate across variables: not in a shared propagation"
    if s.kernel == K.Kernel.SCAN:
        return "the predecessor scan was asked for"
    if not set(s.output_keys) <= set(s.columns.group):
        return "output keys that are not its group's"
    return None


def _rename(e: K.Expr, shared: dict[str, str]) -> K.Expr:
    """The expression reading the shared columns."""
    if isinstance(e, K.Col):
        return K.Col(e.slot, shared.get(e.column, e.column))
    if isinstance(e, (K.Lit, K.Param)):
        return e

    def sub(x):
        if isinstance(x, tuple):
            return tuple(sub(y) for y in x)
        return x if isinstance(x, str) else _rename(x, shared)

    return replace(e, **{f.name: sub(getattr(e, f.name)) for f in fields(e)})


def _transition(tr: K.Transition, states: dict[str, str], shared: dict[str, str]) -> K.Transition:
    col = lambda c: shared.get(c, c)  # noqa: E731
    return K.Transition(states[tr.source], states[tr.target], tuple((col(a), col(b)) for a, b in tr.equal),
                        tuple((col(a), op, col(b)) for a, op, b in tr.ranges),
                        tuple(_rename(e, shared) for e in tr.others), tr.index)  # fmt: skip


def merge(members: tuple[Member, ...], chosen: list[int], subkeys: tuple[str, ...]) -> SharedGraph:
    """One template for the chosen members, their equal states and edges merged."""
    states: list[K.State] = []
    transitions: list[K.Transition] = []
    found: dict[tuple, int] = {}  # a transition's identity (its expressions' literals typed) → its index
    made, start, end = [], set(), set()
    for i in chosen:
        m = members[i]
        shared, t, mine = dict(m.columns), m.spec.template, {}
        for st in t.states:
            mask = shared[st.mask]
            same = (x.name for x in states if x.mask == mask and x.repeated == st.repeated and x.name not in mine.values())
            name = next(same, None)
            if name is None:
                name = f"s{len(states)}"
                states.append(K.State(name, mask, st.repeated))
            mine[st.name] = name
        walks = []
        for tr in t.transitions:
            mt = _transition(tr, mine, shared)
            key = (mt.source, mt.target, mt.equal, mt.ranges, tuple(K.identity(e) for e in mt.others), mt.index)
            if key not in found:
                found[key] = len(transitions)
                transitions.append(mt)
            walks.append(found[key])
        start |= {mine[s] for s in t.start}
        end |= {mine[s] for s in t.end}
        made.append(GraphMember(i, tuple(mine.items()), tuple(walks)))
    template = K.TemplateSpec(tuple(states), frozenset(start), frozenset(end), tuple(transitions))
    return SharedGraph(template, tuple(made), subkeys)


def _sharing(g: SharedGraph) -> list[int]:
    """The members of g with a transition another member walks too."""
    users: dict[int, int] = {}
    for gm in g.members:
        for t in set(gm.transitions):
            users[t] = users.get(t, 0) + 1
    return [gm.member for gm in g.members if any(users[t] > 1 for t in gm.transitions)]


def shared_graphs(names: list[str], members: tuple[Member, ...],
                  describe: dict[str, str]) -> tuple[tuple[SharedGraph, ...], tuple[str, ...]]:  # fmt: skip
    """The graphs (one per set of sub-keys) and their description
    (`names`: each member's query name; `describe`: each shared column's
    definition in words)."""
    by_subkeys: dict[tuple[str, ...], list[int]] = {}
    text = []
    for i, m in enumerate(members):
        if not isinstance(m.spec, K.AggregateSpec) or m.spec.algorithm != Algorithm.GRETA:
            continue
        why = graph_refusal(m.spec)
        if why is None:
            shared = dict(m.columns)
            by_subkeys.setdefault(tuple(shared[c] for c in m.spec.shared_subkeys), []).append(i)
        else:
            text.append(f"{names[i]} propagates alone: {why}")
    graphs = []
    for subkeys, chosen in by_subkeys.items():
        g = merge(members, chosen, subkeys)
        sharing = _sharing(g)
        while len(sharing) != len(g.members) and len(sharing) >= 2:  # leave out who shares nothing, and look again
            g = merge(members, sharing, subkeys)
            sharing = _sharing(g)
        sharing = sharing if len(sharing) >= 2 else []  # one query left sharing shares with none
        text += [f"{names[i]} propagates alone: no edge (predecessor index) in common with another query's propagation"
                 for i in chosen if i not in sharing]  # fmt: skip
        if sharing:
            graphs.append(g)
            text += _lines(g, names, members, describe)
    return tuple(graphs), tuple(text)


def _lines(g: SharedGraph, names: list[str], members: tuple[Member, ...], describe: dict[str, str]) -> list[str]:
    t = g.template
    states = sum(len(members[gm.member].spec.template.states) for gm in g.members)
    edges = sum(len(members[gm.member].spec.template.transitions) for gm in g.members)
    who = ", ".join(names[gm.member] for gm in g.members)
    keys = f" split by {', '.join(describe[k] for k in g.subkeys)}" if g.subkeys else ""
    lines = [f"shared propagation (Hamlet's shared graphlets, GRETA's form){keys}: {who} — {len(t.states)} state(s) "
             f"and {len(t.transitions)} edge(s) for {len(g.members)} queries ({states} and {edges} apart), one pass, "
             "each node carrying the values of the queries whose state it is"]  # fmt: skip
    users: dict[str, list[str]] = {}
    for gm in g.members:
        for own, merged in gm.states:
            users.setdefault(merged, []).append(f"{names[gm.member]}.{own}")
    for s in t.states:
        lines.append(f"  {s.name} = {describe.get(s.mask, s.mask)}: {', '.join(users[s.name])}")
    for k, tr in enumerate(t.transitions):
        on = [f"next {describe.get(a, a)} = prev {describe.get(b, b)}" for a, b in tr.equal]
        on += [f"next {describe.get(a, a)} {op} prev {describe.get(b, b)}" for a, op, b in tr.ranges]
        on += ["an expression"] * len(tr.others)
        walk = ", ".join(names[gm.member] for gm in g.members if k in gm.transitions)
        lines.append(f"  {tr.source} → {tr.target}{' where ' + ' and '.join(on) if on else ''}: {walk}")
    return lines
