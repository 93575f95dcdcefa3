"""Which JVM and Spark settings suit a local `cetql run`: the same commands
under each variant, whole-process wall time, runs alternating between the
variants, medians; outputs checked equal.

    python bench/start_options.py [--cases F,D1,A1] [--runs 3] [--events 1000000] [--variants a,b,…]

Cases as bench/phases.py's (F: examples/kiting.cet on 100 events; D1:
kiting WITHIN 100 SLIDE 50 on --events events; A1: COUNT(*) of rising runs
WITHIN 1000 SLIDE 500, exact, on --events events).  A variant sets
CETQL_JVM_OPTIONS (the driver JVM's options in place of cetql's), turns the
class archive off (CETQL_CLASS_ARCHIVE=off) or adds Spark settings
(PYSPARK_SUBMIT_ARGS, after cetql's own, so they win).  The class archive
is made once, before the timed runs, in a cache folder of this run.
The section "## Start-up settings" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from aggregate import stream  # noqa: E402
from generate import kiting  # noqa: E402
from phases import A1, D1, env_for, wait_for_archive  # noqa: E402
from results import replace_section  # noqa: E402
from run import cpu_run, timed_run  # noqa: E402

SECTION = "## Start-up settings"


def conf(**settings) -> dict:
    return {"PYSPARK_SUBMIT_ARGS": " ".join(f"--conf {k}={v}" for k, v in settings.items()) + " pyspark-shell"}


C1, SERIAL = "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"
VARIANTS = {  # name: (what it is, environment)
    "jvm": ("JVM defaults (G1, C2), no class archive", {"CETQL_JVM_OPTIONS": "", "CETQL_CLASS_ARCHIVE": "off"}),
    "cds": ("JVM defaults, class archive", {"CETQL_JVM_OPTIONS": ""}),
    "c1": ("archive, C1 only", {"CETQL_JVM_OPTIONS": C1}),
    "serial": ("archive, serial GC", {"CETQL_JVM_OPTIONS": SERIAL}),
    "parallel": ("archive, parallel GC", {"CETQL_JVM_OPTIONS": "-XX:+UseParallelGC"}),
    "c1-serial": ("archive, C1 only, serial GC", {"CETQL_JVM_OPTIONS": f"{C1} {SERIAL}"}),
    "c1-parallel": ("archive, C1 only, parallel GC", {"CETQL_JVM_OPTIONS": f"{C1} -XX:+UseParallelGC"}),
    "c2-1": ("archive, serial GC, C1 and C2 on one thread each", {"CETQL_JVM_OPTIONS": f"{SERIAL} -XX:CICompilerCount=2"}),
    "cetql": ("cetql's settings", {}),
    "cetql-nocds": ("cetql's, no class archive", {"CETQL_CLASS_ARCHIVE": "off"}),
    "aqe-off": ("cetql's, adaptive execution off", conf(**{"spark.sql.adaptive.enabled": "false"})),
    "aqe-on": ("cetql's, adaptive execution on", conf(**{"spark.sql.adaptive.enabled": "true"})),
    "shuffle2": ("cetql's, 2 shuffle partitions", conf(**{"spark.sql.shuffle.partitions": "2"})),
    "shuffle8": ("cetql's, 8 shuffle partitions", conf(**{"spark.sql.shuffle.partitions": "8"})),
    "arrow10k": ("cetql's, Arrow batches of 10,000", conf(**{"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"})),
    "noreuse": ("cetql's, no Python worker reuse", conf(**{"spark.python.worker.reuse": "false"})),
    "nocodegen": ("cetql's, no whole-stage codegen", conf(**{"spark.sql.codegen.wholeStage": "false"})),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="F,D1,A1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--variants", help="comma-separated names of VARIANTS (default: all)")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    names = a.variants.split(",") if a.variants else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    cases = a.cases.split(",")
    load = [os.getloadavg()[0]]
    times: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    rows: dict[str, set] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        commands = {}
        for name in cases:
            table, text, flags = {"F": (kiting(100), None, ["--id-col", "id"]),
                                  "D1": (kiting(a.events), D1, ["--id-col", "id", "--max-trends", "0"]),
                                  "A1": (stream(a.events), A1, ["--exact", "string"])}[name]  # fmt: skip
            data = tmp / f"{name}.parquet"
            pq.write_table(table, data)
            query = ROOT / "examples" / "kiting.cet" if text is None else tmp / f"{name}.cet"
            if text is not None:
                query.write_text(text)
            commands[name] = [sys.executable, "-m", "cetql", "run", str(query), "--input", str(data), *flags,
                              "--format", "parquet"]  # fmt: skip
        first = commands[cases[0]]
        timed_run([*first, "--output", str(tmp / "first")], env_for(None, cache), cwd=str(tmp))
        wait_for_archive(cache)
        for i in range(a.runs):
            order = names if i % 2 == 0 else list(reversed(names))
            for name in cases:
                for v in order:
                    out = tmp / f"{name}-{i}-{names.index(v)}"
                    secs, cpu, _ = cpu_run([*commands[name], "--output", str(out)], env_for(None, cache, VARIANTS[v][1]),
                                           cwd=str(tmp))  # fmt: skip
                    rows.setdefault(name, set()).add(pq.ParquetDataset(out).read().num_rows)
                    times.setdefault((name, v), []).append(secs)
                    cpus.setdefault((name, v), []).append(cpu)
                    load.append(os.getloadavg()[0])
                    print(f"{name} {v}: {secs:.1f} s, CPU {cpu:.1f} s", flush=True)
    bad = {k: v for k, v in rows.items() if len(v) != 1}
    if bad:
        raise SystemExit(f"outputs differ between variants: {bad}")
    lines = [
        SECTION,
        "",
        f"`python bench/start_options.py --cases {a.cases} --runs {a.runs} --events {a.events} --variants "
        f"{','.join(names)}` on {platform.node()}, "
        f"{os.cpu_count()} cores, {dt.date.today()}; load average (1 min) during the run {min(load):.1f}-"
        f"{max(load):.1f}. Whole-process wall seconds of `cetql run … --output` and the CPU seconds of its process "
        f"tree (sampled every 0.25 s), medians of {a.runs} runs alternating between the variants (each run's wall "
        "seconds in brackets); outputs checked equal.",
        "",
        "| variant | " + " | ".join(f"{c} wall s | {c} CPU s" for c in cases) + " |",
        "| --- |" + " ---: | ---: |" * len(cases),
    ]
    for v in names:
        cells = [f"{statistics.median(times[(c, v)]):.1f} ({', '.join(f'{x:.1f}' for x in times[(c, v)])}) | "
                 f"{statistics.median(cpus[(c, v)]):.1f}" for c in cases]  # fmt: skip
        lines.append(f"| {v}: {VARIANTS[v][0]} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    replace_section(a.results, SECTION, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
