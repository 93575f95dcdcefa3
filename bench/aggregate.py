"""Aggregation benchmark A1: counting rising price runs without building them.

    RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price
    GROUP-BY id WITHIN 10000 SLIDE 5000

on 1,000,000 events (10 ids, one event per second, random-walk prices),
end to end with `cetql run` (Spark start included, results to Parquet):

1. --approx (DOUBLE), checked within 1e-9 relative of the exact values;
2. exact, every digit (--exact string: the counts reach ~10^100);
3. windows of 1,000 / 10,000 / 100,000 (slide = half), with the attribute
   index (O(n log n)) and with GRETA's predecessor scan (O(n²)) in the same run.

The exact values are computed here with Python integers, independently of
cetql.  The section "## Aggregation (A1)" of bench/RESULTS.md is replaced.

    python bench/aggregate.py [--scale 0.1] [--baseline DIR]

With --baseline (an older cetql installed into DIR, see bench/run.py), modes
1 and 2 also run on it, same data, same run, checked the same way.
"""

from __future__ import annotations

import argparse
import bisect
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from results import replace_section  # noqa: E402
from run import timed_run  # noqa: E402

QUERY = "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id WITHIN {w} SLIDE {s}"


def stream(n: int, seed: int = 7, ids: int = 10) -> pa.Table:
    rng = np.random.default_rng(seed)
    who = rng.integers(0, ids, n)
    steps = rng.choice([-1, 1], n) * rng.integers(1, 4, n)
    price = np.empty(n, dtype=np.int64)
    level = np.full(ids, 1000, dtype=np.int64)
    for k in range(n):
        level[who[k]] += steps[k]
        price[k] = level[who[k]]
    return pa.table({"ts": np.arange(n, dtype=np.int64), "id": who.astype(np.int64), "price": price})


