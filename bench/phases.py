"""Where the time of a cold run goes, phase by phase, and what the start-up
changes cut: the current cetql against an older one (--baseline), same data,
same run.

    python bench/phases.py [--baseline DIR] [--runs 3] [--big-runs 1] [--events 1000000]

Three commands, each in a fresh process that starts its own local Spark:

F   examples/kiting.cet on 100 events (all fixed cost);
D1  `PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50` on
    --events kiting events, every CET written to Parquet;
A1  `RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price <
    NEXT(S).price GROUP-BY id WITHIN 1000 SLIDE 500`, exact, on --events
    events of bench/aggregate.py's stream.

Phases (one process, one run of each version): starting Python and
importing what `cetql run` imports (cetql.surfaces.cli.main) and pyspark; launching the
JVM (spark-submit, its launcher, the JVM up to its py4j gateway); the
session (SparkContext, SparkSession); compiling, reading the inputs'
schemas and planning; building the DataFrame; writing
(the Spark jobs: Python workers start and import the kernels, the JVM loads
and compiles what the jobs run); then the same query again in the same
session.  The Spark jobs each phase ran are counted.

The Python workers' start is measured apart: the daemon imports pyspark,
each worker (forked from it) then imports pyspark.worker and cetql's
kernels; `python -X importtime` names the largest imports.

Whole-process wall time of `cetql run … --output`: --runs runs of each
version on F, --big-runs on D1 and A1, alternating, medians, with the CPU
time of the process tree split between cetql's own process, the JVM and
the Python workers; the current one with its class archive in place (made
by a first run, timed apart, in a cache folder of this run).

--baseline DIR: an older cetql installed as bench/run.py describes.  The
section "## Where a cold run's time goes" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
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
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from aggregate import stream  # noqa: E402
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402
from run import cpu_by_kind_run, timed_run  # noqa: E402

SECTION = "## Where a cold run's time goes"
D1 = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50"
A1 = "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id WITHIN 1000 SLIDE 500"

PHASES = r"""
import json, shutil, sys, time
began = float(sys.argv[5])
times, jobs = {"start Python, import cetql's command and pyspark": 0.0}, {}
import cetql, cetql.surfaces.cli.main
from cetql.base.options import OutputFormat, OutputMode
from cetql.surfaces.output import write
import pyspark.java_gateway as jg
times["start Python, import cetql's command and pyspark"] = time.time() - began
launch = jg.launch_gateway
def timed_launch(*a, **k):
    t = time.perf_counter()
    try:
        return launch(*a, **k)
    finally:
        times["launch the JVM (spark-submit, py4j)"] = time.perf_counter() - t
jg.launch_gateway = timed_launch
from cetql.backends.spark.session import get_spark
t = time.perf_counter()
spark = get_spark()
times["session (SparkContext, SparkSession)"] = time.perf_counter() - t - times["launch the JVM (spark-submit, py4j)"]
tracker = spark.sparkContext.statusTracker()
data, out, query, exact = sys.argv[1:5]
options = {"exact": exact} if exact != "-" else {"id_col": "id"}
def phase(name, fn):
    before = len(tracker.getJobIdsForGroup(None))
    t = time.perf_counter()
    result = fn()
    times[name] = time.perf_counter() - t
    jobs[name] = len(tracker.getJobIdsForGroup(None)) - before
    return result
for round in ("first", "second"):
    shutil.rmtree(out, ignore_errors=True)
    ex = phase(f"{round}: compile, read schemas, plan",
               lambda: cetql.compile(open(query).read()).execution(data, spark=spark, max_trends=0, **options))
    df = phase(f"{round}: build the DataFrame", lambda: ex.dataframe)
    rows = phase(f"{round}: write (Spark jobs)", lambda: write(df, out, OutputFormat.PARQUET, OutputMode.ERROR, [data]))
