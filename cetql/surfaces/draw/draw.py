"""`cetql draw`: a picture of one window and group of a detection query —
its events in time order, an edge where two can be consecutive in a trend
(the graph detection walks), the trends drawn in colour with a legend that
prints each as `cetql run` does.

Nodes are labelled by what the query's predicates link, as `cetql run`
prints chains (`render.default_chain`): for `c[i].src = c[i-1].dst` a node is
the account a check paid into, and each chain starts from its first payer's
account, so a trend reads acct23 → acct04 → acct15; for `s[i].price >
s[i-1].price` a node is a price.

The group drawn is the one with the most trends among those that
`--window-start` and `--group` allow and that hold at most `--max-nodes`
events (one Spark job counts every group's trends without building them); it
is named on standard error.  Only that group's events leave Spark.  Needs
matplotlib (`pip install "cetql[draw]"`).
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import SimpleNamespace

from cetql.backends.inputs.facts import describe_paths
from cetql.backends.spark.compiler import kernel_input
from cetql.backends.spark.failures import describe
from cetql.backends.spark.session import get_spark
from cetql.base.errors import CetqlError, UsageError
from cetql.base.options import RunOptions
from cetql.kernels.batches import map_groups, segments
from cetql.kernels.greta import count_trends
from cetql.kernels.process import group_graphs
from cetql.kernels.runs import trend_nodes
from cetql.planner.physical.kernel import kernel_spec
from cetql.surfaces.api.query import compile
from cetql.surfaces.arguments import parse_inputs, parse_params, read_query
from cetql.surfaces.draw import picture
from cetql.surfaces.output import resolve_output, write_file
from cetql.surfaces.render import chain_text, default_chain

FORMATS = {".svg": "svg", ".png": "png"}
MOST_TRENDS = 20_000  # trends of the drawn group enumerated (numbered, coloured) at most
COLOURED = len(picture.TREND_COLOURS)  # trends coloured at once
COUNT_CAP = 2**62  # a group's trend count, as ranked (a larger count ranks as this)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# ---------------------------------------------------------------- the output file


def _format(output: str) -> str:
    """The picture's format, from the output's extension (checked before Spark starts)."""
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        raise UsageError(f"--output must end in .svg or .png, not '{Path(output).name}'")
    return fmt


# ---------------------------------------------------------------- times, in the user's units


def _stamp(value, kind: str) -> dt.datetime:
    micros = value if kind == "timestamp" else value / 1000
    return EPOCH + dt.timedelta(microseconds=micros)


def time_text(value, kind: str, span=None) -> str:
    """A time as results print it: a number as a number, a timestamp as a
    date and time (only the time of day with `span` under a day)."""
    if kind == "numeric":
        return _number(value)
    t = _stamp(value, kind).replace(tzinfo=None)
    second = 1_000_000 if kind == "timestamp" else 1_000_000_000
    if span is None:
        return t.isoformat(sep=" ", timespec="microseconds" if t.microsecond else "seconds")
    # a tick: to the second in a window of a minute or more, else finer
    text = t.isoformat(sep=" ", timespec="seconds" if span >= 60 * second else "milliseconds")
    return text[11:] if span < 86_400 * second else text[:16]


def _number(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return f"{v:,}" if isinstance(v, int) and abs(v) >= 10**6 else str(v)


def duration_text(d, kind: str) -> str:
    """A length of time in the user's units: a number, or 50 s, 10 min, 1 day."""
    if kind == "numeric":
        return _number(d)
    seconds = Decimal(d) / (1_000_000 if kind == "timestamp" else 1_000_000_000)
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60), ("s", 1), ("ms", Decimal("0.001"))):
        if seconds >= size and seconds % size == 0 or unit == "ms":
            n = seconds / size
            text = f"{n:f}".rstrip("0").rstrip(".") if "." in f"{n:f}" else f"{n:f}"
            return f"{text} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    raise AssertionError(d)


def window_text(k: int, phys) -> str:
    start = k * phys.window_slide
    end = start + phys.window_length
    if phys.time_kind == "numeric":
        return f"window [{_number(start)}, {_number(end)})"
    a, b = time_text(start, phys.time_kind), time_text(end, phys.time_kind)
    if a[:10] == b[:10]:
        b = b[11:]
    return f"window [{a}, {b})"


