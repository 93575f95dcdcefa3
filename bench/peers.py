"""cetql against the papers' own Java implementations, same data, same run.

    python bench/peers.py --abi-src DIR --greta-src DIR [--repeats 3]

The peers are public: ABI (ICPP'21) is github.com/CGCL-codes/DynamicTG,
GRETA is github.com/olgapoppe/GRETA; give a checkout of each.  They are
compiled here with javac against the Guava and JSR-305 jars pyspark ships
(bench/peers/jcommander stands in for JCommander, whose command line the
drivers do not use) and run through the drivers in bench/peers/: the
peers' own harnesses stop after the first window, the drivers run every
sliding window through the peers' own classes (see each driver's comment).

Cases (each checked equal to cetql's output before any time is kept):

- P-D1: kiting, `PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100
  SLIDE 50`, 1M events: every CET written to Parquet by cetql; the ABI
  peer counts them.
- P-D2: stock, `PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price
  WITHIN 100 SLIDE 50`, 100k events (ABI: its "simple stock" query on each
  symbol's events).
- P-A: COUNT(*) of every trend of `Stock S+ WHERE [id]` per (window, id),
  exact, at WITHIN 1,000 (1M events) and 10,000 (100k events), SLIDE half
  of WITHIN.  GRETA's Java evaluates no predicate between events (its code
  never calls Query.compatible), so the case has none; cetql gives every
  digit (`--exact string`, the counts pass 10^38).

Times are whole-process wall seconds (JVM start included for the peers;
Spark start, planning and writing for cetql "cold"), and cetql "warm": the
same query again in one process and Spark session, its second run timed.
Medians of `--repeats`, runs alternating.  The section "## Against the
papers' Java implementations" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from aggregate import stream  # noqa: E402
from generate import kiting, stock  # noqa: E402
from results import replace_section  # noqa: E402

SECTION = "## Against the papers' Java implementations"
WARM = """
import sys, time
import cetql
query, data, out, exact = sys.argv[1:]
q = cetql.compile(open(query).read())
options = {"exact": exact} if exact != "-" else {}
for _ in range(2):
    df = q.run(data, id_col="id", max_trends=0, **options)
    began = time.perf_counter()
    df.write.mode("overwrite").parquet(out)
    took = time.perf_counter() - began