print(json.dumps({"times": times, "jobs": jobs, "rows": rows}))
"""

WORKER = r"""
import sys, time
t = time.perf_counter()
import pyspark.daemon
daemon = time.perf_counter() - t
t = time.perf_counter()
import pyspark.worker, cetql.planner.kernels.process
print(daemon, time.perf_counter() - t)
"""


def env_for(version: str | None, cache: Path, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "PYTHONPATH")}
    env["CETQL_CACHE_DIR"] = str(cache)
    env["XDG_RUNTIME_DIR"] = str(cache)  # no `cetql serve` of the user's is found: every run starts its own Spark
    if version:
        env["PYTHONPATH"] = version
    return {**env, **(extra or {})}


def phases(version: str | None, cache: Path, data: Path, query: Path, exact: str, tmp: Path) -> dict:
    cmd = [sys.executable, "-c", PHASES, str(data), str(tmp / "out"), str(query), exact, repr(time.time())]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env_for(version, cache), cwd=tmp)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_archive(cache: Path, timeout: float = 300) -> float:
    """Seconds until a run's archive is finished: written by the run before
    it ends (a part file, settled into `*.jsa` by the next run)."""
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        for f in [*(cache / "classes").glob("*.part"), *(cache / "classes").glob("*.jsa")]:
            with open(f, "rb") as fh:
                if fh.read(4) == (0xF00BABA8).to_bytes(4, "little"):
                    return time.perf_counter() - began
        time.sleep(0.5)
    raise SystemExit(f"no class archive in {cache} after {timeout:.0f} s")


def worker_imports(version: str | None, cache: Path) -> tuple[float, float, list[str]]:
    """(daemon's pyspark import, a worker's pyspark.worker + kernels import, the largest imports)."""
    env = env_for(version, cache)
    done = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir(), check=True)  # fmt: skip
    daemon, worker = map(float, done.stdout.split())
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import pyspark.daemon, pyspark.worker, "
                           "cetql.kernels.process"], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir(), check=True)  # fmt: skip
    own = []
    for line in done.stderr.splitlines()[1:]:
        parts = line.split("|")
        if len(parts) == 3:
            own.append((int(parts[0].split(":")[1]), parts[2].strip()))
    top = [f"{name} {us / 1e3:.0f} ms" for us, name in sorted(own, reverse=True)[:8]]
    return daemon, worker, top


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a folder holding an older cetql (see bench/run.py)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big-runs", type=int, default=1, help="runs of each version of D1 and A1, whole process")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    versions = {"current": None}
    if a.baseline:
        versions = {"baseline": a.baseline, "current": None}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        cases = {}
        for name, table, text, exact in (("F", kiting(100), None, "-"), ("D1", kiting(a.events), D1, "-"),
                                         ("A1", stream(a.events), A1, "string")):  # fmt: skip
            data = tmp / f"{name}.parquet"
            pq.write_table(table, data)
            query = ROOT / "examples" / "kiting.cet" if text is None else tmp / f"{name}.cet"
            if text is not None:
                query.write_text(text)
            cases[name] = (data, query, exact, table.num_rows)
        def command(name: str, out: Path) -> list[str]:
            data, query, exact, _ = cases[name]
            flags = ["--exact", exact] if exact != "-" else ["--id-col", "id", "--max-trends", "0"]
            return [sys.executable, "-m", "cetql", "run", str(query), "--input", str(data), *flags, "--format",
                    "parquet", "--output", str(out)]  # fmt: skip

        first, _, _ = timed_run(command("F", tmp / "first"), env_for(None, cache), cwd=str(tmp))
        archived = wait_for_archive(cache)
        print(f"first run (writes the class archive) {first:.1f} s; archive finished {archived:.1f} s after", flush=True)
        whole: dict[tuple[str, str], list[tuple[float, dict]]] = {}
        for name in cases:
            for i in range(a.runs if name == "F" else a.big_runs):
                for version, path in (versions.items() if i % 2 == 0 else reversed(versions.items())):
                    secs, cpu, _ = cpu_by_kind_run(command(name, tmp / f"{name}-{version}-{i}"),
                                                   env_for(path, cache), cwd=str(tmp))  # fmt: skip
                    whole.setdefault((name, version), []).append((secs, cpu))
                    load.append(os.getloadavg()[0])
                    print(f"{name} cold {version} {secs:.1f} s, CPU {json.dumps(cpu)}", flush=True)
        measured = {}
        for name, (data, query, exact, _n) in cases.items():
            for version, path in versions.items():
                measured[(name, version)] = phases(path, cache, data, query, exact, tmp)
                load.append(os.getloadavg()[0])
                print(name, version, json.dumps(measured[(name, version)]["times"]), flush=True)
        imports = {v: worker_imports(p, cache) for v, p in versions.items()}
    write_section(a, versions, cases, measured, whole, imports, first, load)


def write_section(a, versions, cases, measured, whole, imports, first, load) -> None:
    names = list(versions)
    kinds = ("cetql's process", "JVM", "Python workers")
    lines = [
        SECTION,
        "",
        f"`python bench/phases.py{' --baseline DIR' if a.baseline else ''} --runs {a.runs} --big-runs {a.big_runs} "
        f"--events {a.events}` on {platform.node()}, {os.cpu_count()} cores, {dt.date.today()}; load average (1 min) "
        f"during the run {min(load):.1f}-{max(load):.1f}. "
        + ("baseline: the cetql before these start-up changes (see bench/run.py for how it is installed); "
           if a.baseline else "")  # fmt: skip
        + "current: with its class archive in place.",
        "",
        f"Whole-process wall time of `cetql run … --output` ({a.runs} runs of each version of F, {a.big_runs} of D1 "
        "and A1, alternating), and the CPU seconds of its process tree (sampled every 0.25 s), medians:",
        "",
        "| case | version | runs (s) | median s | CPU s: " + " | ".join(kinds) + " |",
        "| --- | --- | --- | ---: |" + " ---: |" * len(kinds),
    ]
    for name in cases:
        for v in names:
            runs = whole[(name, v)]
            cpu = [statistics.median(c.get(k, 0.0) for _, c in runs) for k in kinds]
            lines.append(f"| {name} | {v} | {', '.join(f'{x:.1f}' for x, _ in runs)} | "
                         f"{statistics.median(x for x, _ in runs):.1f} | " + " | ".join(f"{c:.1f}" for c in cpu) + " |")
    lines += ["", f"The current version's first run, which writes the class archive as its JVM exits: {first:.1f} s.", ""]
    for name, (_, _, _, n) in cases.items():
        rows = measured[(name, names[-1])]["rows"]
        lines += [f"{name}, {n:,} events ({rows:,} rows written), one run of each version in one process:", "",
                  "| phase | " + " | ".join(f"{v} s (jobs)" for v in names) + " |",
                  "| --- |" + " ---: |" * len(names)]  # fmt: skip
        keys = list(measured[(name, names[-1])]["times"])
        for k in keys:
            cells = []
            for v in names:
                m = measured[(name, v)]
                jobs = m["jobs"].get(k)
                cells.append(f"{m['times'].get(k, 0):.2f}" + (f" ({jobs})" if jobs is not None else ""))
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        totals = [sum(t for k, t in measured[(name, v)]["times"].items() if not k.startswith("second")) for v in names]
        lines += ["| first run, in all | " + " | ".join(f"{t:.2f}" for t in totals) + " |", ""]
    lines += ["Python workers: the daemon imports pyspark, each worker forked from it imports pyspark.worker and "
              "the kernels:", "", "| version | daemon s | worker s | largest imports (own time) |",
              "| --- | ---: | ---: | --- |"]  # fmt: skip
    for v in names:
        daemon, worker, top = imports[v]
        lines.append(f"| {v} | {daemon:.2f} | {worker:.2f} | {', '.join(top)} |")
    replace_section(a.results, SECTION, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
