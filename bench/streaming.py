"""Streams: kiting detection (D1) and the A1 aggregation over a folder that
receives Parquet files of 10,000 events, 1,000,000 events in all.

    D1  PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50
    A1  RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price
        GROUP-BY id WITHIN 10000 SLIDE 5000          (--exact string: counts reach ~10^100)

A feeder drops the next file into the folder whenever the stream has read
all but one of those dropped (so the stream is never idle and its backlog
stays one file); the stream runs on the session `cetql run` starts (local,
RocksDB state, change-log checkpoints), watermark delay 0, written to
Parquet through Spark's file sink.  Measured:

- sustained events/s: all events over the time from the first file to the
  stream's last micro-batch holding data (and the rows of every window the
  data closes written);
- latency of a window: from the start of the micro-batch whose watermark
  passed the window's end to the commit of that micro-batch (its rows are in
  the sink then), and from the arrival of the file whose events moved the
  watermark past it; median and 95th percentile over windows;
- state over time: events held in state (events stored minus purged, from
  the stream's observed metrics), the state store's rows and RocksDB's file
  bytes, at each tenth of the stream.

Each run's rows are checked against the batch query on the same events
(`cetql run` without --stream: the same rows for every closed window).

    python bench/streaming.py [--scale 0.1] [--only D1|A1] [--results bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from aggregate import stream as a1_stream  # noqa: E402
from generate import kiting  # noqa: E402
from results import replace_section  # noqa: E402

FILE_EVENTS = 10_000
QUERIES = {
    "D1": ("PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100 SLIDE 50", {"id_col": "id"}, 100),
    "A1": ("RETURN id, COUNT(*) PATTERN Stock S+ WHERE [id] AND S.price < NEXT(S).price GROUP-BY id "
           "WITHIN 10000 SLIDE 5000", {"exact": "string"}, 10_000),
}  # fmt: skip


def data(name: str, n: int) -> pa.Table:
    if name == "D1":
        return kiting(n)
    t = a1_stream(n)
    return t.append_column("eid", pa.array(range(n), type=pa.int64()))


class Feeder(threading.Thread):
    """Drops file i+1 once the stream has read files up to i (its source log)."""

    def __init__(self, table: pa.Table, folder: Path, checkpoint: Path):
        super().__init__(daemon=True)
        self.table, self.folder, self.checkpoint = table, folder, checkpoint
        self.arrived: list[tuple[float, int]] = []  # (time, largest event time) per file
        self.files = (table.num_rows + FILE_EVENTS - 1) // FILE_EVENTS

    def read(self) -> int:
        log = self.checkpoint / "sources" / "0"
        names = "".join(f.read_text() for f in log.iterdir() if _log_file(f.name)) if log.is_dir() else ""
        return sum(f"part-{i:05d}.parquet" in names for i in range(len(self.arrived)))

    def drop(self, i: int) -> None:
        part = self.table.slice(i * FILE_EVENTS, FILE_EVENTS)
        tmp = self.folder.parent / f".part-{i:05d}.parquet"
        pq.write_table(part, tmp)
        os.replace(tmp, self.folder / f"part-{i:05d}.parquet")
        self.arrived.append((time.time(), int(pa.compute.max(part.column("ts")).as_py())))

    def run(self) -> None:
        for i in range(1, self.files):
            while self.read() < i:  # all but the last file dropped have been read
                time.sleep(0.05)
            self.drop(i)


def _log_file(name: str) -> bool:
    """A metadata log's entry (`12`, or `19.compact` holding every earlier one)."""
    return name.split(".")[0].isdigit() and not name.endswith((".tmp", ".crc"))