print("warm", took, flush=True)
"""
D1 = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50"
D2 = "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 100 SLIDE 50"
AGG = "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] GROUP-BY id WITHIN {w} SLIDE {s}"


def jars() -> str:
    import pyspark

    folder = Path(pyspark.__file__).parent / "jars"
    found = [next(folder.glob(f"{name}-*.jar"), None) for name in ("guava", "jsr305")]
    if None in found:
        raise SystemExit(f"pyspark's jars ({folder}) lack guava or jsr305")
    return os.pathsep.join(map(str, found))


def build(abi: Path, greta: Path, out: Path) -> tuple[str, str]:
    """(ABI classpath, GRETA classpath), compiled from the given checkouts."""
    lib = jars()
    abi_out, greta_out = out / "abi", out / "greta"
    sources = [*(HERE / "peers" / "jcommander").rglob("*.java"), *(HERE / "peers" / "abi").rglob("*.java")]
    for part in ("DynamicTG-common", "DynamicTG-parallel"):
        sources += (abi / part / "src" / "main" / "java").rglob("*.java")
    subprocess.run(["javac", "-nowarn", "-d", str(abi_out), "-cp", lib, *map(str, sources)], check=True,
                   capture_output=True)  # fmt: skip
    sources = [*(greta / "OETA" / "src").rglob("*.java"), *(HERE / "peers" / "greta").rglob("*.java")]
    subprocess.run(["javac", "-nowarn", "-d", str(greta_out), *map(str, sources)], check=True, capture_output=True)
    return f"{abi_out}{os.pathsep}{lib}", str(greta_out)


def timed(cmd: list[str]) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed: {done.stderr[-2000:]}")
    return took, done.stdout


def cetql_total(out: Path, aggregate: bool) -> int:
    table = pq.ParquetDataset(out).read()
    if aggregate:
        return sum(int(v) for v in table.column("COUNT(*)").to_pylist())
    return table.num_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--abi-src", required=True, type=Path, help="a checkout of CGCL-codes/DynamicTG")
    ap.add_argument("--greta-src", required=True, type=Path, help="a checkout of olgapoppe/GRETA")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case's events (a quick try: 0.01)")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    py = [sys.executable, "-m", "cetql"]
    rows = []
    failures: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        abi_cp, greta_cp = build(a.abi_src, a.greta_src, tmp / "classes")
        n = lambda k: max(1000, int(k * a.scale))  # noqa: E731
        cases = []
        t = kiting(n(1_000_000))
        lines = (f"{ts} {s} {d}" for ts, s, d in zip(*(t.column(c).to_pylist() for c in ("ts", "src", "dst"))))
        cases.append(("P-D1", D1, t, lines, ["java", "-cp", abi_cp, "tg.dtg.main.examples.AbiWindows", "kite"],
                      ["100", "50", "2"], "ABI", None))  # fmt: skip
        t = stock(n(100_000))
        prices = t.column("price")
        price_range = f"[{int(pc.min(prices).as_py()) - 2},{int(pc.max(prices).as_py()) + 2},1)"
        lines = (f"{ts} {s} {p}" for ts, s, p in zip(*(t.column(c).to_pylist() for c in ("ts", "sym", "price"))))
        cases.append(("P-D2", D2, t, lines, ["java", "-cp", abi_cp, "tg.dtg.main.examples.AbiWindows", "stock"],
                      ["100", "50", "2", price_range], "ABI", None))  # fmt: skip
        for w, events in ((1_000, 1_000_000), (10_000, 100_000)):
            t = stream(n(events))
            cols = zip(*(t.column(c).to_pylist() for c in ("ts", "id", "price")))
            lines = (f"{i + 1}, {ts}, 1, {k}, {p}, 100, B" for i, (ts, k, p) in enumerate(cols))
            cases.append((f"P-A W{w}", AGG.format(w=w, s=w // 2), t, lines, ["java", "-cp", greta_cp, "peers.GretaWindows"],
                          [str(w), str(w // 2)], "GRETA", "string"))  # fmt: skip
        for name, query, table, lines, peer, peer_args, peer_name, exact in cases:
            data, text = tmp / f"{name}.parquet", tmp / f"{name}.txt"
            pq.write_table(table, data)
            text.write_text("\n".join(lines) + "\n")
            qfile = tmp / "q.cet"
            qfile.write_text(query)
            out = tmp / "out"
            aggregate = exact is not None
            run = [*py, "run", str(qfile), "--input", str(data), "--id-col", "id", "--output", str(out),
                   "--format", "parquet", "--max-trends", "0", *(["--exact", exact] if exact else [])]  # fmt: skip
            times: dict[str, list[float]] = {"cold": [], "warm": [], "peer": []}
            for _ in range(a.repeats):
                shutil.rmtree(out, ignore_errors=True)
                secs, _ = timed(run)
                times["cold"].append(secs)
                ours = cetql_total(out, aggregate)
                _, said = timed([sys.executable, "-c", WARM, str(qfile), str(data), str(tmp / "warm"), exact or "-"])
                times["warm"].append(float(next(x for x in said.splitlines() if x.startswith("warm ")).split()[1]))
                for _ in range(3):  # ABI's parallel prefilter sometimes fails (a race): that run is redone
                    try:
                        secs, said = timed([*peer, str(text), *peer_args])
                        break
                    except SystemExit as failed:
                        failures[name] = failures.get(name, 0) + 1
                        print(f"{name}: {peer_name} failed, run again: {str(failed)[-300:]}", flush=True)
                else:
                    raise SystemExit(f"{name}: {peer_name} failed 3 times in a row")
                times["peer"].append(secs)
                if peer_name == "ABI":
                    theirs = sum(int(x.split()[2]) for x in said.splitlines() if x.startswith("cet number "))
                else:
                    theirs = int(said.split()[3])
                if ours != theirs:
                    raise SystemExit(f"{name}: cetql {ours} against {peer_name} {theirs}")
                print(f"{name}: cold {times['cold'][-1]:.1f} s, warm {times['warm'][-1]:.1f} s, {peer_name} "
                      f"{secs:.1f} s; {ours if ours < 10**15 else f'{len(str(ours))} digits'} checked", flush=True)
            med = {k: statistics.median(v) for k, v in times.items()}
            shown = f"{ours:,} CETs" if not aggregate else f"total of {len(str(ours))} digits"
            rows.append((name, query, table.num_rows, shown, peer_name, med["cold"], med["warm"], med["peer"]))
    lines = [
        SECTION,
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores. Script: `python bench/peers.py "
        f"--repeats {a.repeats}` (see its docstring for the peers' sources and drivers). Whole-process wall "
        f"seconds, medians of {a.repeats} alternating runs; each run's output checked equal to the peer's (the "
        "number of CETs; for COUNT(*), the exact sum of every (window, id) count). cetql cold: `cetql run … "
        "--output DIR --format parquet`, Spark start included, every CET written; warm: the same query's second "
        "run in one process and Spark session. The peers (threads 2 for ABI) only count, and their JVM start is "
        "included.",
        "",
        "| case | query | events | output | peer | cetql cold s | cetql warm s | peer s | cold / peer | warm / peer |",
        "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, query, events, shown, peer_name, cold, warm, peer in rows:
        lines.append(f"| {name} | `{query}` | {events:,} | {shown} | {peer_name} | {cold:.1f} | {warm:.1f} | "
                     f"{peer:.1f} | {cold / peer:.2f} | {warm / peer:.2f} |")  # fmt: skip
    if failures:
        lines += ["", "Peer runs that failed and were run again (not timed): " + ", ".join(
            f"{name} {count}" for name, count in failures.items()) + "."]  # fmt: skip
    replace_section(a.results, SECTION, "\n".join(lines))


if __name__ == "__main__":
    main()
