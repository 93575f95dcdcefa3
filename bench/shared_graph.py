"""Detection over blocks of windows: each block's graph built once and every
window walked on it (CET §5), against each window's own graph built on its
slice of the block — the kernel alone, same input table, same run.

    python bench/shared_graph.py [--events 20000] [--repeats 3]

The kernel's input table (blocks of 168 windows, as the Spark compiler
assigns them) is built once per case by the Spark-free lowering the tests
use (tests/support/harness.py); `process.detect_fn` then runs on it with the
plan's `shared_graph` and with it turned off, alternately, `--repeats`
times each.  Every run's output (rows, total trend length, and a checksum
of the events of every trend) is checked equal.  The section "## Detection
on a shared graph" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
from generate import kiting, stock  # noqa: E402
from harness import kernel_table, plan_for  # noqa: E402
from results import replace_section  # noqa: E402

from cetql.base.options import RunOptions  # noqa: E402
from cetql.kernels import process  # noqa: E402
from cetql.planner.physical.kernel import kernel_spec  # noqa: E402

SECTION = "## Detection on a shared graph"
KITING = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 168 SLIDE 1"
CASES = {
    "G-C": (kiting, KITING, "COMPLETE"),
    "G-M": (kiting, KITING, "MAXIMAL"),
    "G-R": (stock, "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price + 3 WITHIN 168 SLIDE 1",
            "COMPLETE"),
}  # fmt: skip


def run(fn, table: pa.Table) -> tuple[float, tuple]:
    began = time.perf_counter()
    rows = length = check = 0
    for batch in fn(iter(table.to_batches(max_chunksize=65536))):
        rows += batch.num_rows
        length += pc.sum(batch.column("length")).as_py() or 0
        flat = pc.list_flatten(batch.column("events"))
        check += pc.sum(pc.multiply(pc.cast(flat, pa.int64()), pc.cast(flat, pa.int64()))).as_py() or 0
    return time.perf_counter() - began, (rows, length, check)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    results = []
    for name, (make, text, trends) in CASES.items():
        events = make(a.events).to_pylist()
        plan, phys = plan_for(text, columns=sorted(events[0]), options=RunOptions.of(trends=trends, max_trends=0))
        assert kernel_spec(phys).shared_graph, f"{name}: the plan does not share the graph"
        table = kernel_table(plan, phys, events)
        specs = {"shared": kernel_spec(phys), "own": dataclasses.replace(kernel_spec(phys), shared_graph=False)}
        times: dict[str, list[float]] = {k: [] for k in specs}
        seen = {}
        for _ in range(a.repeats):
            for mode, spec in specs.items():
                secs, got = run(process.detect_fn(spec), table)
                times[mode].append(secs)
                if seen.setdefault(mode, got) != got or seen.get("shared", got) != got:
                    raise SystemExit(f"{name}: outputs differ: {seen} against {mode} {got}")
                print(f"{name} {mode:6s} {secs:.2f}s rows={got[0]:,}", flush=True)
        shared, own = statistics.median(times["shared"]), statistics.median(times["own"])
        results.append((name, text, trends, a.events, table.num_rows, seen["shared"][0], own, shared))
    lines = [
        SECTION,
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores. Script: "
        f"`python bench/shared_graph.py --events {a.events} --repeats {a.repeats}`. The kernel alone "
        "(`process.detect_fn`, no Spark) on the same input table of blocks of 168 windows, each window's graph "
        "built on its own slice against each block's graph built once and every window walked on it; medians "
        f"of {a.repeats} alternating runs; outputs checked equal (rows, total length, a checksum of the events).",
        "",
        "| case | query | trends | events | kernel rows | trends out | own graphs s | shared graph s | own / shared |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, text, trends, n, rows, out, own, shared in results:
        lines.append(f"| {name} | `{text}` | {trends} | {n:,} | {rows:,} | {out:,} | {own:.2f} | {shared:.2f} | "
                     f"{own / shared:.2f} |")  # fmt: skip
    replace_section(a.results, SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
