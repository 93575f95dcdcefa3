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

Everything here is frozen; `reachable` is the one graph walk (adjacency,
required positions, the ambiguity check).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cetql.base.errors import QuerySemanticError
from cetql.language import ast as A


@dataclass(frozen=True)
class Position:
    name: str  # unique: the variable, or the type when it has none
    type: str
    var: str | None
    repeated: bool  # under a `+` or `*` — binds an array of events
    kleene_self: bool  # directly under `+`/`*`: c[i], c[i-1], NEXT(c) refer to it
    negated: bool
    pos: A.Pos | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Negative:
    """A negated sub-pattern and where it sits in the positive pattern:
    between which positions (`previous`, `following`), and exactly which
    steps it constrains (`pairs`: no trend of it strictly between the two
    events), which starts (`starts`: none ending before the trend's first
    event) and which ends (`ends`: none starting after the last)."""

    template: Template
    previous: frozenset[str]
    following: frozenset[str]
    pos: A.Pos | None = field(default=None, compare=False)
    pairs: frozenset[tuple[str, str]] = frozenset()
    starts: frozenset[str] = frozenset()
    ends: frozenset[str] = frozenset()

    @property
    def case(self) -> str:
        kinds = [k for k, v in (("before", self.starts), ("between", self.pairs), ("after", self.ends)) if v]
        return " and ".join(kinds) or "between"


@dataclass(frozen=True)
class Template:
    positions: tuple[Position, ...]
    start: frozenset[str]
    end: frozenset[str]
    transitions: tuple[tuple[str, str, frozenset[str]], ...]  # (p, q, labels), sorted
    negatives: tuple[Negative, ...] = ()

    # ------------------------------------------------------------ lookups

    def position(self, name: str) -> Position:
        return next(p for p in self.positions if p.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.positions)

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((p, q) for p, q, _ in self.transitions)

    @property
    def all_positions(self) -> dict[str, Position]:
        """Positions of the template and of every negated sub-template."""
        out = {p.name: p for p in self.positions}
        for n in self.negatives:
            out.update(n.template.all_positions)
        return out

    def all_pairs(self) -> set[tuple[str, str]]:
        out = set(self.pairs)
        for n in self.negatives:
            out |= n.template.all_pairs()
        return out

    def role(self, name: str) -> str:
        roles = [r for r, s in (("START", self.start), ("END", self.end)) if name in s]
        return "/".join(roles) if roles else "MID"

    def adjacent(self, a: str, b: str) -> bool:
        return (a, b) in self.pairs

    def always_adjacent(self, a: str, b: str) -> bool:
        """a → b is a transition and no longer path leads from a to b:
        whenever both are in a trend they are consecutive (in SEQ(A, B?, C),
        A and C are not)."""
        if not self.adjacent(a, b) or a == b:
            return False
        edges = [(p, q) for p, q, _ in self.transitions if (p, q) != (a, b)]
        return b not in reachable(edges, {a}, first_step=True)

    @property
    def fixed_length(self) -> bool:
        """SEQ(E1, …, En) of single, required events (A-Seq's domain): the
        transitions form one chain from the START to the END."""
        if any(p.repeated for p in self.positions) or len(self.start) != 1 or len(self.end) != 1:
            return False
        succ = {}
        for p, q, _ in self.transitions:
            if p in succ:
                return False
            succ[p] = q
        chain = [next(iter(self.start))]
        while chain[-1] in succ and len(chain) <= len(self.positions):
            chain.append(succ[chain[-1]])
        return len(chain) == len(self.positions) and chain[-1] in self.end

    def required(self, name: str) -> bool:
        """Does every trend bind position `name` (no START → END path avoids it)?"""
        starts, ends = self.start - {name}, self.end - {name}
        if starts & ends:
            return False
        edges = [(p, q) for p, q, _ in self.transitions if name not in (p, q)]
        return not (reachable(edges, starts) & ends)

    @property
    def single_kleene(self) -> Position | None:
        """The position of an `E+` pattern (one position, looping), else None."""
        if len(self.positions) == 1 and self.positions[0].kleene_self and not self.negatives:
            return self.positions[0]
        return None

    # ------------------------------------------------------------ graphs

    def ambiguity(self, same_letter) -> tuple[str, ...] | None:
        """A witness that some event sequence is matched by two different runs,
        or None when every sequence has at most one run.  `same_letter(p, q)`
        says whether one event may take both positions p and q (same type; on
        a single-type stream, any two positions).

        The automaton is ambiguous iff its trimmed self-product has a path from
        a pair of start states to a pair of end states through a pair of
        different states."""
        names = self.names
        starts = {(p, q) for p in self.start for q in self.start if same_letter(p, q)}
        ends = {(p, q) for p in self.end for q in self.end}
        succ = {n: [q for p, q, _ in self.transitions if p == n] for n in names}
        pairs = [((a, b), (a2, b2)) for a in names for b in names for a2 in succ[a] for b2 in succ[b]
                 if same_letter(a2, b2)]  # fmt: skip
        reach = reachable(pairs, starts)  # the product's pairs a run of two reaches
        useful = reachable([(q, p) for p, q in pairs], ends & reach)  # … and from which an end is reached
        for a, b in sorted(useful & reach):
            if a != b:
                return (a, b)
        return None


