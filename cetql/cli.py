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
    if args.format == "json":
        print(json.dumps(explain_data(compiled), indent=2))
    else:
        render(compiled, Console(), explain=args.explain)
    return 0


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
