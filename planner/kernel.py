"""Trend extraction inside one (window, partition) group — pure Python, no
Spark, so it is tested directly against the brute-force reference.

Two kernels:

- `kleene_paths` for `E+` (one Kleene position): the relevance DAG (edge
  i → j iff t_i < t_j and every adjacent predicate holds) is built from the
  ABI index — a hash on the value for an equal predicate, a scan of the later
  events for a range one — and trends are its paths: COMPLETE = source → sink,
  MAXIMAL = source → sink with no step (i, j) that some k with i → k → j could
  split, ALL = every path.
- `generic_trends` for any positive pattern without nested Kleene
  (`SEQ(Activity a, Activity+ b[])`, …): trends are enumerated on the
  template by DFS with every predicate checked as soon as its variables are
  bound; COMPLETE and MAXIMAL then keep those to which no single event of the
  window can be prepended / appended (or inserted), checked by definition.

Events are given as parallel lists sorted by time; ties never chain.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from .exprs import COMPARATORS

COMPLETE, MAXIMAL, ALL = "COMPLETE", "MAXIMAL", "ALL"

# Comparators written as `next.lval OP h(prev)`.
_OPS = COMPARATORS


@dataclass
class KleeneSpec:
    """Adjacent predicates of an `E+` pattern, over per-event value lists.

    equal:  (lval, h) pairs — next.lval = h(prev)
    ranges: (lval, op, h) — next.lval OP h(prev)
    others: f(prev_index, next_index) -> True/False/None
    """

    equal: list[tuple[Sequence, Sequence]] = field(default_factory=list)
    ranges: list[tuple[Sequence, str, Sequence]] = field(default_factory=list)
    others: list[Callable[[int, int], object]] = field(default_factory=list)


def _first_later(times: Sequence) -> list[int]:
    """For each i, the first index whose time is strictly greater."""
    return [bisect_right(times, t) for t in times]


def _holds(v) -> bool:
    return v is True


def successors(times: Sequence, spec: KleeneSpec) -> list[list[int]]:
    """Adjacency lists of the relevance DAG (ascending), via the ABI index."""
    n = len(times)
    later = _first_later(times)
    succ: list[list[int]] = [[] for _ in range(n)]
    equal = list(spec.equal)
    ranges = list(spec.ranges)
    if equal:
        lval, h = equal.pop(0)
        index: dict[object, list[int]] = defaultdict(list)  # attribute vertex -> events (from-edges)
        for j in range(n):
            v = lval[j]
            if v is not None:
                index[v].append(j)
        for i in range(n):
            hv = h[i]
            if hv is None:
                continue
            cand = index.get(hv)
            if not cand:
                continue
            k = bisect_left(cand, later[i])
            succ[i] = cand[k:]
    elif ranges:
        lval, op, h = ranges.pop(0)
        cmp = _OPS[op]
        for i in range(n):
            hv = h[i]
            if hv is None:
                continue
            succ[i] = [j for j in range(later[i], n) if (lv := lval[j]) is not None and cmp(lv, hv)]
    else:
        for i in range(n):
            succ[i] = list(range(later[i], n))
    if equal or ranges or spec.others:
        checks = [(lv, _OPS["="], hh) for lv, hh in equal] + [(lv, _OPS[op], hh) for lv, op, hh in ranges]
        for i in range(n):
            if not succ[i]:
                continue
            keep = []
            for j in succ[i]:
                ok = True
                for lv, cmp, hh in checks:
                    a, b = lv[j], hh[i]
                    if a is None or b is None or not cmp(a, b):
                        ok = False
                        break
                if ok:
                    for f in spec.others:
                        if not _holds(f(i, j)):
                            ok = False
                            break
                if ok:
                    keep.append(j)
            succ[i] = keep
    return succ


def _restrict_maximal(succ: list[list[int]]) -> list[list[int]]:
    """Keep step (i, j) only if no k has i → k and k → j."""
    pred_sets: list[set[int]] = [set() for _ in succ]
    for i, js in enumerate(succ):
        for j in js:
            pred_sets[j].add(i)
    out = []
    for js in succ:
        if len(js) <= 1:
            out.append(js)
            continue
        mine = set(js)
        out.append([j for j in js if not (pred_sets[j] & mine)])
    return out


def kleene_paths(times: Sequence, spec: KleeneSpec, trend_set: str = COMPLETE) -> Iterator[list[int]]:
    """Trends of `E+` in one group, as lists of event indices."""
    succ = successors(times, spec)
    n = len(times)
    if trend_set == ALL:
        for s in range(n):
            yield from _dfs(s, succ, emit_all=True)
        return
    has_pred = [False] * n
    for js in succ:
        for j in js:
            has_pred[j] = True
    walk = _restrict_maximal(succ) if trend_set == MAXIMAL else succ
    for s in range(n):
        if not has_pred[s]:
            yield from _dfs(s, walk, emit_all=False)


def _dfs(start: int, succ: list[list[int]], emit_all: bool) -> Iterator[list[int]]:
    """Paths from `start`: every prefix (emit_all) or only those ending at a
    node without successors."""
    path = [start]
    stack = [iter(succ[start])]
    if emit_all or not succ[start]:
        yield list(path)
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            path.pop()
            continue
        path.append(nxt)
        children = succ[nxt]
        if emit_all or not children:
            yield list(path)
        stack.append(iter(children))


# ---------------------------------------------------------------- generic patterns


@dataclass
class PatternSpec:
    """A positive pattern's template and predicates, for `generic_trends`.

    positions: name -> (eligible(event) -> bool)   vertex predicates and type
    start, end: START / END positions; follow: p -> positions that may follow
    kleene: positions bound to arrays (a Kleene part)
    edge: (p, q) -> [f(prev_event, next_event) -> bool/None] for a step p → q
    cross: [(vars, f(binding) -> bool/None)] checked once all vars are bound;
           a Kleene var is bound to each of its elements in turn
    """

    positions: dict[str, Callable[[int], bool]]
    start: set[str]
    end: set[str]
    follow: dict[str, list[str]]
    kleene: set[str]
    edge: dict[tuple[str, str], list[Callable[[int, int], object]]]
    cross: list[tuple[tuple[str, ...], Callable[[dict[str, int]], object]]]


def _cross_ok(spec: PatternSpec, binding: dict[str, list[int]], pos: str, event: int) -> bool:
    """Cross predicates that involve `pos`, with `event` newly bound to it and
    every other variable already bound (each element of a Kleene one)."""
    for vars_, f in spec.cross:
        if pos not in vars_ or any(v != pos and v not in binding for v in vars_):
            continue
        others = [v for v in vars_ if v != pos]
        for combo in _combos([binding[v] for v in others]):
            env = dict(zip(others, combo))
            env[pos] = event
            if not _holds(f(env)):
                return False
    return True


def _combos(lists):
    if not lists:
        yield ()
        return
    for x in lists[0]:
        for rest in _combos(lists[1:]):
            yield (x, *rest)


def generic_trends(times: Sequence, spec: PatternSpec, trend_set: str = COMPLETE) -> list[list[int]]:
    """Every trend of the pattern in one group, then filtered to the trend set
    by definition (prepend / append / insert one event)."""
    n = len(times)
    found: set[tuple[int, ...]] = set()
    eligible = {p: [i for i in range(n) if f(i)] for p, f in spec.positions.items()}

    def extend(seq: list[int], binding: dict[str, list[int]], last_pos: str):
        if last_pos in spec.end:
            found.add(tuple(seq))
        t_last = times[seq[-1]]
        for q in spec.follow.get(last_pos, ()):
            if q not in spec.kleene and q in binding:
                continue
            for j in eligible[q]:
                if times[j] <= t_last:
                    continue
                if not all(_holds(f(seq[-1], j)) for f in spec.edge.get((last_pos, q), ())):
                    continue
                if not _cross_ok(spec, binding, q, j):
                    continue
                binding.setdefault(q, []).append(j)
                seq.append(j)
                extend(seq, binding, q)
                seq.pop()
                binding[q].pop()
                if not binding[q]:
                    del binding[q]

    for p in spec.start:
        for i in eligible[p]:
            if _cross_ok(spec, {}, p, i):
                extend([i], {p: [i]}, p)

    if trend_set == ALL:
        return sorted(map(list, found))

    def is_trend(seq: tuple[int, ...]) -> bool:
        return seq in found or _matches(seq, spec, times)

    out = []
    for tr in found:
        first, last = times[tr[0]], times[tr[-1]]
        ok = True
        for k in range(n):
            tk = times[k]
            if tk < first and is_trend((k, *tr)):
                ok = False
            elif tk > last and is_trend((*tr, k)):
                ok = False
            elif trend_set == MAXIMAL and first < tk < last and k not in tr:
                at = bisect_right([times[x] for x in tr], tk)
                if times[tr[at - 1]] < tk < times[tr[at]] and is_trend((*tr[:at], k, *tr[at:])):
                    ok = False
            if not ok:
                break
        if ok:
            out.append(list(tr))
    return sorted(out)


def _matches(seq: tuple[int, ...], spec: PatternSpec, times) -> bool:
    """Does the pattern match `seq` (some run through the template)?"""
    if any(times[a] >= times[b] for a, b in zip(seq, seq[1:])):
        return False

    def run(k: int, pos: str, binding: dict[str, list[int]]) -> bool:
        if k == len(seq) - 1:
            return pos in spec.end
        j = seq[k + 1]
        for q in spec.follow.get(pos, ()):
            if q not in spec.kleene and q in binding:
                continue
            if not spec.positions[q](j):
                continue
            if not all(_holds(f(seq[k], j)) for f in spec.edge.get((pos, q), ())):
                continue
            if not _cross_ok(spec, binding, q, j):
                continue
            binding.setdefault(q, []).append(j)
            ok = run(k + 1, q, binding)
            binding[q].pop()
            if not binding[q]:
                del binding[q]
            if ok:
                return True
        return False

    first = seq[0]
    for p in spec.start:
        if spec.positions[p](first) and _cross_ok(spec, {}, p, first) and run(0, p, {p: [first]}):
            return True
    return False
