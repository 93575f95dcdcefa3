"""Where everything of a picture goes (pure: no matplotlib): the scene's
nodes, trends and labels laid out in columns of time, wrapped into bands
of lanes when one row would be too wide."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

MAX_W, MAX_H = 1600, 1000
LEGEND_CHAR, LEGEND_PAD, ROW_H = 6.6, 60.0, 16.0  # px per character of a legend line, beside it, per line
TREND_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
STATE_FILLS = ("#dbe4ee", "#fde0c5", "#d8efd3", "#efd9ef", "#fff3b0", "#d5f1f1")
STATE_MARKERS = ("o", "s", "D", "^", "v", "p")
BASE_EDGE = "#aab4bf"
MIN_LANE, MAX_LANE = 30.0, 58.0  # px between lanes


DPI = 100


CHAR_W = 6.2  # px per character of an 8-point label


NODE = 13  # node diameter, px


LABEL_H = 11  # a label's height, px


MAX_LANES = 200


LEFT = 24.0  # px beside the columns, at least


WIDEST_COLUMN = 160.0


@dataclass(frozen=True)
class Node:
    key: tuple  # (event id, state), or ("from", event id) for the account a chain starts from
    column: float  # the time column; an origin sits half a column before its event
    label: str
    state: str | None  # the pattern variable, None for an origin
    attached: tuple | None = None  # an origin: the node it stays beside


@dataclass(frozen=True)
class Trend:
    number: int  # as the legend and --trend say
    nodes: tuple[tuple, ...]  # node keys in order (an origin first where there is one)
    text: str  # the trend as `cetql run` prints it


@dataclass(frozen=True)
class Scene:
    title: str
    subtitle: str
    nodes: tuple[Node, ...]
    edges: tuple[tuple[tuple, tuple], ...]
    coloured: tuple[Trend, ...]  # the trends drawn in colour, in legend order
    columns: tuple[str, ...]  # each column's time, as text
    states: tuple[tuple[str, str], ...]  # (state, what it is) for the legend
    origin_text: str = ""  # what an origin node is (legend), "" if none
    notes: tuple[str, ...] = ()  # more legend lines
    heights: dict | None = None  # node key -> a number: drawn at that height (a price chart), not on lanes
    height_name: str = ""  # what the heights are


@dataclass
class Layout:
    width: int
    height: int
    pos: dict = field(default_factory=dict)  # node key -> (x, y) in px, y up
    bands: list = field(default_factory=list)  # (first column, last column, y of the axis)
    col_px: float = 0.0
    plot_top: float = 0.0
    legend_h: float = 0.0
    left: float = 0.0  # x of the first column's left edge
    lane_px: float = 0.0  # px between lanes (0: a chart)
    ticks: list = field(default_factory=list)  # (y, text) of the height axis, when heights are drawn


@functools.lru_cache(maxsize=4096)
def _label_px(text: str) -> float:
    """A node label's width as drawn (7.5-point), px: measured, since
    `mmmm` is three times as wide as `iiii`."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    if not text:
        return 0.0
    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=7.5), ismath=False)
    return width * DPI / 72 + 2


def _legend_entries(scene: Scene) -> list[tuple[tuple, str]]:
    """(handle, text) of each legend line; a handle is ("line", colour),
    ("marker", marker, fill) or ("none",)."""
    out: list[tuple[tuple, str]] = []
    for i, t in enumerate(scene.coloured):
        out.append((("line", TREND_COLOURS[i % len(TREND_COLOURS)]), f"#{t.number}  {t.text}"))
    for i, (_, what) in enumerate(scene.states):
        out.append((("marker", STATE_MARKERS[i % len(STATE_MARKERS)], STATE_FILLS[i % len(STATE_FILLS)]), what))
    if scene.origin_text:
        out.append((("marker", "o", "white"), scene.origin_text))
    out.append((("edge", BASE_EDGE), "an edge: the two can be consecutive in a trend"))
    out += [(("none",), note) for note in scene.notes]
    return out


def _legend_shape(scene: Scene) -> tuple[int, float, float]:
    """(columns, height, the width it asks for) of the legend, px."""
    entries = _legend_entries(scene)
    ncol = 2 if len(entries) > 14 else 1
    widest = max(len(text) for _, text in entries)
    return ncol, ROW_H * math.ceil(len(entries) / ncol) + 16, ncol * (LEGEND_PAD + widest * LEGEND_CHAR) + 8


