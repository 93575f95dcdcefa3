"""The picture `cetql draw` makes of one window and group: pure layout and
matplotlib drawing, no Spark.

Time runs left to right: the group's distinct times are columns, evenly
spaced (time is compressed to its order, the ticks give the times), and
wrapped into bands stacked down the page when one row of columns would not
fit.  Each column's nodes are spread over lanes so that no label runs into
another node: a lane holds a node where nothing within its label's width is
already placed.  Coloured trends go first, each on a lane of its own where
its nodes fit, so that a trend reads as a line from left to right.

Every length is in pixels at `DPI` (data coordinates are pixels), so the
size of the figure is decided here and bounded: at most `MAX_W` × `MAX_H`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

DPI = 100
MAX_W, MAX_H = 1600, 1000
CHAR_W = 6.2  # px per character of an 8-point label
NODE = 13  # node diameter, px
LABEL_H = 11  # a label's height, px
LEGEND_CHAR, LEGEND_PAD, ROW_H = 6.6, 60.0, 16.0  # px per character of a legend line, beside it, per line
TREND_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
STATE_FILLS = ("#dbe4ee", "#fde0c5", "#d8efd3", "#efd9ef", "#fff3b0", "#d5f1f1")
STATE_MARKERS = ("o", "s", "D", "^", "v", "p")
BASE_EDGE = "#aab4bf"
MIN_LANE, MAX_LANE = 30.0, 58.0  # px between lanes
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


# ---------------------------------------------------------------- drawing


def draw(scene: Scene):
    """The matplotlib Figure of a scene."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    lay = layout(scene)
    fig = Figure(figsize=(lay.width / DPI, lay.height / DPI), dpi=DPI)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(0, lay.height)
    ax.set_axis_off()
    ax.text(16, lay.height - 12, _cut(scene.title, int((lay.width - 32) / 8.5)), fontsize=11, fontweight="bold",
            va="top", parse_math=False)  # fmt: skip
    if scene.subtitle:
        ax.text(16, lay.height - 32, _cut(scene.subtitle, int((lay.width - 32) / CHAR_W)), fontsize=8.5, va="top",
                color="#333", parse_math=False)  # fmt: skip
    _axis(ax, scene, lay)
    ring = _edges(ax, scene, lay)
    _nodes(ax, scene, lay, ring)
    _legend(fig, scene, lay)
    return fig


def _edges(ax, scene: Scene, lay: Layout) -> dict:
    """Every edge in grey, each coloured trend's steps in its colour (side
    by side where trends share a step); returns each node's trend colour."""
    from matplotlib.patches import FancyArrowPatch

    colour_of: dict = {}  # edge -> [trend colours]
    ring: dict = {}
    for i, t in enumerate(scene.coloured):
        c = TREND_COLOURS[i % len(TREND_COLOURS)]
        for a, b in zip(t.nodes, t.nodes[1:]):
            colour_of.setdefault((a, b), []).append((c, t.number))
        for k in t.nodes:
            ring.setdefault(k, c)
    r_pt = NODE / 2 * 72 / DPI + 1

    def arrow(a, b, colour, width, rad, z, gid):
        p = FancyArrowPatch(lay.pos[a], lay.pos[b], connectionstyle=f"arc3,rad={rad:.3f}", arrowstyle="-|>",
                            mutation_scale=7 + 2 * width, linewidth=width, color=colour, shrinkA=r_pt,
                            shrinkB=r_pt + 0.5, zorder=z)  # fmt: skip
        p.set_gid(gid)
        ax.add_patch(p)

    origins = {n.key for n in scene.nodes if n.attached is not None}
    for a, b in scene.edges:
        length = math.dist(lay.pos[a], lay.pos[b]) or 1.0
        sag = 0.0 if a in origins else _sag(a, b, lay)
        name = f"{_gid(a)}__{_gid(b)}"
        colours = colour_of.get((a, b), [])
        if not colours:
            arrow(a, b, BASE_EDGE, 0.7, sag / length, 1, f"edge__{name}")
        for j, (c, number) in enumerate(colours):
            arrow(a, b, c, 2.0, (sag + 5 * (j - (len(colours) - 1) / 2)) / length, 3, f"trend{number}__{name}")
    return ring


