"""One reader for every input, used by `compile --input` and by `run` alike,
so both see the same columns with the same types.

`describe(path)` looks at a file or folder without Spark (a Parquet footer;
the first rows of a CSV or JSON-lines file) and decides each column's type.
`read(spark, source)` then reads the data with exactly those types: Parquet
as stored; CSV and JSON as text, each column cast by the engine to its
decided type, so that a value that cannot be read (`n/a` in a column of
numbers) is found and counted — never compared as text, never silently null.

Rules:
- A folder holds files of one format, told by extension (.csv, .parquet,
  .json/.jsonl/.ndjson); other files (`*.bak`, `*.txt`, Spark's `_SUCCESS`
  and `.crc` files) are ignored; two formats in one folder is an error
  that lists them.
- A CSV must have a header row; a first row made only of numbers and times is
  recognised as data and refused with a message that says so.  An empty field
  is null.
- A CSV or JSON column is a whole number (`bigint`) when every sampled value
  is one, a number (`double`) when most are numbers, a timestamp when most
  are ISO-8601 times, a boolean for true/false, text otherwise.
- Parquet timestamps with nanoseconds (pandas' default) are read exactly, as
  nanoseconds since the epoch.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cetql.errors import SchemaError, UsageError

from ..semantics.schema import BOOLEAN, NUMERIC, OTHER, STRING, TIMESTAMP, Schema

FORMATS = {".csv": "csv", ".parquet": "parquet", ".json": "json", ".jsonl": "json", ".ndjson": "json"}
SAMPLE_BYTES = 1 << 20  # what `describe` reads of a CSV or JSON file to decide types
SAMPLE_ROWS = 20_000

_INT = re.compile(r"^[+-]?\d+$")
_NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(nan|inf|infinity)$", re.IGNORECASE)
_BOOL = {"true", "false"}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark type: bigint, double, decimal(p,s), string, timestamp, boolean, date, …
    nanos: bool = False  # a Parquet timestamp in nanoseconds, read as bigint nanoseconds
    unknown: bool = False  # no value was seen (an empty file): any type fits

    @property
    def cls(self) -> str:
        return OTHER if self.unknown else _class_of(self.type, self.nanos)


@dataclass(frozen=True)
class Source:
    """An input as the reader sees it."""

    name: str  # as the user gave it
    format: str  # "csv", "parquet", "json", "table" or "dataframe"
    files: tuple[str, ...]  # absolute: a Spark Connect server may run elsewhere than here
    columns: tuple[Column, ...]

    @property
    def schema(self) -> Schema:
        return Schema(tuple((c.name, c.cls, "timestamp(ns)" if c.nanos else c.type) for c in self.columns))

    @property
    def text(self) -> bool:
        """Read as text and cast (CSV, JSON)."""
        return self.format in ("csv", "json")


def _class_of(spark_type: str, nanos: bool = False) -> str:
    t = spark_type.lower()
    if nanos or t in ("timestamp", "timestamp_ntz", "date"):
        return TIMESTAMP
    if t in ("tinyint", "smallint", "int", "bigint", "float", "double") or t.startswith("decimal"):
        return NUMERIC
    if t == "string":
        return STRING
    if t == "boolean":
        return BOOLEAN
    return OTHER


# ---------------------------------------------------------------- files


def files_of(path: Path) -> tuple[str, list[Path]]:
    """(format, files) of a path: a file, or a folder of files of one format."""
    if path.is_file():
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise UsageError(
                f"cannot tell the format of '{path}' from its name; use .csv, .parquet or .json (or .jsonl)"
            )
        return fmt, [path]
    found: dict[str, list[Path]] = {}
    for f in sorted(path.rglob("*")):
        if not f.is_file() or any(part.startswith((".", "_")) for part in f.relative_to(path).parts):
            continue
        fmt = FORMATS.get(f.suffix.lower())
        if fmt is not None:
            found.setdefault(fmt, []).append(f)
    if not found:
        raise UsageError(f"folder '{path}' holds no .csv, .parquet or .json files")
    if len(found) > 1:
        listing = "; ".join(f"{len(v)} {k} ({', '.join(x.name for x in v[:3])}{', …' if len(v) > 3 else ''})"
                            for k, v in sorted(found.items()))  # fmt: skip
        raise UsageError(f"folder '{path}' mixes formats: {listing}; give one format per input")
    ((fmt, files),) = found.items()
    return fmt, files


def describe(spec: str | Path) -> Source:
    """A file or folder's format and column types, without Spark."""
    path = Path(spec)
    if not path.exists():
        raise UsageError(f"input '{spec}' does not exist")
    fmt, files = files_of(path)
    empty = [f for f in files if f.stat().st_size == 0]
    if empty and len(empty) == len(files):
        raise UsageError(f"input '{spec}' is empty" + (f" ({len(files)} empty files)" if len(files) > 1 else ""))
    files = [f for f in files if f.stat().st_size > 0]
    try:
        if fmt == "parquet":
            columns = _parquet_columns(files)
        elif fmt == "csv":
            columns = _csv_columns(files[0], spec)
        else:
            columns = _json_columns(files[0], spec)
    except (SchemaError, UsageError):
        raise
    except Exception as e:  # a malformed file: say which and why, in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SchemaError(f"cannot read '{spec}' as {fmt.upper()}: {first}") from None
    return Source(str(spec), fmt, tuple(str(f.resolve()) for f in files), tuple(columns))


