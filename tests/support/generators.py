"""Hypothesis strategies for the kernel tests: event streams and queries
over them (patterns, predicates, windows, aggregates), checked against the
reference (`reference.py`).

Streams have an integer attribute x, text attributes g and k, and — with
`special=True` — a DOUBLE attribute y drawn from the values comparisons
treat specially (null, NaN, ±infinity, -0.0 beside 0.0)."""

from __future__ import annotations

import math

from hypothesis import assume
from hypothesis import strategies as st

import cetql
from cetql.base.errors import QueryError
from cetql.language import ast as A
from cetql.language.printer import to_text
from cetql.planner.semantics.bind import bind

SPECIAL = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 2.5]
DRAWN = [*SPECIAL, math.nan, math.nan, 1.0]  # NaN most often: it is what comparisons disagree on


def stream(typed: bool, max_size: int = 7, max_time: int = 8, special: bool = False):
    fields = {
        "ts": st.integers(0, max_time),
        "__type": st.sampled_from("ABC") if typed else st.just(None),
        "x": st.none() | st.integers(0, 3),
        "g": st.sampled_from("gh"),
        "k": st.sampled_from("uv"),
    }
    if special:
        fields["y"] = st.sampled_from(DRAWN)
        fields["k"] = st.sampled_from(["u", "v", None])
    return st.lists(st.fixed_dictionaries(fields), max_size=max_size).map(
        lambda evs: [dict(e, id=i) for i, e in enumerate(sorted(evs, key=lambda e: e["ts"]))]
    )


@st.composite
def patterns(draw, repeated_types: bool):
    """A pattern over types A/B/C with unique variables v1, v2, …"""
    counter = iter(range(1, 100))
    types = "AB" if repeated_types else "ABC"

    def leaf():
        t = draw(st.sampled_from(types))
        op = draw(st.sampled_from(["", "", "+", "+", "*", "?"]))
        var = f"v{next(counter)}"
        e = A.EventPattern(t, var)
        return A.Kleene(e, op) if op else e

    def seq(depth):
        n = draw(st.integers(1, 3))
        items = []
        for i in range(n):
            if depth < 1 and draw(st.integers(0, 5)) == 0:
                items.append(A.Kleene(seq(depth + 1), "+"))
            else:
                items.append(leaf())
            if i < n - 1 and draw(st.integers(0, 5)) == 0:
                items.append(A.Negation(A.EventPattern("C", f"v{next(counter)}")))
        if draw(st.integers(0, 7)) == 0:
            pos = draw(st.sampled_from([0, len(items)]))
            items.insert(pos, A.Negation(A.EventPattern("C", f"v{next(counter)}")))
        return A.Seq(tuple(items)) if len(items) > 1 else items[0]

    return seq(0)


def mandatory(pattern) -> list[str]:
    """The variables every trend of the pattern has an event of (not
    negated, not under `*` or `?`)."""
    out = []

    def walk(p, optional: bool):
        if isinstance(p, A.EventPattern):
            if not optional:
                out.append(p.var)
        elif isinstance(p, A.Kleene):
            walk(p.sub, optional or p.op in "*?")
        elif isinstance(p, A.Seq):
            for item in p.items:
                walk(item, optional)

    walk(pattern, False)
    return out


# (WITHIN, SLIDE): tumbling, 2 windows an event (copied), 3 or more (blocks of windows)
WINDOWS = [(4, 2), (6, 3), (6, 6), (9, 3), (9, 9)]
# many windows an event, slides that do not divide the length
SLIDING = [(8, 1), (7, 2), (5, 2), (9, 4), (3, 1)]


def _bound(base):
    try:
        return bind(cetql.parse(to_text(base)), {}, strict_params=False)
    except QueryError:
        assume(False)


