"""Benchmark and example streams, generated (never committed as data).

    python bench/generate.py kiting N OUT.parquet [--seed S]
    python bench/generate.py stock  N OUT.parquet [--seed S]

    python bench/generate.py cluster JOBS OUT_DIR [--seed S]

kiting: ts, id, src, dst — one check per time unit between 50 accounts.
stock:  ts, id, sym, price — one tick per time unit for 10 symbols, each a
        random walk (the column `id` is the event id; `sym` the stock).
cluster: GRETA's cluster-monitoring stream — per job and mapper a Start, a run
        of Measurements (ts, job, mapper, load, cpu) every 2-6 s, an End;
        written as start.csv, measurement.csv and end.csv in OUT_DIR.
"""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def kiting(n: int, seed: int = 1, accounts: int = 50) -> pa.Table:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, accounts, n)
    dst = (src + rng.integers(1, accounts, n)) % accounts  # never a self-transfer
    names = np.array([f"acct{k:02d}" for k in range(accounts)])
    return pa.table(
        {
            "ts": np.arange(n, dtype=np.int64),
            "id": np.arange(n, dtype=np.int64),
            "src": names[src],
            "dst": names[dst],
            "type": np.full(n, "notcovered"),
        }
    )


def stock(n: int, seed: int = 1, symbols: int = 10) -> pa.Table:
    rng = np.random.default_rng(seed)
    sym = rng.integers(0, symbols, n)
    steps = rng.choice([-1.0, 1.0], n) * rng.integers(1, 5, n)
    price = np.empty(n)
    level = np.full(symbols, 100.0)
    for k in range(n):  # random walk per symbol
        level[sym[k]] += steps[k]
        price[k] = level[sym[k]]
    return pa.table(
        {
            "ts": np.arange(n, dtype=np.int64),
            "id": np.arange(n, dtype=np.int64),
            "sym": np.array([f"S{k}" for k in range(symbols)])[sym],
            "price": price,
        }
    )


def cluster(jobs: int, seed: int = 1, mappers: int = 4) -> dict[str, pa.Table]:
    import datetime as dt

    rng = np.random.default_rng(seed)
    t0 = dt.datetime(2026, 1, 1)
    rows: dict[str, list[dict]] = {"start": [], "measurement": [], "end": []}
    for j in range(jobs):
        begin = float(rng.uniform(0, 600))
        for m in range(mappers):
            t = begin + float(rng.uniform(0, 5))
            key = {"job": f"job{j:03d}", "mapper": f"m{m}"}
            rows["start"].append({"ts": t0 + dt.timedelta(seconds=round(t, 3)), **key})
            load = float(rng.uniform(0.1, 0.5))
            for _ in range(int(rng.integers(3, 12))):
                t += float(rng.uniform(2, 6))
                load = max(0.0, load + float(rng.normal(0.05, 0.1)))
                rows["measurement"].append(
                    {
                        "ts": t0 + dt.timedelta(seconds=round(t, 3)),
                        **key,
                        "load": round(load, 3),
                        "cpu": int(rng.integers(1, 100)),
                    }  # fmt: skip
                )
            t += float(rng.uniform(1, 5))
            rows["end"].append({"ts": t0 + dt.timedelta(seconds=round(t, 3)), **key})
    return {name: pa.Table.from_pylist(sorted(r, key=lambda x: x["ts"])) for name, r in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["kiting", "stock", "cluster"])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.kind == "cluster":
        from pathlib import Path

        import pyarrow.csv as pc

        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, table in cluster(a.n, a.seed).items():
            pc.write_csv(table, out / f"{name}.csv")
        print(f"wrote a cluster stream of {a.n} jobs to {out}/start.csv, measurement.csv, end.csv")
        return
    table = (kiting if a.kind == "kiting" else stock)(a.n, a.seed)
    if a.out.endswith(".csv"):
        import pyarrow.csv as pc

        pc.write_csv(table, a.out)
    else:
        pq.write_table(table, a.out)
    print(f"wrote {a.n:,} {a.kind} events to {a.out}")


if __name__ == "__main__":
    main()
