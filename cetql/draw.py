"""`cetql draw`: a picture of the graph detection walks for one window and
group — a node per (event, template state), an edge where a template
transition's predicates hold; nodes that may begin a trend are green, those
that may end one red, both gold.

The group drawn is the one named by `--window-start` and `--group`, else the
first window that has events and, in it, the group with the most.  Only that
group's events leave Spark (the user asked to see them); more than
`--max-nodes` is refused with the number, since a picture of thousands of
nodes shows nothing.  Needs matplotlib (`pip install "cetql[draw]"`).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import SimpleNamespace

from .arguments import parse_inputs, parse_params, read_query
from .errors import CetqlError, UsageError
from .failures import describe
from .options import RunOptions
from .output import resolve_output, write_file
from .planner.kernels.process import group_graphs
from .planner.physical.kernel import kernel_spec
from .planner.spark.compiler import kernel_input
from .query import compile
from .runtime import describe_paths
from .session import get_spark

FORMATS = (".svg", ".png")


def _window_index(value: str, phys) -> int:
    """The window index whose start is `value`, as the results print it."""
    slide = phys.window_slide
    try:
        if phys.time_kind == "numeric":
            start = Decimal(value)
        else:
            t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if t.tzinfo is None:
                t = t.replace(tzinfo=dt.UTC)
            micros = (t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
            start = Decimal(micros * (1000 if phys.time_kind == "timestamp_ns" else 1))
    except (InvalidOperation, ValueError):
        raise UsageError(f"--window-start '{value}' is not a time of this input") from None
    k = start / Decimal(str(slide))
    if k != k.to_integral_value():
        raise UsageError(f"--window-start {value} is not the start of a window (windows start every {slide} units)")
    return int(k)


def group_table(execution, window_start: str | None, groups: dict[str, str], max_nodes: int):
    """(the group's kernel input as an Arrow table, the lowered plan): one
    small job to choose the group, one to fetch it."""
    from pyspark.sql import functions as F

    plan = execution.plan
    df = kernel_input(plan, execution.inputs)
    phys = SimpleNamespace(spec=kernel_spec(plan), names=plan.names, time_kind=plan.scan.time_kind.value,
                           keys=tuple((k.column, k.attr) for k in plan.partition.keys),
                           window_slide=plan.windows.slide, window_length=plan.windows.length)  # fmt: skip
    spec = phys.spec
    window = phys.names.window
    by_attr = {attr: col for col, attr in phys.keys}
    for attr, value in groups.items():
        if attr not in by_attr:
            known = ", ".join(by_attr) or "none: the query has no partition keys"
            raise UsageError(f"--group {attr}: not a partition key of this query (keys: {known})")
        df = df.filter(F.col(by_attr[attr]).cast("string") == value)
    if window_start is not None:
        df = df.filter(F.col(window) == _window_index(window_start, phys))
    group = list(spec.columns.group)
    first = df.groupBy(*group).count().orderBy(F.col(window), F.col("count").desc(), *group[1:]).first()
    if first is None:
        raise UsageError("no events in that window and group" if window_start or groups else "no events to draw")
    if first["count"] > max_nodes:
        raise UsageError(
            f"that window and group hold {first['count']:,} events, more than --max-nodes {max_nodes:,}; "
            "choose a narrower one with --window-start and --group, or raise --max-nodes"
        )
    cond = None
    for g in group:
        c = F.col(g) == first[g]
        cond = c if cond is None else cond & c
    chosen = df.filter(cond).orderBy(spec.columns.time, spec.columns.id)
    return chosen.toArrow(), phys, {g: first[g] for g in group}


def build_graph(spec, table):
    """A networkx DiGraph of the group's run graph: node (event id, state)."""
    import networkx as nx

    ids = table.column(spec.columns.id).to_pylist()
    times = table.column(spec.columns.time).to_pylist()
    out = nx.DiGraph()
    for rows, g in group_graphs(spec, table):
        S = g.S
        for v in range(len(g.node)):
            if g.node[v]:
                e, qi = divmod(v, S)
                out.add_node((ids[rows[e]], g.names[qi]), time=times[rows[e]], rank=rows[e], state=qi,
                             start=bool(g.start[v]), end=bool(g.end[v]))  # fmt: skip
        for v, succ in enumerate(g.succ):
            e, qi = divmod(v, S)
            for w in succ:
                f, qj = divmod(w, S)
                out.add_edge((ids[rows[e]], g.names[qi]), (ids[rows[f]], g.names[qj]))
    return out


def render(graph, path: Path, title: str, labels: dict | None = None) -> None:
    try:
        import matplotlib
    except ImportError:
        raise UsageError('cetql draw needs matplotlib: pip install "cetql[draw]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    n = graph.number_of_nodes()
    states = sorted({d["state"] for _, d in graph.nodes(data=True)})
    # x: time order; y: the template state, staggered over 4 rows so that
    # edges between neighbours do not run through other nodes
    pos = {v: (d["rank"], -5 * states.index(d["state"]) - (d["rank"] % 4)) for v, d in graph.nodes(data=True)}
    fig, ax = plt.subplots(figsize=(min(4 + 0.3 * n, 60), 2 + 2.2 * len(states)))
    colours = []
    for _, d in graph.nodes(data=True):
        colours.append("#e6b800" if d["start"] and d["end"] else "#2e9e4f" if d["start"] else
                       "#c8463c" if d["end"] else "#9aa5b1")  # fmt: skip
    nodes = nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colours, node_size=260)
    nodes.set_gid("events")  # the SVG's <g id="events"> holds one marker per node
    nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowsize=8, width=0.6, edge_color="#55606e",
                           connectionstyle="arc3,rad=0.08", node_size=260)  # fmt: skip
    text = labels or {v: str(v[0]) if len(states) == 1 else f"{v[0]}:{v[1]}" for v in graph.nodes}
    nx.draw_networkx_labels(graph, pos, labels=text, ax=ax, font_size=7)
    ax.set_title(title, fontsize=9)
    ax.margins(0.02, 0.12)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, format=path.suffix[1:])
    plt.close(fig)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("draw", help="draw the graph detection walks for one window and group")
    p.add_argument("query_file", help="a .cet detection query, or - for standard input")
    p.add_argument("--input", action="append", required=True, metavar="[TYPE=]PATH", help="as for run")
    p.add_argument("-o", "--output", required=True, help="the picture: FILE.svg or FILE.png")
    p.add_argument("--window-start", help="the window to draw, by its start as results print it (default: the first)")
    p.add_argument("--group", action="append", metavar="KEY=VALUE", help="the group to draw (default: the largest)")
    p.add_argument("--label", metavar="ATTR,…", help="label nodes with these attributes' values (default: event id)")
    p.add_argument("--max-nodes", type=int, default=300, help="refuse a larger group (default 300)")
    p.add_argument("--mode", choices=["error", "overwrite"], default="error", help="if the file exists")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    p.add_argument("--time-col", default="ts", help="the time column (default: ts)")
    p.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--remote", help="a Spark Connect server, sc://host:port")
    p.set_defaults(func=cmd_draw)


