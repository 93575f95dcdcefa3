"""Results as the text files Spark's writers make (`cetql run --output DIR
--format csv|json`), so that a folder is the same whichever engine wrote
it — the parity tests compare the files' text on generated cases.

CSV, as Spark writes a result (`surfaces.output.writers`: a header; the
trend's `events` joined with `;`, an empty or null list as an empty text):
a null is nothing; a text has its surrounding blanks dropped, is `""` when
empty, and is quoted when it holds a comma, a quote or a line break (a
quote or backslash inside escaped by a backslash).  JSON lines, as Jackson writes them: a null field
left out, NaN and ±infinity as the strings Java spells, text escaped.
Both: whole numbers and decimals as written, a double as Java's
`Double.toString` writes it (`1.0E10`, `0.001`, `-0.0`), a time to the
millisecond with its offset in the zone results print in (`…T22:13:20.123Z`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterator
from decimal import Decimal

import pyarrow as pa

# ---------------------------------------------------------------- values


def java_double(v: float) -> str:
    """`Double.toString(v)`: the shortest digits that read back as v, in
    plain notation from 10^-3 to 10^7, else as d.dddE±n."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(v)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent  # the decimal point's place after the first digit … i.e. 10^(point-1) ≤ |v|
    neg = "-" if sign else ""
    if 1e-3 <= abs(v) < 1e7:
        if point <= 0:
            return f"{neg}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{neg}{whole}.{frac or '0'}"
    return f"{neg}{text[0]}.{text[1:] or '0'}E{point - 1}"


def spark_time(v: dt.datetime, zone: dt.tzinfo) -> str:
    """`yyyy-MM-dd'T'HH:mm:ss.SSSXXX` in `zone`."""
    local = v.astimezone(zone)
    offset = local.utcoffset() or dt.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    mark = "Z" if minutes == 0 else f"{'+' if minutes > 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return (f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local.hour:02d}:{local.minute:02d}:"
            f"{local.second:02d}.{local.microsecond // 1000:03d}{mark}")  # years below 1000 too, as Spark pads them


def _scalar(v, zone) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return spark_time(v, zone)
    return str(v)


# ---------------------------------------------------------------- CSV


_BLANKS = "".join(chr(i) for i in range(33))  # what the CSV writer trims around a value (code points 0-32)


def _csv_text(text: str) -> str:
    text = text.strip(_BLANKS)
    if text == "":
        return '""'
    if any(c in text for c in ',"\n\r'):  # quoted: a backslash and a quote inside escaped by a backslash
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _csv_cell(v, zone) -> str:
    if isinstance(v, list):  # a list is joined with ';' first (null: empty text)
        return _csv_text(";".join(_scalar(x, zone) for x in v if x is not None))
    if v is None:
        return ""
    if isinstance(v, str):
        return _csv_text(v)
    return _scalar(v, zone)


def csv_lines(schema: pa.Schema, batches, zone: dt.tzinfo) -> Iterator[str]:
    """The header, then a line a row."""
    yield ",".join(_csv_text(name) for name in schema.names) + "\n"
    lists = [i for i, f in enumerate(schema) if pa.types.is_list(f.type)]
    for batch in batches:
        for row in zip(*(c.to_pylist() for c in batch.columns)):
            cells = [_csv_cell(v if v is not None or i not in lists else [], zone) for i, v in enumerate(row)]
            yield ",".join(cells) + "\n"


# ---------------------------------------------------------------- JSON lines


def _json_value(v, zone) -> str:
    if isinstance(v, list):
        return "[" + ",".join("null" if x is None else _json_value(x, zone) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        text = java_double(v)
        return f'"{text}"' if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(v, int | Decimal):
        return _scalar(v, zone)
    if isinstance(v, dt.datetime):
        return f'"{spark_time(v, zone)}"'
    return json.dumps(str(v), ensure_ascii=False)


def json_lines(schema: pa.Schema, batches, zone: dt.tzinfo) -> Iterator[str]:
    """A JSON object a row, null fields left out."""
    names = [json.dumps(n, ensure_ascii=False) for n in schema.names]
    for batch in batches:
        for row in zip(*(c.to_pylist() for c in batch.columns)):
            fields = [f"{n}:{_json_value(v, zone)}" for n, v in zip(names, row) if v is not None]
            yield "{" + ",".join(fields) + "}\n"
