"""Equivalence and GROUP-BY attributes: partition keys (Spark partitions by
them), sub-keys (the kernel splits an aggregation group by them), and how an
equivalence of one variable (`[b.k]`) is enforced.

`[b.k]` says that the events bound to b all share k (SEMANTICS.md).  Where b
binds one event per trend, that asks only for a k that is not null.  Where
b's events are consecutive in every trend (the only way back to b is b's own
step), "all share k" is "each shares the previous one's k": an equal
predicate on the step b → b, which the ABI hash index serves.  Where b's
events are apart (a nested Kleene, `(SEQ(A+ a[], B b))+`) and every trend
binds b, the kernel splits each group into one part per value of b.k: a
trend lies in exactly one part, and completeness within the part is
completeness in the window — as long as no event may be b and another
variable too (`SEQ(A* a[], A b) WHERE [b.k]` on one stream: (e1) as b
extends to (e1, e2) with e1 as a, whatever e2's key).  Such a key is refused
here, unless the inputs are bound to types and b's type is b's alone; the
kernel keeps the same check as an assertion (`kernels.parts`).
"""

from __future__ import annotations

from dataclasses import replace

from cetql.base.errors import QuerySemanticError, shared_keyed_event
from cetql.planner.logical.plan import Decision, Key, KeyMethod, SubKey, VariableKey
from cetql.planner.logical.rules import Draft
from cetql.planner.semantics import ir
from cetql.planner.semantics.template import Template, reachable

READS = ("query",)
SETS = ("keys", "subkeys", "variable_keys", "key_predicates")


def apply(d: Draft) -> Draft:
    q = d.query
    shared = [k.attr for p in q.of_kind(ir.EquivalencePredicate) for k in p.keys if k.position is None]
    specific = [(k, p.pos) for p in q.of_kind(ir.EquivalencePredicate) for k in p.keys if k.position is not None]
    group = [k.attr for k in q.group_by]
    if d.detection:
        keys = tuple(Key(a, a, _source(a, shared, group)) for a in dict.fromkeys(shared + group))
        subkeys = ()
    else:
        keys = tuple(Key(a, a, _source(a, shared, group)) for a in dict.fromkeys(group))
        subkeys = tuple(SubKey(a) for a in dict.fromkeys(shared) if a not in group)
    variable_keys, predicates = [], []
    for k, pos in dict.fromkeys(specific):
        vk, preds = variable_key(q.template, k, pos)
        if vk.method.choice == KeyMethod.PARTS:
            alone(q.template, vk.position, d.inputs.typed is True, pos)
        variable_keys.append(vk)
        predicates += preds
    return replace(d, keys=keys, subkeys=subkeys, variable_keys=tuple(variable_keys), key_predicates=tuple(predicates))


def _source(a, shared, group) -> str:
    return " and ".join(s for s, xs in (("equivalence", shared), ("group-by", group)) if a in xs)


def home(t: Template, name: str) -> tuple[Template, bool]:
    """The (sub-)template whose positions hold `name`, and whether it is a
    negated one."""
    if name in t.names:
        return t, False
    for n in t.negatives:
        if name in n.template.all_positions:
            return home(n.template, name)[0], True
    raise KeyError(name)


def apart(t: Template, name: str) -> bool:
    """Can two events of `name` have other events between them in a trend
    (a way back to `name` other than its own step)?"""
    edges = [(p, q) for p, q, _ in t.transitions if (p, q) != (name, name)]
    return name in reachable(edges, {name}, first_step=True)


def alone(t: Template, v: str, typed: bool, pos) -> None:
    """Refuse a key split into parts when an event may be `v` and another
    variable: on one stream any event may be any variable; on typed inputs,
    an event of `v`'s type may be any variable of that type."""
    mine = t.position(v).type
    for other in t.positions:
        if other.name != v and (not typed or other.type == mine):
            raise QuerySemanticError(shared_keyed_event(v, other.name), pos)


def variable_key(t: Template, k: ir.KeyAttr, pos) -> tuple[VariableKey, list[ir.Predicate]]:
    v, attr = k.position, k.attr
    sub, negated = home(t, v)
    position = sub.position(v)
    ref = ir.Ref("self", attr)
    not_null = ir.VertexPredicate(f"{v}.{attr} IS NOT NULL", ir.IsNotNull(ref), (v,),
                                  f"from [{v}.{attr}]: an event of '{v}' without {attr} is in no trend", pos)  # fmt: skip
    if not position.repeated:
        method = Decision(KeyMethod.FILTER, f"'{v}' binds one event per trend: it needs only a {attr}")
        return VariableKey(v, attr, method), [not_null]
    if not apart(sub, v):
        step = ir.EdgePredicate(
            f"{v}[i].{attr} = {v}[i-1].{attr}", v, v, ir.Op.EQUAL,
            ir.Cmp("=", ir.Ref("next", attr), ir.Ref("prev", attr)),
            f"from [{v}.{attr}]: the events of '{v}' are consecutive in a trend, so all share {attr} when each "
            "shares the previous one's (ABI attribute vertex per value)",
            comparator="=", lval=ir.Ref("next", attr), h=ir.Ref("prev", attr), h_text="h(x) = x",
            monotone="increasing", pos=pos,
        )  # fmt: skip
        method = Decision(KeyMethod.EDGE, f"the events of '{v}' are consecutive in a trend: an equal predicate "
                          f"on its step {v} → {v}")  # fmt: skip
        return VariableKey(v, attr, method), [not_null, step]
    if negated or not sub.required(v):
        why = "a negated sub-pattern" if negated else f"some trends bind no event of '{v}'"
        raise QuerySemanticError(
            f"[{v}.{attr}]: the events of '{v}' lie apart in a trend (a nested Kleene) in {why}; an equivalence "
            f"on them is not supported there — write [{attr}] for every event, or a predicate between "
            "consecutive events",
            pos,
        )
    method = Decision(KeyMethod.PARTS, f"the events of '{v}' lie apart in a trend and every trend binds one: "
                      f"each group is split into one part per value of {v}.{attr} in the kernel")  # fmt: skip
    return VariableKey(v, attr, method), [not_null]
