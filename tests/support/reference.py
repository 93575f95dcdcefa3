"""Brute-force reference: trends enumerated by definition (SEMANTICS.md).

Independent of the planner: it matches the AST directly (no template), checks
every predicate on every binding (no classification), enumerates every
subsequence of a window's events, and applies the definitions of COMPLETE
(no single event can be prepended or appended) and MAXIMAL (nor inserted).
Exponential — for small streams only.

Values compare as Spark SQL compares them (SEMANTICS.md, Errors): NaN equals
NaN and is larger than every other number, -0.0 equals 0.0, a comparison
with null is null, a DECIMAL against a DOUBLE is compared as doubles; MIN
and MAX order values the same way, equivalence and GROUP-BY values group
NaN with NaN.  Written here on its own, not taken from the kernels.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal

import cetql
from cetql.language import ast as A


def _num(v):
    return float(v) if isinstance(v, Decimal) else v


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _rank(v):
    """A value's place in Spark SQL's order: NaN after every number."""
    return (1, 0) if _is_nan(v) else (0, v)


def sql_compare(op, a, b):
    """`a OP b` in Spark SQL: True, False, or None (null, or values that cannot be compared)."""
    if a is None or b is None:
        return None
    if isinstance(a, float) and isinstance(b, (Decimal, int)) and not isinstance(b, bool):
        b = float(b)
    elif isinstance(b, float) and isinstance(a, (Decimal, int)) and not isinstance(a, bool):
        a = float(a)
    x, y = _rank(a), _rank(b)
    try:
        return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    except TypeError:
        return None


def group_value(v):
    """A value as Spark groups it: every NaN one group (-0.0 with 0.0 already)."""
    return "NaN" if _is_nan(v) else v


def _sql_mod(a, b):
    """SQL's remainder: the sign of the dividend; NaN for an infinite one."""
    if isinstance(a, float) or isinstance(b, float):
        return math.nan if math.isinf(a) else math.fmod(a, b)
    r = abs(a) % abs(b)
    return -r if a < 0 else r


# ---------------------------------------------------------------- expressions


def evaluate(e, env, params):
    """SQL three-valued evaluation; env maps (var, index-role) -> event dict."""
    if isinstance(e, A.Literal):
        return _num(e.value)
    if isinstance(e, A.Name):
        return _num(params[e.name])
    if isinstance(e, A.Attr):
        return env[(e.var, _role(e))].get(e.attr)
    if isinstance(e, A.Neg):
        v = evaluate(e.operand, env, params)
        return None if v is None else -v
    if isinstance(e, A.BinOp):
        a, b = evaluate(e.left, env, params), evaluate(e.right, env, params)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if b == 0:
            return None
        return a / b if e.op == "/" else _sql_mod(a, b)
    if isinstance(e, A.Compare):
        vals = [evaluate(x, env, params) for x in e.operands]
        out = True
        for op, a, b in zip(e.ops, vals, vals[1:]):
            ok = sql_compare(op, a, b)
            if ok is None:
                out = None
            elif not ok:
                return False
        return out
    if isinstance(e, A.And):
        vals = [evaluate(x, env, params) for x in e.items]
        return False if False in vals else None if None in vals else True
    if isinstance(e, A.Or):
        vals = [evaluate(x, env, params) for x in e.items]
        return True if True in vals else None if None in vals else False
    if isinstance(e, A.Not):
        v = evaluate(e.operand, env, params)
        return None if v is None else not v
    raise TypeError(e)


def _role(a: A.Attr) -> str:
    return {None: "plain", "i": "cur", "i-1": "prev", "i+1": "next", "next": "next"}[a.index]


def _conjuncts(e):
    if e is None:
        return []
    if isinstance(e, A.And):
        return [c for x in e.items for c in _conjuncts(x)]
    return [e]


