"""One giant window where the distributed strategy must win: N kiting checks
among N/10 accounts, no partition key (one group), a selective equal
predicate (2% of checks go to an account of the stream, the rest out of
it), and a memory budget below the group's size.

    python bench/giant_window.py                 # 1M and 10M events
    python bench/giant_window.py --sizes 1000000

For each size: `cetql compile --explain` must show the cost rule picking
the distributed strategy (the estimate over the budget); the run by cost on
a standalone master with two one-core workers on 127.0.0.1 (pyspark's
`spark-class`); the local strategy forced with a budget large enough on
`local[2]`; both outputs' rows compared (equal, or the script fails).  The
machine's load average is recorded beside the times.  The section "Giant
window: distributed by cost" of bench/RESULTS.md is replaced by this run's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
from cluster import cluster, stop  # noqa: E402
from results import replace_section  # noqa: E402
from run import timed_run  # noqa: E402

SECTION = "## Giant window: distributed by cost"
QUERY = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN {w}"


def checks(n: int, seed: int = 7, inside: float = 0.02) -> pa.Table:
    rng = np.random.default_rng(seed)
    accounts = max(10, n // 10)
    src = rng.integers(0, accounts, n)
    out = rng.random(n) >= inside
    dst = np.where(out, accounts + rng.integers(0, accounts, n), rng.integers(0, accounts, n))
    return pa.table({"ts": np.arange(n, dtype=np.int64), "id": np.arange(n, dtype=np.int64),
                     "src": pc.cast(pa.array(src), pa.string()), "dst": pc.cast(pa.array(dst), pa.string())})  # fmt: skip


def trends(folder: Path) -> pa.Table:
    t = pq.read_table(folder, columns=["events"])
    return pa.table({"e": pc.binary_join(pc.cast(t["events"], pa.list_(pa.string())), ",")}).sort_by("e")


def one_size(n: int, tmp: Path, master: str, budget: str) -> dict:
    data, qfile = tmp / f"checks-{n}.parquet", tmp / f"giant-{n}.cet"
    pq.write_table(checks(n), data)
    qfile.write_text(QUERY.format(w=n + 1))
    cetql = [sys.executable, "-m", "cetql"]
    common = [str(qfile), "--input", str(data), "--id-col", "id", "--max-trends", "0"]
    explain = subprocess.run([*cetql, "compile", str(qfile), "--input", str(data), "--memory-budget", budget,
                              "--explain"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    chosen = next(line.strip() for line in explain.splitlines() if "strategy:" in line)
    estimate = next(line.strip() for line in explain.splitlines() if "estimate:" in line)
    assert "distributed — by cost" in chosen, chosen
    row = {"n": n, "strategy": chosen, "estimate": estimate}
    for name, extra in (("distributed", ["--memory-budget", budget, "--master", master]),
                        ("local", ["--strategy", "local", "--memory-budget", "16g", "--master", "local[2]"])):  # fmt: skip
        out = tmp / f"out-{name}-{n}"
        load = os.getloadavg()[0]
        secs, peak, _ = timed_run([*cetql, "run", *common, *extra, "--output", str(out), "--format", "parquet"])
        row[name] = (secs, peak, load, (load + os.getloadavg()[0]) / 2)
        row[f"{name}_rows"] = trends(out)
        print(f"n={n:,} {name}: {secs:.1f} s, peak {peak / 2**30:.2f} GiB, load {load:.1f}", flush=True)
    same = row["distributed_rows"].equals(row["local_rows"])
    row["rows"] = row.pop("distributed_rows").num_rows
    row.pop("local_rows")
    assert same, f"n={n}: the distributed rows differ from the local strategy's"
    row["same"] = same
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--budget", default="64m", help="below the group's estimated graph (1M events: ~370 MiB)")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "cluster"
        logs.mkdir()
        master, procs = cluster(logs)
        try:
            for n in (int(s) for s in a.sizes.split(",")):
                rows.append(one_size(n, Path(tmp), master, a.budget))
        finally:
            for p in reversed(procs):
                stop(p)
    write(a.results, rows, a.budget)


def write(path: str, rows: list[dict], budget: str) -> None:
    lines = [SECTION, "", f"Run {time.strftime('%Y-%m-%d')}: {os.cpu_count()} cores shared with other work (load "
             "averages below, before each run and its mean over the run). Script: `python bench/giant_window.py`. "
             f"`{QUERY.format(w='N+1')}` (one window, no key) on N checks among N/10 accounts, 2% to an account of "
             f"the stream; distributed: `--memory-budget {budget}` (the cost rule picks it), a standalone master and two "
             "one-core workers on 127.0.0.1; local: `--strategy local --memory-budget 16g` on `local[2]`; "
             "`--max-trends 0`; rows compared equal.", "",
             "| events | trends | distributed s | its peak | local s | its peak | load (dist., local) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for r in rows:
        d, lo = r["distributed"], r["local"]
        lines.append(f"| {r['n']:,} | {r['rows']:,} | {d[0]:.1f} | {d[1] / 2**30:.2f} GiB | {lo[0]:.1f} | "
                     f"{lo[1] / 2**30:.2f} GiB | {d[2]:.1f}→{d[3]:.1f}, {lo[2]:.1f}→{lo[3]:.1f} |")  # fmt: skip
    lines += ["", *(f"- {r['n']:,} events: {r['strategy']}; {r['estimate']}" for r in rows)]
    replace_section(path, SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