def reachable(edges, starts, *, first_step: bool = False) -> set:
    """The nodes a path of `edges` leads to from `starts` (the starts
    included, unless `first_step`: then only nodes at least one step away)."""
    succ: dict = {}
    for p, q in edges:
        succ.setdefault(p, []).append(q)
    todo = [q for s in starts for q in succ.get(s, ())] if first_step else list(starts)
    seen = set(todo)
    while todo:
        for q in succ.get(todo.pop(), ()):
            if q not in seen:
                seen.add(q)
                todo.append(q)
    return seen


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
    def __init__(self, names: dict[int, str], top=None):
        self.names = names
        self.top = top  # the whole pattern: its SEQ may start or end with a negation
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
                if loops and f.nullable:
                    raise QuerySemanticError(
                        f"'{op}' repeats a part that can match no event (every part of it is optional or negated); "
                        "make one of its parts required",
                        p.pos,
                    )
                if loops:
                    self.link(f.last, f.first, "+")
                return _Frag(f.nullable or op in "*?", f.first, f.last)
            case A.Seq(items=items):
                return self._seq(items, repeated, top=p is self.top)
            case A.Negation():
                raise QuerySemanticError(
                    "negation must stand inside a SEQ, between, before or after positive sub-patterns", p.pos
                )
        raise TypeError(p)

    def _seq(self, items, repeated, top: bool) -> _Frag:
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
            closed_before = any(not f.nullable for f in before)
            closed_after = any(not f.nullable for f in after)
            if not top and not (closed_before and closed_after):
                raise QuerySemanticError(
                    "a negation inside a nested or repeated SEQ needs a required part before and after it in that "
                    "SEQ (so its neighbours are clear); move it between required parts, or to the whole pattern",
                    neg.pos,
                )
            prev = _edge_set(reversed(before), "last")
            follow = _edge_set(after, "first")
            # the steps that pass over the negation: every link from a part before it to a part after it
            pairs = set()
            for ia, fa in ((i, f) for i, f in frags if i < k):
                for ib, fb in ((i, f) for i, f in frags if i > k):
                    if all(f.nullable for i, f in frags if ia < i < ib):
                        pairs |= {(x, y) for x in fa.last for y in fb.first}
            starts = frozenset(follow) if not closed_before else frozenset()
            ends = frozenset(prev) if not closed_after else frozenset()
            sub = build_template(neg.sub, self.names, negated=True)
            self.negatives.append(
                Negative(sub, frozenset(prev), frozenset(follow), neg.pos, frozenset(pairs), starts, ends)
            )
        return _Frag(nullable, frozenset(first), frozenset(last))


def _edge_set(frags, side: str) -> set[str]:
    """The positions at one edge of a run of parts: through nullable parts
    up to the first required one."""
    out: set[str] = set()
    for f in frags:
        out |= getattr(f, side)
        if not f.nullable:
            break
    return out


def build_template(pattern: A.Pattern, names: dict[int, str] | None = None, negated: bool = False) -> Template:
    """The template of a pattern (positive part; negations split off)."""
    names = names if names is not None else position_names(pattern)
    if isinstance(pattern, A.Negation) and not negated:
        raise QuerySemanticError(
            "a pattern cannot be only a negation: NOT needs a positive sub-pattern beside it", pattern.pos
        )
    body = pattern.sub if isinstance(pattern, A.Negation) else pattern
    b = _Builder(names, top=body)
    frag = b.build(body)
    if frag.nullable:
        raise QuerySemanticError(
            "the pattern can match an empty trend (every part is optional); make at least one part required, e.g. A+ instead of A*",
            pattern.pos,
        )
    positions = tuple(b.positions.values())
    if negated:
        positions = tuple(Position(v.name, v.type, v.var, v.repeated, v.kleene_self, True, v.pos) for v in positions)
    return Template(
        positions=positions,
        start=frag.first,
        end=frag.last,
        transitions=tuple(sorted((p, q, frozenset(labels)) for (p, q), labels in b.transitions.items())),
        negatives=tuple(b.negatives),
    )


def describe(t: Template, indent: str = "") -> list[str]:
    """Plain-text lines describing a template (for --explain and tests)."""
    lines = []
    for p in t.positions:
        tag = f"{p.type}+" if p.kleene_self else f"{p.type} (repeated)" if p.repeated else p.type
        lines.append(f"{indent}{p.name}: {tag} [{t.role(p.name)}]")
    for p, q, labels in t.transitions:
        lines.append(f"{indent}{p} -> {q} ({'/'.join(sorted(labels))})")
    for n in t.negatives:
        prev = ", ".join(sorted(n.previous)) or "window start"
        follow = ", ".join(sorted(n.following)) or "window end"
        lines.append(f"{indent}NOT ({n.case}: after {prev}, before {follow}):")
        lines += describe(n.template, indent + "  ")
    return lines
