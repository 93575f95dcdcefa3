"""`cetql repl`: the command line (light: the shell and Spark load when it runs)."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("repl", help="an interactive shell on one warm Spark session")
    p.add_argument("--input", action="append", metavar="[TYPE=]PATH", help="events to query (as for run; repeatable)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    p.add_argument("--time-col", default="ts", help="the time column (default: ts)")
    p.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--remote", help="a Spark Connect server, sc://host:port (also: SPARK_REMOTE)")
    p.add_argument("--verbose", action="store_true", help="let Spark's own log reach the terminal")
    p.set_defaults(func=_cmd_repl)


def _cmd_repl(args) -> int:
    from cetql.surfaces.repl.loop import cmd_repl  # start-up cost: the shell and Spark load only when it runs

    return cmd_repl(args)
