"""Running one generated case on either engine, as `cetql run --output DIR`
runs it: the inputs written as CSV or Parquet files, planned with what the
one reader describes, the result written as Parquet.  What the parity and
reference tests compare: rows, column types and the file footer's schema."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import cetql
from cetql.base.options import Engine, OutputFormat, OutputMode, RunOptions, Sink
from cetql.surfaces.cli.flags import known_inputs
from cetql.surfaces.output import resolve_output, write, write_batches, write_result, write_text_batches

TYPES = {"ts": pa.int64(), "id": pa.int64(), "x": pa.int64(), "g": pa.string(), "k": pa.string(), "y": pa.float64()}


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else ("Infinity" if v == math.inf else "-Infinity" if v == -math.inf else repr(v))
    return str(v)


def write_inputs(folder: Path, events: list[dict], typed: bool, special: bool, fmt: str):
    """(untyped input, {type: input}) as files of `fmt` (csv or parquet)."""
    cols = [c for c in TYPES if c != "y" or special]
    schema = pa.schema([(c, TYPES[c]) for c in cols])

    def one(evs, path: Path) -> str:
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pylist([{c: e.get(c) for c in cols} for e in evs], schema=schema), path)
        else:
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(cols)
                w.writerows([[_text(e.get(c)) for c in cols] for e in evs])
        return str(path)

    if not typed:
        return one(events, folder / f"events.{fmt}"), {}
    return None, {t: one([e for e in events if e["__type"] == t], folder / f"{t}.{fmt}")
                  for t in sorted({e["__type"] for e in events})}  # fmt: skip


def plan(text: str, data, by_type: dict, engine: Engine, sink: Sink = Sink.PARQUET, **options):
    """The plan `cetql run … --output DIR` makes (Parquet out, or `sink`), on `engine`."""
    inputs = known_inputs(data, by_type, "ts", options.get("time_zone") or "UTC")
    opts = replace(RunOptions.of(**options), engine=engine, sink=sink)
    return cetql.compile(text, {}, options=opts, inputs=inputs, strict_params=True)


def run_to(folder: Path, text: str, data, by_type: dict, engine: Engine, spark=None, fmt: str = "parquet",
           by_plan: bool = False, **options) -> Path:  # fmt: skip
    """The result written as `cetql run --output DIR --format fmt` writes it, by `engine` (on Spark, by
    Spark's own writer — the files cetql's must equal —; `by_plan`: by the writer its plan chose)."""
    out = OutputFormat(fmt)
    compiled = plan(text, data, by_type, engine, sink=Sink.PARQUET if out == OutputFormat.PARQUET else Sink.TEXT_FILES,
                    **options)  # fmt: skip
    assert compiled.plan.engine.engine == engine, compiled.plan.engine.reason
    target = resolve_output(str(folder), OutputMode.ERROR, fmt=out)
    if engine == Engine.EMBEDDED:
        from cetql.backends.embedded.run import execute, zone_of

        result = execute(compiled.plan)
        if out == OutputFormat.PARQUET:
            write_batches(result.schema, result.batches, target)
        else:
            zone = zone_of(compiled.options.time_zone)
            write_text_batches(result.schema, result.batches, target, out, zone)
    else:
        given = data if data is not None else by_type
        execution = compiled.execution(given, spark=spark, options=compiled.options)
        if by_plan:
            write_result(execution, target, out)
        else:
            write(execution.dataframe, target, out)
    return folder


def text_rows(folder: Path) -> tuple[set, list[str]]:
    """(the headers of a folder of CSV files, or none for JSON; every other line, sorted)."""
    headers, lines = set(), []
    for part in sorted(folder.glob("part-*")):
        got = part.read_text(encoding="utf-8").splitlines()
        if part.suffix == ".csv" and got:
            headers.add(got[0])
            got = got[1:]
        lines += got
    return headers, sorted(lines)


def footer(folder: Path) -> pa.Schema:
    """The result files' schema as their footers say it (names, types, nullability)."""
    return pq.read_schema(next(folder.glob("part-*.parquet")))


def rows(folder: Path) -> list[dict]:
    """Every row, in a total order, a double as its exact text (NaN equal to
    NaN, -0.0 told from 0.0)."""
    table = pq.read_table(folder)
    return sorted(({k: _exact(v) for k, v in r.items()} for r in table.to_pylist()), key=repr)


def _exact(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return [_exact(x) for x in v]
    return v