def run_one(spark, name: str, n: int, tmp: Path) -> dict:
    import cetql
    from cetql.surfaces.cli.stream import metrics

    text, options, window = QUERIES[name]
    table = data(name, n)
    folder, out, ck = tmp / f"{name}-in", tmp / f"{name}-out", tmp / f"{name}-ck"
    folder.mkdir()
    feeder = Feeder(table, folder, ck)
    feeder.drop(0)  # the folder's first file gives the columns
    source = spark.readStream.schema(_ddl(table)).parquet(str(folder))
    if name == "A1":
        options = {**options, "id_col": "eid"}
    result = cetql.compile(text).run(source, spark=spark, watermark=0, **options)
    started = time.time()
    query = (result.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ck))
             .start())  # fmt: skip
    feeder.start()
    done_after = table.column("ts")[table.num_rows - 1].as_py()  # the last watermark: windows ending by then close
    progress: list[dict] = []
    seen = -1
    while True:
        for p in query.recentProgress:
            if p["batchId"] > seen:
                seen = p["batchId"]
                progress.append(p)
        wm = _watermark(progress)
        if not feeder.is_alive() and wm is not None and wm >= done_after and not _busy(query):
            break
        assert query.exception() is None, query.exception()
        time.sleep(0.2)
    query.stop()
    print(f"{name}: streamed in {time.time() - started:.0f} s; checking against batch", file=sys.stderr, flush=True)
    elapsed = max(_end(p) for p in progress if p["numInputRows"]) - started
    closed = spark.read.parquet(str(out))
    return {"name": name, "events": n, "seconds": elapsed, "rows": closed.count(), "batches": len(progress),
            "latency": _latency(progress, out, feeder, window), "state": _state(progress, metrics),
            "check": _check(spark, text, options, table, closed, done_after)}  # fmt: skip


def _ddl(table: pa.Table) -> str:
    kinds = {pa.int64(): "long", pa.string(): "string", pa.float64(): "double"}
    return ", ".join(f"`{f.name}` {kinds[f.type]}" for f in table.schema)


def _busy(query) -> bool:
    s = query.status
    return bool(s.get("isTriggerActive") or s.get("isDataAvailable"))


def _end(p: dict) -> float:
    return _t(p["timestamp"]) + p["durationMs"].get("triggerExecution", 0) / 1000


def _t(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _watermark(progress: list[dict]) -> float | None:
    """The watermark of the last micro-batch, in the time column's units."""
    from cetql.kernels.stream import OFFSET

    for p in reversed(progress):
        wm = (p.get("eventTime") or {}).get("watermark")
        if wm:
            ms = _millis(wm)
            return (ms - OFFSET) / 1000 if ms > 0 else None
    return None


def _millis(stamp: str) -> int:
    """Spark's watermark as printed (years past 9999 carry a '+')."""
    date, clock = stamp.lstrip("+").rstrip("Z").split("T")
    y, mo, d = (int(x) for x in date.split("-"))
    h, mi, s = clock.split(":")
    import calendar
    import datetime as dt

    days = (dt.date(2000, mo, d) - dt.date(2000, 1, 1)).days + sum(366 if calendar.isleap(k) else 365
                                                                      for k in range(1970, y))  # fmt: skip
    if not calendar.isleap(y) and mo > 2:
        days -= 1
    return round(((days * 24 + int(h)) * 60 + int(mi)) * 60_000 + float(s) * 1000)


def _latency(progress, out: Path, feeder: Feeder, window: int) -> dict:
    """Per window end: the micro-batch that wrote it (the sink's log), when
    the watermark first passed it, and the file that moved it past."""
    batch_of: dict[int, int] = {}
    for log in sorted((out / "_spark_metadata").iterdir(), key=lambda f: f.name.endswith(".compact")):
        if _log_file(log.name) and not log.name.startswith("."):  # a compact file's entries keep their first batch
            b = int(log.name.split(".")[0])
            for line in log.read_text().splitlines()[1:]:
                path = json.loads(line)["path"].removeprefix("file:")
                for end in set(pq.read_table(path, columns=["window_end"]).column(0).to_pylist()):
                    batch_of.setdefault(end, b)
    by_id = {p["batchId"]: p for p in progress}
    since_wm, since_file = [], []
    for end, b in batch_of.items():
        p = by_id.get(b)
        if p is None:
            continue
        first = next((q for q in progress if (_batch_wm(q) or -1) >= end), p)
        since_wm.append(_end(p) - _t(first["timestamp"]))
        arrived = next((t for t, latest in feeder.arrived if latest >= end), None)
        if arrived is not None:
            since_file.append(_end(p) - arrived)
    return {"watermark": _quantiles(since_wm), "file": _quantiles(since_file), "windows": len(batch_of)}


def _batch_wm(p: dict) -> float | None:
    from cetql.kernels.stream import OFFSET

    wm = (p.get("eventTime") or {}).get("watermark")
    return (_millis(wm) - OFFSET) / 1000 if wm and _millis(wm) > 0 else None


def _quantiles(xs: list[float]) -> tuple[float, float]:
    if not xs:
        return (float("nan"), float("nan"))
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def _state(progress, metrics) -> list[tuple[int, int, int, int]]:
    """(events read so far, events held, state rows, RocksDB bytes) at each tenth of the stream."""
    out, read, held = [], 0, 0
    total = sum(p["numInputRows"] for p in progress) or 1
    marks = [total * k // 10 for k in range(1, 11)]
    for p in progress:
        read += p["numInputRows"]
        m = metrics(p)
        held += m["stored"] - m["purged"]
        ops = p.get("stateOperators") or [{}]
        rows = sum(o.get("numRowsTotal", 0) for o in ops)
        sst = sum((o.get("customMetrics") or {}).get("rocksdbSstFileSize", 0) for o in ops)
        while marks and read >= marks[0]:
            out.append((read, held, rows, sst))
            marks.pop(0)
    return out


def _check(spark, text, options, table, closed, done_after) -> str:
    """The streamed rows equal batch's rows for every window the data closed."""
    from pyspark.sql import functions as F

    import cetql

    static = spark.createDataFrame(table.to_pandas())
    batch = cetql.compile(text).run(static, spark=spark, **options).filter(F.col("window_end") <= done_after)

    def digest(df):  # per window: its rows' count and the sum of their hashes
        row = F.xxhash64(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])))
        return df.groupBy("window_start").agg(F.count(F.lit(1)).alias("n"), F.sum(row.cast("decimal(38,0)")).alias("h"))

    a, b = digest(closed), digest(batch)
    only_a, only_b = a.exceptAll(b).count(), b.exceptAll(a).count()
    return "equal" if only_a == only_b == 0 else f"DIFFERENT in {only_a + only_b} windows"


