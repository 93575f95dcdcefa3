"""`cetql gen`: deterministic event streams for every example query, written by Spark.

    cetql gen SCENARIO --events N -o PATH [--seed S] [--mode error|overwrite]

    import cetql.gen
    cetql.gen.generate("stock", 20_000, "out/stock", seed=1)

Every stream is built from `spark.range(N)` with column expressions: no Python
loop per event and nothing collected to the driver, so 10^7 events are
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

An existing PATH is never replaced unless mode="overwrite"; then the data is
written beside it and moved into place only once the Spark job succeeded.
"""

from __future__ import annotations

import datetime as dt
import operator
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError

N = "n"  # the event number, from spark.range
MASK53 = (1 << 53) - 1
T0 = int(dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()) * 1_000_000  # micros


# ---------------------------------------------------------------- hashed values


def _hash(seed: int, field: str, *keys):
    """A 64-bit hash of (seed, keys…, field); keys default to the event number."""
    from pyspark.sql import functions as F

    keys = keys or (F.col(N),)
    return F.xxhash64(F.lit(seed).cast("long"), *[k.cast("long") for k in keys], F.lit(field))


def _u(seed: int, field: str, *keys):
    """Uniform in [0, 1)."""
    from pyspark.sql import functions as F

    return _hash(seed, field, *keys).bitwiseAND(F.lit(MASK53)).cast("double") / float(1 << 53)


def _uniform(seed: int, field: str, lo: float, hi: float, *keys):
    """Uniform in [lo, hi)."""
    return _u(seed, field, *keys) * float(hi - lo) + float(lo)


def _int(seed: int, field: str, lo: int, hi: int, *keys):
    """Integer in [lo, hi]."""
    from pyspark.sql import functions as F

    return (F.lit(lo) + F.pmod(_hash(seed, field, *keys), F.lit(hi - lo + 1))).cast("long")


def _pick(u, choices: list[tuple[str, float]]):
    """The first choice whose cumulative weight exceeds `u` (weights sum to 1)."""
    from pyspark.sql import functions as F

    edges, acc = [], 0.0
    for name, weight in choices[:-1]:
        acc += weight
        edges.append((name, acc))
    expr = F.lit(choices[-1][0])
    for name, edge in reversed(edges):
        expr = F.when(u < F.lit(edge), F.lit(name)).otherwise(expr)
    return expr


def _ts(seconds):
    """A timestamp `seconds` (a double column) after 2026-01-01 00:00 UTC, in ms."""
    from pyspark.sql import functions as F

    return F.timestamp_micros(F.lit(T0) + (F.round(seconds * 1000) * 1000).cast("long"))


