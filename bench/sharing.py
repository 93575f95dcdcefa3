"""Sliding windows with WITHIN/SLIDE = 168: blocks of windows against copies,
same data, same run, outputs checked equal.

    python bench/sharing.py [--detect-events 20000] [--aggregate-events 100000]

S-D: kiting `PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 168 SLIDE 1`
     (bench/generate.py's checks, one per time unit): every window's trends;
S-A: A1's aggregation with SLIDE = WITHIN / 168:
     `RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price
      GROUP-BY id WITHIN 16800 SLIDE 100 APPROX` (bench/aggregate.py's stream).

Each run is `cetql run … --output DIR --format parquet --sharing copy|blocks`
in a fresh process.  With copies, Spark writes, shuffles and sorts 168 rows
per event; with blocks at most 2.  With blocks, S-D builds each block's graph
once and walks every window on it (bench/shared_graph.py measures that part
alone); S-A propagates one count per window of a block in one pass.  The section "## Sliding windows: blocks against
copies" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from aggregate import stream  # noqa: E402
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402
from run import timed_run  # noqa: E402

SECTION = "## Sliding windows: blocks against copies"
WARM = """
import sys, time
import cetql
query, data, out = sys.argv[1:]
q = cetql.compile(open(query).read())
for sharing in ("copy", "blocks", "copy", "blocks"):
    df = q.run(data, id_col="id", max_trends=0, sharing=sharing)
    began = time.perf_counter()
    df.write.mode("overwrite").parquet(out)
    print("warm", sharing, time.perf_counter() - began, flush=True)
"""
CASES = {
    "S-D": (kiting, "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 168 SLIDE 1"),
    "S-A": (stream, "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price "
                    "GROUP-BY id WITHIN 16800 SLIDE 100 APPROX"),
}  # fmt: skip


def summary(out: Path) -> tuple:
    table = pq.ParquetDataset(out).read()
    if "COUNT(*)" in table.column_names:
        return table.num_rows, f"{pc.sum(table.column('COUNT(*)')).as_py():.9e}"
    return table.num_rows, pc.sum(table.column("length")).as_py()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detect-events", type=int, default=20_000)
    ap.add_argument("--aggregate-events", type=int, default=100_000)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    sizes = {"S-D": a.detect_events, "S-A": a.aggregate_events}
    cetql = [sys.executable, "-m", "cetql"]
    rows, warm = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, query) in CASES.items():
            data = Path(tmp) / f"{name}.parquet"
            pq.write_table(make(sizes[name]), data)
            qfile = Path(tmp) / f"{name}.cet"
            qfile.write_text(query)
            seen = {}
            for sharing in ("copy", "blocks"):
                out = Path(tmp) / "out"
                shutil.rmtree(out, ignore_errors=True)
                secs, peak, _ = timed_run([*cetql, "run", str(qfile), "--input", str(data), "--id-col", "id",
                                           "--output", str(out), "--format", "parquet", "--max-trends", "0",
                                           "--sharing", sharing])  # fmt: skip
                seen[sharing] = summary(out)
                rows.append((name, sizes[name], sharing, seen[sharing][0], secs, peak))
                print(f"{name} {sharing:6s} n={sizes[name]:,} rows={seen[sharing][0]:,} {secs:.1f}s "
                      f"peak={peak / 2**30:.2f} GiB", flush=True)  # fmt: skip
            if seen["copy"] != seen["blocks"]:
                raise SystemExit(f"{name}: copies and blocks disagree: {seen}")
            # warm: one process, one session, each mode run twice; the second timed
            _, _, text = timed_run([sys.executable, "-c", WARM, str(qfile), str(data), str(Path(tmp) / "warm")])
            for line in text.splitlines():
                if line.startswith("warm "):
                    _, sharing, secs = line.split()
                    warm[(name, sharing)] = float(secs)
                    print(f"{name} {sharing:6s} warm {float(secs):.1f}s", flush=True)
    write_results(a.results, rows, warm)


def write_results(path: str, rows, warm: dict) -> None:
    lines = [
        SECTION,
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores. Script: `python bench/sharing.py`. "
        "End to end, Spark start included; outputs of both checked equal (rows, and the total length of the "
        "trends or the sum of the counts). With blocks, S-D walks every window of a block on the block's one "
        "graph and S-A propagates a count per window of a block in one pass.",
        "",
        f"- S-D: `{CASES['S-D'][1]}` on bench/generate.py's checks (one per time unit, 50 accounts).",
        f"- S-A: `{CASES['S-A'][1]}` on bench/aggregate.py's stream (10 ids, one event per time unit).",
        "",
        "| case | events | sharing | output rows | seconds | peak memory |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, n, sharing, got, secs, peak in rows:
        lines.append(f"| {name} | {n:,} | {sharing} | {got:,} | {secs:.1f} | {peak / 2**30:.2f} GiB |")
    by = {(r[0], r[2]): r[4] for r in rows}
    lines += ["", "Warm (one process and Spark session, each mode run twice, the second run's write timed: the "
              "query's own work, without Spark's start or the first job's warm-up):", "",
              "| case | copy s | blocks s | copy / blocks |", "| --- | ---: | ---: | ---: |"]  # fmt: skip
    for name in CASES:
        if (name, "copy") in warm and (name, "blocks") in warm:
            c, b = warm[(name, "copy")], warm[(name, "blocks")]
            lines.append(f"| {name} | {c:.1f} | {b:.1f} | {c / b:.2f} |")
    lines += ["", "Ratios, same run:", ""]
    for name in CASES:
        if (name, "copy") in by and (name, "blocks") in by:
            lines.append(f"- {name} end to end: copy / blocks = {by[(name, 'copy')] / by[(name, 'blocks')]:.2f}")
        if (name, "copy") in warm and (name, "blocks") in warm:
            lines.append(f"- {name} warm: copy / blocks = {warm[(name, 'copy')] / warm[(name, 'blocks')]:.2f}")
    replace_section(path, SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
