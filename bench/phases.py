"""Where the fixed cost of a run goes: the kiting query on 100 events, timed
phase by phase in one fresh process, then the same query again in the same
session (what the REPL and `cetql serve` pay).

    python bench/phases.py [--remote sc://127.0.0.1:15002]

Phases: importing cetql; starting Spark (a JVM and a SparkContext, or a
Connect client); compiling, reading the inputs' schemas and planning;
building the DataFrame; writing the result (the first Spark job: Python
workers start and import the kernels).  The section "## Where a cold run's
time goes" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402

SECTION = "## Where a cold run's time goes"
PHASES = r"""
import json, shutil, sys, time
t0 = time.perf_counter()
import cetql
from cetql.options import OutputFormat, OutputMode
from cetql.output import write
from cetql.session import get_spark
data, out, query, remote = sys.argv[1:5]
times = {"import cetql": time.perf_counter() - t0}
t = time.perf_counter()
spark = get_spark(remote=remote or None)
times["start Spark"] = time.perf_counter() - t
for round in ("first", "second"):
    t = time.perf_counter()
    q = cetql.compile(open(query).read())
    ex = q.execution(data, spark=spark, id_col="id")
    times[f"{round}: compile, read schemas, plan"] = time.perf_counter() - t
    t = time.perf_counter()
    df = ex.dataframe
    times[f"{round}: build the DataFrame"] = time.perf_counter() - t
    t = time.perf_counter()
    shutil.rmtree(out, ignore_errors=True)
    rows = write(df, out, OutputFormat.PARQUET, OutputMode.ERROR, [data])
    times[f"{round}: write (Spark jobs)"] = time.perf_counter() - t
print(json.dumps({"times": times, "rows": rows}))
"""


def main() -> None:
    import json

    import pyarrow.parquet as pq

    ap = argparse.ArgumentParser()
    ap.add_argument("--remote", default="")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "k100.parquet"
        pq.write_table(kiting(100), data)
        env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
        done = subprocess.run([sys.executable, "-c", PHASES, str(data), str(Path(tmp) / "out"),
                               str(ROOT / "examples" / "kiting.cet"), a.remote], capture_output=True, text=True,
                              env=env, cwd=tmp)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        shutil.rmtree(Path(tmp) / "out", ignore_errors=True)
    times = result["times"]
    first = sum(v for k, v in times.items() if not k.startswith("second"))
    lines = [
        SECTION,
        "",
        f"`python bench/phases.py{' --remote ' + a.remote if a.remote else ''}` on {platform.node()}, "
        f"{os.cpu_count()} cores, {dt.date.today()}: examples/kiting.cet on 100 events ({result['rows']} CETs), "
        "one process, one run; then the same query again in the same session.",
        "",
        "| phase | seconds | share of the first run |",
        "| --- | ---: | ---: |",
    ]
    for k, v in times.items():
        share = f"{v / first:.0%}" if not k.startswith("second") else ""
        lines.append(f"| {k} | {v:.2f} | {share} |")
    lines.append(f"| first run, in all | {first:.2f} | |")
    print("\n".join(lines))
    replace_section(a.results, SECTION, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
