"""The `cetql` command: `cetql compile QUERY_FILE [--explain] …`.

Exit status: 0 ok, 2 a query/schema/parameter error (message, no traceback),
1 anything else cetql reports on purpose."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from .errors import CetqlError, ParameterError, QueryError, UsageError


def _read_query(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"query file '{path}' does not exist")
    return p.read_text(encoding="utf-8")


def _params(items: list[str] | None) -> dict[str, object]:
    from .planner.analyze import parse_param

    out: dict[str, object] = {}
    for item in items or []:
        k, v = parse_param(item)
        if not k.isidentifier():
            raise ParameterError(f"--param name '{k}' is not an identifier")
        out[k] = v
    return out


def _schema(args):
    from .planner import schema as S

    if args.schema and args.input:
        raise UsageError("give either --schema or --input, not both")
    if args.schema:
        return S.parse_ddl(args.schema)
    if args.input:
        return S.from_file(args.input)
    return None


def cmd_compile(args) -> int:
    from .compiler import compile
    from .explain import explain_data, render

    text = _read_query(args.query_file)
    compiled = compile(
        text,
        _params(args.param),
        _schema(args),
        strict_params=bool(args.param) and args.strict,
        time_col=args.time_col,
        strategy=args.strategy,
    )
    spark_plan = _spark_plan(compiled, args) if (args.explain and args.input and compiled.kind == "detection") else None
    if args.format == "json":
        data = explain_data(compiled)
        if spark_plan:
            data["spark_plan"] = spark_plan
        print(json.dumps(data, indent=2))
    else:
        console = Console()
        render(compiled, console, explain=args.explain)
        if spark_plan:
            from rich.markup import escape

            console.print("[bold]spark plan[/] (physical, for --input):")
            console.print(escape(spark_plan), soft_wrap=True)
    return 0


def _spark_plan(compiled, args) -> str | None:
    """The Spark physical plan of the local strategy (building the distributed
    one would run its rounds)."""
    import contextlib
    import io

    from .session import get_spark

    if (args.strategy or compiled.plan.strategy) != "local":
        return "(the distributed strategy plans one join per round while it runs; nothing to show before)"
    df = compiled.run(args.input, spark=get_spark(), time_col=args.time_col, strategy="local")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain()
    return buf.getvalue().strip()


def _inputs(items: list[str]):
    """`--input PATH` (one single-type stream) or `--input Type=PATH` (repeatable)."""
    import re

    untyped, typed = [], {}
    for item in items:
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", item)
        if m and not Path(item).exists():
            if m.group(1) in typed:
                raise UsageError(f"type '{m.group(1)}' is bound to two inputs")
            typed[m.group(1)] = m.group(2)
        else:
            untyped.append(item)
    if len(untyped) > 1:
        raise UsageError("give one untyped --input, or bind each input to a type with --input Type=PATH")
    if untyped and typed:
        raise UsageError("give either one untyped --input or inputs bound to types (Type=PATH), not both")
    return (untyped[0] if untyped else None), typed


def _spark_message(e: Exception) -> str:
    text = str(e).strip()
    if "AggregateOverflow:" in text:
        return text[text.index("AggregateOverflow:") + len("AggregateOverflow:") :].strip().splitlines()[0]
    for marker in ("null value in time column",):
        if marker in text:
            start = text.index(marker)
            return text[start : text.index("'", text.index("'", start) + 1) + 1]
    first = text.splitlines()[0] if text else type(e).__name__
    return first[:500]


def cmd_run(args) -> int:
    from rich.table import Table

    from .compiler import compile
    from .session import get_spark

    text = _read_query(args.query_file)
    params = _params(args.param)
    compiled = compile(text, params, time_col=args.time_col)
    data, typed = _inputs(args.input)
    spark = get_spark(args.master)
    console = Console()
    try:
        df = compiled.run(
            data,
            spark=spark,
            params=params,
            time_col=args.time_col,
            id_col=args.id_col,
            strategy=args.strategy,
            trends=args.trends,
            with_rows=args.with_rows,
            approx=args.approx,
            exact=args.exact,
            kernel=args.kernel,
            **typed,
        )
        if args.output:
            out = df
            if args.format == "csv":
                from pyspark.sql import functions as F

                out = out.withColumn("events", F.concat_ws(";", F.col("events").cast("array<string>")))
                if args.with_rows:
                    out = out.withColumn("rows", F.to_json("rows"))
            out.write.mode("overwrite").format(args.format).save(args.output)
            total = _written_rows(args.output) if args.format == "parquet" else None
            noun = "trends" if compiled.kind == "detection" else "rows"
            what = f"{total:,} {noun}" if total is not None else noun
            console.print(f"wrote {what} to {args.output} ({args.format})")
            return 0
        rows = df.orderBy(*df.columns[:2]).limit(args.limit).collect()  # top-k, not a full sort
        total = df.count()
        noun = "trends" if compiled.kind == "detection" else "rows"
        table = Table(title=f"{total:,} {noun}" + (f" (first {len(rows)})" if total > len(rows) else ""))
        for name in df.columns:
            table.add_column(name, overflow="fold")
        for r in rows:
            table.add_row(*(_cell(r[c]) for c in df.columns))
        console.print(table)
        return 0
    except CetqlError:
        raise
    except Exception as e:  # a Spark job failed: say why in one line
        msg = _spark_message(e)
        if msg.startswith("null value in time column"):
            from .runner import null_time_counts

            counts = null_time_counts(spark, data, typed, args.time_col)
            msg = f"{msg}: {counts} row(s) have no time; drop or fill them before running the query"
        raise CetqlError(f"the Spark job failed: {msg}") from None


def _written_rows(path: str) -> int | None:
    """Rows written to a local Parquet folder, from the files' footers."""
    try:
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in Path(path).glob("*.parquet"))
    except Exception:
        return None


