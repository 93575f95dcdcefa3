"""What an input holds, learnt without Spark: its files, format and column
types (`describe`).  `reader` reads it with Spark exactly as described; the
rules are in its docstring."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from itertools import islice
from pathlib import Path

from cetql.backends.inputs import casts, stats, times
from cetql.backends.inputs.stamps import stamp
from cetql.base.errors import SchemaError, UsageError
from cetql.planner.semantics.schema import Schema, column_key
from cetql.planner.semantics.sources import Column, Source, class_of

FORMATS = {".csv": "csv", ".parquet": "parquet", ".json": "json", ".jsonl": "json", ".ndjson": "json"}
SAMPLE_BYTES = 1 << 20  # what `describe` reads of a CSV or JSON file to decide types
SAMPLE_ROWS = 20_000
HEAD_BYTES = 64 << 10  # what `describe` reads of each further file of a folder (its header, a few rows)
BOM = "\ufeff"

_INT, _NUM, _BOOL = casts.INT_RE, casts.NUMBER_RE, set(casts.BOOLEANS)  # what the engines read (`casts`)


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


def describe(spec: str | Path, time_zone: str = "UTC") -> Source:
    """A file or folder's format and column types, without Spark."""
    path = Path(spec)
    if not path.exists():
        raise UsageError(f"input '{spec}' does not exist")
    fmt, files = files_of(path)
    empty = [f for f in files if f.stat().st_size == 0]
    if empty and len(empty) == len(files):
        raise UsageError(f"input '{spec}' is empty" + (f" ({len(files)} empty files)" if len(files) > 1 else ""))
    files = [f.resolve() for f in files if f.stat().st_size > 0]
    stamped = tuple(stamp(f) for f in files)  # before reading them: a change while they are read is found later
    headers: tuple = ()
    multiline = False
    try:
        if fmt == "parquet":
            columns = _parquet_columns(files)
        elif fmt == "csv":
            columns, headers = _csv_columns(files, spec)
            multiline = any(_has_quote(f) for f in files)
        else:
            columns = _json_columns(files, spec)
        _check_names(columns, spec)
    except (SchemaError, UsageError):
        raise
    except Exception as e:  # a malformed file: say which and why, in one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SchemaError(f"cannot read '{spec}' as {fmt.upper()}: {first}") from None
    source = Source(str(spec), fmt, tuple(str(f) for f in files), tuple(columns), time_zone, headers,
                    multiline, size=sum(f.stat().st_size for f in files), stamps=stamped)  # fmt: skip
    return _with_footers(source) if fmt == "parquet" else source


def _with_footers(source: Source) -> Source:
    """A Parquet source with its rows, its columns' uncompressed size and
    Arrow types, from the files' footers."""
    import pyarrow.parquet as pq

    rows = size = 0
    arrow = None
    for f in source.files:
        meta = pq.ParquetFile(f).metadata
        rows += meta.num_rows
        size += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if arrow is None:
            arrow = tuple((field.name, str(field.type)) for field in meta.schema.to_arrow_schema())
    return replace(source, rows=rows, size=size, arrow=arrow or (), stats=stats.of_parquet(source.files, rows))


def _check_names(columns, spec) -> None:
    """Column names are unique as Spark resolves them, without case (a
    Parquet file may hold `id` twice, a JSON object `x` beside `X`)."""
    seen: dict[str, str] = {}
    for c in columns:
        other = seen.get(column_key(c.name))
        seen[column_key(c.name)] = c.name
        if other is not None:
            same = f"two columns named '{c.name}'" if other == c.name else f"columns '{other}' and '{c.name}'"
            raise SchemaError(f"input '{spec}' has {same}, which Spark cannot tell apart (it matches column names "
                              "without case); rename one")  # fmt: skip


def _has_quote(path: Path) -> bool:
    """Whether a file holds a double quote: only then can a CSV field hold a
    newline (RFC 4180), which a reader that splits the file at newlines would
    cut in two."""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            if b'"' in chunk:
                return True
    return False


def _parquet_columns(files: list[Path]) -> list[Column]:
    import pyarrow.parquet as pq
    import pyarrow.types as pt

    schema = pq.read_schema(files[0])
    for f in files[1:]:
        other = pq.read_schema(f)
        if sorted(other.names) != sorted(schema.names):
            raise SchemaError(f"Parquet files {files[0].name} and {f.name} have different columns")
        for field in other:
            if field.type != schema.field(field.name).type:
                raise SchemaError(f"column '{field.name}' is {schema.field(field.name).type} in {files[0].name} and "
                                  f"{field.type} in {f.name}; write the files of one input with one type")  # fmt: skip
    out = []
    for field in schema:
        t = field.type
        if pt.is_timestamp(t):
            ns = t.unit == "ns"
            out.append(Column(field.name, "bigint" if ns else "timestamp", nanos=ns, naive=t.tz is None))
        else:
            out.append(Column(field.name, arrow_to_spark(t)))
    return out


def arrow_to_spark(t) -> str:
    import pyarrow.types as pt

    if pt.is_int8(t):
        return "tinyint"
    if pt.is_int16(t) or pt.is_uint8(t):
        return "smallint"
    if pt.is_int32(t) or pt.is_uint16(t):
        return "int"
    if pt.is_uint64(t):  # as Spark's Parquet reader: 64 bits unsigned do not fit a bigint
        return "decimal(20,0)"
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