def _edge(draw, name: str, attr: str) -> str:
    """An adjacent predicate of a Kleene variable: equal, range or other."""
    op = draw(st.sampled_from(["=", "<", ">", ">=", "<=", "!="]))
    later, earlier = f"{name}[i].{attr}", f"{name}[i-1].{attr}"
    if attr == "y" and op != "=" and draw(st.booleans()):
        earlier = draw(st.sampled_from([f"{earlier} * 2", f"{earlier} + 1", f"-{earlier}"]))
    return f"{later} {op} {earlier}"


def _vertex(draw, name: str) -> str:
    """A predicate on one event against constants (a filter)."""
    return draw(st.sampled_from([f"{name}.y > 1", f"{name}.y = 0", f"{name}.y <= 1", f"{name}.y != 2.5",
                                 f"{name}.y < {name}.x", f"{name}.y * 0 = 0",
                                 f"{name}.y = {name}.y * 2"]))  # fmt: skip  (NaN = NaN, inf = inf, -0.0 = 0.0)


@st.composite
def queries(draw, aggregation: bool, repeated_types: bool = False, windows=WINDOWS, special: bool = False,
            state_keys: bool = False):  # fmt: skip
    """A query over the generated streams.  `special`: predicates and
    aggregates over y (equal, range and other edge predicates, vertex
    filters, cross predicates, `[y]`); `state_keys`: per-variable
    equivalences (`[v.k]`, several variables) on variables every trend has."""
    pattern = draw(patterns(repeated_types))
    within, slide = draw(st.sampled_from(windows))
    base = A.Query(pattern=pattern, within=A.Duration(within), slide=A.Duration(slide))
    positions = _bound(base).template.all_positions
    positive = [n for n, p in positions.items() if not p.negated]
    attr = "y" if special else "x"
    conjuncts = []
    for name in positive:
        p = positions[name]
        if p.kleene_self and (draw(st.booleans()) or (special and draw(st.booleans()))):
            if special:
                conjuncts.append(_edge(draw, name, draw(st.sampled_from(["y", "y", "y", "g"]))))
            else:
                op = draw(st.sampled_from(["=", "<", ">", ">=", "!="]))
                a = draw(st.sampled_from(["x", "x", "g"])) if op == "=" else "x"
                conjuncts.append(f"{name}[i].{a} {op} {name}[i-1].{a}")
        if draw(st.integers(0, 2 if special else 4)) == 0:
            conjuncts.append(_vertex(draw, name) if special else f"{name}.k = 'u'")
    if len(positive) >= 2 and draw(st.booleans()):
        a, b = draw(st.permutations(positive))[:2]
        op = draw(st.sampled_from(["=", "<", "!="]))
        conjuncts.append(f"{a}.{attr} {op} {b}.{attr}")
    if draw(st.integers(0, 3)) == 0:
        conjuncts.append(draw(st.sampled_from(["[g]", "[y]"])) if special else "[g]")
    if special and not any(".y" in c or "[y]" in c for c in conjuncts):
        conjuncts.append(_vertex(draw, draw(st.sampled_from(positive))))
    if state_keys:
        keyed = draw(st.lists(st.sampled_from(mandatory(pattern)), min_size=1, max_size=3, unique=True))
        keys = [f"{v}.{draw(st.sampled_from(['k', 'g', 'g']))}" for v in keyed]
        conjuncts.append(f"[{', '.join(keys)}]")
    text = to_text(base)
    if conjuncts:
        text = text.replace("\nWITHIN", "\nWHERE " + " AND ".join(conjuncts) + "\nWITHIN", 1)
    if aggregation:
        first = positive[0]
        aggs = ["COUNT(*)", f"COUNT({first})", f"SUM({first}.{attr})", f"MIN({first}.{attr})", f"MAX({first}.{attr})"]
        text = "RETURN " + ", ".join(draw(st.lists(st.sampled_from(aggs), min_size=1, max_size=3, unique=True))) + "\n" + text
        if "COUNT(*)" not in text.split("\n")[0]:
            text = text.replace("RETURN ", "RETURN COUNT(*), ", 1)
    return text
