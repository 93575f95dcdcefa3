"""Fixed cost, cold and warm: the same `cetql run` in a fresh process that
starts its own Spark (cold), and with `--remote` to a running `cetql serve`
(warm: the JVM, Spark and its Python workers are up), same data, same run.

    python bench/warm.py [--runs 3] [--events 1000000]

F   kiting (bench/generate.py) on 100 events: all fixed cost;
D1  kiting on `--events` events, `WITHIN 100 SLIDE 50` (bench/run.py's D1),
    every CET written to Parquet.

Runs alternate cold / warm; medians are reported, with the row counts
checked equal.  The server is started once, before the warm runs, and its
start is reported apart.  The section "## Warm path: cetql serve" of
bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402
from run import QUERIES, timed_run  # noqa: E402

SECTION = "## Warm path: cetql serve"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    cetql = [sys.executable, "-m", "cetql"]
    query = QUERIES["D1"][1]
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        qfile = folder / "d1.cet"
        qfile.write_text(query)
        port = free_port()
        began = time.perf_counter()
        server = subprocess.Popen([*cetql, "serve", "--port", str(port)], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)  # fmt: skip
        try:
            first = server.stdout.readline()  # its first line: serving …, or an error (then it exits)
            if "serving" not in first:
                raise SystemExit(f"cetql serve did not start: {first}")
            up = time.perf_counter() - began
            print(first.strip(), f"(seen by this script after {up:.1f} s)", flush=True)
            for name, n in (("F", 100), ("D1", a.events)):
                data = folder / f"{name}.parquet"
                pq.write_table(kiting(n), data)
                times: dict[str, list[float]] = {"cold": [], "warm": []}
                counts = set()
                for i in range(a.runs):
                    for how in ("cold", "warm"):
                        out = folder / f"{name}-{how}-{i}"
                        cmd = [*cetql, "run", str(qfile), "--input", str(data), "--id-col", "id", "--output",
                               str(out), "--format", "parquet"]  # fmt: skip
                        cmd += ["--remote", f"sc://127.0.0.1:{port}"] if how == "warm" else ["--no-serve"]
                        elapsed, _, _ = timed_run(cmd, env)
                        counts.add(pq.ParquetDataset(out).read(columns=["length"]).num_rows)
                        times[how].append(elapsed)
                        print(f"{name} {how} n={n:,} {elapsed:.1f} s", flush=True)
                assert len(counts) == 1, counts
                cold, warm = statistics.median(times["cold"]), statistics.median(times["warm"])
                rows.append((name, n, counts.pop(), cold, warm))
        finally:
            os.killpg(server.pid, signal.SIGINT)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
    lines = [
        SECTION,
        "",
        f"`python bench/warm.py --runs {a.runs} --events {a.events}` on {platform.node()}, {os.cpu_count()} cores, "
        f"{dt.date.today()}; medians of {a.runs} alternating runs, whole-process wall time of `cetql run … --output` "
        f"(cold: its own local[*] Spark; warm: `--remote` to `cetql serve`, which took {up:.0f} s to start, once).",
        "",
        f"Query: `{query}`.",
        "",
        "| case | events | CETs written | cold | warm | cold / warm |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, n, cets, cold, warm in rows:
        lines.append(f"| {name} | {n:,} | {cets:,} | {cold:.1f} s | {warm:.1f} s | {cold / warm:.2f} |")
    replace_section(a.results, SECTION, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
