"""The benchmark cases, as data: one row a case — its name, what it
measures, the script that measures it and the arguments it runs with.
`python -m bench` lists them; `python -m bench CASE… [--scale F] [--results
FILE] [-- extra arguments]` runs them in turn (bench/__main__.py).

Each script still runs alone (`python bench/run.py …`) and writes its own
section of bench/RESULTS.md (`results.replace_section`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    script: str  # a module of bench/ with a `main()` reading sys.argv
    argv: tuple[str, ...] = ()
    scales: bool = False  # the script takes --scale (a fraction of its sizes)
    needs: str = ""  # what the case needs beyond this checkout (said, never fetched)


CASES = (
    Case("D1", "kiting detection, 1M checks, every CET to Parquet, local and distributed", "run",
         ("--only", "D1"), scales=True),
    Case("D2", "stock detection, 100k ticks, rising prices per symbol", "run", ("--only", "D2"), scales=True),
    Case("A1", "aggregation: COUNT(*) of rising runs, 1M ticks, exact and approximate", "aggregate", scales=True),
    Case("peers", "D1 and A1 against the papers' Java (ABI, GRETA), cold and warm, both engines", "peers",
         scales=True, needs="--abi-src DIR --greta-src DIR: checkouts of CGCL-codes/DynamicTG and olgapoppe/GRETA"),
    Case("phases", "where a cold run's time goes, phase by phase", "phases"),
    Case("warm", "fixed cost cold and warm (a running cetql serve)", "warm"),
    Case("scale", "detection and aggregation at 1M, 4M and 10M events", "scale"),
    Case("kernels", "the kernels alone: compiled against reference", "kernels"),
    Case("memory", "a detection of ~10^8 trends within a memory budget", "memory"),
    Case("patterns", "detection beyond E+ against an older cetql", "patterns", needs="--baseline DIR"),
    Case("sharing", "sliding windows: blocks against copies", "sharing"),
    Case("shared-graph", "detection over blocks of windows on one graph a block", "shared_graph"),
    Case("streams", "D1 and A1 as streams over a folder receiving files", "streaming", scales=True),
    Case("reader", "reading inputs as written: the reader on one CSV", "reader"),
    Case("start-options", "JVM and Spark settings for a local run", "start_options"),
    Case("paired", "current against a baseline, paired runs", "paired", scales=True, needs="--baseline DIR"),
    Case("warm-versions", "a warm run on a serve: current against a baseline, each on its own serve", "warm_versions",
         needs="--baseline DIR"),
    Case("trend-sets", "trends of each set against the reference", "trend_sets"),
    Case("workloads", "1 to 50 queries over one pass (a shared prefix, a shared scan), shared against alone",
         "workloads", scales=True),
)  # fmt: skip

BY_NAME = {c.name: c for c in CASES}
