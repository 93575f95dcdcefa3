"""Detection benchmarks D1 (kiting) and D2 (stock), end to end.

Each run is `cetql run … --output DIR --format parquet` in a fresh process, so
the time includes starting Spark; peak memory is the largest sum of
proportional set sizes (PSS: resident memory with shared pages split among
the processes sharing them) over that process and all its children (the JVM,
Python workers), sampled every 0.25 s.  Results go to bench/RESULTS.md.

    python bench/run.py                 # D1 (1,000,000 events), D2 (100,000), both strategies
    python bench/run.py --scale 0.1     # the same at a tenth of the size
    python bench/run.py --baseline DIR  # also an older cetql, same data, same run

A baseline is an older commit installed into DIR without dependencies
(`pip install --no-deps --target DIR <checkout>`); bench/baseline_site.py,
copied into DIR as sitecustomize.py, makes it the cetql that the command and
Spark's Python workers import.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import kiting, stock  # noqa: E402
from results import replace_section  # noqa: E402

BASELINE = (
    "Baseline: an older cetql installed with `pip install --no-deps --target DIR <checkout>` and "
    "`bench/baseline_site.py` as its `sitecustomize.py` (see `bench/run.py`); same data, same run, same counts."
)

QUERIES = {
    "D1": ("kiting", "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50", 1_000_000),
    "D2": ("stock", "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 100 SLIDE 50", 100_000),
}


def _memory(pid: int) -> int:
    """Proportional set size of one process (shared pages split among their
    users, so a sum over processes counts each page once); RSS if unknown."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_pids(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _tree_rss(pid: int) -> int:
    """Memory (PSS) of `pid` and all its descendants."""
    return sum(_memory(p) for p in tree_pids(pid))


def sampled_run(args: list[str], sample, env: dict | None = None, cwd: str | None = None) -> tuple[float, dict, str]:
    """(seconds, the peak of each figure `sample(pid)` returns, sampled every
    0.25 s, output) of a command; `cwd` keeps `python -m cetql` from
    importing a cetql folder of the current directory."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=cwd or tempfile.gettempdir())  # fmt: skip
    peak: dict = {}
    done = threading.Event()

    def sampler():
        while not done.is_set():
            for k, v in sample(proc.pid).items():
                peak[k] = max(peak.get(k, 0), v)
            done.wait(0.25)

    t = threading.Thread(target=sampler, daemon=True)
    t.start()
    out, _ = proc.communicate()
    elapsed = time.perf_counter() - start  # the process's end, not the sampler's next turn (up to 0.25 s later)
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{out}")
    return elapsed, peak, out


def _cpu_ticks(pid: int) -> int:
    """CPU time of a process and of its children it has waited for, in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    except (OSError, IndexError, ValueError):
        return 0


def cpu_run(args: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process tree, output) of a command:
    each process's last sampled CPU time (every 0.25 s), summed; a process
    that lives less than a sample may be missed, unless its parent waited
    for it.  On a busy machine CPU time moves less than wall time."""
    elapsed, peak, out = sampled_run(args, lambda pid: {p: _cpu_ticks(p) for p in tree_pids(pid)}, env, cwd)
    return elapsed, sum(peak.values()) / os.sysconf("SC_CLK_TCK"), out


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return "other"
    if b"java" in cmd.split(b"\0")[0]:
        return "JVM"
    return "Python workers" if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd else "cetql's process"


def cpu_by_kind_run(args: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, dict, str]:
    """(wall seconds, {kind: CPU seconds}, output) of a command, its process
    tree's CPU time (as `cpu_run`) split between the JVM, the Python workers
    and the command's own process."""
    kinds: dict[int, str] = {}

    def sample(pid):
        out = {}
        for p in tree_pids(pid):
            kinds[p] = _kind(p)  # spark-submit is a shell until it execs the JVM
            out[p] = _cpu_ticks(p)
        return out

    elapsed, peak, out = sampled_run(args, sample, env, cwd)
    by: dict[str, float] = {}
    for p, ticks in peak.items():
        by[kinds[p]] = by.get(kinds[p], 0) + ticks / os.sysconf("SC_CLK_TCK")
    return elapsed, by, out


