"""What a results folder already holds: its files' format, columns and types,
checked before `append` adds to it."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path

from cetql.base.options import OutputFormat
from cetql.surfaces.output.target import Target, _refuse

_CODECS = (".gz", ".bz2", ".snappy", ".lz4", ".zst", ".zstd", ".deflate", ".br")


def format_of(name: str) -> str | None:
    """The format of a result file Spark wrote, from its name."""
    lower = name.lower()
    for codec in _CODECS:
        if lower.endswith(codec) and not lower.endswith(".parquet"):
            lower = lower[: -len(codec)]
    for fmt in OutputFormat:
        if lower.endswith("." + fmt.value):
            return fmt.value
    return None


def data_files(folder: Path) -> list[Path]:
    return sorted(f for f in folder.iterdir() if not f.name.startswith(("_", ".")))


def check_append_format(given: str, folder: Path, fmt: OutputFormat) -> None:
    """`append` adds `fmt` files to a folder of `fmt` results only."""
    for f in data_files(folder):
        found = format_of(f.name) if f.is_file() else None
        if found != fmt.value:
            what = f"{found.upper()} results" if found else "not a result file"
            raise _refuse(given, f"holds '{f.name}' ({what}); --mode append adds {fmt.value.upper()} files to a "
                                 f"folder of {fmt.value.upper()} results — write to another path")  # fmt: skip


_SIMPLE = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def simple_string(t) -> str:
    """A type of Spark's schema JSON (its Parquet footers) as Spark's
    `simpleString` names it, without pyspark."""
    if isinstance(t, str):
        return _SIMPLE.get(t, t)
    if t["type"] == "array":
        return f"array<{simple_string(t['elementType'])}>"
    if t["type"] == "map":
        return f"map<{simple_string(t['keyType'])},{simple_string(t['valueType'])}>"
    return "struct<" + ",".join(f"{f['name']}:{simple_string(f['type'])}" for f in t["fields"]) + ">"


def _shape(fields) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in fields]


def existing_shape(folder: Path, fmt: OutputFormat) -> tuple[list[tuple[str, str | None]], bool] | None:
    """(columns there as (name, type or None), whether they are all of them)
    from the first files of a results folder; None when it has none."""
    files = [f for f in data_files(folder) if f.is_file() and f.stat().st_size > 0]
    if not files:
        return None
    if fmt == OutputFormat.PARQUET:
        import pyarrow.parquet as pq

        schema = pq.read_schema(files[0])
        spark_json = (schema.metadata or {}).get(b"org.apache.spark.sql.parquet.row.metadata")
        if spark_json is not None:
            return [(f["name"], simple_string(f["type"])) for f in json.loads(spark_json)["fields"]], True
        return [(name, None) for name in schema.names], True
    if fmt == OutputFormat.CSV:
        with open(files[0], newline="", encoding="utf-8-sig") as fh:
            return [(name, None) for name in next(csv.reader(fh), [])], True
    keys: dict[str, None] = {}
    for f in files[:8]:  # JSON lines omit null fields: the keys seen are some of the columns
        with open(f, encoding="utf-8") as fh:
            for _, line in zip(range(200), fh):
                with contextlib.suppress(ValueError, AttributeError):
                    keys.update(dict.fromkeys(json.loads(line)))
    return [(k, None) for k in keys], False


def check_append_shape(target: Target, df, fmt: OutputFormat) -> None:
    """Refuse to append a result whose columns (and, for Parquet, types)
    differ from the files already there; no job runs."""
    _check_shape(target, _shape(df.schema.fields), fmt)


def _check_shape(target: Target, here: list[tuple[str, str]], fmt: OutputFormat) -> None:
    found = existing_shape(target.path, fmt)
    if found is None:
        return
    there, complete = found
    names = [n for n, _ in here]
    if complete and [n for n, _ in there] != names:
        why = f"columns {', '.join(n for n, _ in there)} there, {', '.join(names)} here"
    elif not complete and not {n for n, _ in there} <= set(names):
        why = f"column {sorted({n for n, _ in there} - set(names))[0]} there, not here"
    else:
        typed = [(a, b) for a, b in zip(there, here) if a[1] is not None and a != b]
        if not typed:
            return
        (n, t), (_, u) = typed[0]
        why = f"column {n} is {t} there, {u} here"
    raise _refuse(target.given, f"holds results of another shape ({why}); --mode append adds only results with the "
                                "same columns and types — write to another path")  # fmt: skip
