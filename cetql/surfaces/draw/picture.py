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

import math

from cetql.surfaces.draw.layout import (
    BASE_EDGE,
    CHAR_W,
    DPI,
    LABEL_H,
    LEGEND_CHAR,
    LEGEND_PAD,
    NODE,
    STATE_FILLS,
    STATE_MARKERS,
    TREND_COLOURS,
    Layout,
    Scene,
    _label_px,
    _legend_entries,
    _legend_shape,
    layout,
)


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
