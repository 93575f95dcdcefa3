"""`cetql draw`: the command line (light: the drawing and Spark load when it runs)."""

from __future__ import annotations


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("draw", help="draw one window's events and trends, as a picture (SVG or PNG)")
    p.add_argument("query_file", help="a .cet detection query, or - for standard input")
    p.add_argument("--input", action="append", required=True, metavar="[TYPE=]PATH", help="as for run")
    p.add_argument("-o", "--output", required=True, help="the picture: FILE.svg or FILE.png")
    p.add_argument(
        "--window-start",
        metavar="TIME",
        help="the window to draw, by its start as results print it (default: the one with most trends)",
    )
    p.add_argument("--group", action="append", metavar="KEY=VALUE",
                   help="the group to draw (default: the one with most trends)")  # fmt: skip
    p.add_argument("--trend", metavar="N", help="colour only trend N (numbered as the legend shows)")
    p.add_argument("--label", metavar="ATTR,…",
                   help="label nodes with these attributes' values (default: what the predicates link)")  # fmt: skip
    p.add_argument("--max-nodes", default=300, help="draw only groups of at most this many events (300)")
    p.add_argument("--mode", choices=["error", "overwrite"], default="error", help="if the file exists")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    p.add_argument("--time-col", default="ts", help="the time column (default: ts)")
    p.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--remote", help="a Spark Connect server, sc://host:port")
    p.set_defaults(func=_cmd_draw)


def _cmd_draw(args) -> int:
    from cetql.surfaces.draw.draw import cmd_draw  # start-up cost: the drawing and Spark load only when it runs

    return cmd_draw(args)
