"""Detection of patterns beyond `E+`: the current graph kernel against an
older cetql (see bench/run.py, --baseline), same data, same run.

The older kernel enumerated every trend of a (window, group) group and kept
the complete ones by definition (exponential in the group, for SEQ patterns),
found range successors by scanning every later event, and refused negation
and nested Kleene in detection.  Each case is `python -m cetql run … --output`
in a fresh process; a run that passes --timeout seconds is stopped and
reported as such.

    python bench/patterns.py --baseline /tmp/cetql-old [--events 20000] [--timeout 300]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

# What this script measures runs on Spark: cetql run would otherwise run small local Parquet-to-Parquet
# jobs in process (--engine auto); a baseline cetql without engines ignores it.
os.environ.setdefault("CETQL_ENGINE", "spark")

sys.path.insert(0, str(Path(__file__).parent))
from generate import kiting, stock  # noqa: E402
from results import replace_section  # noqa: E402

HERE = Path(__file__).parent

CASES = {
    # SEQ with a Kleene part between single events: the older kernel enumerated all trends first
    "P1 SEQ(a, b+, c)": (
        "kiting",
        "PATTERN SEQ(Check a, Check+ b[], Check c) WHERE a.src = 'acct00' AND c.dst = 'acct01' "
        "AND b[i].src = b[i-1].dst WITHIN 40 SLIDE 20",
    ),
    # a range predicate, 10,000 events a group: the older kernel scanned every later event for
    # successors (10^8 pairs a group); 671,020 trends (a threshold of 6 gave ~10^13: no kernel can
    # write those, and the default --max-trends refuses them)
    "P2 E+ range, sparse": (
        "stock:100000",
        "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price + 400 WITHIN 100000",
    ),
    # negation between Kleene parts: refused by the older version
    "P3 negation": (
        "kiting",
        "PATTERN SEQ(Check+ a[], NOT Check n, Check b) WHERE a[i].src = a[i-1].dst AND a.src != 'acct00' "
        "AND n.src = 'acct00' AND b.src = 'acct02' WITHIN 20 SLIDE 20",
    ),
}


def run(cmd: list[str], env: dict | None, timeout: float, cwd: str) -> tuple[str, float, str]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                            start_new_session=True)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.perf_counter() - start, ""
    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    return status, time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a folder holding an older cetql (see bench/run.py)")
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    versions = [("current", None)] + ([("baseline", a.baseline)] if a.baseline else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = {}
        for kind, _ in CASES.values():  # "kiting" or "stock", a.events of them, or "stock:N"
            name, _, size = kind.partition(":")
            data[kind] = Path(tmp) / f"{name}-{size or a.events}.parquet"
            pq.write_table((kiting if name == "kiting" else stock)(int(size or a.events)), data[kind])
        for name, (kind, query) in CASES.items():
            qfile = Path(tmp) / "q.cet"
            qfile.write_text(query)
            counts = {}
            for version, path in versions:
                out = Path(tmp) / f"out-{version}"
                cmd = [sys.executable, "-m", "cetql", "run", str(qfile), "--input", str(data[kind]), "--id-col", "id",
                       "--output", str(out), "--mode", "overwrite", "--max-trends", "0"]  # fmt: skip
                if version == "baseline":  # the older command line had neither --mode nor --max-trends
                    cmd = cmd[: cmd.index("--mode")]
                env = {**os.environ, "PYTHONPATH": path} if path else None
                status, secs, text = run(cmd, env, a.timeout, tmp)
                if status == "ok":
                    counts[version] = pq.ParquetDataset(out).read(columns=["length"]).num_rows
                else:
                    last = [line for line in text.strip().splitlines() if line.strip()]
                    status += f": {last[-1][:120]}" if last else ""
                rows.append((name, query, version, status, secs, counts.get(version)))
                print(f"{name:22s} {version:8s} {status[:60]:60s} {secs:6.1f}s trends={counts.get(version)}", flush=True)
            if len(counts) == 2 and counts["current"] != counts["baseline"]:
                raise SystemExit(f"{name}: the versions disagree: {counts}")
    write(a.results, rows, a.events, a.timeout)


def write(path: str, rows, events: int, timeout: float) -> None:
    lines = [
        "## Patterns (detection beyond E+)",
        "",
        f"`python bench/patterns.py --baseline DIR --events {events}`: each case end to end "
        f"(`python -m cetql run … --output`, Spark start included), {events:,} events (P2: 100,000, 10,000 a "
        "group), the current kernel against "
        f"the older one (commit 61bcb55) in the same run; stopped after {timeout:.0f} s.",
        "",
        "| case | version | result | seconds | trends |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for name, _, version, status, secs, count in rows:
        lines.append(f"| {name} | {version} | {status} | {secs:.1f} | {'' if count is None else f'{count:,}'} |")
    lines += ["", "Queries:", ""] + [f"- {name}: `{q}`" for name, (_, q) in CASES.items()]
    by = {(r[0], r[2]): r for r in rows}
    ratios = [
        f"- {name}: baseline / current = {by[(name, 'baseline')][4] / by[(name, 'current')][4]:.2f}"
        + (" (baseline stopped at the timeout: at least this)" if by[(name, "baseline")][3] == "timeout" else "")
        for name in CASES
        if (name, "baseline") in by and by[(name, "baseline")][3] in ("ok", "timeout")
    ]
    if ratios:
        lines += ["", "Time ratios, same run:", "", *ratios]
    replace_section(path, "## Patterns (detection beyond E+)", "\n".join(lines))

if __name__ == "__main__":
    main()