def _running_sum(value, *entity):
    """Sum of `value` over the entity's events up to this one, in event order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy(*entity).orderBy(N).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return F.sum(value).over(w)


def _name(prefix: str, col, width: int):
    from pyspark.sql import functions as F

    return F.concat(F.lit(prefix), F.lpad(col.cast("string"), width, "0"))


# ---------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable  # (base DataFrame with column n, seed) -> {type or None: DataFrame}
    types: tuple[str, ...]  # () for a single-type stream
    default_events: int
    about: str


def kiting(base, seed: int):
    """Checks between 100,000 accounts, one every ~5 s.  Groups of 40 consecutive
    checks: in a tenth of them a kite — a ring of 3-5 accounts passing 3-8
    uncovered checks around (every 4th check of the group, ~20 s apart);
    the rest, and the other checks, are ordinary checks between random
    accounts, 0.2% of them not covered (bounced).  A kite's checks are all
    spelled 'not covered' (ABI Q1) or all 'notcovered' (CET Q1, kiting.cet):
    the stream merges two clearing feeds."""
    from pyspark.sql import functions as F

    n = F.col(N)
    group, pos = F.floor(n / 40), F.pmod(n, F.lit(40))
    is_kite_group = _u(seed, "kite", group) < 0.1
    ring = _int(seed, "ring", 3, 5, group)
    length = ring + _int(seed, "length", 0, 3, group)
    step = F.floor(pos / 4)
    in_kite = is_kite_group & (F.pmod(pos, F.lit(4)) == 0) & (step < length)
    member = F.pmod(step, ring)
    nxt = F.pmod(step + 1, ring)

    def acct(key):
        return _name("acct", F.pmod(_hash(seed, "acct", group, key), F.lit(100_000)), 5)

    kite_spelling = F.when(_u(seed, "spelling", group) < 0.5, F.lit("not covered")).otherwise(F.lit("notcovered"))
    bg_src = F.pmod(_hash(seed, "src"), F.lit(100_000))
    bg_dst = F.pmod(bg_src + _int(seed, "dst", 1, 99_999), F.lit(100_000))  # never a self-transfer
    bg_type = (
        F.when(_u(seed, "bounce") >= 0.002, F.lit("covered"))
        .when(_u(seed, "spelling") < 0.5, F.lit("not covered"))
        .otherwise(F.lit("notcovered"))
    )
    src = F.when(in_kite, acct(member)).otherwise(_name("acct", bg_src, 5))
    dest = F.when(in_kite, acct(nxt)).otherwise(_name("acct", bg_dst, 5))
    amount = F.when(in_kite, F.lit(9000.0) + F.round(_uniform(seed, "amount", 0, 900, group), 2)).otherwise(
        F.round(_uniform(seed, "amount", 10, 5000), 2)
    )
    df = base.select(
        _ts(n * 5.0 + _uniform(seed, "jitter", 0, 5)).alias("ts"),
        n.alias("id"),
        src.alias("src"),
        dest.alias("dest"),
        F.when(in_kite, kite_spelling).otherwise(bg_type).alias("type"),
        amount.alias("amount"),
    )
    # the papers' other names for the same two fields (aliases)
    df = df.withColumn("dst", F.col("dest")).withColumn("source", F.col("src")).withColumn("destination", F.col("dest"))
    return {None: df.select("ts", "id", "src", "dest", "dst", "source", "destination", "type", "amount")}


SECTORS = ["energy", "finance", "health", "industry", "tech"]


def stock(base, seed: int):
    """Ticks of 200 companies, one tick every ~4.5 s in all (~4 per company and
    hour), each company's price a geometric random walk (±0.5% a tick).
    `id`, `companyID` (longs) and `company`, `sym` (strings) all name the
    company: ABI, CET, GRETA and examples/stock.cet spell it so; `eid` is the
    event id."""
    from pyspark.sql import functions as F

    n = F.col(N)
    company = F.pmod(_hash(seed, "company"), F.lit(200))
    df = base.select(n, company.alias("c"))
    c = F.col("c")
    step = F.when(_u(seed, "up") < 0.5, F.lit(-1)).otherwise(F.lit(1)) * _int(seed, "size", 1, 3)
    df = df.withColumn("walk", _running_sum(step, c))
    start = _uniform(seed, "start", 20, 400, c)
    df = df.select(
        _ts(n * 4.5 + _uniform(seed, "jitter", 0, 4.5)).alias("ts"),
        c.alias("id"),
        c.alias("companyID"),
        _name("C", c, 3).alias("company"),
        _name("C", c, 3).alias("sym"),
        F.element_at(F.array(*[F.lit(s) for s in SECTORS]), (F.pmod(c, F.lit(len(SECTORS))) + 1).cast("int")).alias(
            "sector"
        ),
        F.round(start * F.exp(F.col("walk") * 0.005 / 2), 2).alias("price"),
        n.alias("eid"),
    )
    return {None: df}


def cluster(base, seed: int):
    """GRETA Q2's cluster: per (job, mapper) task ten events — a Start, eight
    Measurements 2-6 s apart (load: a random walk with an upward drift,
    cpu 1-99), an End 1-5 s later.  A job of 4 mappers starts every ~15 s."""
    from pyspark.sql import functions as F

    n = F.col(N)
    task, slot = F.floor(n / 10), F.pmod(n, F.lit(10))
    job, mapper = F.floor(task / 4), F.pmod(task, F.lit(4))
    df = base.select(n, task.alias("task"), slot.alias("slot"), job.alias("j"), mapper.alias("m"))
    t, s = F.col("task"), F.col("slot")
    gap = (
        F.when(s == 0, _uniform(seed, "begin", 0, 5, t))
        .when(s == 9, _uniform(seed, "gap", 1, 5))
        .otherwise(_uniform(seed, "gap", 2, 6))
    )
    load_step = F.when(s == 1, _uniform(seed, "load0", 0.1, 0.5, t)).otherwise(_uniform(seed, "load", -0.1, 0.2))
    df = df.withColumn("offset", _running_sum(gap, t)).withColumn(
        "walk", _running_sum(F.when(s >= 1, load_step).otherwise(F.lit(0.0)), t)
    )
    kind = F.when(s == 0, F.lit("Start")).when(s == 9, F.lit("End")).otherwise(F.lit("Measurement"))
    df = df.select(
        kind.alias("__type"),
        _ts(F.col("j") * 15.0 + _uniform(seed, "job", 0, 10, F.col("j")) + F.col("offset")).alias("ts"),
        n.alias("id"),
        _name("job", F.col("j"), 5).alias("job"),
        _name("m", F.col("m"), 1).alias("mapper"),
        F.round(F.greatest(F.col("walk"), F.lit(0.0)), 3).alias("load"),
        _int(seed, "cpu", 1, 99).alias("cpu"),
    )
    keys = ["ts", "id", "job", "mapper"]
    return {
        "Start": _of(df, "Start", keys),
        "Measurement": _of(df, "Measurement", [*keys, "load", "cpu"]),
        "End": _of(df, "End", keys),
    }


def traffic(base, seed: int):
    """GRETA Q3's road network: trips of ten events — a vehicle reporting its
    Position (speed in km/h, a random walk that tends to slow down) every
    10-30 s on one of 100 segments; one trip starts every ~3 s.  In 5% of the
    trips the first event is instead an Accident on the trip's segment."""
    from pyspark.sql import functions as F

    n = F.col(N)
    trip, slot = F.floor(n / 10), F.pmod(n, F.lit(10))
    df = base.select(n, trip.alias("trip"), slot.alias("slot"))
    t, s = F.col("trip"), F.col("slot")
    accident = (s == 0) & (_u(seed, "accident", t) < 0.05)
    gap = F.when(s == 0, F.lit(0.0)).otherwise(_uniform(seed, "gap", 10, 30))
    step = F.when(s == 0, _uniform(seed, "speed0", 60, 120, t)).otherwise(_uniform(seed, "speed", -15, 8))
    df = df.withColumn("offset", _running_sum(gap, t)).withColumn("walk", _running_sum(step, t))
    df = df.select(
        F.when(accident, F.lit("Accident")).otherwise(F.lit("Position")).alias("__type"),
        _ts(t * 3.0 + _uniform(seed, "start", 0, 3, t) + F.col("offset")).alias("ts"),
        n.alias("id"),
        _name("v", F.pmod(_hash(seed, "vehicle", t), F.lit(10000)), 4).alias("vehicle"),
        F.pmod(_hash(seed, "segment", t), F.lit(100)).alias("segment"),
        F.round(F.least(F.greatest(F.col("walk"), F.lit(0.0)), F.lit(150.0)), 1).alias("speed"),
    )
    return {
        "Accident": _of(df, "Accident", ["ts", "id", "segment"]),
        "Position": _of(df, "Position", ["ts", "id", "vehicle", "segment", "speed"]),
    }