def _sample_text(path: Path, size: int = SAMPLE_BYTES) -> str:
    with open(path, "rb") as f:
        raw = f.read(size)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if len(raw) == size and e.start >= len(raw) - 4:  # cut inside a character
            text = raw[: e.start].decode("utf-8")
        else:
            raise SchemaError(f"'{path}' is not UTF-8 text (byte {e.start}); convert it to UTF-8") from None
    if len(raw) == size and "\n" in text:
        text = text[: text.rindex("\n") + 1]  # whole lines only
    return text.removeprefix(BOM)


def _csv_header(path: Path, rows: list[list[str]]) -> tuple[str, ...]:
    """A CSV file's column names (trimmed), checked: present and named
    (unique: `_check_names`, for every format)."""
    if not rows:
        raise UsageError(f"input '{path}' is empty")
    header = rows[0]
    if header and all(_NUM.match(h.strip()) or times.is_time(h.strip()) for h in header if h.strip()):
        raise SchemaError(
            f"'{path}' has no header row: its first line ({','.join(header)[:60]}) is data; add a first line "
            "with the column names"
        )
    names = tuple(h.strip() for h in header)
    blank = [i + 1 for i, n in enumerate(names) if not n]
    if blank:
        raise SchemaError(f"'{path}': column {blank[0]} of the header has no name")
    return names


def _csv_rows(path: Path, size: int, rows: int | None = None) -> list[list[str]]:
    """The non-empty rows of the first `size` bytes (the first `rows` of them, if given)."""
    return list(islice((r for r in csv.reader(io.StringIO(_sample_text(path, size))) if r), rows))


def _csv_columns(files: list[Path], spec) -> tuple[list[Column], tuple[tuple[str, ...], ...]]:
    """The columns of CSV files (types from the first file's sample and the
    first rows of each other), and each file's header: a folder's files may
    order their columns differently, but must have the same ones."""
    rows = _csv_rows(files[0], SAMPLE_BYTES, SAMPLE_ROWS + 1)  # the header and the rows the types are read from
    if not rows:
        raise UsageError(f"input '{spec}' is empty")
    names = _csv_header(files[0], rows)
    headers = [names]
    values: dict[str, list[str]] = {n: [r[i] for r in rows[1 : SAMPLE_ROWS + 1] if i < len(r) and r[i] != ""]
                                    for i, n in enumerate(names)}  # fmt: skip
    seen = len(rows) > 1
    for f in files[1:]:  # each further file's header, and its first rows for the types
        more = _csv_rows(f, HEAD_BYTES)
        other = _csv_header(f, more)
        if set(other) != set(names):
            extra, missing = sorted(set(other) - set(names)), sorted(set(names) - set(other))
            what = "; ".join(x for x in (f"it adds {', '.join(extra)}" if extra else "",
                                         f"it lacks {', '.join(missing)}" if missing else "") if x)  # fmt: skip
            raise SchemaError(f"CSV file {f.name} has other columns than {files[0].name} ({what}); "
                              "the files of one input need the same columns")  # fmt: skip
        headers.append(other)
        seen = seen or len(more) > 1
        for i, n in enumerate(other):
            values[n] += [r[i] for r in more[1:] if i < len(r) and r[i] != ""]
    columns = [_text_column(n, decide(values[n]), unknown=not seen) for n in names]
    return columns, tuple(headers)


def _json_columns(files: list[Path], spec) -> list[Column]:
    names: dict[str, list] = {}
    for i, path in enumerate(files):
        text = _sample_text(path, SAMPLE_BYTES if i == 0 else HEAD_BYTES)
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
        out.append(_text_column(k, decide(as_text)))
    return out


def _text_column(name: str, decided: str, unknown: bool = False) -> Column:
    if decided == "timestamp_ns":
        return Column(name, "timestamp", nanos=True)
    return Column(name, decided, unknown=unknown)


def decide(values: list[str]) -> str:
    """The type of a text column from sampled (non-empty) values:
    `timestamp_ns` for ISO times with a digit below the microsecond.
    Integers if every value is one; else numbers if most are (`bigint`
    when those are all integers); else times if most are; else booleans
    if every value is one; else text.  Each test stops as soon as its
    answer is known (a text column's values are not all read three times:
    a third of planning a CSV input)."""
    vals = [v.strip(" ") for v in values]  # as Spark's trim, which the cast applies
    if not vals:
        return "string"
    n = len(vals)
    if all(_INT.match(v) for v in vals):
        return "bigint" if all(-(2**63) <= int(v) < 2**63 for v in vals) else "decimal(38,0)"
    misses, whole = 0, True  # values that are no number; whether every number is an integer
    for v in vals:
        if not _NUM.match(v):
            misses += 1
            if misses * 2 >= n:  # numbers can no longer be most of them
                break
        elif whole and not _INT.match(v):
            whole = False
    else:
        return "bigint" if whole else "double"
    misses, nanos = 0, False  # values that are no time; whether a time has a digit below the microsecond
    for v in vals:
        parts = times.iso_parts(v)
        if parts is None:
            misses += 1
            if misses * 2 >= n:
                break
        elif parts[1] % 1000 != 0:
            nanos = True
    else:
        return "timestamp_ns" if nanos else "timestamp"
    if all(v.lower() in _BOOL for v in vals):
        return "boolean"
    return "string"


def from_spark(struct) -> Schema:
    """The schema of a Spark DataFrame (its StructType)."""
    return Schema(tuple((f.name, class_of(f.dataType.simpleString()), f.dataType.simpleString()) for f in struct.fields))


def is_path(spec) -> bool:
    text = str(spec)
    return Path(text).exists() or "/" in text or any(text.lower().endswith(s) for s in FORMATS)
