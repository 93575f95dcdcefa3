"""`cetql gen`: deterministic event streams for every example query, written by Spark.

    cetql gen SCENARIO --events N -o PATH [--seed S] [--mode error|overwrite]

    import cetql.gen
    cetql.gen.generate("stock", 20_000, "out/stock", seed=1)

Every stream is built from `spark.range(N)` with SQL column expressions
(`selectExpr`): no Python loop per event and nothing collected to the driver, so 10^7 events are
practical.  Every random value is a hash of (seed, event number, field) —
`xxhash64` mapped to a range — never `rand()`, so the data is the same for a
seed whatever the number of partitions.  Random walks (prices, loads, speeds)
are running sums of hashed steps over a window per entity, ordered by event
number.

A single-type scenario writes PATH as one Parquet folder; a multi-type one
writes one Parquet folder per event type under PATH (PATH/Start,
PATH/Measurement, …), to be passed as `--input Start=PATH/Start …`.  Every
scenario has `ts` (a timestamp, or a long for the papers' abstract figure
streams) and `id`, a long unique across all types of the scenario — except
`stock`, where `id` is the company, as ABI's query Q2 reads it (`[id]`), and
the event id is `eid`.  See examples/README.md for what each scenario holds.

PATH goes through the one output resolver (`cetql.output`): never the working
folder, the home folder or a folder above them; an existing PATH is never
replaced unless mode="overwrite"; missing parent folders are made.  The data
is written beside PATH and moved into place only once the Spark job
succeeded (a failure, Ctrl-C or SIGTERM leaves nothing behind).
"""

from __future__ import annotations

import contextlib
import operator
from pathlib import Path

from cetql.backends.spark.kept import keep
from cetql.base.errors import UsageError
from cetql.surfaces.gen.scenarios import SCENARIOS
from cetql.surfaces.gen.values import N
from cetql.surfaces.output import resolve_output, staged
from cetql.surfaces.serve.state import token_for

# The most events gen makes: the scenarios' times (at most ~26 s apart, from
# 2026) stay within the years every reader of a timestamp holds (to 9999).
MAX_EVENTS = 10**9
MAX_SEED = 2**63 - 1  # the seed is hashed as a BIGINT


def check_events(events) -> int:
    """gen's number of events: a whole number from 1 to MAX_EVENTS."""
    try:
        events = operator.index(events)
    except TypeError:
        raise UsageError(f"the number of events must be an integer, not {events!r}") from None
    if not 1 <= events <= MAX_EVENTS:
        raise UsageError(f"the number of events must be from 1 to {MAX_EVENTS:,}, not {events:,}")
    return events


def check_seed(seed) -> int:
    """gen's seed: a whole number a BIGINT holds."""
    try:
        seed = operator.index(seed)
    except TypeError:
        raise UsageError(f"the seed must be an integer, not {seed!r}") from None
    if not -MAX_SEED - 1 <= seed <= MAX_SEED:
        raise UsageError(f"the seed must be from {-MAX_SEED - 1:,} to {MAX_SEED:,}, not {seed:,}")
    return seed


def _target(path, mode: str):
    """Where gen may write (the one output resolver: never the working
    folder, the home folder or an existing path unless mode='overwrite')."""
    if mode not in ("error", "overwrite"):
        raise UsageError(f"unknown mode '{mode}'; expected error or overwrite")
    return resolve_output(path, mode, writer="gen", make_parents=True)


def _make_parents(folder: Path) -> list[Path]:
    """Make `folder` and the folders above it that are missing: those made."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for f in reversed(missing):
        f.mkdir(exist_ok=True)
    return list(reversed(missing))


def _rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))


def frames(scenario: str, events: int, *, seed: int = 1, spark=None, partitions: int | None = None) -> dict:
    """The scenario's DataFrames, {type or None: DataFrame}, lazily (no job runs)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"unknown scenario '{scenario}'; expected one of {', '.join(SCENARIOS)}")
    events, seed = check_events(events), check_seed(seed)
    if spark is None:
        from cetql.backends.spark.session import get_spark  # start-up cost: pyspark loads only when data is made

        spark = get_spark(token_for=token_for)
    base = spark.range(0, events, 1, partitions).withColumnRenamed("id", N)
    return SCENARIOS[scenario].build(base, seed)


def generate(
    scenario: str,
    events: int,
    path,
    *,
    seed: int = 1,
    spark=None,
    mode: str = "error",
    partitions: int | None = None,
) -> dict:
    """Write `events` events of `scenario` as Parquet to `path` (a local path);
    returns {"scenario", "seed", "events", "path", "types": {type: rows},
    "message"}.  `partitions` sets the number of `spark.range` partitions (the
    data does not depend on it)."""
    shown = Path(path)
    target = _target(path, mode)
    dfs = frames(scenario, events, seed=seed, spark=spark, partitions=partitions)
    made = _make_parents(target.path.parent)
    spark = next(iter(dfs.values())).sparkSession
    ts_type = spark.conf.get("spark.sql.parquet.outputTimestampType", None)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # not the legacy INT96
    try:
        counts = _write(dfs, target, spark, scenario)
    except BaseException:
        for folder in reversed(made):  # the folders made for it, while still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    finally:
        if ts_type is None:
            spark.conf.unset("spark.sql.parquet.outputTimestampType")
        else:
            spark.conf.set("spark.sql.parquet.outputTimestampType", ts_type)
    total = sum(counts.values())
    types = ", ".join(f"{k} {v:,}" for k, v in counts.items())
    message = f"wrote {total:,} events to {shown} (types {types})"
    return {
        "scenario": scenario,
        "seed": seed,
        "events": total,
        "path": str(shown),
        "types": counts,
        "message": message,
    }


def _write(dfs: dict, target, spark, scenario: str) -> dict[str, int]:
    """Each type's frame as Parquet (one folder, or a folder per type), staged; rows written per type."""
    counts: dict[str, int] = {}
    with staged(target, spark) as stage:
        tmp = stage.path
        if None in dfs:
            stage.call(lambda: dfs[None].write.parquet(str(tmp)))
            counts[scenario] = _rows(tmp)
            return counts
        tmp.mkdir()
        parent = getattr(dfs, "parent", None)
        if parent is not None:  # computed once, read once per type
            keep(parent)
        try:
            for type_name, df in dfs.items():
                stage.call(lambda df=df, name=type_name: df.write.parquet(str(tmp / name)))
                counts[type_name] = _rows(tmp / type_name)
        finally:
            if parent is not None:
                parent.unpersist()
    return counts
