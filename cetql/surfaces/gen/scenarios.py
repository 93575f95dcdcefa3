"""The scenarios `cetql gen` writes: each a function of the base range and
a seed giving the events' columns, the types it binds, and which example
query runs on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cetql.surfaces.gen.values import Hashed, _name, _pick, _running_sum, _ts


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
    h = Hashed(seed)
    df = base.selectExpr("n", "floor(n / 40) AS grp", "pmod(n, 40) AS pos").selectExpr(
        "*",
        f"{h.int('ring', 3, 5, 'grp')} AS ring",
        f"{h.int('length', 3, 5, 'grp')} + {h.int('extra', 0, 3, 'grp')} AS length",
        "floor(pos / 4) AS step",
        f"{h.u('kite', 'grp')} < 0.1 AND pmod(pos, 4) = 0 AS kite_slot",
    )
    df = df.selectExpr(
        "*",
        "kite_slot AND step < least(length, ring + 3) AS in_kite",
        f"pmod({h.hash('src')}, 100000) AS bg_src",
    )
    acct = _name("acct", f"pmod({h.hash('acct', 'grp', 'pmod(step, ring)')}, 100000)", 5)
    acct_next = _name("acct", f"pmod({h.hash('acct', 'grp', 'pmod(step + 1, ring)')}, 100000)", 5)
    bg_dst = f"pmod(bg_src + {h.int('dst', 1, 99_999)}, 100000)"  # never a self-transfer
    spelling = "CASE WHEN {} < 0.5 THEN 'not covered' ELSE 'notcovered' END"
    df = df.selectExpr(
        _ts("n * 5.0 + " + h.uniform("jitter", 0, 5)) + " AS ts",
        "n AS id",
        f"CASE WHEN in_kite THEN {acct} ELSE {_name('acct', 'bg_src', 5)} END AS src",
        f"CASE WHEN in_kite THEN {acct_next} ELSE {_name('acct', bg_dst, 5)} END AS dest",
        f"CASE WHEN in_kite THEN {spelling.format(h.u('spelling', 'grp'))}"
        f" WHEN {h.u('bounce')} >= 0.002 THEN 'covered'"
        f" ELSE {spelling.format(h.u('spelling'))} END AS type",
        f"round(CASE WHEN in_kite THEN {h.uniform('amount', 9000, 9900, 'grp')}"
        f" ELSE {h.uniform('amount', 10, 5000)} END, 2) AS amount",
    )
    # the papers' other names for the same two fields: aliases
    return {
        None: df.selectExpr(
            "ts", "id", "src", "dest", "dest AS dst", "src AS source", "dest AS destination", "type", "amount"
        )
    }


SECTORS = ["energy", "finance", "health", "industry", "tech"]


def stock(base, seed: int):
    """Ticks of 200 companies, one tick every ~4.5 s in all (~4 per company and
    hour), each company's price a geometric random walk (±0.25-0.75% a tick).
    `id`, `companyID` (longs) and `company`, `sym` (strings) all name the
    company: ABI, CET, GRETA and examples/stock.cet spell it so; `eid` is the
    event id."""
    h = Hashed(seed)
    df = base.selectExpr("n", f"pmod({h.hash('company')}, 200) AS c").selectExpr(
        "n",
        "c",
        _running_sum(f"CASE WHEN {h.u('up')} < 0.5 THEN -1 ELSE 1 END * {h.int('size', 1, 3)}", "c") + " AS walk",
    )
    sectors = ", ".join(f"'{s}'" for s in SECTORS)
    return {
        None: df.selectExpr(
            _ts("n * 4.5 + " + h.uniform("jitter", 0, 4.5)) + " AS ts",
            "c AS id",
            "c AS companyID",
            f"{_name('C', 'c', 3)} AS company",
            f"{_name('C', 'c', 3)} AS sym",
            f"element_at(array({sectors}), CAST(pmod(c, {len(SECTORS)}) + 1 AS INT)) AS sector",
            f"round({h.uniform('start', 20, 400, 'c')} * exp(walk * 0.0025), 2) AS price",
            "n AS eid",
        )
    }


def cluster(base, seed: int):
    """GRETA Q2's cluster: per (job, mapper) task ten events — a Start, eight
    Measurements 2-6 s apart (load: a random walk with an upward drift,
    cpu 1-99), an End 1-5 s later.  A job of 4 mappers starts every ~15 s."""
    h = Hashed(seed)
    df = base.selectExpr("n", "floor(n / 10) AS task", "pmod(n, 10) AS slot").selectExpr(
        "*", "floor(task / 4) AS job", "pmod(task, 4) AS mapper"
    )
    gap = (
        f"CASE WHEN slot = 0 THEN {h.uniform('begin', 0, 5, 'task')}"
        f" WHEN slot = 9 THEN {h.uniform('gap', 1, 5)} ELSE {h.uniform('gap', 2, 6)} END"
    )
    load = (
        f"CASE WHEN slot = 0 THEN 0.0 WHEN slot = 1 THEN {h.uniform('load0', 0.1, 0.5, 'task')}"
        f" ELSE {h.uniform('load', -0.1, 0.2)} END"
    )
    df = df.selectExpr(
        "*", _running_sum(gap, "task") + " AS offset", _running_sum(load, "task") + " AS walk"
    ).selectExpr(
        "CASE WHEN slot = 0 THEN 'Start' WHEN slot = 9 THEN 'End' ELSE 'Measurement' END AS __type",
        _ts(f"job * 15.0 + {h.uniform('job', 0, 10, 'job')} + offset") + " AS ts",
        "n AS id",
        f"{_name('job', 'job', 5)} AS job",
        f"{_name('m', 'mapper', 1)} AS mapper",
        "round(greatest(walk, 0.0), 3) AS load",
        f"{h.int('cpu', 1, 99)} AS cpu",
    )
    keys = ["ts", "id", "job", "mapper"]
    return _typed(df, {"Start": keys, "Measurement": [*keys, "load", "cpu"], "End": keys})


def traffic(base, seed: int):
    """GRETA Q3's road network: trips of ten events — a vehicle reporting its
    Position (speed in km/h, a random walk that tends to slow down) every
    10-30 s on one of 100 segments; one trip starts every ~3 s.  In 5% of the
    trips the first event is instead an Accident on the trip's segment."""
    h = Hashed(seed)
    df = base.selectExpr("n", "floor(n / 10) AS trip", "pmod(n, 10) AS slot")
    gap = f"CASE WHEN slot = 0 THEN 0.0 ELSE {h.uniform('gap', 10, 30)} END"
    speed = f"CASE WHEN slot = 0 THEN {h.uniform('speed0', 60, 120, 'trip')} ELSE {h.uniform('speed', -15, 8)} END"
    df = df.selectExpr(
        "*", _running_sum(gap, "trip") + " AS offset", _running_sum(speed, "trip") + " AS walk"
    ).selectExpr(
        f"CASE WHEN slot = 0 AND {h.u('accident', 'trip')} < 0.05 THEN 'Accident' ELSE 'Position' END AS __type",
        _ts(f"trip * 3.0 + {h.uniform('start', 0, 3, 'trip')} + offset") + " AS ts",
        "n AS id",
        _name("v", f"pmod({h.hash('vehicle', 'trip')}, 10000)", 4) + " AS vehicle",
        f"pmod({h.hash('segment', 'trip')}, 100) AS segment",
        "round(least(greatest(walk, 0.0), 150.0), 1) AS speed",
    )
    return _typed(df, {"Accident": ["ts", "id", "segment"], "Position": ["ts", "id", "vehicle", "segment", "speed"]})


