"""Column types as the planner sees them, read from a DDL string, a file's
header (via pyarrow, without starting Spark) or a Spark schema."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cetql.errors import SchemaError

# Type classes the planner reasons about.
NUMERIC, STRING, TIMESTAMP, BOOLEAN, OTHER = "numeric", "string", "timestamp", "boolean", "other"

_DDL_TYPES = {
    **dict.fromkeys(["tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"], NUMERIC),
    **dict.fromkeys(["float", "real", "double", "decimal", "numeric", "number"], NUMERIC),
    **dict.fromkeys(["string", "varchar", "char", "text"], STRING),
    **dict.fromkeys(["timestamp", "timestamp_ntz", "timestamp_ltz", "date", "datetime"], TIMESTAMP),
    **dict.fromkeys(["boolean", "bool"], BOOLEAN),
}


@dataclass(frozen=True)
class Schema:
    """Ordered column name → (type class, type as written)."""

    columns: tuple[tuple[str, str, str], ...]

    def names(self) -> list[str]:
        return [c[0] for c in self.columns]

    def lookup(self, name: str) -> tuple[str, str] | None:
        for col, cls, written in self.columns:
            if col == name:
                return cls, written
        lowered = [c for c in self.columns if c[0].lower() == name.lower()]
        return (lowered[0][1], lowered[0][2]) if len(lowered) == 1 else None

    def __str__(self) -> str:
        return ", ".join(f"{c} {w}" for c, _, w in self.columns)


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


def _arrow_class(t) -> str:
    import pyarrow.types as pt

    if pt.is_integer(t) or pt.is_floating(t) or pt.is_decimal(t):
        return NUMERIC
    if pt.is_string(t) or pt.is_large_string(t):
        return STRING
    if pt.is_timestamp(t) or pt.is_date(t):
        return TIMESTAMP
    if pt.is_boolean(t):
        return BOOLEAN
    return OTHER


def from_arrow(schema) -> Schema:
    return Schema(tuple((f.name, _arrow_class(f.type), str(f.type)) for f in schema))


def from_file(path: str | Path) -> Schema:
    """Read a file's schema without Spark (CSV header and types inferred from
    its first block, Parquet footer, JSON lines)."""
    p = Path(path)
    if not p.exists():
        raise SchemaError(f"input '{path}' does not exist")
    suffix = p.suffix.lower() if p.is_file() else folder_suffix(p)
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return from_arrow(pq.read_schema(p if p.is_file() else next(p.glob("*.parquet"))))
        if suffix == ".csv":
            import pyarrow.csv as pc

            f = p if p.is_file() else next(p.glob("*.csv"))
            with pc.open_csv(f) as reader:
                return from_arrow(reader.schema)
        if suffix in (".json", ".jsonl", ".ndjson"):
            import pyarrow.json as pj

            f = p if p.is_file() else next(p.glob("*.json"))
            return from_arrow(pj.read_json(f).schema)
    except SchemaError:
        raise
    except Exception as e:  # a malformed file: say which and why
        raise SchemaError(f"cannot read the schema of '{path}': {e}") from None
    raise SchemaError(f"cannot tell the format of '{path}' from its name; use .csv, .parquet or .json")


def folder_suffix(p: Path) -> str:
    """The format of a folder of files, from the first kind found in it."""
    for suffix in (".parquet", ".csv", ".json"):
        if any(p.glob(f"*{suffix}")):
            return suffix
    return ""


def from_spark(struct) -> Schema:
    """Schema of a Spark DataFrame (its StructType)."""
    cols = []
    for f in struct.fields:
        name = f.dataType.typeName()
        cls = _DDL_TYPES.get(name.split("(")[0], OTHER)
        if name in ("integer", "long", "short", "byte", "double", "float") or name.startswith("decimal"):
            cls = NUMERIC
        cols.append((f.name, cls, f.dataType.simpleString()))
    return Schema(tuple(cols))