def _cell(v) -> str:
    from rich.markup import escape

    if isinstance(v, list):
        return escape("[" + ", ".join(str(x) for x in v) + "]")
    return escape(str(v))


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="cetql",
        description="Complete Event Trend queries on Apache Spark.",
    )
    parser.add_argument("--version", action="version", version=f"cetql {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="check a query and show how it will run")
    c.add_argument("query_file", help="a .cet file, or - for standard input")
    c.add_argument("--explain", action="store_true", help="show the AST, predicates, template and logical plan")
    c.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    c.add_argument("--schema", help="input columns, e.g. 'ts timestamp, src string, dst string'")
    c.add_argument("--input", help="a CSV, Parquet or JSON file whose columns the query is checked against")
    c.add_argument("--time-col", default="ts", help="the time column (default: ts)")
    c.add_argument("--strategy", choices=["local", "distributed"], help="force a detection strategy")
    c.add_argument("--format", choices=["text", "json"], default="text", help="text (default) or json for tools")
    c.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --param, every parameter must be bound (default: on)",
    )
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("run", help="run a query on Spark")
    r.add_argument("query_file", help="a .cet file, or - for standard input")
    r.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="[TYPE=]PATH",
        help="CSV (with header), Parquet or JSON file or folder, or a table/view name; "
        "Type=PATH binds an input to one event type (repeatable)",
    )
    r.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    r.add_argument("--time-col", default="ts", help="the time column: a timestamp or a number (default: ts)")
    r.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    r.add_argument("--output", help="write the result here instead of printing it")
    r.add_argument(
        "--format", choices=["parquet", "csv", "json"], default="parquet", help="output format (default parquet)"
    )
    r.add_argument("--master", help="Spark master URL (default: the active session, else local[*])")
    r.add_argument("--strategy", choices=["local", "distributed"], help="force a detection strategy")
    r.add_argument("--trends", choices=["complete", "maximal", "all"], help="override the query's trend set")
    r.add_argument("--with-rows", action="store_true", help="add the events' rows to each trend")
    r.add_argument("--limit", type=int, default=20, help="rows to print without --output (default 20)")
    r.add_argument(
        "--approx",
        action="store_true",
        help="aggregates in floating point (DOUBLE), as the query clause APPROX asks; faster, not exact",
    )
    r.add_argument(
        "--exact",
        choices=["decimal", "string"],
        default="decimal",
        help="exact counts and sums as DECIMAL(38,0) (default; a larger value is an error) or as decimal strings of any length",
    )
    r.add_argument(
        "--kernel",
        choices=["index", "scan"],
        default="index",
        help="aggregation: the attribute index (default, O(n log n)) or GRETA's O(n^2) predecessor scan, for comparison",
    )
    r.set_defaults(func=cmd_run)

    from .gen import add_parser as add_gen

    add_gen(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        return args.func(args)
    except QueryError as e:
        name = getattr(args, "query_file", None)
        err.print(e.render(name if name and name != "-" else None), markup=False)
        return e.exit_code
    except CetqlError as e:
        err.print(e.render(), markup=False)
        return e.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
