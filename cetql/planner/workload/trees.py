"""A-Seq's Pre-Tree over the members of one exchange (SIGMOD'14 §4.1):
the COUNT(*) queries of fixed-length SEQ patterns, their prefix counters
merged where the prefixes are the same (pure).

A prefix counter is the same for two queries when every position up to it
takes the same events (the same mask column: the same type, the same
predicates, the same constant condition) and the same negated events clear
it between the same positions; a query's count is its last counter,
cleared by what it negates after its last position.  Queries whose
counters would differ from their own — approximate numbers, per-variable
keys, another aggregate — count by their own kernel, and the plan says why.
"""

from __future__ import annotations

from cetql.base.options import Algorithm
from cetql.kernels import spec as K
from cetql.kernels.workload_spec import Member, PrefixTree, TreeEnd, TreeNode
from cetql.planner.physical.plan import Aggregate
from cetql.planner.workload.plan import Named


def tree_refusal(m: Member) -> str | None:
    """Why a member counts by its own kernel (None: it joins a tree)."""
    s = m.spec
    if not isinstance(s, K.AggregateSpec):
        return "a detection query: its own kernel"
    if s.algorithm != Algorithm.ASEQ:
        return f"algorithm {s.algorithm.value}, not A-Seq's prefix counters"
    if s.approx:
        return "approximate numbers: shared sums would add its doubles in another order than its own counters"
    if s.state_keys:
        return "per-variable keys split its groups its own way"
    if len(s.targets) != 1 or s.targets[0].func != "COUNT" or s.targets[0].state is not None:
        return "an aggregate other than one COUNT(*)"
    return None


def positions(t: K.TemplateSpec) -> list[str]:
    """The SEQ's positions in order (a fixed-length SEQ: one chain)."""
    nxt = {tr.source: tr.target for tr in t.transitions}
    (first,) = t.start
    order = [first]
    while order[-1] in nxt:
        order.append(nxt[order[-1]])
    return order


def _chain(m: Member) -> tuple[list[tuple[str, tuple[str, ...]]], tuple[str, ...]]:
    """([(mask column, clearing columns before it)] of each position,
    clearing columns after the last), in the shared columns' names."""
    shared = dict(m.columns)
    t = m.spec.template
    order = positions(t)
    clears: dict[int, list[str]] = {}
    for neg in t.negations:
        (state,) = neg.template.states
        k = order.index(next(iter(neg.pairs))[0]) + 1 if neg.pairs else (0 if neg.starts else len(order))
        clears.setdefault(k, []).append(shared[state.mask])
    chain = [(shared[t.state(p).mask], tuple(sorted(clears.get(k, ())))) for k, p in enumerate(order)]
    return chain, tuple(sorted(clears.get(len(order), ())))


def prefix_trees(queries: tuple[Named, ...], members: tuple[Member, ...],
                 describe: dict[str, str]) -> tuple[tuple[PrefixTree, ...], tuple[str, ...]]:  # fmt: skip
    """The trees (one per set of sub-keys) and their description
    (`describe`: each shared column's definition in words)."""
    by_subkeys: dict[tuple[str, ...], list[int]] = {}
    text = []
    for i, m in enumerate(members):
        why = tree_refusal(m)
        if why is None:
            shared = dict(m.columns)
            by_subkeys.setdefault(tuple(shared[c] for c in m.spec.shared_subkeys), []).append(i)
        elif isinstance(queries[m.query].plan.root, Aggregate) and m.spec.algorithm == Algorithm.ASEQ:
            text.append(f"{queries[m.query].name} counts alone: {why}")
    trees = []
    for subkeys, chosen in by_subkeys.items():
        tree, lines = _tree(queries, members, chosen, subkeys, describe)
        trees.append(tree)
        text += lines
    return tuple(trees), tuple(text)


def _tree(queries, members, chosen: list[int], subkeys: tuple[str, ...], describe: dict[str, str]):
    nodes: list[TreeNode] = []
    index: dict[tuple, int] = {}
    users: dict[int, list[str]] = {}
    ends = []
    for i in chosen:
        chain, after = _chain(members[i])
        parent = -1
        for mask, clears in chain:
            k = (parent, mask, clears)
            if k not in index:
                index[k] = len(nodes)
                nodes.append(TreeNode(parent, mask, clears))
            parent = index[k]
            users.setdefault(parent, []).append(queries[members[i].query].name)
        ends.append(TreeEnd(i, parent, after))
    total = sum(len(_chain(members[i])[0]) for i in chosen)
    keys = f" split by {', '.join(describe[k] for k in subkeys)}" if subkeys else ""
    lines = [f"prefix tree{keys}: {len(nodes)} counter(s) for {len(chosen)} quer{'y' if len(chosen) == 1 else 'ies'} "
             f"({total} apart), each event's count read from its parent's prefix sums (columns at once)"]  # fmt: skip
    lines += _tree_lines(nodes, users, describe)
    return PrefixTree(tuple(nodes), tuple(ends), subkeys), lines


def _tree_lines(nodes: list[TreeNode], users: dict[int, list[str]], describe: dict[str, str]) -> list[str]:
    """The counters depth first, each with the queries it serves."""
    children: dict[int, list[int]] = {}
    for n, node in enumerate(nodes):
        children.setdefault(node.parent, []).append(n)
    lines, todo = [], [(n, 1) for n in reversed(children.get(-1, []))]
    while todo:
        n, depth = todo.pop()
        node = nodes[n]
        clears = f" (after no {' or '.join(describe[c] for c in node.clears)})" if node.clears else ""
        lines.append(f"{'  ' * depth}{describe[node.mask]}{clears}: {', '.join(users[n])}")
        todo += [(c, depth + 1) for c in reversed(children.get(n, []))]
    return lines
