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
Members may be chopped (`chop`): their suffix counted once by backward
counters for all that end with it, connected to their prefix counter.
"""

from __future__ import annotations

from cetql.base.options import Algorithm
from cetql.kernels import spec as K
from cetql.kernels.workload_spec import Member, PrefixTree, SuffixNode, TreeChop, TreeEnd, TreeNode
from cetql.planner.physical.plan import Aggregate
from cetql.planner.workload import chop
from cetql.planner.workload.plan import Named


def tree_refusal(m: Member) -> str | None:
    """Why a member counts by its own kernel (None: it joins a tree)."""
    s = m.spec
    if not isinstance(s, K.AggregateSpec):
        return "a detection query: its own kernel"
    if s.algorithm != Algorithm.ASEQ:
        return f"algorithm {s.algorithm.value}, not A-Seq's prefix counters"
    if (why := sums_refusal(s)) is not None:
        return why
    if len(s.targets) != 1 or s.targets[0].func != "COUNT" or s.targets[0].state is not None:
        return "an aggregate other than one COUNT(*)"
    return None


def sums_refusal(s: K.AggregateSpec) -> str | None:
    """Why a query's numbers cannot be summed with other queries' (a prefix
    tree's counters, a shared propagation): None where they can."""
    if s.approx:
        return "approximate numbers: shared sums could add its doubles in another order than its own"
    if s.state_keys:
        return "per-variable keys split its groups its own way"
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
    shapes = [chop.Member(tuple(c), a) for c, a in (_chain(members[i]) for i in chosen)]
    cuts = chop.choose(shapes)
    nodes: list[TreeNode] = []
    suffixes: list[SuffixNode] = []
    index: dict = {}  # a node (a prefix or a suffix one) → its index among its kind
    users: dict[int, list[str]] = {}
    susers: dict[int, list[str]] = {}
    ends, chops = [], []
    for j, i in enumerate(chosen):
        shape, name, k = shapes[j], queries[members[i].query].name, cuts.get(j)
        parent = -1
        for mask, clears in shape.chain[: len(shape.chain) if k is None else k + 1]:
            parent = _node(index, nodes, TreeNode(parent, mask, clears))
            users.setdefault(parent, []).append(name)
        if k is None:
            ends.append(TreeEnd(i, parent, shape.after))
            continue
        child = -1
        for pos in range(len(shape.chain) - 1, k - 1, -1):
            mask, clears = shape.suffix(pos)[0]
            child = _node(index, suffixes, SuffixNode(child, mask, clears))
            susers.setdefault(child, []).append(name)
        chops.append(TreeChop(i, parent, child))
    total = sum(len(s.chain) for s in shapes)
    keys = f" split by {', '.join(describe[k] for k in subkeys)}" if subkeys else ""
    lines = [f"prefix tree{keys}: {len(nodes)} counter(s) for {len(chosen)} quer{'y' if len(chosen) == 1 else 'ies'} "
             f"({total} apart), each event's count read from its parent's prefix sums (columns at once)"]  # fmt: skip
    lines += _tree_lines([n.parent for n in nodes], [_label(n, describe, "after") for n in nodes], users)
    tree = PrefixTree(tuple(nodes), tuple(ends), subkeys, tuple(suffixes), tuple(chops))
    if chops:
        lines += _chop_lines(queries, members, tree, shapes, chosen, cuts, susers, describe)
    return tree, lines


def _node(index: dict, made: list, node) -> int:
    """The index of an equal node made before, else of this one."""
    if node not in index:
        index[node] = len(made)
        made.append(node)
    return index[node]


def _label(node, describe: dict[str, str], where: str) -> str:
    clears = f" ({where} no {' or '.join(describe[c] for c in node.clears)})" if node.clears else ""
    return describe[node.mask] + clears


def _chop_lines(queries, members, tree: PrefixTree, shapes, chosen, cuts, susers, describe) -> list[str]:
    lines = [f"suffix tree: {len(tree.suffixes)} counter(s), counted backward from each window's end, nodes keyed "
             "from the last position (A-Seq Chop-Connect)"]  # fmt: skip
    lines += _tree_lines([n.child for n in tree.suffixes], [_label(n, describe, "then") for n in tree.suffixes], susers)
    why = (f"the cost rule: {chop.cost(shapes, cuts):g} passes of prefix sums chopped against "
           f"{chop.cost(shapes, {}):g} unchopped")  # fmt: skip
    for c in tree.chops:
        j = chosen.index(c.member)
        k, chain = cuts[j], shapes[j].chain
        before = ", ".join(describe[m] for m, _ in chain[:k])
        after = ", ".join(describe[m] for m, _ in chain[k:])
        lines.append(f"{queries[members[c.member].query].name} = prefix [{before}] ⋈ shared suffix [{after}] of "
                     f"{', '.join(susers[c.suffix])}, connected by start time (A-Seq Chop-Connect): {why}")  # fmt: skip
    return lines


def _tree_lines(parents: list[int], labels: list[str], users: dict[int, list[str]]) -> list[str]:
    """The counters depth first, each with the queries it serves."""
    children: dict[int, list[int]] = {}
    for n, parent in enumerate(parents):
        children.setdefault(parent, []).append(n)
    lines, todo = [], [(n, 1) for n in reversed(children.get(-1, []))]
    while todo:
        n, depth = todo.pop()
        lines.append(f"{'  ' * depth}{labels[n]}: {', '.join(users[n])}")
        todo += [(c, depth + 1) for c in reversed(children.get(n, []))]
    return lines