def timed_run(args: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[float, int, str]:
    """(seconds, peak PSS bytes of the process tree, output) of a command."""
    elapsed, peak, out = sampled_run(args, lambda pid: {"tree": _tree_rss(pid)}, env, cwd)
    return elapsed, peak.get("tree", 0), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the issue's sizes")
    ap.add_argument("--only", choices=list(QUERIES), action="append")
    ap.add_argument("--strategies", default="local,distributed")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--baseline", help="a folder holding an older cetql (see above), run beside the current one")
    a = ap.parse_args()
    cetql = [sys.executable, "-m", "cetql"]
    versions = [("current", None)]
    if a.baseline:
        versions.insert(0, ("baseline", a.baseline))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (kind, query, n) in QUERIES.items():
            if a.only and name not in a.only:
                continue
            n = int(n * a.scale)
            data = Path(tmp) / f"{kind}.parquet"
            pq.write_table((kiting if kind == "kiting" else stock)(n), data)
            qfile = Path(tmp) / f"{name}.cet"
            qfile.write_text(query)
            for strategy in a.strategies.split(","):
                for version, path in versions:
                    out = Path(tmp) / f"{name}-{strategy}-{version}"
                    cmd = [*cetql, "run", str(qfile), "--input", str(data), "--id-col", "id", "--output", str(out),
                           "--format", "parquet", "--strategy", strategy]  # fmt: skip
                    env = {**os.environ, "PYTHONPATH": path} if path else None
                    elapsed, peak, _ = timed_run(cmd, env)
                    cets = pq.ParquetDataset(out).read(columns=["length"]).num_rows
                    rows.append((name, strategy, version, n, cets, elapsed, peak))
                    print(
                        f"{name} {strategy:11s} {version:8s} n={n:,} CETs={cets:,} {elapsed:.1f}s "
                        f"peak={peak / 2**30:.2f} GiB",
                        flush=True,
                    )
    write_results(a.results, rows, a.scale)


def write_results(path: str, rows, scale: float) -> None:
    lines = [
        "## Detection (D1, D2)",
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB, Python {platform.python_version()}; "
        f"scale {scale}. Script: `python bench/run.py`.",
        "",
        "End to end (`cetql run … --output DIR --format parquet`, Spark start included, results written to Parquet, "
        "nothing collected to the driver). Peak memory: largest sum of PSS (resident memory, shared pages counted once) "
        "over the process tree, sampled every 0.25 s.",
        "",
        "| query | strategy | version | events | CETs | seconds | events/s | CETs/s | peak memory |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, strategy, version, n, cets, secs, peak in rows:
        lines.append(
            f"| {name} | {strategy} | {version} | {n:,} | {cets:,} | {secs:.1f} | {n / secs:,.0f} | {cets / secs:,.0f} "
            f"| {peak / 2**30:.2f} GiB |"
        )
    by = {(r[0], r[1], r[2]): r[5] for r in rows}
    ratios = [
        f"- {name}: distributed / local = {by[(name, 'distributed', 'current')] / by[(name, 'local', 'current')]:.2f}"
        for name in QUERIES
        if (name, "local", "current") in by and (name, "distributed", "current") in by
    ]
    ratios += [
        f"- {name} {strategy}: current / baseline = {by[(name, strategy, 'current')] / by[(name, strategy, 'baseline')]:.2f}"
        for name in QUERIES
        for strategy in ("local", "distributed")
        if (name, strategy, "baseline") in by and (name, strategy, "current") in by
    ]
    if ratios:
        lines += ["", "Time ratios measured in the same run:", "", *ratios]
    if any(r[2] == "baseline" for r in rows):
        lines += ["", BASELINE]
    replace_section(path, "## Detection (D1, D2)", "\n".join(lines))


if __name__ == "__main__":
    main()
