"""A drawn group as a `layout.Scene`: its events labelled by what the
query's predicates read, edges, and the trends picked to colour."""

from __future__ import annotations

from decimal import Decimal

from cetql.base.errors import UsageError
from cetql.base.words import did_you_mean
from cetql.surfaces.draw import layout
from cetql.surfaces.draw.group import MOST_TRENDS, Run
from cetql.surfaces.draw.times import time_text
from cetql.surfaces.render import chain_text

COLOURED = len(layout.TREND_COLOURS)  # trends coloured at once


def _values(execution, ids: list, attrs: tuple[str, ...], flag: str) -> dict:
    """event id -> {attr: value} for the drawn events (one small job)."""
    if not attrs:
        return {}
    events, id_col = execution.events()
    missing = [a for a in attrs if a not in events.columns]
    if missing:
        known = list(dict.fromkeys(c for i in execution.inputs.values() for c in i.df.columns))
        raise UsageError(f"{flag}: no column {missing[0]} in the input{did_you_mean(missing[0], known)} "
                         f"(columns: {', '.join(known)})")  # fmt: skip
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


def scene_of(run: Run, phys, chain, values: dict, *, title: str, wanted: int | None, positions) -> layout.Scene:
    """What to draw: nodes labelled by the linked values, origins for a
    link chain, the coloured trends numbered as `--trend` counts them."""
    style, attrs = chain or (None, ())
    times = sorted(set(run.times.values()))
    nodes, edges, coloured = _drawn(run, chain, values, wanted, {t: i for i, t in enumerate(times)})
    heights = None
    if style == "values" and len(attrs) == 1:
        found = {n.key: values.get(n.key[0], {}).get(attrs[0]) for n in nodes}
        if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in found.values()):
            heights = found
    subtitle, states, notes = _captions(run, phys, chain, len(coloured), wanted, heights is not None, positions)
    return layout.Scene(
        heights=heights,
        height_name=attrs[0] if heights is not None else "",
        title=title,
        subtitle=subtitle,
        nodes=tuple(nodes),
        edges=tuple(edges),
        coloured=tuple(coloured),
        columns=tuple(time_text(t, phys.time_kind, phys.window_length) for t in times),
        states=states,
        origin_text=f"the {attrs[0]} of a trend's first event" if style == "link" else "",
        notes=notes,
    )


def _drawn(run: Run, chain, values: dict, wanted: int | None, col: dict) -> tuple[list, list, list]:
    """(nodes, edges, coloured trends): origins added before a link chain's sources."""
    style, attrs = chain or (None, ())

    def text(event, attr_list) -> str:
        if not attr_list:
            return str(event)
        return chain_text("values", tuple(attr_list), [values.get(event, {})]).replace("\n", " ")

    shown = attrs[1:] if style == "link" else attrs
    nodes = [layout.Node(n, col[run.times[n[0]]], text(n[0], shown), n[1]) for n in run.nodes]
    edges = list(run.edges)
    prefix: dict = {}
    if style == "link":
        for n in sorted(run.sources, key=lambda n: (run.times[n[0]], n[0])):
            o = ("from", n[0])
            nodes.append(layout.Node(o, col[run.times[n[0]]] - 0.5, text(n[0], attrs[:1]), None, attached=n))
            edges.append((o, n))
            prefix[n] = o
    paths = [((prefix[t[0]],) if t[0] in prefix else ()) + t for t in run.trends]
    coloured = []
    for i in pick(paths, wanted):
        ids = [n[0] for n in run.trends[i]]
        shown_chain = chain_text(style, attrs, [values.get(e, {}) for e in ids]) if style else ""
        events = ", ".join(str(e) for e in ids)
        coloured.append(layout.Trend(i + 1, paths[i], f"{shown_chain}   (events {events})".strip()))
    return nodes, edges, coloured


def _captions(run: Run, phys, chain, n_coloured: int, wanted: int | None, heights: bool, positions):
    """(subtitle, the legend's states, notes) of a scene."""
    style, attrs = chain or (None, ())
    n_trends = len(run.trends)
    trend_set = str(phys.spec.trend_set).lower()
    counted = f"{n_trends:,} {trend_set} trends" if run.complete else f"more than {n_trends:,} {trend_set} trends"
    if wanted is not None:
        which = f"trend #{wanted} in colour"
    elif n_trends <= COLOURED:
        which = "each in its own colour"
    else:
        which = f"in colour: the {n_coloured} that cover the most edges (--trend N draws another)"
    if heights:
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
    return f"{len(run.times):,} events, {counted} · {which}", states, notes