def activity(base, seed: int):
    """CET Q2's patients: 40 persons, one heart-rate reading every ~3 s in
    all (one every two minutes per person).  Per person and 5-minute block the
    activity is 'active' (30%, rate ~ resting + 45) or 'passive'; 2% of the
    passive blocks are an episode of tachycardia, the rate rising from twice
    the resting rate to far above it."""
    h = Hashed(seed)
    df = base.selectExpr(
        "n", f"n * 3.0 + {h.uniform('jitter', 0, 3)} AS seconds", f"pmod({h.hash('person')}, 40) AS person"
    ).selectExpr("*", "floor(seconds / 300) AS block")
    df = df.selectExpr(
        "*",
        f"{h.u('active', 'person', 'block')} < 0.3 AS active",
        f"{h.u('episode', 'person', 'block')} < 0.02 AS episode",
        f"{h.int('resting', 55, 75, 'person')} AS resting",
    )
    noise = h.uniform("noise", -4, 4)
    rate = (
        f"CASE WHEN active THEN resting + 45 + {noise}"
        f" WHEN episode THEN resting * 2 + 5 + (seconds - block * 300) / 300 * 50 + {noise}"
        f" ELSE resting + {noise} END"
    )
    return {
        None: df.selectExpr(
            f"{_ts('seconds')} AS ts",
            "n AS id",
            "person AS personID",
            "CASE WHEN active THEN 'active' ELSE 'passive' END AS type",
            f"CAST(round({rate}) AS INT) AS rate",
        )
    }