def _window_index(value: str, phys) -> int:
    """The window whose start is `value`, written as results print it."""
    kind, slide = phys.time_kind, phys.window_slide
    try:
        if kind == "numeric":
            start = Decimal(value)
        else:
            t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            t = t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t
            micros = (t - EPOCH) // dt.timedelta(microseconds=1)
            start = Decimal(micros * (1000 if kind == "timestamp_ns" else 1))
    except (InvalidOperation, ValueError):
        example = "a number" if kind == "numeric" else "a time such as 2026-01-01 00:10:00"
        raise UsageError(f"--window-start '{value}' is not a time of this input ({example})") from None
    k = start / Decimal(str(slide))
    if k != k.to_integral_value():
        lo = int(k.to_integral_value(rounding="ROUND_FLOOR"))
        near = " and ".join(time_text(i * slide, kind) for i in (lo, lo + 1))
        raise UsageError(
            f"--window-start {value} is not the start of a window: windows start every "
            f"{duration_text(slide, kind)}; the nearest start at {near}"
        )
    return int(k)


# ---------------------------------------------------------------- choosing the group


def _score_table(spec, table, max_nodes: int):
    """(group columns…, events, trends) of each group of a sorted table;
    trends counted without building them, only for groups small enough to
    draw (null for the others)."""
    import pyarrow as pa

    c = spec.columns
    group = list(c.group)
    out: dict[str, list] = {g: [] for g in group}
    events, trends = [], []
    for start, end, _ in segments(table, group, c.block, c.window_lo, c.window_hi):
        for g in group:
            out[g].append(table.column(g)[start].as_py())
        events.append(end - start)
        if end - start > max_nodes:
            trends.append(None)
            continue
        total = 0
        for _, graph in group_graphs(spec, table.slice(start, end - start)):
            total += count_trends(graph.gt, graph.gt.spec, spec.trend_set, 0, graph)[0]
        trends.append(min(total, COUNT_CAP))
    arrays = [pa.array(out[g], type=table.schema.field(g).type) for g in group]
    arrays += [pa.array(events, type=pa.int64()), pa.array(trends, type=pa.int64())]
    yield pa.RecordBatch.from_arrays(arrays, names=[*group, "events", "trends"])


def choose(df, phys, window: int | None, groups: dict[str, str], max_nodes: int) -> tuple[dict, int, int, int]:
    """(the chosen group's columns, its events, its trends, how many groups
    it was chosen among): the most trends, then the earliest window and the
    smallest keys."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    spec = kernel_spec(phys)
    group = list(spec.columns.group)
    by_attr = {attr: col for col, attr in phys.keys}
    for attr, value in groups.items():
        if attr not in by_attr:
            known = ", ".join(by_attr) or "none: the query has no partition keys"
            raise UsageError(f"--group {attr}: not a partition key of this query (keys: {known})")
        df = df.filter(F.col(by_attr[attr]).cast("string") == value)
    if window is not None:
        df = df.filter(F.col(phys.names.window) == window)
    schema = StructType([df.schema[g] for g in group] + [StructField("events", LongType()),
                                                          StructField("trends", LongType())])  # fmt: skip
    partitions = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    scores = (df.repartition(partitions, *group).sortWithinPartitions(*group, spec.columns.time, spec.columns.id)
              .mapInArrow(map_groups(group, lambda t: _score_table(spec, t, max_nodes)), schema))  # fmt: skip
    rank = F.when(F.col("trends").isNotNull(), F.struct(-F.col("trends"), *[F.col(g) for g in group]))
    row = scores.agg(
        F.count(F.lit(1)).alias("groups"), F.count("trends").alias("small"), F.min("events").alias("fewest"),
        F.min_by(F.struct(*group, "events", "trends"), rank).alias("best"),
    ).first()  # fmt: skip
    pinned = window is not None and len(groups) == len(phys.keys)
    if not row["groups"]:
        asked = [what for what, given in (("that window", window is not None), ("that group", groups)) if given]
        raise UsageError(f"no events in {' and '.join(asked)}" if asked else "no events to draw")
    if not row["small"]:
        raise UsageError(_too_big(pinned, window is not None, bool(groups), bool(phys.keys), row["fewest"], max_nodes))
    best = row["best"].asDict()
    if not best["trends"] and not pinned:
        raise UsageError(
            f"no window and group of at most {max_nodes:,} events holds a trend; "
            "name one with --window-start and --group to draw it anyway"
        )
    return {g: best[g] for g in group}, best["events"], best["trends"], row["small"]


def _too_big(pinned: bool, window: bool, keyed: bool, keys: bool, count: int, max_nodes: int) -> str:
    if pinned:
        return (f"that window{' and group' if keys else ''} holds {count:,} events, more than --max-nodes "
                f"{max_nodes:,}; raise --max-nodes to draw it")  # fmt: skip
    if window:
        scope = "every group of that window"
    else:
        scope = "every window of that group" if keyed else "every window and group" if keys else "every window"
    return (f"{scope} holds more than --max-nodes {max_nodes:,} events (the fewest: {count:,}); raise --max-nodes, "
            "or name a smaller window with --window-start and --group")  # fmt: skip


def fetch(df, phys, chosen: dict):
    """The chosen group's kernel input, in time order, as an Arrow table."""
    from pyspark.sql import functions as F

    cond = None
    for g, value in chosen.items():
        c = F.col(g) == value
        cond = c if cond is None else cond & c
    spec = kernel_spec(phys)
    return df.filter(cond).orderBy(spec.columns.time, spec.columns.id).toArrow()