def _parquet_columns(files: list[Path]) -> list[Column]:
    import pyarrow.parquet as pq
    import pyarrow.types as pt

    schema = pq.read_schema(files[0])
    for f in files[1:]:
        other = pq.read_schema(f)
        if other.names != schema.names:
            raise SchemaError(f"Parquet files {files[0].name} and {f.name} have different columns")
    out = []
    for field in schema:
        t = field.type
        if pt.is_timestamp(t):
            out.append(Column(field.name, "bigint" if t.unit == "ns" else "timestamp", nanos=t.unit == "ns"))
        else:
            out.append(Column(field.name, _arrow_to_spark(t)))
    return out


def _arrow_to_spark(t) -> str:
    import pyarrow.types as pt

    if pt.is_int8(t):
        return "tinyint"
    if pt.is_int16(t) or pt.is_uint8(t):
        return "smallint"
    if pt.is_int32(t) or pt.is_uint16(t):
        return "int"
    if pt.is_integer(t):
        return "bigint"
    if pt.is_float32(t):
        return "float"
    if pt.is_floating(t):
        return "double"
    if pt.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pt.is_string(t) or pt.is_large_string(t):
        return "string"
    if pt.is_boolean(t):
        return "boolean"
    if pt.is_date(t):
        return "date"
    return str(t)


def _sample_text(path: Path) -> str:
    with open(path, "rb") as f:
        raw = f.read(SAMPLE_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if len(raw) == SAMPLE_BYTES and e.start >= len(raw) - 4:  # cut inside a character
            text = raw[: e.start].decode("utf-8")
        else:
            raise SchemaError(f"'{path}' is not UTF-8 text (byte {e.start}); convert it to UTF-8") from None
    if len(raw) == SAMPLE_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]  # whole lines only
    return text


def _csv_columns(path: Path, spec) -> list[Column]:
    text = _sample_text(path)
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if r]
    if not rows:
        raise UsageError(f"input '{spec}' is empty")
    header, data = rows[0], rows[1 : SAMPLE_ROWS + 1]
    if header and all(_NUM.match(h.strip()) or _is_time(h.strip()) for h in header if h.strip()):
        raise SchemaError(
            f"'{path}' has no header row: its first line ({','.join(header)[:60]}) is data; add a first line "
            "with the column names"
        )
    names = [h.strip() for h in header]
    blank = [i + 1 for i, n in enumerate(names) if not n]
    if blank:
        raise SchemaError(f"'{path}': column {blank[0]} of the header has no name")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SchemaError(f"'{path}': the header names column '{dup[0]}' twice")
    columns = []
    for i, name in enumerate(names):
        values = [r[i] for r in data if i < len(r) and r[i] != ""]
        columns.append(Column(name, decide(values), unknown=not data))
    return columns


