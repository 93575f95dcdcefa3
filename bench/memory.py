"""Bounded memory: a detection with about 10^8 complete trends, written to
Parquet within `--memory-budget`, and what keeping no edges costs.

    python bench/memory.py [--trends 100000000] [--budget 256m]

M1  `PATTERN SEQ(A a, B b) WHERE [g] WITHIN 1000000`, two groups of A and B
    events alternating in time.  Every A before a B is a trend, so a group
    of n events has about n²/8 trends — and as many edges: stored, the
    graph alone would take ~48 B × 10^8 = 4.8 GB.  Within the budget the
    graph keeps none (see `--explain`: memory) and the walk writes each
    trend as it finds it.  The row count is checked against the number of
    (A, later B) pairs counted here from the data.
M2  the same query at 1/100 of the trends, run with the default budget
    (edges stored) and with a budget too small for them (edges found again
    in the index at each visit), same run: what the budget costs in time.

Memory is sampled every 0.25 s as PSS (shared pages split among their
users): of the whole process tree, of the JVM, and of the Python workers
(`pyspark.daemon` and the workers it forks), whose share is what the budget
bounds.  The section "## Bounded memory" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from results import replace_section  # noqa: E402
from run import _memory, sampled_run, tree_pids  # noqa: E402

SECTION = "## Bounded memory"
QUERY = "PATTERN SEQ(A a, B b)\nWHERE [g]\nWITHIN 1000000"
GROUPS = 2


def data(trends: int, folder: Path) -> tuple[Path, Path, int, int]:
    """A and B events alternating in time in each of two groups, sized for
    about `trends` (A, later B) pairs in all; (A path, B path, events, pairs)."""
    per_group = max(2, round(math.sqrt(8 * trends / GROUPS)))
    a_rows, b_rows = {"ts": [], "g": [], "id": []}, {"ts": [], "g": [], "id": []}
    pairs = 0
    ident = 0
    for g in range(GROUPS):
        seen_a = 0
        for t in range(per_group):
            rows = a_rows if t % 2 == 0 else b_rows
            rows["ts"].append(t)
            rows["g"].append(f"g{g}")
            rows["id"].append(ident)
            ident += 1
            if t % 2 == 0:
                seen_a += 1
            else:
                pairs += seen_a  # this B follows every A so far
    paths = folder / "A.parquet", folder / "B.parquet"
    pq.write_table(pa.table(a_rows), paths[0])
    pq.write_table(pa.table(b_rows), paths[1])
    return paths[0], paths[1], ident, pairs


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd or "pyspark.worker" in cmd:
        return "worker"
    if "java" in cmd.split(" ", 1)[0]:
        return "jvm"
    return "other"


def _breakdown(pid: int) -> dict:
    """PSS now: of the tree, the JVM, the Python workers, the largest worker."""
    now = {"tree": 0, "jvm": 0, "workers": 0, "worker": 0}
    for p in tree_pids(pid):
        m = _memory(p)
        now["tree"] += m
        kind = _kind(p)
        if kind == "jvm":
            now["jvm"] += m
        elif kind == "worker":
            now["workers"] += m
            now["worker"] = max(now["worker"], m)
    return now


def measured_run(args: list[str], cwd: str) -> dict:
    """Wall time and peak PSS (tree, JVM, Python workers summed, largest
    single worker) of a command."""
    elapsed, peak, out = sampled_run(args, _breakdown, cwd=cwd)
    return {"seconds": elapsed, "tree": 0, "jvm": 0, "workers": 0, "worker": 0, **peak, "output": out}


def run(folder: Path, a: Path, b: Path, name: str, budget: str | None) -> tuple[dict, int]:
    qfile = folder / "m.cet"
    qfile.write_text(QUERY)
    out = folder / name
    cmd = [sys.executable, "-m", "cetql", "run", str(qfile), "--input", f"A={a}", "--input", f"B={b}",
           "--id-col", "id", "--max-trends", "0", "--output", str(out), "--format", "parquet"]  # fmt: skip
    if budget:
        cmd += ["--memory-budget", budget]
    result = measured_run(cmd, tempfile.gettempdir())
    rows = pq.ParquetDataset(out).read(columns=["length"]).num_rows
    return result, rows


def gib(x: int) -> str:
    return f"{x / 2**30:.2f} GiB"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trends", type=int, default=100_000_000)
    ap.add_argument("--budget", default="256m")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--tmp", default=None, help="where the data and outputs go (they are large)")
    ap.add_argument("--skip-m2", action="store_true")
    a = ap.parse_args()
    from cetql.base.options import format_size, parse_size

    budget = parse_size(a.budget)
    lines = []
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        folder = Path(tmp)
        pa_, pb, events, pairs = data(a.trends, folder)
        m1, rows = run(folder, pa_, pb, "m1", a.budget)
        assert rows == pairs, (rows, pairs)
        print(f"M1 {events:,} events, {rows:,} trends, {m1['seconds']:.1f} s, tree {gib(m1['tree'])}, "
              f"workers {gib(m1['workers'])}, largest worker {gib(m1['worker'])}", flush=True)  # fmt: skip
        size = sum(f.stat().st_size for f in (folder / "m1").rglob("*.parquet"))
        lines += [
            f"M1: `{QUERY.replace(chr(10), ' ')}`, {events:,} events in {GROUPS} groups; `--memory-budget {a.budget}`",
            "",
            "| trends written | Parquet | wall time | trends/s | peak PSS, process tree | JVM | Python workers "
            "(sum) | largest worker | budget |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {rows:,} | {gib(size)} | {m1['seconds']:.0f} s | {rows / m1['seconds']:,.0f} | {gib(m1['tree'])} | "
            f"{gib(m1['jvm'])} | {gib(m1['workers'])} | {gib(m1['worker'])} | {format_size(budget)} |",
            "",
            f"Stored, its edges (one per trend) would take ~{gib(rows * 48)}; the row count equals the "
            "(A, later B) pairs counted from the data.",
        ]
        if not a.skip_m2:
            small = a.trends // 100
            sub = folder / "m2"
            sub.mkdir()
            pa2, pb2, events2, pairs2 = data(small, sub)
            stored, r1 = run(sub, pa2, pb2, "stored", None)
            lazy, r2 = run(sub, pa2, pb2, "lazy", "1m")
            stored2, r3 = run(sub, pa2, pb2, "stored2", None)
            lazy2, r4 = run(sub, pa2, pb2, "lazy2", "1m")
            assert r1 == r2 == r3 == r4 == pairs2
            s = sorted([stored["seconds"], stored2["seconds"]])
            z = sorted([lazy["seconds"], lazy2["seconds"]])
            print(f"M2 {events2:,} events, {r1:,} trends: stored {s} s, no edges {z} s", flush=True)
            lines += [
                "",
                f"M2: the same query on {events2:,} events ({r1:,} trends), edges stored (default budget) against "
                "none kept (`--memory-budget 1m`), alternating, 2 runs each:",
                "",
                "| edges | wall time (runs) | largest worker |",
                "| --- | ---: | ---: |",
                f"| stored | {s[0]:.1f} s, {s[1]:.1f} s | {gib(max(stored['worker'], stored2['worker']))} |",
                f"| found again at each visit | {z[0]:.1f} s, {z[1]:.1f} s | {gib(max(lazy['worker'], lazy2['worker']))} |",
                "",
                f"Ratio no-edges / stored (sums): {sum(z) / sum(s):.2f}.",
            ]
    header = [
        SECTION,
        "",
        f"`python bench/memory.py --trends {a.trends} --budget {a.budget}` on {platform.node()}, "
        f"{os.cpu_count()} cores, {dt.date.today()}; local[*], one run.",
        "",
    ]
    replace_section(a.results, SECTION, "\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