def activity(base, seed: int):
    """CET Q2's patients: 40 persons, one heart-rate reading every ~3 s in
    all (one every two minutes per person).  Per person and 5-minute block the
    activity is 'active' (30%, rate ~ resting + 45) or 'passive'; 2% of the
    passive blocks are an episode of tachycardia, the rate rising from twice
    the resting rate to far above it."""
    from pyspark.sql import functions as F

    n = F.col(N)
    seconds = n * 3.0 + _uniform(seed, "jitter", 0, 3)
    person = F.pmod(_hash(seed, "person"), F.lit(40))
    block = F.floor(seconds / 300)
    into = seconds - block * 300
    active = _u(seed, "active", person, block) < 0.3
    episode = ~active & (_u(seed, "episode", person, block) < 0.02)
    resting = _int(seed, "resting", 55, 75, person)
    noise = _uniform(seed, "noise", -4, 4)
    rate = (
        F.when(active, resting + 45 + noise)
        .when(episode, resting * 2 + 5 + into / 300 * 50 + noise)
        .otherwise(resting + noise)
    )
    df = base.select(
        _ts(seconds).alias("ts"),
        n.alias("id"),
        person.alias("personID"),
        F.when(active, F.lit("active")).otherwise(F.lit("passive")).alias("type"),
        F.round(rate).cast("int").alias("rate"),
    )
    return {None: df}


