"""cetql against the papers' own Java implementations, same data, same run.

    python bench/peers.py --abi-src DIR --greta-src DIR [--repeats 3] [--cases D1,A1]

The peers are public: ABI (ICPP'21) is github.com/CGCL-codes/DynamicTG,
GRETA is github.com/olgapoppe/GRETA; give a checkout of each.  They are
compiled here with javac against the Guava and JSR-305 jars pyspark ships
(bench/peers/jcommander stands in for JCommander, whose command line the
drivers do not use) and run through the drivers in bench/peers/: the
peers' own harnesses stop after the first window, the drivers run every
sliding window through the peers' own classes (see each driver's comment),
on as many threads as cetql's local Spark has cores (windows in turn), and
print what they computed, which is checked equal to cetql's output.

Cases (`--cases`, default D1,A1):

- D1: kiting, `PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100
  SLIDE 50`, 1M events (50 accounts, one check a time unit): every CET
  written to Parquet by cetql; ABI counts them (the peer's Kite query).
- A1: `RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price <
  NEXT(S).price GROUP-BY id WITHIN 1000 SLIDE 500`, exact (`--exact
  string`), 1M events (10 ids, one a time unit, random-walk prices); GRETA's
  count propagation with its own "up" predicate (the peer's
  Graph.getCompleteGraph never evaluates one, see the driver); cetql's and
  GRETA's counts are both checked against bench/aggregate.py's independent
  ones, summed over every (window, id).
- D2: stock, `PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price
  WITHIN 100 SLIDE 50`, 100k events (ABI: its "simple stock" query on each
  symbol's events).
- A10: A1's query and data at WITHIN 10,000 SLIDE 5,000 on 100k events.

Times are whole-process wall seconds, medians of `--repeats` runs, all
taking turns, each timed run after an untimed run of the same command (as
hyperfine's `--warmup`: the file cache then holds what that program loads,
whichever ran before it; a run right after the peers' JVMs took 0.3 s
longer, 2.0 against 1.7 s, the shared libraries read again): cetql cold (`cetql run … --output DIR --format parquet
--no-serve`, which the plan runs in process: Python, planning, reading,
the kernels, writing), cetql warm (the same command while a `cetql serve`
runs on this machine: the command hands it to the serve's warm process;
the server's start is not in it, the client's whole process is; the
server ran the query once before), the same two on Spark (`--engine
spark`: Spark's start and jobs; warm on the serve's Spark Connect
server), the peer (its JVM's start, reading its text input with its own
parser, every window).  Then the D1 command on its first 100 events.  The peer runs under each of a few JVM settings (PEER_JVM) and the
fastest median is the one compared.  The section "## Against the papers'
Java implementations" of bench/RESULTS.md is replaced.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from aggregate import exact_counts, stream  # noqa: E402
from generate import kiting, stock  # noqa: E402
from phases import wait_for_archive  # noqa: E402
from results import replace_section  # noqa: E402
from run import _cpu_ticks, cpu_run, tree_pids  # noqa: E402
from warm import free_port  # noqa: E402

SECTION = "## Against the papers' Java implementations"
D1 = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50"
D2 = "PATTERN Stock+ s[] WHERE [sym] AND s[i].price > s[i-1].price WITHIN 100 SLIDE 50"
AGG = "RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id WITHIN {w} SLIDE {s}"

# JVM settings the peers are timed under; the fastest is compared
PEER_JVM = {
    "defaults (G1, C2)": [],
    "parallel GC": ["-XX:+UseParallelGC"],
    "serial GC": ["-XX:+UseSerialGC"],
    "serial GC, C1": ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"],
}


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


def timed(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float, str, str]:
    """(wall seconds, CPU seconds of the process and what it waited for, stdout, stderr)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:6]} failed: {done.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
    return took, cpu, done.stdout, done.stderr


def tree_cpu(pid: int) -> float:
    """CPU seconds so far of a process tree (a running server)."""
    return sum(_cpu_ticks(p) for p in tree_pids(pid)) / os.sysconf("SC_CLK_TCK")


def cetql_total(out: Path, aggregate: bool) -> int:
    table = pq.ParquetDataset(out).read()
    if aggregate:
        return sum(int(v) for v in table.column("COUNT(*)").to_pylist())
    return table.num_rows


def peer_total(name: str, said: str) -> int:
    if name == "ABI":  # one "cet number N" a window, among the peer's own progress lines
        return sum(int(n) for n in re.findall(r"cet number (\d+)", said))
    return int(re.search(r"total (\d+)", said).group(1))


def peer_reading(said: str) -> float:
    return float(re.search(r"reading ([0-9.]+)", said).group(1))


def cases(names: list[str], tmp: Path, abi_cp: str, greta_cp: str, threads: str, scale: float) -> list[dict]:
    """Each case: its data (Parquet for cetql, the peer's own text format),
    query, peer command and the total both must give."""
    out = []
    n = lambda k: max(1000, int(k * scale))  # noqa: E731
    for name in names:
        if name == "D1":
            t = kiting(n(1_000_000))
            lines = (f"{ts} {s} {d}" for ts, s, d in zip(*(t.column(c).to_pylist() for c in ("ts", "src", "dst"))))
            peer = ["-cp", abi_cp, "tg.dtg.main.examples.AbiWindows", "kite", "{text}", "100", "50", threads]
            case = dict(query=D1, table=t, lines=lines, peer=peer, peer_name="ABI", exact=None, expected=None)
        elif name == "D2":
            t = stock(n(100_000))
            prices = t.column("price")
            price_range = f"[{int(pc.min(prices).as_py()) - 2},{int(pc.max(prices).as_py()) + 2},1)"
            lines = (f"{ts} {s} {p}" for ts, s, p in zip(*(t.column(c).to_pylist() for c in ("ts", "sym", "price"))))
            peer = ["-cp", abi_cp, "tg.dtg.main.examples.AbiWindows", "stock", "{text}", "100", "50", threads,
                    price_range]  # fmt: skip
            case = dict(query=D2, table=t, lines=lines, peer=peer, peer_name="ABI", exact=None, expected=None)
        elif name in ("A1", "A10"):
            w, events = (1_000, 1_000_000) if name == "A1" else (10_000, 100_000)
            t = stream(n(events))
            cols = zip(*(t.column(c).to_pylist() for c in ("ts", "id", "price")))
            lines = (f"{i + 1}, {ts}, 1, {k}, {p}, 100, B" for i, (ts, k, p) in enumerate(cols))
            peer = ["-cp", greta_cp, "peers.GretaWindows", "{text}", str(w), str(w // 2), threads]
            expected = sum(exact_counts(t, w, w // 2).values())
            case = dict(query=AGG.format(w=w, s=w // 2), table=t, lines=lines, peer=peer, peer_name="GRETA",
                        exact="string", expected=expected)  # fmt: skip
        else:
            raise SystemExit(f"unknown case {name}; known: D1, A1, D2, A10")
        data, text, csv = tmp / f"{name}.parquet", tmp / f"{name}.txt", tmp / f"{name}.csv"
        pq.write_table(case["table"], data)
        pcsv.write_csv(case["table"], csv)
        text.write_text("\n".join(case.pop("lines")) + "\n")
        qfile = tmp / f"{name}.cet"
        qfile.write_text(case["query"])
        case.update(name=name, data=data, csv=csv, text=text, qfile=qfile, events=case.pop("table").num_rows,
                    peer=[str(text) if x == "{text}" else x for x in case["peer"]])  # fmt: skip
        out.append(case)
    return out


def start_serve(env: dict, tmp: Path) -> tuple[subprocess.Popen, float]:
    port = free_port()
    began = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "cetql", "serve", "--port", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp, start_new_session=True)  # fmt: skip
    first = server.stdout.readline()
    if "serving" not in first:
        raise SystemExit(f"cetql serve did not start: {first}")
    return server, time.perf_counter() - began


def stop_serve(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGINT)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def peer_commands(case: dict, reconcile: bool) -> dict[str, list[str]]:
    """The peer's command under each JVM setting; with `reconcile`, for ABI
    also the first driver's way (the peer's own pool of 2 threads, one window
    at a time) and one thread, both with the JVM's defaults."""
    commands = {jvm: ["java", *options, *case["peer"]] for jvm, options in PEER_JVM.items()}
    if reconcile and case["peer_name"] == "ABI":
        one = [*case["peer"][:7], "1", *case["peer"][8:]]  # THREADS is the 8th argument
        commands[RECONCILE[0]] = ["java", "-Dabi.pool=2", *case["peer"]]
        commands[RECONCILE[1]] = ["java", *one]
    return commands


RECONCILE = ("its own pool of 2, a window at a time, defaults", "one thread, defaults")

# cetql's runs: on the embedded engine (the planner's choice for these local runs; warm: handed to the serve's
# process), from Parquet and from CSV, and on Spark from Parquet (`--engine spark`; warm: on the serve's Connect server)
OURS = ("cold", "warm", "cold csv", "warm csv", "spark cold", "spark warm")


def small_run(case: dict, env: dict, tmp: Path, repeats: int) -> dict[str, float]:
    """The D1 command on its first 100 events, cold and warm (medians)."""
    data, qfile = tmp / "F.parquet", tmp / "F.cet"
    pq.write_table(pq.read_table(case["data"]).slice(0, 100), data)
    qfile.write_text(case["query"])
    run = [sys.executable, "-m", "cetql", "run", str(qfile), "--input", str(data), "--id-col", "id", "--format",
           "parquet", "--max-trends", "0", "--output"]  # fmt: skip
    got: dict[str, list[float]] = {"cold": [], "warm": [], "spark cold": []}  # the Parquet input
    for _ in range(repeats):
        for how in got:
            shutil.rmtree(tmp / "F-out", ignore_errors=True)
            flags = (["--no-serve"] if how.endswith("cold") else []) + (["--engine", "spark"] if "spark" in how else [])
            got[how].append(timed([*run, str(tmp / "F-out"), *flags], env, tmp)[0])
    return {k: statistics.median(v) for k, v in got.items()}


def measure(case: dict, repeats: int, env: dict, tmp: Path, load: list, serve_pid: int, reconcile: bool = False) -> dict:
    aggregate = case["exact"] is not None
    run = [sys.executable, "-m", "cetql", "run", str(case["qfile"]), "--format", "parquet", "--max-trends", "0"]
    run += ["--exact", case["exact"]] if aggregate else ["--id-col", "id"]
    commands = peer_commands(case, reconcile)
    times: dict[str, list[float]] = {k: [] for k in (*OURS, *commands)}
    reading: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in times}
    out = tmp / "out"

    def ours(how: str) -> tuple[float, float]:
        shutil.rmtree(out, ignore_errors=True)
        server = tree_cpu(serve_pid)
        flags = (["--no-serve"] if "cold" in how else []) + (["--engine", "spark"] if "spark" in how else [])
        given = ["--input", str(case["csv"] if "csv" in how else case["data"])]
        secs, cpu, err = cpu_run([*run, *given, "--output", str(out), *flags], env, str(tmp))
        if "warm" in how:  # the client's and what the server spent meanwhile
            cpu += tree_cpu(serve_pid) - server
            said = "using cetql serve at" if "spark" in how else "using cetql serve's warm process"
            if said not in err:
                raise SystemExit(f"the {how} run did not use the running cetql serve: {err[-500:]}")
        got = cetql_total(out, aggregate)
        if case["expected"] is not None and got != case["expected"]:
            raise SystemExit(f"{case['name']}: cetql {got} against the independent count {case['expected']}")
        case["expected"] = got
        return secs, cpu

    ours("warm")  # the server's first runs of this query, not timed
    ours("warm csv")
    ours("spark warm")
    for i in range(repeats):
        steps = [*OURS, "peer"]
        for step in steps[i % len(steps) :] + steps[: i % len(steps)]:
            if step != "peer":
                ours(step)  # untimed: the file cache then holds what this command loads (as hyperfine's --warmup)
                secs, cpu = ours(step)
                times[step].append(secs)
                cpus[step].append(cpu)
                load.append(os.getloadavg()[0])
                continue
            for jvm, command in commands.items():
                timed(command, cwd=tmp)  # untimed, as each of cetql's runs
                secs, cpu, said, _ = timed(command, cwd=tmp)
                cpus[jvm].append(cpu)
                total = peer_total(case["peer_name"], said)
                if total != case["expected"]:
                    raise SystemExit(f"{case['name']}: {case['peer_name']} {total} against cetql {case['expected']}")
                times[jvm].append(secs)
                reading[jvm].append(peer_reading(said))
                load.append(os.getloadavg()[0])
        print(f"{case['name']}: " + ", ".join(f"{k} {times[k][-1]:.1f} s" for k in OURS) + f", {case['peer_name']} "
              + ", ".join(f"{k} {times[k][-1]:.1f} s" for k in commands), flush=True)  # fmt: skip
    med = {k: statistics.median(v) for k, v in times.items()}
    best = min(PEER_JVM, key=lambda k: med[k])  # the first driver's ways are shown, never compared
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    return dict(med=med, runs=times, best=best, reading=statistics.median(reading[best]), cpu=cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--abi-src", required=True, type=Path, help="a checkout of CGCL-codes/DynamicTG")
    ap.add_argument("--greta-src", required=True, type=Path, help="a checkout of olgapoppe/GRETA")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default="D1,A1", help="of D1, A1, D2, A10 (see above)")
    ap.add_argument("--reconcile", action="store_true",
                    help="also time ABI the first driver's way and on one thread (the steps between the two figures)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case's events (a quick try: 0.01)")
    ap.add_argument("--results", default=str(HERE / "RESULTS.md"))
    a = ap.parse_args()
    threads = str(os.cpu_count() or 1)
    load = [os.getloadavg()[0]]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        abi_cp, greta_cp = build(a.abi_src, a.greta_src, tmp / "classes")
        # the runs' own cache and runtime folders: the serve they find is this one
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "CETQL_JVM_OPTIONS", "CETQL_ENGINE")}
        (tmp / "runtime").mkdir()
        env.update(XDG_RUNTIME_DIR=str(tmp / "runtime"), CETQL_CACHE_DIR=str(tmp / "cache"))
        todo = cases(a.cases.split(","), tmp, abi_cp, greta_cp, threads, a.scale)
        first = todo[0]  # a first run writes the class archive that every later cold run maps
        timed([sys.executable, "-m", "cetql", "run", str(first["qfile"]), "--input", str(first["data"]), "--format",
               "parquet", "--no-serve", "--engine", "spark", "--output", str(tmp / "first"), "--max-trends", "0"], env,
              tmp)  # fmt: skip
        wait_for_archive(tmp / "cache")
        server, up = start_serve(env, tmp)
        try:
            for case in todo:
                results.append((case, measure(case, a.repeats, env, tmp, load, server.pid, a.reconcile)))
            small = small_run(next((c for c in todo if c["name"] == "D1"), todo[0]), env, tmp, a.repeats)
        finally:
            stop_serve(server)
    write_section(a, results, up, load, threads, small)


def write_section(a, results, up: float, load: list, threads: str, small: dict[str, float]) -> None:
    lines = [
        SECTION,
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores; load average (1 min) during the run "
        f"{min(load):.1f}-{max(load):.1f}. Script: `python bench/peers.py --repeats {a.repeats} --cases {a.cases}` (its "
        f"docstring says how the peers are built and driven). Whole-process wall seconds, medians of {a.repeats} runs "
        "taking turns, each after an untimed run of the same command (the file cache then holds what it loads); "
        "every run's output checked equal to the peer's (the number of CETs; for COUNT(*), the exact sum "
        "of every (window, id) count, also checked against bench/aggregate.py's independent counts). cetql cold: `cetql "
        "run … --output DIR --format parquet --no-serve`, every CET written, which runs on the embedded engine (no "
        "Spark: the planner's choice for local files), from Parquet and (`csv`) from the same rows as CSV; warm: the "
        f"same command while a `cetql serve` runs (its start, {up:.0f} s, once, not included), handed whole to the "
        "serve's warm process. Spark cold and warm: Parquet with `--engine spark` (Spark's start included; warm: on "
        "the serve's Spark Connect server). "
        f"The peers run every window on {threads} threads, read their own text format with their own parsers (the "
        "reading column) and only count; the fastest of their JVM settings is compared (all medians below).",
        "",
        "| case | query | events | output | peer, JVM | " + " | ".join(f"{k} s" for k in OURS) + " | peer s | "
        "peer reading s | " + " | ".join(f"{k} / peer" for k in OURS) + " |",
        "| --- | --- | ---: | --- | --- |" + " ---: |" * (2 * len(OURS) + 2),
    ]
    for case, m in results:
        out = case["expected"]
        shown = f"{out:,} CETs" if case["exact"] is None else f"{len(str(out))}-digit total"
        med, peer = m["med"], m["med"][m["best"]]
        lines.append(f"| {case['name']} | `{case['query']}` | {case['events']:,} | {shown} | {case['peer_name']}, "
                     f"{m['best']} | " + " | ".join(f"{med[k]:.1f}" for k in OURS) + f" | {peer:.1f} | "
                     f"{m['reading']:.1f} | " + " | ".join(f"{med[k] / peer:.2f}" for k in OURS) + " |")  # fmt: skip
    lines += ["", f"The D1 command on its first 100 events (medians of {a.repeats}): cold {small['cold']:.2f} s, "
              f"warm {small['warm']:.2f} s, Spark cold {small['spark cold']:.2f} s."]  # fmt: skip
    lines += ["", "CPU seconds of the same runs (medians; cetql: its process tree sampled every 0.25 s, warm: the "
              "client's and the server's meanwhile; the peer: its JVM, exactly), which a busy machine moves less "
              "than wall time:", "", "| case | " + " | ".join(f"cetql {k} CPU s" for k in OURS) + " | peer CPU s | "
              + " | ".join(f"{k} / peer" for k in OURS) + " |", "| --- |" + " ---: |" * (2 * len(OURS) + 1)]  # fmt: skip
    for case, m in results:
        cpu, peer = m["cpu"], m["cpu"][m["best"]]
        lines.append(f"| {case['name']} | " + " | ".join(f"{cpu[k]:.1f}" for k in OURS) + f" | {peer:.1f} | "
                     + " | ".join(f"{cpu[k] / peer:.2f}" for k in OURS) + " |")  # fmt: skip
    lines += ["", "Every run, seconds (the peer under each JVM setting):", "",
              "| case | " + " | ".join([*(f"cetql {k}" for k in OURS), *PEER_JVM]) + " |",
              "| --- |" + " --- |" * (len(OURS) + len(PEER_JVM))]  # fmt: skip
    for case, m in results:
        lines.append(f"| {case['name']} | " + " | ".join(", ".join(f"{x:.1f}" for x in m["runs"][k])
                                                           for k in [*OURS, *PEER_JVM]) + " |")  # fmt: skip
    steps = [(case, m) for case, m in results if RECONCILE[0] in m["med"]]
    for case, m in steps:
        best = m["best"]
        lines += ["", f"ABI on {case['name']}, from the first driver's way to the one compared (medians, seconds): "
                  + "; ".join(f"{k} {m['med'][k]:.1f}" for k in RECONCILE)
                  + f"; windows on {threads} threads, defaults {m['med'][next(iter(PEER_JVM))]:.1f}; "
                  f"and with {best} {m['med'][best]:.1f}. CPU seconds of the same: "
                  + "; ".join(f"{m['cpu'][k]:.1f}" for k in (*RECONCILE, next(iter(PEER_JVM)), best)) + "."]  # fmt: skip
    replace_section(a.results, SECTION, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