def _json_columns(path: Path, spec) -> list[Column]:
    text = _sample_text(path)
    names: dict[str, list] = {}
    for n, line in enumerate(text.splitlines()[:SAMPLE_ROWS], start=1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise SchemaError(f"'{path}' line {n} is not JSON ({e.msg}); inputs are JSON lines, one object a line") from None
        if not isinstance(obj, dict):
            raise SchemaError(f"'{path}' line {n} is not a JSON object")
        for k, v in obj.items():
            names.setdefault(k, []).append(v)
    if not names:
        raise UsageError(f"input '{spec}' is empty")
    out = []
    for k, vals in names.items():
        vals = [v for v in vals if v is not None]
        if any(isinstance(v, (dict, list)) for v in vals):
            out.append(Column(k, "nested"))
            continue
        as_text = ["true" if v is True else "false" if v is False else str(v) for v in vals]
        out.append(Column(k, decide(as_text)))
    return out


def _is_time(v: str) -> bool:
    if len(v) < 10 or not v[:4].isdigit() or v[4] != "-":
        return False
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def decide(values: list[str]) -> str:
    """The type of a text column from sampled (non-empty) values."""
    vals = [v.strip() for v in values]
    if not vals:
        return "string"
    n = len(vals)
    ints = sum(1 for v in vals if _INT.match(v))
    if ints == n:
        return "bigint" if all(-(2**63) <= int(v) < 2**63 for v in vals) else "decimal(38,0)"
    nums = sum(1 for v in vals if _NUM.match(v))
    if nums == n or (nums * 2 > n and nums > 0):
        return "bigint" if ints == nums else "double"
    times = sum(1 for v in vals if _is_time(v))
    if times * 2 > n:
        return "timestamp"
    if all(v.lower() in _BOOL for v in vals):
        return "boolean"
    return "string"


# ---------------------------------------------------------------- Spark


def read(spark, source: Source):
    """The input as a DataFrame.  Text formats come back with every column as
    text: `cast_columns` gives the typed columns and the invalid flags."""
    files = list(source.files)
    if source.format == "parquet":
        if any(c.nanos for c in source.columns):
            # pandas' nanosecond timestamps: read exactly, as nanoseconds since the epoch
            spark.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
        return spark.read.parquet(*files)
    if source.format == "csv":
        ddl = ", ".join(f"`{c.name}` string" for c in source.columns)
        return (
            spark.read.option("header", True)
            .option("mode", "FAILFAST")
            .option("enforceSchema", False)
            .schema(ddl)
            .csv(files)
        )
    return spark.read.option("primitivesAsString", True).json(files)


def cast_column(source: Source, name: str):
    """(typed column, invalid flag) for column `name` of a text source: the
    flag is true where a value is present but cannot be read as the type."""
    from pyspark.sql import functions as F

    col = next(c for c in source.columns if c.name == name)
    raw = F.col(f"`{name}`")
    if not source.text or col.type in ("string", "nested"):
        return raw, F.lit(False)
    trimmed = F.trim(raw)
    if col.type == "timestamp":
        typed = F.try_to_timestamp(trimmed)
    elif col.type == "boolean":
        typed = F.when(F.lower(trimmed) == "true", True).when(F.lower(trimmed) == "false", False)
    else:
        typed = trimmed.try_cast(col.type)
    return typed, raw.isNotNull() & (trimmed != "") & typed.isNull()


def from_spark(struct) -> Schema:
    """The schema of a Spark DataFrame (its StructType)."""
    return Schema(tuple((f.name, _class_of(f.dataType.simpleString()), f.dataType.simpleString()) for f in struct.fields))


def is_path(spec) -> bool:
    text = str(spec)
    return Path(text).exists() or "/" in text or any(text.lower().endswith(s) for s in FORMATS)