def ecommerce(base, seed: int):
    """A-Seq's e-commerce clicks: purchase sessions of three events — ideally
    a Kindle, a KindleCase, then a Stylus (each slot is one of the three at
    random in 30% of the cases), 1-30 minutes apart, by one of 2,000 users; a
    session starts every ~40 s."""
    from pyspark.sql import functions as F

    n = F.col(N)
    session, slot = F.floor(n / 3), F.pmod(n, F.lit(3))
    df = base.select(n, session.alias("session"), slot.alias("slot"))
    s, k = F.col("session"), F.col("slot")
    funnel = F.element_at(F.array(F.lit("Kindle"), F.lit("KindleCase"), F.lit("Stylus")), (k + 1).cast("int"))
    other = _pick(_u(seed, "other"), [("Kindle", 1 / 3), ("KindleCase", 1 / 3), ("Stylus", 1 / 3)])
    kind = F.when(_u(seed, "swap") < 0.3, other).otherwise(funnel)
    gap = F.when(k == 0, F.lit(0.0)).otherwise(_uniform(seed, "gap", 60, 1800))
    df = df.withColumn("offset", _running_sum(gap, s))
    price = F.when(kind == "Kindle", 99.0).when(kind == "KindleCase", 29.99).otherwise(19.99)
    df = df.select(
        kind.alias("__type"),
        _ts(s * 40.0 + _uniform(seed, "start", 0, 40, s) + F.col("offset")).alias("ts"),
        n.alias("id"),
        _name("u", F.pmod(_hash(seed, "user", s), F.lit(2000)), 4).alias("userId"),
        price.alias("price"),
    )
    cols = ["ts", "id", "userId", "price"]
    return {t: _of(df, t, cols) for t in ("Kindle", "KindleCase", "Stylus")}


def purchases(base, seed: int):
    """A-Seq §4's shopping habits (views V… and buys B…): sessions of four
    events, one every ~20 s — either the Kindle-and-case funnel (VKindle,
    BKindle, VCase, BCase) or the tablet comparison (Vipad, VKindleFire,
    VKindle, BKindle), with 30% of the events replaced by another type."""
    from pyspark.sql import functions as F

    n = F.col(N)
    session, slot = F.floor(n / 4), F.pmod(n, F.lit(4))
    types = ["VKindle", "BKindle", "VCase", "BCase", "Vipad", "VKindleFire"]
    df = base.select(n, session.alias("session"), slot.alias("slot"))
    s, k = F.col("session"), F.col("slot")
    first = F.array(*[F.lit(x) for x in ("VKindle", "BKindle", "VCase", "BCase")])
    second = F.array(*[F.lit(x) for x in ("Vipad", "VKindleFire", "VKindle", "BKindle")])
    funnel = F.element_at(F.when(_u(seed, "funnel", s) < 0.6, first).otherwise(second), (k + 1).cast("int"))
    other = _pick(_u(seed, "other"), [(x, 1 / 6) for x in types])
    kind = F.when(_u(seed, "swap") < 0.3, other).otherwise(funnel)
    gap = F.when(k == 0, F.lit(0.0)).otherwise(_uniform(seed, "gap", 5, 300))
    df = df.withColumn("offset", _running_sum(gap, s))
    df = df.select(
        kind.alias("__type"),
        _ts(s * 80.0 + _uniform(seed, "start", 0, 80, s) + F.col("offset")).alias("ts"),
        n.alias("id"),
        _name("u", F.pmod(_hash(seed, "user", s), F.lit(100_000)), 5).alias("userId"),
    )
    return {t: _of(df, t, ["ts", "id", "userId"]) for t in types}