def ecommerce(base, seed: int):
    """A-Seq's e-commerce clicks: purchase sessions of three events — ideally
    a Kindle, a KindleCase, then a Stylus (each slot is one of the three at
    random in 30% of the cases), 1-30 minutes apart, by one of 2,000 users; a
    session starts every ~40 s."""
    h = Hashed(seed)
    types = ("Kindle", "KindleCase", "Stylus")
    other = _pick(h.u("other"), [(t, 1 / 3) for t in types])
    df = base.selectExpr("n", "floor(n / 3) AS session", "pmod(n, 3) AS slot").selectExpr(
        "*",
        f"CASE WHEN {h.u('swap')} < 0.3 THEN {other}"
        " ELSE element_at(array('Kindle', 'KindleCase', 'Stylus'), CAST(slot + 1 AS INT)) END AS __type",
        _running_sum(f"CASE WHEN slot = 0 THEN 0.0 ELSE {h.uniform('gap', 60, 1800)} END", "session") + " AS offset",
    )
    df = df.selectExpr(
        "__type",
        _ts(f"session * 40.0 + {h.uniform('start', 0, 40, 'session')} + offset") + " AS ts",
        "n AS id",
        _name("u", f"pmod({h.hash('user', 'session')}, 2000)", 4) + " AS userId",
        "CASE __type WHEN 'Kindle' THEN 99.0 WHEN 'KindleCase' THEN 29.99 ELSE 19.99 END AS price",
    )
    return _typed(df, {t: ["ts", "id", "userId", "price"] for t in types})


def purchases(base, seed: int):
    """A-Seq §4's shopping habits (views V… and buys B…): sessions of four
    events, one every ~20 s — either the Kindle-and-case funnel (VKindle,
    BKindle, VCase, BCase) or the tablet comparison (Vipad, VKindleFire,
    VKindle, BKindle), with 30% of the events replaced by another type."""
    h = Hashed(seed)
    types = ["VKindle", "BKindle", "VCase", "BCase", "Vipad", "VKindleFire"]
    other = _pick(h.u("other"), [(t, 1 / 6) for t in types])
    df = base.selectExpr("n", "floor(n / 4) AS session", "pmod(n, 4) AS slot").selectExpr(
        "*",
        f"CASE WHEN {h.u('swap')} < 0.3 THEN {other}"
        f" WHEN {h.u('funnel', 'session')} < 0.6"
        " THEN element_at(array('VKindle', 'BKindle', 'VCase', 'BCase'), CAST(slot + 1 AS INT))"
        " ELSE element_at(array('Vipad', 'VKindleFire', 'VKindle', 'BKindle'), CAST(slot + 1 AS INT)) END AS __type",
        _running_sum(f"CASE WHEN slot = 0 THEN 0.0 ELSE {h.uniform('gap', 5, 300)} END", "session") + " AS offset",
    )
    df = df.selectExpr(
        "__type",
        _ts(f"session * 80.0 + {h.uniform('start', 0, 80, 'session')} + offset") + " AS ts",
        "n AS id",
        _name("u", f"pmod({h.hash('user', 'session')}, 5000)", 4) + " AS userId",
    )
    return _typed(df, {t: ["ts", "id", "userId"] for t in types})


