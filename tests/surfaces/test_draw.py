"""`cetql draw`: the picture of one window and group.

Expected values come from the data and tests/support/reference.py (trends enumerated
by definition), never from the drawing code: which window and group has the
most trends, which events a trend has and in which order trends are numbered,
what each node is labelled.  The SVG keeps its text (`svg.fonttype none`) and
names its parts: `node-<id>-<state>`, `label-<id>-<state>`, an origin
`from-<id>`, a coloured step `trend<N>__<from>__<to>`."""

from __future__ import annotations

import csv
import datetime as dt
import random
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from reference import reference_trends

from cetql.surfaces.cli.main import main
from cetql.surfaces.draw import layout, picture

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"  # WITHIN 100 SLIDE 50, c.type = 'notcovered'
SVG = "{http://www.w3.org/2000/svg}"
LINK = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN {w} SLIDE {s}"
RISING = "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 20"
EPOCH = dt.datetime(1970, 1, 1)


def _draw(capsys, *argv) -> tuple[int, str, str]:
    code = main(["draw", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def _write(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _checks(n: int, step: int, seed: int) -> list[dict]:
    """Checks between five accounts, one every `step` time units: chains
    (each payer the previous payee) of every length appear."""
    rnd = random.Random(seed)
    accounts = [f"acct{i}" for i in range(5)]
    out = []
    for i in range(n):
        src, dst = rnd.sample(accounts, 2)
        out.append({"ts": i * step, "id": i, "src": src, "dst": dst})
    return out


def _best(per_window: dict) -> tuple:
    """The window (key) with the most trends, then the earliest."""
    return min(per_window, key=lambda w: (-len(per_window[w]), w))


def _num(v) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _parts(svg: Path) -> dict[str, ET.Element]:
    return {e.get("id"): e for e in ET.parse(svg).iter() if e.get("id")}


def _label(parts: dict, gid: str) -> str | None:
    e = parts.get(gid)
    return None if e is None else "".join(t.text or "" for t in e.iter(f"{SVG}text"))


def _coloured(parts: dict) -> dict[int, set]:
    """trend number -> its coloured steps, as (from, to) node names."""
    out: dict[int, set] = {}
    for gid in parts:
        if gid.startswith("trend") and "__" in gid:
            number, a, b = gid.split("__")
            out.setdefault(int(number[len("trend") :]), set()).add((a, b))
    return out


def _steps(trend: tuple) -> set:
    """A kiting trend's steps as drawn: from its first payer, then check to check."""
    names = [f"from-{trend[0]}"] + [f"{e}-c" for e in trend]
    return set(zip(names, names[1:]))


def test_kiting_default_window_labels_and_trends(spark, tmp_path, capsys):
    events = _checks(40, 1, seed=3)
    data = _write(tmp_path / "checks.csv", events)
    query = tmp_path / "q.cet"
    query.write_text(LINK.format(w=10, s=5))
    per_window = reference_trends(query.read_text(), events)
    (start, end) = _best(per_window)
    want = sorted(per_window[(start, end)])  # numbered in the order of their events' ids
    assert len(want) > 1

    out = tmp_path / "k.svg"
    code, printed, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", out)
    assert code == 0, err
    name = f"window [{_num(start)}, {_num(end)})"
    assert name in err and f"{len(want)} trends" in err  # the choice, said on stderr
    assert f"drew {name}" in printed
    root = ET.parse(out).getroot()
    w, h = (float(root.get(a).removesuffix("pt")) * picture.DPI / 72 for a in ("width", "height"))
    assert w <= 1600.5 and h <= 1000.5
    parts = _parts(out)
    # a node per event of the window, labelled by the account it paid into;
    # an origin before each trend's first check, labelled by its payer
    in_window = {e["id"]: e for e in events if start <= e["ts"] < end}
    assert {g[len("node-") :] for g in parts if g.startswith("node-")} == (
        {f"{i}-c" for i in in_window} | {f"from-{t[0]}" for t in want}
    )
    for i, e in in_window.items():
        assert _label(parts, f"label-{i}-c") == e["dst"]
    for t in want:
        assert _label(parts, f"label-from-{t[0]}") == in_window[t[0]]["src"]
    # the coloured trends are the window's, under their numbers: all of them
    # when there are at most eight
    coloured = _coloured(parts)
    assert len(coloured) == min(len(want), len(layout.TREND_COLOURS))
    for number, steps in coloured.items():
        assert steps == _steps(want[number - 1])

    # --trend N: that trend's steps, and no other, in colour
    n = max(range(len(want)), key=lambda i: (len(want[i]), -i)) + 1
    one = tmp_path / "one.svg"
    code, printed, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", one,
                               "--window-start", _num(start), "--trend", n)  # fmt: skip
    assert code == 0, err
    assert f"drew {name}" in printed and err == ""  # a window named by the user: nothing to say
    assert _coloured(_parts(one)) == {n: _steps(want[n - 1])}
    code, _, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", tmp_path / "x.svg",
                         "--window-start", _num(start), "--trend", len(want) + 1)  # fmt: skip
    assert code == 2 and f"that window has {len(want)} trends" in err


def test_default_group_has_the_most_trends_among_those_small_enough(spark, tmp_path, capsys):
    rnd = random.Random(5)
    events = []
    # S1: 12 ticks in [0, 20) (more than --max-nodes 10); S2: 6 then 7; S3: one a window
    for sym, times in (("S1", range(0, 20, 2)), ("S1", (1, 3)), ("S2", range(1, 13, 2)), ("S2", range(21, 35, 2)),
                       ("S3", (5, 25))):  # fmt: skip
        events += [{"ts": t, "sym": sym, "price": rnd.randint(1, 9)} for t in times]
    events.sort(key=lambda e: e["ts"])
    for i, e in enumerate(events):
        e["id"] = i
    data = _write(tmp_path / "ticks.csv", [{k: e[k] for k in ("ts", "id", "sym", "price")} for e in events])
    query = tmp_path / "q.cet"
    query.write_text(RISING)
    trends: dict = {}
    size: dict = {}
    for sym in ("S1", "S2", "S3"):  # [sym] partitions: each symbol's trends on its own
        mine = [e for e in events if e["sym"] == sym]
        for (start, _), ts in reference_trends(RISING, mine).items():
            trends[(start, sym)] = ts
            size[(start, sym)] = sum(1 for e in mine if start <= e["ts"] < start + 20)
    small = {k: v for k, v in trends.items() if size[k] <= 10}
    start, sym = _best(small)
    assert size[_best(trends)] > 10  # the limit changes the choice

    out = tmp_path / "s.svg"
    code, printed, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", out, "--max-nodes", 10)
    assert code == 0, err
    name = f"window [{_num(start)}, {_num(start + 20)}), sym = {sym}"
    assert name in err and f"{len(small[(start, sym)])} trends" in err
    assert f"drew {name}" in printed
    parts = _parts(out)
    drawn = {e["id"]: e for e in events if e["sym"] == sym and start <= e["ts"] < start + 20}
    assert {g[len("node-") :] for g in parts if g.startswith("node-")} == {f"{i}-s" for i in drawn}
    labels = {g: _label(parts, g) for g in parts if g.startswith("label-")}
    assert labels  # a price chart: labels where they do not cover a node, each the tick's price
    for gid, text in labels.items():
        assert text == str(drawn[int(gid.split("-")[1])]["price"])


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_timestamps_name_windows_as_times_and_png(spark, tmp_path, capsys):
    events = _checks(40, 9, seed=11)  # ts in seconds from the epoch of the data
    origin = dt.datetime(2026, 1, 1)
    base = int((origin - EPOCH).total_seconds())
    rows = [{**e, "ts": (origin + dt.timedelta(seconds=e["ts"])).isoformat(sep=" ")} for e in events]
    data = _write(tmp_path / "checks.csv", rows)
    query = tmp_path / "q.cet"
    query.write_text(LINK.format(w="100 seconds", s="50 seconds"))
    shifted = [{**e, "ts": e["ts"] + base} for e in events]  # windows align to the epoch either way
    start, end = _best(reference_trends(LINK.format(w=100, s=50), shifted))
    a, b = (EPOCH + dt.timedelta(seconds=int(x)) for x in (start, end))
    name = f"window [{a:%Y-%m-%d %H:%M:%S}, {b:%H:%M:%S})"

    out = tmp_path / "t.png"
    code, printed, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", out)
    assert code == 0, err
    assert name in err and f"drew {name}" in printed
    w, h = _png_size(out)
    assert 0 < w <= 1600 and 0 < h <= 1000
    # a start that is not a window's: said in the input's units
    code, _, err = _draw(capsys, query, "--input", data, "--id-col", "id", "-o", tmp_path / "u.png",
                         "--window-start", f"{a + dt.timedelta(seconds=10):%Y-%m-%d %H:%M:%S}")  # fmt: skip
    assert code == 2
    assert "every 50 s" in err and f"{a:%Y-%m-%d %H:%M:%S}" in err and "units" not in err and "000000" not in err


def _events_in(start: int, end: int) -> int:
    """Input rows the pattern can take in [start, end), counted from the CSV."""
    with open(CHECKS) as f:
        return sum(1 for r in csv.DictReader(f) if start <= int(r["ts"]) < end and r["type"] == "notcovered")


def test_the_refusals(spark, tmp_path, capsys):
    out = tmp_path / "first.svg"
    out.write_text("kept")
    code, _, err = _draw(capsys, KITING, "--input", CHECKS, "-o", out)
    assert code == 2 and "exists" in err and out.read_text() == "kept"
    big = tmp_path / "big.svg"
    # more events than --max-nodes: refused with the number
    code, _, err = _draw(capsys, KITING, "--input", CHECKS, "-o", big, "--window-start", 50, "--max-nodes", 5)
    assert code == 2 and f"that window holds {_events_in(50, 150)} events, more than --max-nodes 5" in err
    code, _, err = _draw(capsys, KITING, "--input", CHECKS, "-o", big, "--max-nodes", 5)
    assert code == 2 and f"more than --max-nodes 5 events (the fewest: {_events_in(-50, 50)})" in err
    assert not big.exists()
    agg = tmp_path / "agg.cet"
    agg.write_text("PATTERN Check+ c[] WITHIN 10 AGG COUNT(*)")
    code, _, err = _draw(capsys, agg, "--input", CHECKS, "-o", tmp_path / "a.svg")
    assert code == 2 and "detection query" in err
    code, _, err = _draw(capsys, KITING, "--input", CHECKS, "-o", tmp_path / "a.svg", "--window-start", 7)
    assert code == 2 and "not the start of a window: windows start every 50; the nearest start at 0 and 50" in err
    code, _, err = _draw(capsys, KITING, "--input", CHECKS, "-o", tmp_path / "a.gif")
    assert code == 2 and ".svg or .png" in err


# ---------------------------------------------------------------- the layout, without Spark


@st.composite
def scenes(draw):
    """A group's graph as `cetql draw` hands it to the picture: columns of
    one or two nodes, edges forward in time, origins, up to eight coloured
    trends along edges, labels of any length, lanes or a chart."""
    n_cols = draw(st.integers(1, 320))
    states = draw(st.sampled_from([("c",), ("a", "b")]))
    label = st.text("abcdefghijklmnopqrstuvwxyz0123456789.$_\\{}^é→", min_size=1, max_size=12)
    free = st.text(st.characters(codec="latin-1", exclude_categories=("Cc",)), max_size=200)
    nodes, keys = [], []
    for col in range(n_cols):
        for s in states[: draw(st.integers(1, len(states)))]:
            keys.append((col, s))
            nodes.append(layout.Node((col, s), col, draw(label), s))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    edges = sorted({(a, b) for a in keys for b in rnd.sample(keys, min(2, len(keys))) if a[0] < b[0]})
    origins = [k for k in keys if rnd.random() < 0.2]
    for k in origins:
        nodes.append(layout.Node(("from", k[0], k[1]), k[0] - 0.5, draw(label), None, attached=k))
        edges.append((("from", k[0], k[1]), k))
    succ: dict = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    coloured = []
    for number in range(draw(st.integers(0, 8))):
        path = [rnd.choice(keys)]
        while succ.get(path[-1]) and len(path) < 12:
            path.append(rnd.choice(succ[path[-1]]))
        coloured.append(layout.Trend(number + 1, tuple(path), draw(free)))
    heights = {n.key: rnd.uniform(0, 100) for n in nodes} if draw(st.booleans()) else None
    return layout.Scene(
        title=draw(free), subtitle=draw(free), nodes=tuple(nodes),
        edges=tuple(edges), coloured=tuple(coloured), columns=tuple(str(c * 7) for c in range(n_cols)),
        states=tuple((s, f"{s}: an event") for s in states), origin_text="the src" if origins else "",
        notes=("a note",), heights=heights, height_name="price",
    )  # fmt: skip


@settings(
    max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)
@given(scene=scenes())
def test_the_picture_fits_a_page_and_labels_leave_nodes_clear(scene):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = picture.draw(scene)
    renderer = FigureCanvasAgg(fig).get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    assert width <= layout.MAX_W and height <= layout.MAX_H
    lay = layout.layout(scene)
    half = picture.NODE / 2
    nodes = {k: (x - half, y - half, x + half, y + half) for k, (x, y) in lay.pos.items()}
    assert set(nodes) == {n.key for n in scene.nodes}
    for x0, y0, x1, y1 in nodes.values():
        assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height
    (ax,) = fig.axes
    shown = 0
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= -1 and box.x1 <= width + 1 and box.y0 >= -1 and box.y1 <= height + 1, text.get_text()
        if (text.get_gid() or "").startswith("label-"):
            shown += 1
            for x0, y0, x1, y1 in nodes.values():
                assert box.x1 <= x0 + 1 or box.x0 >= x1 - 1 or box.y1 <= y0 + 1 or box.y0 >= y1 - 1
    if scene.heights is None and lay.lane_px >= layout.MIN_LANE:
        assert shown == len(scene.nodes)  # on lanes that fit the page every node keeps its label
    legend = fig.legends[0].get_window_extent(renderer)
    assert legend.x0 >= 0 and legend.x1 <= width + 1 and legend.y0 >= 0