def _heads(scene: Scene) -> tuple[float, float, float]:
    """(height of the title lines, of the legend, the width the legend and
    title ask for), px."""
    _, legend_h, legend_w = _legend_shape(scene)
    title_w = max(len(scene.title) * 8.5, len(scene.subtitle) * CHAR_W) + 32
    return 22 + 16 * (1 + bool(scene.subtitle)), legend_h, max(legend_w, title_w)


def layout(scene: Scene) -> Layout:
    """Where every node goes, and the figure's size."""
    return _chart(scene) if scene.heights is not None else _lanes_layout(scene)


def _chart(scene: Scene) -> Layout:
    """Time across, the node's number up: one band, its own axis of heights."""
    from matplotlib.ticker import MaxNLocator

    n_cols = max(len(scene.columns), 1)
    text_h, legend_h, text_w = _heads(scene)
    axis_h = 30
    values = [float(v) for v in scene.heights.values()]
    lo, hi = min(values), max(values)
    ticks = [t for t in MaxNLocator(6).tick_values(lo, hi) if lo <= t <= hi] if hi > lo else [lo]
    tick_text = [f"{t:g}" for t in ticks]
    side = _side(scene)
    left = max(LEFT + max(len(t) for t in tick_text) * CHAR_W + 14, side)
    col_px = min((MAX_W - left - side) / n_cols, 90.0)
    plot_h = min(MAX_H - text_h - legend_h - axis_h - 10, 460.0)
    width = int(min(MAX_W, max(640, left + n_cols * col_px + side, text_w)))
    col_px = max(col_px, min((width - left - side) / n_cols, WIDEST_COLUMN))  # use the page the text takes
    height = int(text_h + legend_h + plot_h + axis_h + 10)
    out = Layout(width, height, col_px=col_px, plot_top=height - text_h, legend_h=legend_h, left=left)
    bottom = out.plot_top - plot_h
    pad = 26.0  # room for a label above the highest node

    def y(v: float) -> float:
        return bottom + 10 + (plot_h - 10 - pad) * ((v - lo) / (hi - lo) if hi > lo else 0.5)

    same: dict = {}  # nodes of one event (several states) side by side
    for node in scene.nodes:
        same.setdefault((node.column, scene.heights[node.key]), []).append(node.key)
    for (column, value), keys in same.items():
        for i, key in enumerate(keys):
            shift = (i - (len(keys) - 1) / 2) * (NODE + 3)
            out.pos[key] = (left + (column + 0.5) * col_px + shift, y(float(value)))
    out.bands.append((0, n_cols - 1, bottom))
    out.ticks = [(y(t), text) for t, text in zip(ticks, tick_text)]
    return out


def _lanes_layout(scene: Scene) -> Layout:
    """Nodes on lanes: one band of columns across the page unless its lanes
    would not fit the page's height."""
    n_cols = max(len(scene.columns), 1)
    by_key = {n.key: n for n in scene.nodes}
    reach = max((_origin_gap(n, by_key[n.attached]) + _label_px(n.label) / 2 + 4
                 for n in scene.nodes if n.attached is not None), default=0.0)  # fmt: skip
    side = _side(scene)
    usable = MAX_W - 2 * side - reach
    text_h, legend_h, text_w = _heads(scene)
    axis_h = 30  # a band's time ticks
    for bands in range(1, 5):
        per_band = math.ceil(n_cols / bands)
        col_px = min(usable / per_band, 90.0)
        lanes = _lanes(scene, col_px, per_band)
        lane_counts = [max((lane for (b, lane) in lanes.values() if b == i), default=0) + 1 for i in range(bands)]
        room = MAX_H - text_h - legend_h - axis_h * bands - 10
        if sum(lane_counts) * MIN_LANE <= room or col_px * 2 < NODE + 8:
            break
    lane_px = min(MAX_LANE, room / sum(lane_counts))  # under MIN_LANE: labels that would cover a node are left out
    height = int(min(MAX_H, text_h + legend_h + sum(c * lane_px + axis_h for c in lane_counts) + 10))
    left = side + max((_origin_gap(n, by_key[n.attached]) + _label_px(n.label) / 2 + 4
                       - (by_key[n.attached].column % per_band + 0.5) * col_px
                       for n in scene.nodes if n.attached is not None), default=0.0)  # fmt: skip
    left = max(side, left)
    width = int(min(MAX_W, max(640, left + per_band * col_px + side, text_w)))
    col_px = max(col_px, min((width - left - side) / per_band, WIDEST_COLUMN))  # wider: lanes still hold
    out = Layout(width, height, col_px=col_px, plot_top=height - text_h, legend_h=legend_h, left=left, lane_px=lane_px)
    top = out.plot_top
    for b, count in enumerate(lane_counts):
        for node in scene.nodes:
            band, lane = lanes[node.key]
            if band == b and node.attached is None:
                out.pos[node.key] = (left + (node.column - b * per_band + 0.5) * col_px, top - (lane + 0.5) * lane_px)
        top -= count * lane_px
        out.bands.append((b * per_band, min((b + 1) * per_band, n_cols) - 1, top))
        top -= axis_h
    for node in scene.nodes:
        if node.attached is not None:
            x, y = out.pos[node.attached]
            out.pos[node.key] = (x - _origin_gap(node, by_key[node.attached]), y)
    return out