def cmd_draw(args) -> int:
    data, typed = parse_inputs(args.input)
    target = resolve_output(args.output, args.mode, inputs=[data] if data else list(typed.values()),
                            query_file=args.query_file, kind="file", writer="draw")  # fmt: skip
    out = Path(args.output)
    if out.suffix.lower() not in FORMATS:
        raise UsageError(f"--output must end in .svg or .png, not '{out.name}'")
    groups = {}
    for item in args.group or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--group takes KEY=VALUE, not '{item}'")
        groups[key.strip()] = value
    # one kernel group per window: the group drawn is a window's
    options = RunOptions.of(time_col=args.time_col, id_col=args.id_col, max_trends=0, sharing="copy")
    known = describe_paths({None: data} if data is not None else dict(typed), options.time_col)
    compiled = compile(read_query(args.query_file), parse_params(args.param), options=options, inputs=known,
                       strict_params=True)  # fmt: skip
    if compiled.kind != "detection":
        raise UsageError("cetql draw shows a detection query's graph; drop AGG/RETURN to draw its pattern")
    spark = get_spark(args.master, remote=args.remote)
    try:
        execution = compiled.execution(data, spark=spark, options=options, **typed)
        table, phys, chosen = group_table(execution, args.window_start, groups, args.max_nodes)
        graph = build_graph(phys.spec, table)
        labels = _labels(execution, graph, args.label) if args.label else None
    except CetqlError:
        raise
    except Exception as e:
        raise describe(e) from None
    slide, length = phys.window_slide, phys.window_length
    k = chosen[phys.names.window]
    where = f"window [{k * slide}, {k * slide + length})" if phys.time_kind == "numeric" else f"window {k}"
    keys = ", ".join(f"{attr}={chosen[col]}" for col, attr in phys.keys)
    title = f"{where}{', ' + keys if keys else ''}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges"
    write_file(target, lambda path: render(graph, path, title, labels))
    print(f"drew {title} to {out}")
    return 0


def _labels(execution, graph, attrs_text: str) -> dict:
    attrs = [a.strip() for a in attrs_text.split(",") if a.strip()]
    events, id_col = execution.events()
    missing = [a for a in attrs if a not in events.columns]
    if missing:
        raise UsageError(f"--label: no column {missing[0]} in the input")
    ids = sorted({v[0] for v in graph.nodes})
    rows = {r[id_col]: r for r in events.filter(events[id_col].isin(ids)).select(id_col, *attrs).collect()}
    return {v: "\n".join(str(rows[v[0]][a]) for a in attrs) if v[0] in rows else str(v[0]) for v in graph.nodes}