def security(base, seed: int):
    """A-Seq's network security: login attempts of three events from one IP —
    TypeUsername (carrying the account's stored `Password`), TypePassword
    (the typed `value`) 1-3 s later, ClickSubmit 0.5-2 s later; an attempt
    starts every ~5 s.  In bursts of 20 attempts (30% of them) an attacker IP
    (one of 5) guesses passwords; users type theirs right 90% of the time."""
    from pyspark.sql import functions as F

    n = F.col(N)
    attempt, slot = F.floor(n / 3), F.pmod(n, F.lit(3))
    df = base.select(n, attempt.alias("attempt"), slot.alias("slot"))
    a, k = F.col("attempt"), F.col("slot")
    burst = F.floor(a / 20)
    attack = (_u(seed, "attack", burst) < 0.3) & (_u(seed, "attacker", a) < 0.8)
    attacker_ip = F.concat(F.lit("203.0.113."), _int(seed, "attacker-ip", 1, 5, burst).cast("string"))
    user_ip = F.concat(
        F.lit("10.0."),
        _int(seed, "ip1", 0, 9, a).cast("string"),
        F.lit("."),
        _int(seed, "ip2", 1, 254, a).cast("string"),
    )
    user = F.pmod(_hash(seed, "user", a), F.lit(1000))
    stored = F.concat(F.lit("pw"), F.lpad(F.pmod(_hash(seed, "password", user), F.lit(100000)).cast("string"), 5, "0"))
    wrong = F.concat(F.lit("guess"), _int(seed, "guess", 0, 9999, a).cast("string"))
    typed = F.when(~attack & (_u(seed, "typo", a) < 0.9), stored).otherwise(wrong)
    gap = F.when(k == 0, F.lit(0.0)).when(k == 1, _uniform(seed, "gap", 1, 3)).otherwise(_uniform(seed, "gap", 0.5, 2))
    df = df.withColumn("offset", _running_sum(gap, a))
    df = df.select(
        F.element_at(
            F.array(F.lit("TypeUsername"), F.lit("TypePassword"), F.lit("ClickSubmit")), (k + 1).cast("int")
        ).alias("__type"),
        _ts(a * 5.0 + _uniform(seed, "start", 0, 5, a) + F.col("offset")).alias("ts"),
        n.alias("id"),
        F.when(attack, attacker_ip).otherwise(user_ip).alias("IP"),
        _name("user", user, 4).alias("username"),
        stored.alias("Password"),
        typed.alias("value"),
    )
    base_cols = ["ts", "id", "IP", "username"]
    return {
        "TypeUsername": _of(df, "TypeUsername", [*base_cols, "Password"]),
        "TypePassword": _of(df, "TypePassword", [*base_cols, "value"]),
        "ClickSubmit": _of(df, "ClickSubmit", base_cols),
    }


def figures(base, seed: int):
    """The GRETA and A-Seq figures' abstract stream: one event per time unit
    (`ts` a long, = the event number), of type A (40%), B (20%), C, D (15%
    each) or E (10%), each with an integer `attr` 1-9."""
    from pyspark.sql import functions as F

    n = F.col(N)
    kind = _pick(_u(seed, "type"), [("A", 0.4), ("B", 0.2), ("C", 0.15), ("D", 0.15), ("E", 0.1)])
    df = base.select(kind.alias("__type"), n.alias("ts"), n.alias("id"), _int(seed, "attr", 1, 9).alias("attr"))
    return {t: _of(df, t, ["ts", "id", "attr"]) for t in ("A", "B", "C", "D", "E")}


