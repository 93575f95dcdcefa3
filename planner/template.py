"""Pattern → template: GRETA's automaton (its Algorithm 1), generalised to
patterns where an event type occurs more than once and to `*` / `?`.

A *position* is one event pattern of the query (`Check+ c[]` is one position,
`c`).  The template is the Glushkov automaton of the positive pattern:

- START positions may begin a trend, END positions may end one, the rest are
  MID;
- a transition p → q means an event at q may directly follow an event at p in
  a trend; it is labelled `SEQ` (from a sequence), `+` (from a Kleene loop) or
  both.

For `E+`, `SEQ(…)` and `(SEQ(A+, B))+` this is exactly GRETA's template.
Negated sub-patterns (`NOT P`, `!E`) are split off as GRETA §5 does: each gets
its own template plus the positive positions just before it (`previous`) and
just after it (`following`); an empty side means the negation is anchored to
the window's start or end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cetql import ast as A
from cetql.errors import QuerySemanticError


@dataclass(frozen=True)
class Position:
    name: str  # unique: the variable, or the type when it has none
    type: str
    var: str | None
    repeated: bool  # under a `+` or `*` — binds an array of events
    kleene_self: bool  # directly under `+`/`*`: c[i], c[i-1], NEXT(c) refer to it
    negated: bool
    pos: A.Pos | None = field(default=None, compare=False)


@dataclass
class Negative:
    """A negated sub-pattern and where it sits in the positive pattern."""

    template: Template
    previous: frozenset[str]
    following: frozenset[str]
    pos: A.Pos | None = None

    @property
    def case(self) -> str:
        if self.previous and self.following:
            return "between"
        return "after" if self.previous else "before"


@dataclass
class Template:
    positions: dict[str, Position]
    start: frozenset[str]
    end: frozenset[str]
    transitions: dict[tuple[str, str], frozenset[str]]  # (p, q) -> labels
    negatives: list[Negative]

    def role(self, name: str) -> str:
        roles = [r for r, s in (("START", self.start), ("END", self.end)) if name in s]
        return "/".join(roles) if roles else "MID"

    def predecessors(self, name: str) -> list[str]:
        return [p for (p, q) in self.transitions if q == name]

    def adjacent(self, a: str, b: str) -> bool:
        return (a, b) in self.transitions

    @property
    def fixed_length(self) -> bool:
        """True for SEQ(E1, …, En) of single events (A-Seq's domain): no Kleene
        part (the only source of cycles) and one START and one END."""
        return not any(p.repeated for p in self.positions.values()) and len(self.start) == 1 and len(self.end) == 1

    def graph(self):
        """The template as a networkx DiGraph (states with type/var/role)."""
        import networkx as nx

        g = nx.DiGraph()
        for name, p in self.positions.items():
            g.add_node(name, type=p.type, var=p.var, role=self.role(name), repeated=p.repeated)
        for (p, q), labels in self.transitions.items():
            g.add_edge(p, q, label="/".join(sorted(labels)))
        return g


# -------------------------------------------------------------- positions


def position_names(pattern: A.Pattern) -> dict[int, str]:
    """A unique name for each event pattern (keyed by id of the node)."""
    events = [n for n in A.walk(pattern) if isinstance(n, A.EventPattern)]
    names: dict[int, str] = {}
    seen: dict[str, A.EventPattern] = {}
    type_count: dict[str, int] = {}
    for e in events:
        type_count[e.type] = type_count.get(e.type, 0) + 1
    for e in events:
        if e.var is not None:
            if e.var in seen:
                raise QuerySemanticError(f"variable '{e.var}' is bound twice in the pattern", e.pos)
            name = e.var
        elif type_count[e.type] == 1:
            name = e.type
        else:
            k = 1
            while f"{e.type}_{k}" in seen:
                k += 1
            name = f"{e.type}_{k}"
        seen[name] = e
        names[id(e)] = name
    for e in events:  # a variable may not shadow another position's type name
        if (
            e.var is not None
            and e.var in type_count
            and e.var != e.type
            and any(x.var is None and x.type == e.var for x in events)
        ):
            raise QuerySemanticError(
                f"variable '{e.var}' has the name of event type '{e.var}' used elsewhere in the pattern", e.pos
            )
    return names


@dataclass
class _Frag:
    nullable: bool
    first: frozenset[str]
    last: frozenset[str]


class _Builder:
    def __init__(self, names: dict[int, str]):
        self.names = names
        self.positions: dict[str, Position] = {}
        self.transitions: dict[tuple[str, str], set[str]] = {}
        self.negatives: list[Negative] = []

    def link(self, a: frozenset[str], b: frozenset[str], label: str) -> None:
        for p in a:
            for q in b:
                self.transitions.setdefault((p, q), set()).add(label)

    def build(self, p: A.Pattern, repeated: bool = False, kleene_self: bool = False) -> _Frag:
        match p:
            case A.EventPattern():
                name = self.names[id(p)]
                self.positions[name] = Position(name, p.type, p.var, repeated, kleene_self, False, p.pos)
                return _Frag(False, frozenset([name]), frozenset([name]))
            case A.Kleene(sub=sub, op=op):
                loops = op in "+*"
                f = self.build(sub, repeated or loops, loops and isinstance(sub, A.EventPattern))
                if loops:
                    self.link(f.last, f.first, "+")
                return _Frag(f.nullable or op in "*?", f.first, f.last)
            case A.Seq(items=items):
                return self._seq(items, repeated)
            case A.Negation():
                raise QuerySemanticError(
                    "negation must stand inside a SEQ, between, before or after positive sub-patterns", p.pos
                )
        raise TypeError(p)

    def _seq(self, items, repeated) -> _Frag:
        frags: list[tuple[int, _Frag]] = []
        negations: list[tuple[int, A.Negation]] = []
        for k, item in enumerate(items):
            if isinstance(item, A.Negation):
                if negations and negations[-1][0] == k - 1:
                    raise QuerySemanticError(
                        "two negations in a row: write NOT SEQ(P, Q) instead of NOT P, NOT Q", item.pos
                    )
                negations.append((k, item))
            else:
                frags.append((k, self.build(item, repeated)))
        if not frags:
            raise QuerySemanticError("a SEQ needs at least one positive (not negated) sub-pattern", items[0].pos)
        # follow: last(i) -> first(j) when every positive item between is nullable
        for a in range(len(frags)):
            for b in range(a + 1, len(frags)):
                self.link(frags[a][1].last, frags[b][1].first, "SEQ")
                if not frags[b][1].nullable:
                    break
        nullable = all(f.nullable for _, f in frags)
        first: set[str] = set()
        for _, f in frags:
            first |= f.first
            if not f.nullable:
                break
        last: set[str] = set()
        for _, f in reversed(frags):
            last |= f.last
            if not f.nullable:
                break
        for k, neg in negations:
            before = [f for i, f in frags if i < k]
            after = [f for i, f in frags if i > k]
            prev: set[str] = set()
            for f in reversed(before):
                prev |= f.last
                if not f.nullable:
                    break
            follow: set[str] = set()
            for f in after:
                follow |= f.first
                if not f.nullable:
                    break
            sub = build_template(neg.sub, self.names, negated=True)
            self.negatives.append(Negative(sub, frozenset(prev), frozenset(follow), neg.pos))
        return _Frag(nullable, frozenset(first), frozenset(last))


def build_template(pattern: A.Pattern, names: dict[int, str] | None = None, negated: bool = False) -> Template:
    """The template of a pattern (positive part; negations split off)."""
    names = names if names is not None else position_names(pattern)
    if isinstance(pattern, A.Negation) and not negated:
        raise QuerySemanticError(
            "a pattern cannot be only a negation: NOT needs a positive sub-pattern beside it", pattern.pos
        )
    b = _Builder(names)
    frag = b.build(pattern.sub if isinstance(pattern, A.Negation) else pattern)
    if frag.nullable:
        raise QuerySemanticError(
            "the pattern can match an empty trend (every part is optional); make at least one part required, e.g. A+ instead of A*",
            pattern.pos,
        )
    positions = b.positions
    if negated:
        positions = {
            k: Position(v.name, v.type, v.var, v.repeated, v.kleene_self, True, v.pos) for k, v in positions.items()
        }
    return Template(
        positions=positions,
        start=frag.first,
        end=frag.last,
        transitions={k: frozenset(v) for k, v in b.transitions.items()},
        negatives=b.negatives,
    )


def all_positions(t: Template) -> dict[str, Position]:
    """Positions of the template and of every negative sub-template."""
    out = dict(t.positions)
    for n in t.negatives:
        out.update(all_positions(n.template))
    return out


def describe(t: Template, indent: str = "") -> list[str]:
    """Plain-text lines describing a template (for --explain and tests)."""
    lines = []
    for name, p in t.positions.items():
        tag = f"{p.type}+" if p.kleene_self else f"{p.type} (repeated)" if p.repeated else p.type
        lines.append(f"{indent}{name}: {tag} [{t.role(name)}]")
    for (p, q), labels in sorted(t.transitions.items()):
        lines.append(f"{indent}{p} -> {q} ({'/'.join(sorted(labels))})")
    for n in t.negatives:
        prev = ", ".join(sorted(n.previous)) or "window start"
        follow = ", ".join(sorted(n.following)) or "window end"
        lines.append(f"{indent}NOT ({n.case}: after {prev}, before {follow}):")
        lines += describe(n.template, indent + "  ")
    return lines