def _nodes(ax, scene: Scene, lay: Layout, ring: dict) -> None:
    """Markers by state (an origin hollow), ringed in their first trend's
    colour; each label above its node, else below, else left out (where it
    would cover a node or another label: the chart's axis still tells)."""
    states = [s for s, _ in scene.states]
    half = NODE / 2
    boxes = [(x - half, y - half, x + half, y + half) for x, y in lay.pos.values()]
    for first, last, y in lay.bands:  # the time axis and its ticks
        boxes.append((lay.left, y - 12, lay.left + (last - first + 1) * lay.col_px, y + 9))
    labels: list = []
    order = sorted(scene.nodes, key=lambda n: (n.key not in ring, n.column))
    for node in scene.nodes:
        x, y = lay.pos[node.key]
        if node.state is None:
            fill, marker = "white", "o"
        else:
            i = states.index(node.state) if node.state in states else 0
            fill, marker = STATE_FILLS[i % len(STATE_FILLS)], STATE_MARKERS[i % len(STATE_MARKERS)]
        c = ring.get(node.key)
        ax.scatter([x], [y], s=(NODE * 72 / DPI) ** 2, marker=marker, c=fill, edgecolors=c or "#5a6572",
                   linewidths=2.0 if c else 0.8, zorder=4, gid=f"node-{_gid(node.key)}")  # fmt: skip
    for node in order:
        x, y = lay.pos[node.key]
        w = _label_px(node.label) / 2
        for top in (y + half + 1 + LABEL_H, y - half - 1):
            box = (x - w, top - LABEL_H, x + w, top)
            mine = (x - half, y - half, x + half, y + half)
            inside = box[0] >= 0 and box[2] <= lay.width and box[1] >= 0 and box[3] <= lay.height
            if inside and not any(_overlap(box, b) for b in (*boxes, *labels) if b != mine):
                labels.append(box)
                ax.text(x, top, node.label, fontsize=7.5, ha="center", va="top", zorder=5, parse_math=False,
                        color="#111" if node.key in ring or node.state is None else "#333",
                        gid=f"label-{_gid(node.key)}",
                        bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.75})  # fmt: skip
                break


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _legend(fig, scene: Scene, lay: Layout) -> None:
    from matplotlib.lines import Line2D

    ncol, _, _ = _legend_shape(scene)
    room = int((lay.width / ncol - LEGEND_PAD) / LEGEND_CHAR)  # characters a line may take
    handles, texts = [], []
    for handle, text in _legend_entries(scene):
        if handle[0] == "line":
            handles.append(Line2D([], [], color=handle[1], linewidth=2.5))
        elif handle[0] == "edge":
            handles.append(Line2D([], [], color=handle[1], linewidth=1))
        elif handle[0] == "marker":
            handles.append(Line2D([], [], linestyle="none", marker=handle[1], markersize=8, markerfacecolor=handle[2],
                                  markeredgecolor="#5a6572"))  # fmt: skip
        else:
            handles.append(Line2D([], [], linestyle="none"))
        texts.append(_cut(text, room))
    legend = fig.legend(handles, texts, loc="lower left", bbox_to_anchor=(8 / lay.width, 4 / lay.height), ncol=ncol,
                        fontsize=8, frameon=False, handlelength=2.2, borderaxespad=0.2, labelspacing=0.45)  # fmt: skip
    for text in legend.get_texts():
        text.set_parse_math(False)  # a value may hold a $


def _sag(a, b, lay: Layout) -> float:
    """How far (px) an edge bows from the straight line: more when it runs
    along a lane, where it would go through the nodes between."""
    (x0, y0), (x1, y1) = lay.pos[a], lay.pos[b]
    if abs(y0 - y1) < 1 and abs(x1 - x0) > 1.5 * lay.col_px:
        return 22.0
    return 8.0


def _axis(ax, scene: Scene, lay: Layout) -> None:
    """Each band's time ticks: a line under its lanes, about eight times."""
    for first, last, y in lay.bands:
        x0 = lay.left + 0.5 * lay.col_px
        x1 = lay.left + (last - first + 0.5) * lay.col_px
        ax.plot([x0 - 0.4 * lay.col_px, x1 + 0.4 * lay.col_px], [y + 6, y + 6], color="#8a939c", linewidth=0.8)
        step = max(1, math.ceil((last - first + 1) / 8))
        width = max(len(scene.columns[c]) for c in range(first, last + 1)) * CHAR_W
        step = max(step, math.ceil((width + 12) / lay.col_px))
        for c in range(first, last + 1, step):
            x = lay.left + (c - first + 0.5) * lay.col_px
            ax.plot([x, x], [y + 3, y + 9], color="#8a939c", linewidth=0.8)
            ax.text(x, y, scene.columns[c], fontsize=7, ha="center", va="top", color="#444", parse_math=False)
    if lay.ticks:
        x = lay.left - 4
        first, last, bottom = lay.bands[0]
        right = lay.left + (last - first + 1) * lay.col_px
        for y, text in lay.ticks:
            ax.plot([x - 4, x], [y, y], color="#8a939c", linewidth=0.8)
            ax.plot([x, right], [y, y], color="#eef0f2", linewidth=0.8, zorder=0)
            ax.text(x - 6, y, text, fontsize=7, ha="right", va="center", color="#444")
        ax.plot([x, x], [bottom + 6, lay.plot_top], color="#8a939c", linewidth=0.8)
        ax.text(x - 6, lay.plot_top - 2, scene.height_name, fontsize=7.5, ha="right", va="top", color="#444",
                parse_math=False)  # fmt: skip


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _gid(key: tuple) -> str:
    return "-".join(str(k) for k in key).replace(" ", "_")


def encode(fig, fmt: str) -> bytes:
    """The figure as SVG text or PNG bytes; a PNG in the picture's own
    colours and their blends with white (antialiasing), a third of the size
    and every trend's colour exact."""
    import io

    import matplotlib

    buf = io.BytesIO()
    if fmt == "svg":
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: searchable, copyable
            fig.savefig(buf, format="svg", metadata={"Date": None})
        return buf.getvalue()
    fig.savefig(buf, format="png", dpi=DPI)
    from PIL import Image

    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB").quantize(palette=_palette(), dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="png", optimize=True)
    return out.getvalue()


def _palette():
    from PIL import Image

    inks = [*TREND_COLOURS, *STATE_FILLS, BASE_EDGE, "#5a6572", "#8a939c", "#eef0f2", "#111111", "#333333"]
    colours = {(g, g, g) for g in range(0, 256, 17)}
    for ink in inks:
        rgb = [int(ink[i : i + 2], 16) for i in (1, 3, 5)]
        for a in (1.0, 0.8, 0.6, 0.45, 0.3, 0.15):
            colours.add(tuple(round(c * a + 255 * (1 - a)) for c in rgb))
    flat = [c for rgb in sorted(colours) for c in rgb]
    image = Image.new("P", (1, 1))
    image.putpalette(flat + flat[:3] * (256 - len(colours)))
    return image