def _of(df, type_name: str, cols: list[str]):
    from pyspark.sql import functions as F

    return df.filter(F.col("__type") == type_name).select(*cols)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("kiting", kiting, (), 100_000, "checks between accounts, with check-kiting rings"),
        Scenario("stock", stock, (), 10_000, "stock ticks: company, sector, price"),
        Scenario("cluster", cluster, ("Start", "Measurement", "End"), 100_000, "GRETA Q2: jobs and mappers"),
        Scenario("traffic", traffic, ("Accident", "Position"), 50_000, "GRETA Q3: vehicle positions, accidents"),
        Scenario("activity", activity, (), 20_000, "CET Q2: heart rate and activity per person"),
        Scenario("ecommerce", ecommerce, ("Kindle", "KindleCase", "Stylus"), 30_000, "A-Seq: purchases per user"),
        Scenario(
            "purchases",
            purchases,
            ("VKindle", "BKindle", "VCase", "BCase", "Vipad", "VKindleFire"),
            20_000,
            "A-Seq §4: views and buys",
        ),
        Scenario("security", security, ("TypeUsername", "TypePassword", "ClickSubmit"), 30_000, "A-Seq: logins per IP"),
        Scenario("figures", figures, ("A", "B", "C", "D", "E"), 2_000, "GRETA/A-Seq figures: abstract A-E"),
    )
}


# Which scenario each example query runs on: file (under examples/) ->
# (scenario, event types to bind, parameters).  Types are () for a
# single-type scenario, whose folder is the one untyped input.
EXAMPLES: dict[str, tuple[str, tuple[str, ...], dict]] = {
    "kiting.cet": ("kiting", (), {}),
    "stock.cet": ("stock", (), {}),
    "queries/abi_q1_kiting.cet": ("kiting", (), {}),
    "queries/abi_q2_stock.cet": ("stock", (), {"ratio": 1.0}),
    "queries/cet_q1_kiting.cet": ("kiting", (), {}),
    "queries/cet_q2_heartbeat.cet": ("activity", (), {}),
    "queries/cet_q3_stock.cet": ("stock", (), {}),
    "queries/greta_q1_stock.cet": ("stock", (), {}),
    "queries/greta_q2_cluster.cet": ("cluster", ("Start", "Measurement", "End"), {}),
    "queries/greta_q3_traffic.cet": ("traffic", ("Accident", "Position"), {}),
    "queries/greta_fig5_nested.cet": ("figures", ("A", "B"), {}),
    "queries/greta_fig6a_kleene.cet": ("figures", ("A",), {}),
    "queries/greta_fig6b_seq.cet": ("figures", ("A", "B"), {}),
    "queries/greta_fig6d_negation.cet": ("figures", ("A", "B", "C", "D", "E"), {}),
    "queries/greta_fig7b_negation_after.cet": ("figures", ("A", "E"), {}),
    "queries/greta_fig7c_negation_before.cet": ("figures", ("A", "E"), {}),
    "queries/greta_fig9_sliding.cet": ("figures", ("A", "B"), {}),
    "queries/greta_fig12_aggregates.cet": ("figures", ("A", "B"), {}),
    "queries/greta_s9_min_length.cet": ("figures", ("A",), {}),
    "queries/greta_s9_star_optional.cet": ("figures", ("A", "B", "C"), {}),
    "queries/aseq_fig4_prefix.cet": ("figures", ("A", "B", "C", "D"), {}),
    "queries/aseq_fig7_negation.cet": ("figures", ("A", "B", "C", "D"), {}),
    "queries/aseq_ecommerce.cet": ("ecommerce", ("Kindle", "KindleCase", "Stylus"), {}),
    "queries/aseq_s4_multi_q1.cet": ("purchases", ("VKindle", "BKindle", "VCase", "BCase"), {}),
    "queries/aseq_s4_multi_q5.cet": ("purchases", ("Vipad", "VKindleFire", "VKindle", "BKindle"), {}),
    "queries/aseq_security.cet": ("security", ("TypeUsername", "TypePassword", "ClickSubmit"), {}),
    "queries/aseq_example1_stack.cet": ("security", ("TypeUsername", "TypePassword", "ClickSubmit"), {}),
}