def predicate_holds(pred, binding, params, adjacent=None) -> bool:
    """Does a WHERE conjunct hold on a binding (var -> event or [events])?
    An indexed Kleene variable ranges over consecutive pairs of its events
    that are also consecutive in the trend (`adjacent`: pairs of event
    object ids; under a nested Kleene, a variable's events of two iterations
    are not); an unindexed one over each of its events."""
    if isinstance(pred, A.Equivalence):
        for col in pred.columns:
            if isinstance(col, A.Name):
                events = [ev for v in binding.values() for ev in (v if isinstance(v, list) else [v])]
                attr = col.name
            else:
                v = binding[_resolve(col.var, binding)]
                events, attr = (v if isinstance(v, list) else [v]), col.attr
            values = [ev.get(attr) for ev in events]
            if any(x is None for x in values) or len({group_value(x) for x in values}) > 1:
                return False
        return True
    refs = [n for n in A.walk(pred) if isinstance(n, A.Attr)]
    choices = []
    for var in dict.fromkeys(_resolve(r.var, binding) for r in refs):
        roles = {_role(r) for r in refs if _resolve(r.var, binding) == var}
        value = binding[var]
        names = [r.var for r in refs if _resolve(r.var, binding) == var]
        if isinstance(value, list):
            if roles <= {"plain", "cur"}:
                # no neighbour referenced: the predicate holds for every element
                choices.append([(var, names, {role: x for role in roles}) for x in value])
            else:
                # consecutive pairs (x, y) (SEMANTICS.md, Predicates): c[i-1] reads x and
                # c[i+1] / NEXT(c) read y; c[i] and bare c read y beside c[i-1], x beside
                # c[i+1] or NEXT(c)
                earlier = {"prev"} | ({"plain", "cur"} if "next" in roles else set())
                pairs = [{role: (x if role in earlier else y) for role in roles} for x, y in zip(value, value[1:])
                         if adjacent is None or (id(x), id(y)) in adjacent]  # fmt: skip
                choices.append([(var, names, o) for o in pairs])
        else:
            choices.append([(var, names, {role: value for role in roles})])
    for combo in itertools.product(*choices):
        env = {}
        for _var, names, roles in combo:
            for name in names:
                for role, ev in roles.items():
                    env[(name, role)] = ev
        if evaluate(pred, env, params) is not True:
            return False
    return True


def _predicates(query) -> list:
    """The WHERE conjuncts, with every chain of equalities `a.x = b.x = …`
    that links every variable of the pattern (negated ones included) read as
    the equivalence `[x]` (SEMANTICS.md: whichever optional variables match
    nothing)."""
    variables = {n.var or n.type for n in A.walk(query.pattern) if isinstance(n, A.EventPattern)}
    out, links = [], {}
    for c in _conjuncts(query.where):
        if isinstance(c, A.Equivalence):  # `[a.g, b.x]`: a's events share g, b's share x, each on its own
            out += [A.Equivalence((col,)) for col in c.columns]
            continue
        ops = c.ops if isinstance(c, A.Compare) else ()
        refs = c.operands if ops else ()
        plain = all(isinstance(r, A.Attr) and r.index in (None, "i") for r in refs)
        if ops and set(ops) == {"="} and plain and len({r.attr for r in refs}) == 1 and len({r.var for r in refs}) > 1:
            links.setdefault(refs[0].attr, []).append(c)
        else:
            out.append(c)
    for attr, chain in links.items():
        parent: dict = {}
        for c in chain:
            names = [_TYPE_NAMES.get(r.var, r.var) for r in c.operands]
            for a, b in zip(names, names[1:]):
                parent[_find(parent, a)] = _find(parent, b)
        groups: dict = {}
        for v in list(parent):
            groups.setdefault(_find(parent, v), set()).add(v)
        if len(variables) > 1 and any(g >= variables for g in groups.values()):
            out.append(A.Equivalence((A.Name(attr),)))
        else:
            out += chain
    return out


def _find(parent: dict, x):
    while parent.setdefault(x, x) != x:
        x = parent[x]
    return x


def _resolve(name, binding):
    return name if name in binding else _TYPE_NAMES.get(name, name)


_TYPE_NAMES: dict[str, str] = {}


def _bind_type_names(query) -> None:
    """A type name refers to the variable bound to it (COUNT(A) with `A a`)."""
    _TYPE_NAMES.clear()
    for n in A.walk(query.pattern):
        if isinstance(n, A.EventPattern) and n.var:
            _TYPE_NAMES.setdefault(n.type, n.var)


# ---------------------------------------------------------------- patterns