def report(results: list[dict], scale: float) -> str:
    import datetime as dt
    import platform

    lines = [
        "## Streams (D1, A1)",
        "",
        f"Run {dt.date.today()} on {platform.node()}: {os.cpu_count()} cores; scale {scale}. Script: "
        "`python bench/streaming.py`. Files of 10,000 events dropped into a folder as the stream reads them; "
        "watermark delay 0; local session as `cetql run` starts it (RocksDB state, change-log checkpoints).",
        "",
        "| query | events | micro-batches | seconds | events/s | windows | latency from watermark, median / p95 | "
        "from file arrival, median / p95 | rows = batch |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        lw, lf = r["latency"]["watermark"], r["latency"]["file"]
        lines.append(f"| {r['name']} | {r['events']:,} | {r['batches']} | {r['seconds']:.1f} | "
                     f"{r['events'] / r['seconds']:,.0f} | {r['latency']['windows']:,} | {lw[0]:.2f} / {lw[1]:.2f} s | "
                     f"{lf[0]:.2f} / {lf[1]:.2f} s | {r['check']} |")  # fmt: skip
    lines += ["", "State over the stream (events read; events held in state; state store rows; RocksDB file bytes):", ""]
    for r in results:
        points = "; ".join(f"{read:,}: {held:,} / {rows:,} / {sst / 2**20:.1f} MiB" for read, held, rows, sst in r["state"])
        lines.append(f"- {r['name']}: {points}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of 1,000,000 events")
    ap.add_argument("--only", choices=list(QUERIES), action="append")
    ap.add_argument("--results", help="write the section '## Streams (D1, A1)' of this file (e.g. bench/RESULTS.md)")
    a = ap.parse_args()
    import cetql
    from cetql.surfaces.cli.stream import configure

    spark = cetql.get_spark()
    spark.sparkContext.setLogLevel("ERROR")
    configure(spark)
    # the sink's log names each micro-batch's files (for latencies): no compaction into one file
    spark.conf.set("spark.sql.streaming.fileSink.log.compactInterval", "1000000")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in QUERIES:
            if a.only and name not in a.only:
                continue
            r = run_one(spark, name, int(1_000_000 * a.scale), Path(tmp))
            print(json.dumps(r), flush=True)
            results.append(r)
    text = report(results, a.scale)
    print(text)
    if a.results:
        replace_section(a.results, "## Streams (D1, A1)", text)


if __name__ == "__main__":
    main()
