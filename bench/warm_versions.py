"""A warm run handed to `cetql serve`, on an older cetql and on this one:
each version's own serve, started fresh, the same command run in turn.

    python bench/warm_versions.py --baseline DIR [--rounds 2] [--runs 8]

F: kiting (bench/generate.py) on 100 events, every CET written to Parquet
with `--engine spark`, so each run is all fixed cost — the serve's child
planning on its Connect server, the Spark job, the round trips between.
DIR holds the older cetql (a checkout, or `pip install --no-deps --target
DIR`): put first on PYTHONPATH for its serve and its client.  Each round
starts one version's serve, runs the command three times untimed and then
`--runs` times, stops it, then the other version; medians of all rounds.
Every run's rows are counted and checked equal across versions.  The
section "## Warm runs on a serve, against a baseline" of bench/RESULTS.md
is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402

QUERY = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50"
HEADING = "## Warm runs on a serve, against a baseline"


def _serve(env: dict, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        serve = subprocess.Popen([sys.executable, "-m", "cetql", "serve"], env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 300
    while "Ctrl-C stops it" not in log.read_text():  # its banner ends once the server takes clients
        if serve.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"cetql serve did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    return serve


def _round(name: str, path: str | None, argv: list[str], out: Path, runs: int) -> tuple[list[float], int]:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    serve = _serve(env, out.parent / f"serve-{name}.log")
    times = []
    try:
        for i in range(3 + runs):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "cetql", *argv], env=env, capture_output=True, text=True)
            took = time.perf_counter() - start
            if done.returncode != 0 or "using cetql serve" not in done.stderr:
                raise SystemExit(f"{name}: {done.stderr[-2000:]}")
            if i >= 3:
                times.append(took)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    return times, pq.read_table(out).num_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="a folder holding an older cetql (see above)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--results", default=str(Path(__file__).resolve().parent / "RESULTS.md"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cetql-warm-versions-") as tmp:
        tmp = Path(tmp)
        data = tmp / "F.parquet"
        pq.write_table(kiting(100), data)
        (tmp / "q.cet").write_text(QUERY)
        out = tmp / "out"
        argv = ["run", str(tmp / "q.cet"), "--input", str(data), "--id-col", "id", "--max-trends", "0", "--format",
                "parquet", "--output", str(out), "--mode", "overwrite", "--engine", "spark"]  # fmt: skip
        got: dict[str, list[float]] = {"baseline": [], "current": []}
        rows = set()
        for _ in range(a.rounds):
            for name, path in (("baseline", a.baseline), ("current", None)):
                times, n = _round(name, path, argv, out, a.runs)
                got[name] += times
                rows.add(n)
        if len(rows) != 1:
            raise SystemExit(f"the versions wrote different row counts: {sorted(rows)}")
    base, cur = statistics.median(got["baseline"]), statistics.median(got["current"])
    shown = lambda ts: ", ".join(f"{t:.2f}" for t in sorted(ts))  # noqa: E731
    text = (f"{HEADING}\n\n`python bench/warm_versions.py --baseline DIR --rounds {a.rounds} --runs {a.runs}` on "
            f"{platform.node()}, {os.cpu_count()} cores, {dt.date.today()}; load average (1 min) at the end "
            f"{os.getloadavg()[0]:.1f}. F (100 kiting events, {rows.pop():,} trends to Parquet, `--engine spark`) "
            "handed to each version's own fresh `cetql serve`; whole-process wall seconds of the client.\n\n"
            "| version | median s | runs (s, sorted) |\n| --- | ---: | --- |\n"
            f"| baseline | {base:.3f} | {shown(got['baseline'])} |\n| current | {cur:.3f} | {shown(got['current'])} |\n\n"
            f"current / baseline: {cur / base:.2f}\n")  # fmt: skip
    print(text)
    replace_section(a.results, HEADING, text)


if __name__ == "__main__":
    main()