# ---------------------------------------------------------------- the group's graph and trends


@dataclass(frozen=True)
class Run:
    """The drawn group: the graph detection walks and the trends it finds."""

    times: dict  # event id -> time
    nodes: tuple[tuple, ...]  # (event id, state), in time order
    edges: tuple[tuple[tuple, tuple], ...]
    sources: frozenset  # nodes that begin a trend with nothing before them
    trends: tuple[tuple[tuple, ...], ...]  # node keys, sorted as `cetql run` sorts them
    complete: bool  # False: only the first MOST_TRENDS found
    states: tuple[str, ...]


def group_run(spec, table, most: int = MOST_TRENDS) -> Run:
    """The graph and the trends of a group's kernel input, by the kernels
    detection runs (`group_graphs`, `trend_nodes`)."""
    ids = table.column(spec.columns.id).to_pylist()
    times = table.column(spec.columns.time).to_pylist()
    nodes, edges, sources, trends = {}, [], set(), []
    complete, states = True, ()
    for rows, g in group_graphs(spec, table):
        S, states = g.S, tuple(g.names)

        def key(v, rows=rows, g=g):
            return (ids[rows[v // g.S]], g.names[v % g.S])

        has_pred = bytearray(len(g.node))
        for v, succ in enumerate(g.succ):
            for w in succ:
                edges.append((key(v), key(w)))
                has_pred[w] = 1
        for v in range(len(g.node)):
            if g.node[v]:
                nodes[key(v)] = times[rows[v // S]]
                if g.start[v] and not has_pred[v]:
                    sources.add(key(v))
        walk, walked = trend_nodes(g.gt, spec.trend_set, g.gt.spec, g)
        for path in walk:
            if len(trends) >= most:
                complete = False
                break
            trends.append(tuple(key(v) for v in (path if walked.S == S else _with_states(g, path))))
    order = sorted(nodes, key=lambda n: (nodes[n], n[0], states.index(n[1]) if n[1] in states else 0))
    trends.sort(key=lambda t: tuple(n[0] for n in t))
    return Run({n[0]: nodes[n] for n in order}, tuple(order), tuple(edges), frozenset(sources), tuple(trends),
               complete, states)  # fmt: skip


def _with_states(g, events: list[int]) -> list[int]:
    """A trend walked as events (cross predicates) as the graph's nodes: the
    states along edges of the graph from a start to an end."""
    S = g.S

    def go(i: int, prev: int | None):
        if i == len(events):
            return [] if prev is None or g.end[prev] else None
        for q in range(S):
            v = events[i] * S + q
            if not g.node[v] or (prev is None and not g.start[v]) or (prev is not None and v not in g.succ_set(prev)):
                continue
            rest = go(i + 1, v)
            if rest is not None:
                return [v, *rest]
        return None

    found = go(0, None)
    if found is None:  # not expected: a trend is a path of the graph
        found = [e * S + next(q for q in range(S) if g.node[e * S + q]) for e in events]
    return found


# ---------------------------------------------------------------- the picture


def _values(execution, ids: list, attrs: tuple[str, ...], flag: str) -> dict:
    """event id -> {attr: value} for the drawn events (one small job)."""
    if not attrs:
        return {}
    events, id_col = execution.events()
    missing = [a for a in attrs if a not in events.columns]
    if missing:
        known = ", ".join(dict.fromkeys(c for i in execution.inputs.values() for c in i.df.columns))
        raise UsageError(f"{flag}: no column {missing[0]} in the input (columns: {known})")
    rows = events.filter(events[id_col].isin(ids)).select(id_col, *attrs).collect()
    return {r[id_col]: r.asDict() for r in rows}


def pick(trends: list[tuple], wanted: int | None) -> list[int]:
    """The trends drawn in colour (indexes): the one asked for, else all of
    them when few, else the ones that together cover the most edges, each
    chosen for the edges no earlier one covers (then length)."""
    if wanted is not None:
        return [wanted - 1]
    if len(trends) <= COLOURED:
        return list(range(len(trends)))
    steps = [set(zip(t, t[1:])) for t in trends]
    covered: set = set()
    chosen: list[int] = []
    for _ in range(COLOURED):
        best = max((i for i in range(len(trends)) if i not in chosen),
                   key=lambda i: (len(steps[i] - covered), len(trends[i]), -i))  # fmt: skip
        chosen.append(best)
        covered |= steps[best]
    return chosen


def _piece(position) -> str:
    if position is None:
        return "an event"
    var = position.var or ""
    return f"{position.type}+ {var}[]".strip() if position.repeated else f"{position.type} {var}".strip()


def scene_of(run: Run, phys, chain, values: dict, *, title: str, wanted: int | None, positions) -> picture.Scene:
    """What to draw: nodes labelled by the linked values, origins for a
    link chain, the coloured trends numbered as `--trend` counts them."""
    style, attrs = chain or (None, ())
    kind = phys.time_kind
    times = sorted(set(run.times.values()))
    col = {t: i for i, t in enumerate(times)}
    span = phys.window_length

    def text(event, attr_list) -> str:
        if not attr_list:
            return str(event)
        return chain_text("values", tuple(attr_list), [values.get(event, {})]).replace("\n", " ")

    shown = attrs[1:] if style == "link" else attrs
    nodes = [picture.Node(n, col[run.times[n[0]]], text(n[0], shown), n[1]) for n in run.nodes]
    edges = list(run.edges)
    prefix: dict = {}
    if style == "link":
        for n in sorted(run.sources, key=lambda n: (run.times[n[0]], n[0])):
            o = ("from", n[0])
            nodes.append(picture.Node(o, col[run.times[n[0]]] - 0.5, text(n[0], attrs[:1]), None, attached=n))
            edges.append((o, n))
            prefix[n] = o
    paths = [((prefix[t[0]],) if t[0] in prefix else ()) + t for t in run.trends]
    coloured = []
    for i in pick(paths, wanted):
        ids = [n[0] for n in run.trends[i]]
        shown_chain = chain_text(style, attrs, [values.get(e, {}) for e in ids]) if style else ""
        events = ", ".join(str(e) for e in ids)
        coloured.append(picture.Trend(i + 1, paths[i], f"{shown_chain}   (events {events})".strip()))
    n_trends = len(run.trends)
    trend_set = str(kernel_spec(phys).trend_set).lower()
    counted = f"{n_trends:,} {trend_set} trends" if run.complete else f"more than {n_trends:,} {trend_set} trends"
    if wanted is not None:
        which = f"trend #{wanted} in colour"
    elif n_trends <= COLOURED:
        which = "each in its own colour"
    else:
        which = f"in colour: the {len(coloured)} that cover the most edges (--trend N draws another)"
    heights = None
    if style == "values" and len(attrs) == 1:
        found = {n.key: values.get(n.key[0], {}).get(attrs[0]) for n in nodes}
        if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in found.values()):
            heights = found
    if heights is not None:
        what = f"at the height of its {attrs[0]}"
    elif style == "link":
        what = f"labelled by its {attrs[-1]}"
    else:
        what = f"labelled by its {'/'.join(attrs)}" if attrs else "labelled by its id"
    states = tuple((s, f"{_piece(positions.get(s))}: an event, {what}") for s in run.states)
    notes = (
        "#N: trend N for --trend N; trends are ordered by their events' ids, as cetql run lists them",
        "columns: the events' times, in order (not to scale)",
    )
    if not run.complete:
        notes += (f"only the first {MOST_TRENDS:,} trends found are numbered",)
    return picture.Scene(
        heights=heights,
        height_name=attrs[0] if heights is not None else "",
        title=title,
        subtitle=f"{len(run.times):,} events, {counted} · {which}",
        nodes=tuple(nodes),
        edges=tuple(edges),
        coloured=tuple(coloured),
        columns=tuple(time_text(t, kind, span) for t in times),
        states=states,
        origin_text=f"the {attrs[0]} of a trend's first event" if style == "link" else "",
        notes=notes,
    )


# ---------------------------------------------------------------- the command


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
    p.add_argument("--trend", type=int, metavar="N", help="colour only trend N (numbered as the legend shows)")
    p.add_argument("--label", metavar="ATTR,…",
                   help="label nodes with these attributes' values (default: what the predicates link)")  # fmt: skip
    p.add_argument("--max-nodes", type=int, default=300, help="draw only groups of at most this many events (300)")
    p.add_argument("--mode", choices=["error", "overwrite"], default="error", help="if the file exists")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="bind a query parameter (repeatable)")
    p.add_argument("--time-col", default="ts", help="the time column (default: ts)")
    p.add_argument("--id-col", help="a column of event ids (default: ids derived from the input order)")
    p.add_argument("--master", help="Spark master URL (default: local[*])")
    p.add_argument("--remote", help="a Spark Connect server, sc://host:port")
    p.set_defaults(func=cmd_draw)


def _groups(items: list[str] | None) -> dict[str, str]:
    groups = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--group takes KEY=VALUE, not '{item}'")
        groups[key.strip()] = value
    return groups


def cmd_draw(args) -> int:
    data, typed = parse_inputs(args.input)
    target = resolve_output(args.output, args.mode, inputs=[data] if data else list(typed.values()),
                            query_file=args.query_file, kind="file", writer="draw")  # fmt: skip
    fmt = _format(args.output)
    groups = _groups(args.group)
    if args.trend is not None and args.trend < 1:
        raise UsageError(f"--trend counts from 1, not {args.trend}")
    if args.max_nodes < 1:
        raise UsageError(f"--max-nodes must be positive, not {args.max_nodes}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError('cetql draw needs matplotlib: pip install "cetql[draw]"') from None
    # one kernel group per window: the group drawn is a window's
    options = RunOptions.of(time_col=args.time_col, id_col=args.id_col, max_trends=0, sharing="copy")
    known = describe_paths({None: data} if data is not None else dict(typed), options.time_col)
    compiled = compile(read_query(args.query_file), parse_params(args.param), options=options, inputs=known,
                       strict_params=True)  # fmt: skip
    if compiled.kind != "detection":
        raise UsageError("cetql draw shows a detection query's trends; drop AGG/RETURN to draw its pattern")
    spark = get_spark(args.master, remote=args.remote)
    try:
        execution = compiled.execution(data, spark=spark, options=options, **typed)
        plan = execution.plan
        df = kernel_input(plan, execution.inputs)
        phys = SimpleNamespace(spec=kernel_spec(plan), names=plan.names, time_kind=plan.scan.time_kind.value,
                               keys=tuple((k.column, k.attr) for k in plan.partition.keys),
                               window_slide=plan.windows.slide, window_length=plan.windows.length)  # fmt: skip
        window = _window_index(args.window_start, phys) if args.window_start is not None else None
        chosen, n_events, _, among = choose(df, phys, window, groups, args.max_nodes)
        run = group_run(kernel_spec(phys), fetch(df, phys, chosen))
        if args.trend is not None and args.trend > len(run.trends):
            raise UsageError(f"--trend {args.trend}: that window has {len(run.trends):,} trends")
        if args.label:
            chain = ("values", tuple(a.strip() for a in args.label.split(",") if a.strip()))
        else:
            chain = default_chain(execution.plan.logical)
        values = _values(execution, list(run.times), chain[1] if chain else (), "--label" if args.label else "labels")
    except CetqlError:
        raise
    except Exception as e:
        raise describe(e) from None
    where = window_text(chosen[phys.names.window], phys)
    keys = ", ".join(f"{attr} = {chosen[col]}" for col, attr in phys.keys)
    where += f", {keys}" if keys else ""
    if window is None or len(groups) < len(phys.keys):  # chosen here: say which
        found = f"{len(run.trends):,}" if run.complete else f"more than {len(run.trends):,}"
        hint = "--window-start and --group choose another" if phys.keys else "--window-start chooses another"
        print(f"drawing {where}: {n_events:,} events, {found} trends, the most of {among:,} "
              f"{'groups' if phys.keys else 'windows'} of at most {args.max_nodes:,} events ({hint})",
              file=sys.stderr)  # fmt: skip
    name = "query" if args.query_file == "-" else Path(args.query_file).name
    positions = execution.plan.logical.root.template.all_positions
    fig = picture.draw(scene_of(run, phys, chain, values, title=f"{name}: {where}", wanted=args.trend,
                                positions=positions))  # fmt: skip
    if write_file(target, lambda path: Path(path).write_bytes(picture.encode(fig, fmt))):
        print(f"drew {where} to {args.output} ({round(fig.bbox.width)}×{round(fig.bbox.height)} px)")
    else:
        print(f"'{args.output}' exists; nothing drawn (--mode ignore)")
    return 0
