"""Column types as the planner sees them, from a DDL string (`compile
--schema`), and the classes each aggregate of an attribute is defined on.
Inputs are described by the one reader (`backends.inputs.sources`, which
`compile --input` and `run` share), never here."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from cetql.base.errors import QuerySemanticError, SchemaError
from cetql.language import ast as A
from cetql.language.printer import aggregate_to_text

# Type classes the planner reasons about.
NUMERIC, STRING, TIMESTAMP, BOOLEAN, OTHER = "numeric", "string", "timestamp", "boolean", "other"

_DDL_TYPES = {
    **dict.fromkeys(["tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"], NUMERIC),
    **dict.fromkeys(["float", "real", "double", "decimal", "numeric", "number"], NUMERIC),
    **dict.fromkeys(["string", "varchar", "char", "text"], STRING),
    **dict.fromkeys(["timestamp", "timestamp_ntz", "timestamp_ltz", "date", "datetime"], TIMESTAMP),
    **dict.fromkeys(["boolean", "bool"], BOOLEAN),
}


def column_key(name: str) -> str:
    """What two column names share when a query cannot tell them apart:
    names are found without case (as Spark finds them)."""
    return name.lower()


@dataclass(frozen=True)
class Schema:
    """Ordered column name → (type class, type as written)."""

    columns: tuple[tuple[str, str, str], ...]

    def names(self) -> list[str]:
        return [c[0] for c in self.columns]

    def lookup(self, name: str) -> tuple[str, str] | None:
        col = self.spelled(name)
        return next(((cls, written) for c, cls, written in self.columns if c == col), None)

    def spelled(self, name: str) -> str:
        """`name` as the input spells its column: the column of that exact
        name, else the one column equal to it without regard to case (as
        Spark finds columns); `name` itself where there is none or two."""
        if name in self.names():
            return name
        lowered = [c for c in self.names() if column_key(c) == column_key(name)]
        return lowered[0] if len(lowered) == 1 else name

    def __str__(self) -> str:
        return ", ".join(f"{c} {w}" for c, _, w in self.columns)


def spelled_as_input(q: A.Query, schema: Schema | None) -> A.Query:
    """The query with every column it names spelled as the input spells it
    (`Schema.spelled`): each rule the plan keys by a column's name — its
    type, its cast, whether its values are checked — then finds the column
    the query means (`price` for a column `Price` read its unreadable
    values as nulls on Spark, the check keyed by the file's spelling)."""
    if schema is None:
        return q
    events = _pattern_names(q.pattern)  # a variable or type named in [...], GROUP-BY or RETURN stays one

    def column(c):
        if isinstance(c, A.Name):
            return c if c.name in events else replace(c, name=schema.spelled(c.name))
        return walk(c)

    def walk(node):
        if isinstance(node, tuple):
            return tuple(walk(n) for n in node)
        if not isinstance(node, A.Node):
            return node
        if isinstance(node, A.Attr):
            return replace(node, attr=schema.spelled(node.attr))
        if isinstance(node, A.Equivalence):
            return replace(node, columns=tuple(column(c) for c in node.columns))
        changed = {f.name: walk(getattr(node, f.name)) for f in fields(node) if f.name != "pos"}
        if isinstance(node, A.Query):  # a bare name in GROUP-BY and RETURN is a column (elsewhere a parameter)
            changed["group_by"] = tuple(column(c) for c in node.group_by)
            changed["returns"] = tuple(column(c) for c in node.returns)
        return replace(node, **changed)

    return walk(q)


def _pattern_names(p) -> set[str]:
    """The event types and variables a pattern names."""
    if isinstance(p, A.EventPattern):
        return {p.type, *([p.var] if p.var else [])}
    if isinstance(p, A.Seq):
        return set().union(*(_pattern_names(i) for i in p.items))
    return _pattern_names(p.sub)


def parse_ddl(text: str) -> Schema:
    """`'ts timestamp, src string, amount decimal(10,2)'` → Schema."""
    cols = []
    # split on commas not inside parentheses
    parts = [p.strip() for p in re.split(r",(?![^()]*\))", text) if p.strip()]
    if not parts:
        raise SchemaError("the schema is empty; write it as 'ts timestamp, src string, …'")
    for part in parts:
        m = re.fullmatch(r"`?([A-Za-z_][\w]*)`?\s*:?\s+([A-Za-z_]+)(\s*\([\d\s,]*\))?", part)
        if not m:
            raise SchemaError(f"cannot read schema entry '{part}'; write 'name type', e.g. 'price double'")
        name, typ = m.group(1), m.group(2).lower()
        if typ not in _DDL_TYPES:
            known = ", ".join(sorted(_DDL_TYPES))
            raise SchemaError(f"unknown column type '{typ}' for '{name}'; known types: {known}")
        cols.append((name, _DDL_TYPES[typ], typ + (m.group(3) or "").replace(" ", "")))
    return Schema(tuple(cols))


# The column classes each aggregate of an attribute is defined on.  Their
# results are numbers (SUM: DECIMAL or DOUBLE; AVG, MIN, MAX: DOUBLE), so
# each takes a numeric column; text, times and booleans are refused when the
# input's schema is known (OTHER: a type not known, e.g. no schema given).
AGGREGABLE = {"SUM": (NUMERIC,), "AVG": (NUMERIC,), "MIN": (NUMERIC,), "MAX": (NUMERIC,)}


def check_aggregable(agg: A.Aggregate, cls: str, schema: Schema | None) -> None:
    """Refuse an aggregate over a column of a class it is not defined on,
    naming the column and its type."""
    if cls == OTHER or cls in AGGREGABLE[agg.func]:
        return
    written = schema.lookup(agg.arg.attr)[1]
    typed = written if written.lower() == cls else f"{written} ({cls})"
    result = "a DOUBLE" if agg.func != "SUM" else "a number"
    hint = {TIMESTAMP: "; aggregate a numeric column of the times (e.g. epoch seconds) instead",
            BOOLEAN: "; aggregate a numeric column (1 for true, 0 for false) instead"}.get(cls, "")  # fmt: skip
    raise QuerySemanticError(
        f"{aggregate_to_text(agg)} is not defined on column '{agg.arg.attr}' of type {typed}: "
        f"{agg.func} takes a numeric column (its result is {result}){hint}",
        agg.arg.pos,
    )