def exact_counts(table: pa.Table, w: int, s: int) -> dict[tuple[int, int], int]:
    """{(window_start, id): number of rising runs}, by dynamic programming
    over each window with a Fenwick tree of Python integers."""
    ts = table.column("ts").to_numpy()
    ids = table.column("id").to_numpy()
    price = table.column("price").to_numpy()
    out = {}
    for sym in np.unique(ids):
        mine = np.flatnonzero(ids == sym)
        t, p = ts[mine], price[mine]
        k_lo, k_hi = (t.min() - w) // s + 1, t.max() // s
        for k in range(k_lo, k_hi + 1):
            lo, hi = np.searchsorted(t, k * s), np.searchsorted(t, k * s + w)
            if lo == hi:
                continue
            vals = sorted(set(p[lo:hi].tolist()))
            tree = [0] * (len(vals) + 1)
            total = 0
            for x in p[lo:hi].tolist():  # one event per second: no ties in time
                r = bisect.bisect_left(vals, x)  # earlier prices strictly below x
                c, i = 1, r
                while i > 0:
                    c += tree[i]
                    i -= i & -i
                total += c
                i = r + 1
                while i <= len(vals):
                    tree[i] += c
                    i += i & -i
            out[(int(k * s), int(sym))] = total
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--baseline", help="a folder holding an older cetql (see bench/run.py), run beside the current one")
    a = ap.parse_args()
    n = int(1_000_000 * a.scale)
    cetql = [sys.executable, "-m", "cetql"]
    lines = ["", "## Aggregation (A1)", ""]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "a1.parquet"
        table = stream(n)
        pq.write_table(table, data)

        def run(w, s, *flags, baseline=None):
            q = Path(tmp) / "a1.cet"
            q.write_text(QUERY.format(w=w, s=s))
            out = Path(tmp) / "out"
            if out.exists():
                shutil.rmtree(out)
            env = {**os.environ, "PYTHONPATH": baseline} if baseline else None
            secs, peak, _ = timed_run([*cetql, "run", str(q), "--input", str(data), "--output", str(out), *flags],
                                      env)  # fmt: skip
            return secs, peak, pq.ParquetDataset(out).read().to_pylist()

        exact = exact_counts(table, 10_000, 5_000)
        total = sum(exact.values())

        secs, peak, rows = run(10_000, 5_000, "--approx")
        worst = max(
            abs(r["COUNT(*)"] - exact[(r["window_start"], r["id"])]) / exact[(r["window_start"], r["id"])] for r in rows
        )
        got_total = sum(r["COUNT(*)"] for r in rows)
        rel_total = abs(got_total - total) / total
        assert len(rows) == len(exact) and worst <= 1e-9, worst
        print(f"approx {secs:.1f}s peak {peak / 2**30:.2f} GiB worst rel err {worst:.1e}", flush=True)
        lines += [
            f"`{QUERY.format(w=10_000, s=5_000)}` on {n:,} events (10 ids, one per second, random-walk prices); "
            f"{len(exact):,} (window, id) rows; the exact total has {len(str(total))} digits "
            f"({str(total)[:6]}…e{len(str(total)) - 1}).",
            "",
            "| mode | seconds | peak memory | check |",
            "| --- | ---: | ---: | --- |",
            f"| `--approx` (DOUBLE) | {secs:.1f} | {peak / 2**30:.2f} GiB | worst row {worst:.1e} relative, total {rel_total:.1e} |",
        ]

        secs, peak, rows = run(10_000, 5_000, "--exact", "string")
        wrong = sum(1 for r in rows if int(r["COUNT(*)"]) != exact[(r["window_start"], r["id"])])
        assert len(rows) == len(exact) and wrong == 0
        print(f"exact {secs:.1f}s peak {peak / 2**30:.2f} GiB, every digit right", flush=True)
        lines.append(
            f"| exact (`--exact string`) | {secs:.1f} | {peak / 2**30:.2f} GiB | every digit of all {len(rows):,} rows |"
        )

        if a.baseline:
            lines += ["", "Against the baseline (an older cetql, same data, same run, the same checks):", "",
                      "| mode | baseline s | current s | current / baseline |", "| --- | ---: | ---: | ---: |"]
            for label, flags in (("`--approx`", ("--approx",)), ("exact (`--exact string`)", ("--exact", "string"))):
                b_secs, _, b_rows = run(10_000, 5_000, *flags, baseline=a.baseline)
                c_secs, _, c_rows = run(10_000, 5_000, *flags)
                for got in (b_rows, c_rows):
                    assert len(got) == len(exact)
                    for r in got:
                        want = exact[(r["window_start"], r["id"])]
                        value = r["COUNT(*)"]
                        assert (abs(value - want) / want <= 1e-9) if flags[0] == "--approx" else int(value) == want
                print(f"{label}: baseline {b_secs:.1f}s current {c_secs:.1f}s", flush=True)
                lines.append(f"| {label} | {b_secs:.1f} | {c_secs:.1f} | {c_secs / b_secs:.2f} |")

        if not a.skip_scaling:
            # the fixed cost (Spark start, planning, writing): the same query on 10 events
            tiny = Path(tmp) / "tiny.parquet"
            pq.write_table(table.slice(0, 10), tiny)
            q = Path(tmp) / "tiny.cet"
            q.write_text(QUERY.format(w=1_000, s=500))
            fixed, _, _ = timed_run(
                [*cetql, "run", str(q), "--input", str(tiny), "--output", str(Path(tmp) / "t"), "--approx"]
            )
            lines += [
                "",
                "Window length against time (`--approx`), attribute index (O(n log n) per group) against GRETA's",
                "predecessor scan (O(n²) per group, numpy-vectorised), same data, same run; n = events per (window, id).",
                f"`net` subtracts the fixed cost of the same command on 10 events ({fixed:.1f} s: Spark start, planning, "
                "writing). With the events fixed, the index's work is N·log n (nearly flat), the scan's N·n (linear in n).",
                "",
                "| window | n | index s | scan s | index net s | scan net s | scan / index (net) |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            for w in (1_000, 10_000, 100_000):
                t_index, _, _ = run(w, w // 2, "--approx")
                t_scan, _, _ = run(w, w // 2, "--approx", "--kernel", "scan")
                ni, ns = max(t_index - fixed, 0.1), max(t_scan - fixed, 0.1)
                print(f"window {w}: index {t_index:.1f}s scan {t_scan:.1f}s (fixed {fixed:.1f}s)", flush=True)
                lines.append(
                    f"| {w:,} | {w // 10:,} | {t_index:.1f} | {t_scan:.1f} | {ni:.1f} | {ns:.1f} | {ns / ni:.2f} |"
                )
    replace_section(a.results, "## Aggregation (A1)", "\n".join(lines))


if __name__ == "__main__":
    main()