def _bindings(p, seq, typed):
    """Every way `seq` (a tuple of events) matches pattern `p`; a binding maps
    a variable (or type name) to an event, or to a list for a Kleene part."""
    if isinstance(p, A.EventPattern):
        if len(seq) == 1 and (not typed or seq[0]["__type"] == p.type):
            yield {p.var or p.type: seq[0]}
        return
    if isinstance(p, A.Kleene):
        if p.op == "?" and len(seq) == 1:
            yield from _bindings(p.sub, seq, typed)
            return
        if p.op == "?":
            return
        for cut in _splits(len(seq)):
            parts = [seq[a:b] for a, b in zip(cut, cut[1:])]
            for combo in itertools.product(*[list(_bindings(p.sub, part, typed)) for part in parts]):
                merged: dict = {}
                for b in combo:
                    for k, v in b.items():
                        merged.setdefault(k, []).extend(v if isinstance(v, list) else [v])
                yield merged  # "__neg" lists concatenate like any other
        return
    if isinstance(p, A.Seq):
        items = list(p.items)
        yield from _seq_bindings(items, seq, typed)
        return
    raise NotImplementedError(type(p).__name__)


def _splits(n):
    """Ways to cut range(n) into >= 1 non-empty consecutive parts."""
    for k in range(n):
        for inner in itertools.combinations(range(1, n), k):
            yield (0, *inner, n)


def _nullable(p):
    return isinstance(p, A.Kleene) and p.op in "*?"


def _seq_bindings(items, seq, typed, before=None):
    """`before`: the last event matched ahead of this point (for negations)."""
    if not items:
        if not seq:
            yield {}
        return
    head, rest = items[0], items[1:]
    if isinstance(head, A.Negation):
        # consumes nothing: N may not occur strictly between the neighbours
        after = seq[0] if seq else None
        for r in _seq_bindings(rest, seq, typed, before):
            negs = list(r.get("__neg", []))
            negs.append((head.sub, before, after))
            yield {**r, "__neg": negs}
        return
    if _nullable(head):
        yield from _seq_bindings(rest, seq, typed, before)
    for k in range(1, len(seq) + 1):
        for b in _bindings(head, seq[:k], typed):
            for r in _seq_bindings(rest, seq[k:], typed, seq[k - 1]):
                if (set(b) & set(r)) - {"__neg"}:
                    continue
                negs = b.get("__neg", []) + r.get("__neg", [])
                merged = {**b, **r}
                if negs:
                    merged["__neg"] = negs
                yield merged


# ---------------------------------------------------------------- trends


def _applicable(pred, binding) -> bool:
    """A conjunct applies once every variable it names is bound."""
    names = {n.var for n in A.walk(pred) if isinstance(n, A.Attr)}
    return all(_resolve(v, binding) in binding for v in names)


def matches(pattern, query, seq, params, typed, window_events, outer=None, outer_adjacent=frozenset()):
    """Bindings of `pattern` on `seq` under which every applicable predicate
    holds (jointly with `outer`, the enclosing binding) and no negated
    sub-pattern has a trend where it is forbidden."""
    if not seq or any(a["ts"] >= b["ts"] for a, b in zip(seq, seq[1:])):
        return
    preds = _predicates(query)
    adjacent = outer_adjacent | {(id(a), id(b)) for a, b in zip(seq, seq[1:])}
    for binding in _bindings(pattern, tuple(seq), typed):
        negs = binding.pop("__neg", [])
        full = {**(outer or {}), **binding}
        if not all(predicate_holds(p, full, params, adjacent) for p in preds if _applicable(p, full)):
            continue
        if all(not _negated_trend(n, lo, hi, query, params, typed, window_events, full, adjacent) for n, lo, hi in negs):
            yield binding


def _negated_trend(sub, lo, hi, query, params, typed, window_events, outer, outer_adjacent=frozenset()) -> bool:
    """Is there a trend of `sub` strictly after `lo` and before `hi` (None: the
    window's edge), consistent with the enclosing binding?"""
    inside = [e for e in window_events if (lo is None or e["ts"] > lo["ts"]) and (hi is None or e["ts"] < hi["ts"])]
    for r in range(1, len(inside) + 1):
        for combo in itertools.combinations(inside, r):
            for _ in matches(sub, query, combo, params, typed, window_events, outer, outer_adjacent):
                return True
    return False


def is_trend(query, seq, params, typed=False, window_events=()) -> bool:
    return next(matches(query.pattern, query, seq, params, typed, window_events), None) is not None


def windows(query, events):
    """(start, end) -> events, for every window holding at least one event."""
    w = _seconds(query.within)
    s = _seconds(query.slide) if query.slide else w
    out: dict = {}
    for ev in events:
        t = ev["ts"]
        k_hi = math.floor(t / s)
        k = k_hi
        while k * s + w > t:
            out.setdefault((k * s, k * s + w), []).append(ev)
            k -= 1
    return out