def security(base, seed: int):
    """A-Seq's network security: login attempts of three events from one IP —
    TypeUsername (carrying the account's stored `Password`), TypePassword
    (the typed `value`) 1-3 s later, ClickSubmit 0.5-2 s later; an attempt
    starts every ~5 s.  In bursts of 20 attempts (30% of them) an attacker IP
    (one of 5) guesses passwords; users type theirs right 90% of the time."""
    h = Hashed(seed)
    df = base.selectExpr("n", "floor(n / 3) AS attempt", "pmod(n, 3) AS slot").selectExpr(
        "*",
        "floor(attempt / 20) AS burst",
        f"pmod({h.hash('user', 'attempt')}, 1000) AS user",
        _running_sum(
            f"CASE slot WHEN 0 THEN 0.0 WHEN 1 THEN {h.uniform('gap', 1, 3)} ELSE {h.uniform('gap', 0.5, 2)} END",
            "attempt",
        )
        + " AS offset",
    )
    df = df.selectExpr(
        "*",
        f"{h.u('attack', 'burst')} < 0.3 AND {h.u('attacker', 'attempt')} < 0.8 AS attack",
        f"concat('pw', lpad(CAST(pmod({h.hash('password', 'user')}, 100000) AS STRING), 5, '0')) AS stored",
    )
    df = df.selectExpr(
        "element_at(array('TypeUsername', 'TypePassword', 'ClickSubmit'), CAST(slot + 1 AS INT)) AS __type",
        _ts(f"attempt * 5.0 + {h.uniform('start', 0, 5, 'attempt')} + offset") + " AS ts",
        "n AS id",
        f"CASE WHEN attack THEN concat('203.0.113.', {h.int('attacker-ip', 1, 5, 'burst')})"
        f" ELSE concat('10.0.', {h.int('ip1', 0, 9, 'attempt')}, '.', {h.int('ip2', 1, 254, 'attempt')}) END AS IP",
        f"{_name('user', 'user', 4)} AS username",
        "stored AS Password",
        f"CASE WHEN NOT attack AND {h.u('typo', 'attempt')} < 0.9 THEN stored"
        f" ELSE concat('guess', {h.int('guess', 0, 9999, 'attempt')}) END AS value",
    )
    cols = ["ts", "id", "IP", "username"]
    return _typed(df, {"TypeUsername": [*cols, "Password"], "TypePassword": [*cols, "value"], "ClickSubmit": cols})


def figures(base, seed: int):
    """The GRETA and A-Seq figures' abstract stream: one event per time unit
    (`ts` a long, = the event number), of type A (40%), B (20%), C, D (15%
    each) or E (10%), each with an integer `attr` 1-9."""
    h = Hashed(seed)
    kind = _pick(h.u("type"), [("A", 0.4), ("B", 0.2), ("C", 0.15), ("D", 0.15), ("E", 0.1)])
    df = base.selectExpr(f"{kind} AS __type", "n AS ts", "n AS id", f"{h.int('attr', 1, 9)} AS attr")
    return _typed(df, {t: ["ts", "id", "attr"] for t in ("A", "B", "C", "D", "E")})


class Typed(dict):
    """{type: DataFrame}, each a filter of one `parent` DataFrame (with a
    `__type` column), which `generate` caches while it writes the types;
    `columns` gives each type's columns."""

    parent: object = None
    columns: dict[str, list[str]] = {}


def _typed(df, columns: dict[str, list[str]]) -> Typed:
    out = Typed({t: df.where(f"__type = '{t}'").select(*cols) for t, cols in columns.items()})
    out.parent, out.columns = df, columns
    return out


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
