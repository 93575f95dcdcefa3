"""Current against a baseline, paired: D1, D2 (local strategy) and A1
(`--approx`) run alternately on an older cetql and on this one, `--reps`
times each, same data, same checks.  One run of each, as in bench/run.py and
bench/aggregate.py, is at the mercy of the machine's neighbours (the same
command has taken 17 s and 23 s minutes apart here); alternating and taking
medians shows whether a difference is the code's.

    python bench/paired.py --baseline DIR [--reps 3] [--scale 1.0]

DIR holds the older cetql (see bench/run.py).  Every pair's outputs are
checked equal (row count, and for A1 the sum of the counts to 9 digits).  The section
"## Current against baseline, paired" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
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
from aggregate import QUERY as A1_QUERY  # noqa: E402
from aggregate import stream  # noqa: E402
from generate import kiting, stock  # noqa: E402
from results import replace_section  # noqa: E402
from run import QUERIES, timed_run  # noqa: E402

SECTION = "## Current against baseline, paired"


def cases(scale: float):
    """(name, table maker, size, query, extra flags)."""
    for name, (kind, query, n) in QUERIES.items():
        yield name, (kiting if kind == "kiting" else stock), int(n * scale), query, ["--strategy", "local", "--id-col", "id"]
    # A1's `id` is the stock's, shared by its ticks: ids derived from the input order
    yield "A1", stream, int(1_000_000 * scale), A1_QUERY.format(w=10_000, s=5_000), ["--approx"]


def summary(out: Path) -> tuple:
    table = pq.ParquetDataset(out).read()
    if "COUNT(*)" in table.column_names:  # doubles near 1e100: equal to 9 digits
        return table.num_rows, f"{pc.sum(table.column('COUNT(*)')).as_py():.9e}"
    return (table.num_rows,)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="a folder holding an older cetql (see bench/run.py)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    cetql = [sys.executable, "-m", "cetql"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, n, query, flags in cases(a.scale):
            data = Path(tmp) / f"{name}.parquet"
            pq.write_table(make(n), data)
            qfile = Path(tmp) / f"{name}.cet"
            qfile.write_text(query)
            times: dict[str, list[float]] = {"baseline": [], "current": []}
            seen = set()
            for rep in range(a.reps):
                # alternate which goes first, so neither always follows the other
                order = ["baseline", "current"] if rep % 2 == 0 else ["current", "baseline"]
                for version in order:
                    out = Path(tmp) / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    env = {**os.environ, "PYTHONPATH": a.baseline} if version == "baseline" else None
                    secs, _, _ = timed_run([*cetql, "run", str(qfile), "--input", str(data),
                                            "--output", str(out), "--format", "parquet", *flags], env)  # fmt: skip
                    seen.add(summary(out))
                    times[version].append(secs)
                    print(f"{name} rep {rep} {version:8s} {secs:.1f}s", flush=True)
            if len(seen) != 1:
                raise SystemExit(f"{name}: the versions disagree: {sorted(seen)}")
            rows.append((name, n, times))
    write_results(a.results, rows, a.reps)


def write_results(path: str, rows, reps: int) -> None:
    lines = [
        SECTION,
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores. Script: `python bench/paired.py "
        f"--baseline DIR --reps {reps}` (the baseline as above). Each query runs {reps} times on each version, "
        "alternating which goes first; outputs checked equal. Seconds are end to end, Spark start included.",
        "",
        "| query | events | baseline s (each run) | current s (each run) | median current / median baseline |",
        "| --- | ---: | --- | --- | ---: |",
    ]
    for name, n, t in rows:
        b, c = t["baseline"], t["current"]
        lines.append(
            f"| {name} | {n:,} | {', '.join(f'{x:.1f}' for x in b)} | {', '.join(f'{x:.1f}' for x in c)} "
            f"| {statistics.median(c) / statistics.median(b):.2f} |"
        )
    replace_section(path, SECTION, "\n".join(lines))

if __name__ == "__main__":
    main()