def _seconds(d):
    from cetql.language.units import UNIT_SECONDS as TIME_UNITS

    return (float(d.amount) * TIME_UNITS[d.unit]) if d.unit else d.amount


def reference_trends(text, events, params=None, trend_set=None, typed=False):
    """{(window_start, window_end): set of id tuples} by definition."""
    query = cetql.parse(text)
    params = params or {}
    _bind_type_names(query)
    if trend_set is None:
        trend_set = query.trends or ("ALL" if query.is_aggregation else "COMPLETE")
    result = {}
    for win, evs in windows(query, events).items():
        evs = sorted(evs, key=lambda e: (e["ts"], e["id"]))
        trends = []
        for r in range(1, len(evs) + 1):
            for combo in itertools.combinations(evs, r):
                if is_trend(query, combo, params, typed, evs):
                    trends.append(combo)
        keep = set()
        for tr in trends:
            ids = {e["id"] for e in tr}
            others = [e for e in evs if e["id"] not in ids]
            ok = True
            if trend_set in ("COMPLETE", "MAXIMAL"):
                for e in others:
                    if e["ts"] < tr[0]["ts"] and is_trend(query, (e, *tr), params, typed, evs):
                        ok = False
                    elif e["ts"] > tr[-1]["ts"] and is_trend(query, (*tr, e), params, typed, evs):
                        ok = False
                    elif trend_set == "MAXIMAL" and tr[0]["ts"] < e["ts"] < tr[-1]["ts"]:
                        k = sum(1 for x in tr if x["ts"] < e["ts"])
                        if is_trend(query, (*tr[:k], e, *tr[k:]), params, typed, evs):
                            ok = False
                    if not ok:
                        break
            if ok:
                keep.add(tuple(e["id"] for e in tr))
        if keep:
            result[win] = keep
    return result


# ---------------------------------------------------------------- aggregation


def reference_aggregates(text, events, params=None, typed=True):
    """{(window_start, group values): {aggregate text: value}} by enumerating
    every trend (ALL, or COMPLETE when the query asks) and aggregating."""
    from cetql.language.printer import aggregate_to_text

    query = cetql.parse(text)
    params = params or {}
    _bind_type_names(query)
    trend_set = query.trends or "ALL"
    group_attrs = [c.name if isinstance(c, A.Name) else c.attr for c in query.group_by]
    out = {}
    for (start, _end), evs in windows(query, events).items():
        evs = sorted(evs, key=lambda e: (e["ts"], e["id"]))
        trends = []  # (events, binding)
        for r in range(1, len(evs) + 1):
            for combo in itertools.combinations(evs, r):
                b = next(matches(query.pattern, query, combo, params, typed, evs), None)
                if b is None:
                    continue
                if group_attrs and len({tuple(group_value(e.get(a)) for a in group_attrs) for e in combo}) > 1:
                    continue
                trends.append((combo, b))
        if trend_set == "COMPLETE":
            kept = []
            for combo, b in trends:
                ids = {e["id"] for e in combo}
                extendable = any(
                    (e["ts"] < combo[0]["ts"] and is_trend(query, (e, *combo), params, typed, evs))
                    or (e["ts"] > combo[-1]["ts"] and is_trend(query, (*combo, e), params, typed, evs))
                    for e in evs
                    if e["id"] not in ids
                )
                if not extendable:
                    kept.append((combo, b))
            trends = kept
        groups: dict = {}
        for combo, b in trends:
            key = tuple(group_value(combo[0].get(a)) for a in group_attrs)
            groups.setdefault(key, []).append(b)
        for key, bindings in groups.items():
            row = {}
            for agg in query.aggregates:
                name = aggregate_to_text(agg)
                if agg.arg is None:
                    row[name] = len(bindings)
                    continue
                var = agg.arg.name if isinstance(agg.arg, A.Name) else agg.arg.var
                var = _resolve(var, bindings[0])
                occurrences = []
                for b in bindings:
                    v = b.get(var, [])
                    occurrences += v if isinstance(v, list) else [v]
                if agg.func == "COUNT":
                    row[name] = len(occurrences)
                    continue
                values = [e.get(agg.arg.attr) for e in occurrences]
                values = [v for v in values if v is not None]
                if agg.func == "SUM":
                    row[name] = sum(values)
                elif agg.func == "MIN":
                    row[name] = min(values, key=_rank) if values else None
                elif agg.func == "MAX":
                    row[name] = max(values, key=_rank) if values else None
                else:
                    row[name] = sum(values) / len(values) if values else None
            out[(start, key)] = row
    return out