def id_col(scenario: str) -> str:
    """The column of unique event ids (`--id-col`)."""
    return "eid" if scenario == "stock" else "id"


# ---------------------------------------------------------------- writing


def _check_target(path: Path, mode: str) -> None:
    if mode not in ("error", "overwrite"):
        raise UsageError(f"unknown mode '{mode}'; expected error or overwrite")
    if path.exists() and mode != "overwrite":
        raise UsageError(
            f"'{path}' already exists; pass --mode overwrite (mode='overwrite') to replace it, or choose another path"
        )


def _rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("*.parquet"))


def frames(scenario: str, events: int, *, seed: int = 1, spark=None, partitions: int | None = None) -> dict:
    """The scenario's DataFrames, {type or None: DataFrame}, lazily (no job runs)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"unknown scenario '{scenario}'; expected one of {', '.join(SCENARIOS)}")
    try:
        events = operator.index(events)
    except TypeError:
        raise UsageError(f"the number of events must be an integer, not {events!r}") from None
    if events < 1:
        raise UsageError(f"the number of events must be positive, not {events}")
    if spark is None:
        from .session import get_spark

        spark = get_spark()
    base = spark.range(0, events, 1, partitions).withColumnRenamed("id", N)
    return SCENARIOS[scenario].build(base, int(seed))


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
    target = Path(path)
    _check_target(target, mode)
    dfs = frames(scenario, events, seed=seed, spark=spark, partitions=partitions)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:8]}")
    counts: dict[str, int] = {}
    try:
        if None in dfs:
            dfs[None].write.parquet(str(tmp))
            counts[scenario] = _rows(tmp)
        else:
            tmp.mkdir()
            for type_name, df in dfs.items():
                df.write.parquet(str(tmp / type_name))
                counts[type_name] = _rows(tmp / type_name)
        _check_target(target, mode)  # it may have appeared while Spark wrote
        if target.exists():
            old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    total = sum(counts.values())
    types = ", ".join(f"{k} {v:,}" for k, v in counts.items())
    message = f"wrote {total:,} events to {target} (types {types})"
    return {
        "scenario": scenario,
        "seed": seed,
        "events": total,
        "path": str(target),
        "types": counts,
        "message": message,
    }


# ---------------------------------------------------------------- command line


def add_parser(subparsers) -> None:
    """`cetql gen SCENARIO --events N -o PATH [--seed S] [--mode error|overwrite]`."""
    lines = [f"  {s.name:<10} {s.about} (default {s.default_events:,} events)" for s in SCENARIOS.values()]
    g = subparsers.add_parser(
        "gen",
        help="write a deterministic example stream as Parquet",
        description="Write a deterministic event stream for the example queries, as Parquet, with Spark.\n\nscenarios:\n"
        + "\n".join(lines),
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter,
    )
    g.add_argument("scenario", choices=list(SCENARIOS), metavar="SCENARIO", help=", ".join(SCENARIOS))
    g.add_argument("--events", type=int, help="number of events (default: the scenario's, see above)")
    g.add_argument("-o", "--output", required=True, metavar="PATH", help="a Parquet folder (one per type under it)")
    g.add_argument("--seed", type=int, default=1, help="the same seed gives the same data (default 1)")
    g.add_argument(
        "--mode", choices=["error", "overwrite"], default="error", help="if PATH exists: refuse (default) or replace"
    )
    g.add_argument("--master", help="Spark master URL (default: the active session, else local[*])")
    g.set_defaults(func=_cmd_gen)


def _cmd_gen(args) -> int:
    from .session import get_spark

    scenario = SCENARIOS[args.scenario]
    _check_target(Path(args.output), args.mode)  # before starting Spark
    spark = get_spark(args.master)
    events = args.events if args.events is not None else scenario.default_events
    result = generate(args.scenario, events, args.output, seed=args.seed, spark=spark, mode=args.mode)
    print(result["message"])
    return 0