def _side(scene: Scene) -> float:
    """The margin beside the columns: half the widest label, at least LEFT."""
    return max(LEFT, max((_label_px(n.label) for n in scene.nodes), default=0.0) / 2 + 8)


def _origin_gap(origin: Node, node: Node) -> float:
    """How far left of its event an origin sits: their labels side by side."""
    return max(NODE + 14, (_label_px(origin.label) + _label_px(node.label)) / 2 + 8)


def _lanes(scene: Scene, col_px: float, per_band: int) -> dict:
    """(band, lane) of every node: coloured trends first, each on one lane
    where all its nodes fit, then the other nodes beside their neighbours."""
    by_key = {n.key: n for n in scene.nodes}
    origins = {n.attached: n for n in scene.nodes if n.attached is not None}
    neighbours: dict = {k: [] for k in by_key}
    for a, b in scene.edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    taken: dict = {}  # (band, lane) -> [(x0, x1)] occupied, in px
    where: dict = {}

    def span(key) -> tuple[float, float, int]:
        node = by_key[key]
        band = int(node.column // per_band)
        x = (node.column - band * per_band + 0.5) * col_px
        half = max(_label_px(node.label), NODE) / 2 + 4
        lo = x - half
        o = origins.get(key)
        if o is not None:
            lo = x - _origin_gap(o, node) - max(_label_px(o.label), NODE) / 2 - 4
        return lo, x + half, band

    def free(key, lane: int) -> bool:
        lo, hi, band = span(key)
        return all(hi <= a or lo >= b for a, b in taken.get((band, lane), ()))

    def fits(keys: list, lane: int) -> bool:
        """All of keys on one lane: each free, and none over another."""
        spans = sorted((span(k)[2], span(k)[0], span(k)[1]) for k in keys)
        apart = all(a[0] != b[0] or a[2] <= b[1] for a, b in zip(spans, spans[1:]))
        return apart and all(free(k, lane) for k in keys)

    def put(key, lane: int) -> None:
        lo, hi, band = span(key)
        taken.setdefault((band, lane), []).append((lo, hi))
        where[key] = (band, lane)
        if key in origins:
            where[origins[key].key] = (band, lane)

    def near(want: float) -> list[int]:
        return sorted(range(MAX_LANES), key=lambda k: (abs(k - want), k))

    for trend in scene.coloured:
        todo = [k for k in trend.nodes if k not in where and by_key[k].attached is None]
        placed = [where[k][1] for k in trend.nodes if k in where]
        want = placed[0] if placed else 0
        lane = next((lane for lane in near(want) if fits(todo, lane)), None)
        for k in todo:
            put(k, lane if lane is not None else next(x for x in near(want) if free(k, x)))
    rest = [k for k in by_key if by_key[k].attached is None and k not in where]
    for key in sorted(rest, key=lambda k: (by_key[k].column, str(k))):
        lanes = sorted(where[k][1] for k in neighbours[key] if k in where)
        want = lanes[len(lanes) // 2] if lanes else 0
        put(key, next((x for x in near(want) if free(key, x)), MAX_LANES))
    return where
