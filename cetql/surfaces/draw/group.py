"""Which window and group `cetql draw` draws (the one asked for, else the
most interesting that fits), and its graph and trends, by the kernels."""

from __future__ import annotations

from dataclasses import dataclass

from cetql.base.errors import UsageError
from cetql.kernels.batches import map_groups, segments
from cetql.kernels.greta import count_trends
from cetql.kernels.process import group_graphs
from cetql.kernels.runs import trend_nodes

MOST_TRENDS = 20_000  # trends of the drawn group enumerated (numbered, coloured) at most


COUNT_CAP = 2**62  # a group's trend count, as ranked (a larger count ranks as this)


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

    spec = phys.spec
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
    spec = phys.spec
    return df.filter(cond).orderBy(spec.columns.time, spec.columns.id).toArrow()


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
