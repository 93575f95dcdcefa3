"""`cetql draw`: the picture of one window and group's graph."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

from cetql.cli import main

ROOT = Path(__file__).parent.parent
CHECKS = ROOT / "examples" / "data" / "checks.csv"
KITING = ROOT / "examples" / "kiting.cet"  # WITHIN 100 SLIDE 50, c.type = 'notcovered'
SVG = "{http://www.w3.org/2000/svg}"


def _events_in(start: int, end: int) -> int:
    """Input rows the pattern can take in [start, end), counted from the CSV."""
    with open(CHECKS) as f:
        return sum(1 for r in csv.DictReader(f) if start <= int(r["ts"]) < end and r["type"] == "notcovered")


def test_svg_has_a_node_per_event_of_the_window(spark, tmp_path, capsys):
    out = tmp_path / "kiting.svg"
    assert main(["draw", str(KITING), "--input", str(CHECKS), "--id-col", "id", "-o", str(out),
                 "--window-start", "50", "--max-nodes", "1000"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    tree = ET.parse(out)  # a well-formed SVG
    assert tree.getroot().tag == f"{SVG}svg"
    (events,) = [g for g in tree.iter(f"{SVG}g") if g.get("id") == "events"]
    n = len(list(events.iter(f"{SVG}use")))
    assert n == _events_in(50, 150) > 0
    assert f"window [50, 150): {n} nodes" in printed


def test_png_with_labels_and_the_refusals(spark, tmp_path, capsys):
    out = tmp_path / "first.png"
    assert main(["draw", str(KITING), "--input", str(CHECKS), "--id-col", "id", "-o", str(out), "--label", "src"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"window [-50, 50): {_events_in(-50, 50)} nodes" in capsys.readouterr().out
    # the file exists: kept
    assert main(["draw", str(KITING), "--input", str(CHECKS), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    # more events than --max-nodes: refused with the number
    big = tmp_path / "big.svg"
    assert main(["draw", str(KITING), "--input", str(CHECKS), "-o", str(big), "--window-start", "50",
                 "--max-nodes", "5"]) == 2  # fmt: skip
    assert f"hold {_events_in(50, 150)} events, more than --max-nodes 5" in capsys.readouterr().err
    assert not big.exists()
    agg = tmp_path / "agg.cet"
    agg.write_text("PATTERN Check+ c[] WITHIN 10 AGG COUNT(*)")
    assert main(["draw", str(agg), "--input", str(CHECKS), "-o", str(tmp_path / "a.svg")]) == 2
    assert "detection query" in capsys.readouterr().err
    assert main(["draw", str(KITING), "--input", str(CHECKS), "-o", str(tmp_path / "a.svg"), "--window-start", "7"]) == 2
    assert "not the start of a window" in capsys.readouterr().err
