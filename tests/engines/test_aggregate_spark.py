"""Aggregation on Spark (GRETA and A-Seq) against the papers' numbers and the
brute-force enumerate-then-aggregate reference.

As for detection, each hypothesis example is a batch of random typed streams
run as one Spark job, the case id being one more equivalence and grouping
attribute."""

import math
from decimal import Decimal

import pytest
from cases import aggregation_with_case
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates

import cetql
from cetql.language.printer import aggregate_to_text

SETTINGS = settings(
    max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)  # shrinking re-runs Spark jobs for minutes; a failing batch is printed whole
COLUMNS = "case int, id long, ts long, x long, g string, k string"


def typed_frames(spark, rows):
    """rows: (case, id, ts, type, x, g, k) → {type: DataFrame}."""
    by_type: dict = {}
    for case, i, ts, t, x, g, k in rows:
        by_type.setdefault(t, []).append((case, i, ts, x, g, k))
    return {t: spark.createDataFrame(r, COLUMNS) for t, r in by_type.items()}


def paper_stream(spark, text, attrs=None):
    """'a1,b2,…' → typed frames (the letter is the type, the number the time)."""
    rows = []
    for i, item in enumerate(text.split(",")):
        rows.append((0, i, int(item[1:]), item[0].upper(), (attrs or {}).get(item), "g", "k"))
    return typed_frames(spark, rows), [
        {"id": i, "ts": ts, "__type": t, "x": x, "g": g, "k": k} for _, i, ts, t, x, g, k in rows
    ]


def run(spark, text, frames, **kw):
    q = cetql.compile(text)
    types = {p.type for p in q.query.positions.values()}
    return q.run({t: df for t, df in frames.items() if t in types}, spark=spark, id_col="id", **kw).collect()


# ------------------------------------------------------------------ the papers' numbers


def test_greta_example_1_figure_12(spark):
    frames, _ = paper_stream(spark, "a1,b2,a3,a4,b7", {"a1": 5, "a3": 6, "a4": 4})
    (r,) = run(
        spark,
        "RETURN COUNT(*), COUNT(A), MIN(A.x), MAX(A.x), SUM(A.x), AVG(A.x) PATTERN (SEQ(A+,B))+ WITHIN 10",
        frames,
    )
    assert (r["COUNT(*)"], r["COUNT(A)"], r["MIN(A.x)"], r["MAX(A.x)"], r["SUM(A.x)"], r["AVG(A.x)"]) == (
        11,
        20,
        4,
        6,
        100,
        5,
    )


@pytest.mark.parametrize(
    "pattern,paper",
    [("A+", None), ("SEQ(A+,B)", None), ("(SEQ(A+,B))+", 43), ("(SEQ(A+,NOT SEQ(C,NOT E,D),B))+", None)],
)
def test_greta_figure_6(spark, pattern, paper):
    frames, events = paper_stream(spark, "a1,b2,c2,a3,e3,a4,c5,d6,b7,a8,b9")
    text = f"RETURN COUNT(*) PATTERN {pattern} WITHIN 10"
    (r,) = run(spark, text, frames)
    want = reference_aggregates(text, events)[(0, ())]["COUNT(*)"]
    assert r["COUNT(*)"] == want
    if paper is not None:
        assert want == paper  # the count GRETA's text gives


def test_aseq_figure_4_prefix_counting(spark):
    # A-Seq Example 2: (A) = 3 and (A, B) = 2 when a b arrives, making (A, B) = 5;
    # then c and d complete (A, B, C, D): 5 matches.
    frames, events = paper_stream(spark, "a1,a2,b3,a4,b5,c6,d7")
    text = "PATTERN SEQ(A, B, C, D) AGG COUNT WITHIN 10"
    assert cetql.compile(text).plan.logical.root.algorithm.choice == "aseq"
    (r,) = run(spark, text, frames)
    assert r["COUNT(*)"] == 5 == reference_aggregates(text, events)[(0, ())]["COUNT(*)"]


def test_aseq_figure_7_negation(spark):
    # A-Seq Example 4, (A, B, !C, D): c1 at 3 s clears (A, B); d1 then counts 2,
    # and <a1, b1, d1> is not counted since c1 lies between b1 and d1.
    frames, events = paper_stream(spark, "a1,b2,c3,a4,b5,d6")
    text = "PATTERN SEQ(A, B, !C, D) AGG COUNT WITHIN 10"
    (r,) = run(spark, text, frames)
    assert r["COUNT(*)"] == 2 == reference_aggregates(text, events)[(0, ())]["COUNT(*)"]


# ------------------------------------------------------------------ exactness


def rising(spark, n):
    rows = [(0, i, i, "A", i, "g", "k") for i in range(n)]
    return typed_frames(spark, rows)


def test_count_above_2_63_is_exact(spark):
    frames = rising(spark, 70)  # every subsequence of 70 rising events is a trend: 2^70 - 1
    text = "RETURN COUNT(*), COUNT(A), SUM(A.x) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 100"
    (r,) = run(spark, text, frames)
    assert r["COUNT(*)"] == Decimal(2**70 - 1) and 2**70 - 1 > 2**63
    # each event is in 2^69 trends
    assert r["COUNT(A)"] == Decimal(70 * 2**69)
    assert r["SUM(A.x)"] == Decimal(sum(range(70)) * 2**69)


def test_overflow_is_an_error_naming_window_and_group(spark):
    frames = rising(spark, 140)  # 2^140 - 1 has 43 digits
    text = "RETURN g, COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x GROUP-BY g WITHIN 1000"
    with pytest.raises(
        Exception, match=r"COUNT\(\*\) = 139379657490… \(43 digits\) in window \[0, 1000\), group g='g'"
    ):
        run(spark, text, frames)
    (r,) = run(spark, text, frames, exact="string")
    assert r["COUNT(*)"] == str(2**140 - 1)
    (r,) = run(spark, text, frames, approx=True)
    assert math.isclose(r["COUNT(*)"], 2.0**140, rel_tol=1e-12)
    (r,) = run(spark, text + " APPROX", frames)
    assert math.isclose(r["COUNT(*)"], 2.0**140, rel_tol=1e-12)


def test_cli_aggregation_flags(spark, tmp_path, capsys):
    from cetql.surfaces.cli.main import main

    csv = tmp_path / "a.csv"
    csv.write_text("id,ts,x\n" + "".join(f"{i},{i},{i}\n" for i in range(140)))
    q = tmp_path / "q.cet"
    q.write_text("RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 1000")
    assert main(["run", str(q), "--input", str(csv), "--id-col", "id"]) == 1
    err = capsys.readouterr().err
    assert "does not fit DECIMAL(38,0)" in err and "Traceback" not in err
    assert main(["run", str(q), "--input", str(csv), "--exact", "string"]) == 0
    assert str(2**140 - 1) in capsys.readouterr().out.replace("\n", "").replace("│", "").replace(" ", "")
    assert main(["run", str(q), "--input", str(csv), "--approx"]) == 0
    assert repr(float(2**140 - 1)) in capsys.readouterr().out


# ------------------------------------------------------------------ against the reference




TYPES = "ABCDE"


def typed_stream(max_events=8):
    return st.lists(
        st.tuples(
            st.integers(0, 12),
            st.sampled_from(TYPES),
            st.none() | st.integers(0, 4),
            st.sampled_from("gh"),
            st.sampled_from("uv"),
        ),
        max_size=max_events,
    )


AGG_QUERIES = [
    "RETURN COUNT(*), COUNT(A), SUM(A.x), MIN(A.x), MAX(A.x), AVG(A.x) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 6 SLIDE 3",
    "RETURN g, COUNT(*), SUM(A.x) PATTERN SEQ(A+, B) WHERE [g] GROUP-BY g WITHIN 8 SLIDE 4",
    "RETURN g, COUNT(*), COUNT(B) PATTERN SEQ(A+, B) WHERE [k, g] AND A.x < NEXT(A).x GROUP-BY g WITHIN 9 SLIDE 3",
    "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A+, B) WHERE [A.k, g] WITHIN 9 SLIDE 3",
    "RETURN COUNT(*), COUNT(B), MAX(A.x) PATTERN (SEQ(A+, B))+ WITHIN 7",
    "RETURN COUNT(*), COUNT(A) PATTERN SEQ(A+, NOT C, B) WITHIN 9 SLIDE 3",
    "RETURN COUNT(*) PATTERN SEQ(NOT C, A+) WITHIN 8",
    "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A+, NOT C) WITHIN 8",
    "RETURN COUNT(*) PATTERN (SEQ(A+, NOT SEQ(C, NOT E, D), B))+ WITHIN 12",
    "RETURN COUNT(*), COUNT(C) PATTERN SEQ(A, B?, C) WHERE C.k = 'u' WITHIN 10 SLIDE 5",
    "RETURN COUNT(*) PATTERN SEQ(A*, B) WHERE A.x <= NEXT(A).x + 1 WITHIN 9",
    "PATTERN SEQ(A, B, !C, D) AGG COUNT WITHIN 12",
    "RETURN COUNT(*), SUM(A.x) PATTERN A+ WHERE A.k = NEXT(A).k AND A.x != NEXT(A).x WITHIN 8 SLIDE 4",
    "RETURN COUNT(*), COUNT(A) PATTERN SEQ(A+, B) WHERE A.x > NEXT(A).x TRENDS COMPLETE WITHIN 8 SLIDE 4",
    "RETURN COUNT(*) PATTERN A+ WHERE A.k = NEXT(A).k TRENDS COMPLETE WITHIN 6",
    "RETURN g, COUNT(*), MIN(A.x) PATTERN SEQ(A+, NOT C, B) WHERE [g] GROUP-BY g TRENDS COMPLETE WITHIN 10",
    # many windows an event (blocks of windows)
    "RETURN g, COUNT(*), SUM(A.x), AVG(A.x) PATTERN A+ WHERE [g] AND A.x < NEXT(A).x GROUP-BY g WITHIN 8 SLIDE 1",
    "RETURN COUNT(*), COUNT(B) PATTERN SEQ(A+, NOT C, B) TRENDS COMPLETE WITHIN 7 SLIDE 2",
    "RETURN g, COUNT(*) PATTERN A+ WHERE [g] AND A.x <= NEXT(A).x GROUP-BY g WITHIN 8 SLIDE 1",  # one propagation
]


@pytest.mark.parametrize("text", AGG_QUERIES, ids=AGG_QUERIES)
@SETTINGS
@given(batch=st.lists(typed_stream(), min_size=15, max_size=25))
def test_aggregates_equal_reference(spark, text, batch):
    rows, per_case = [], []
    next_id = 0
    for c, evs in enumerate(batch):
        mine = []
        for ts, t, x, g, k in evs:
            rows.append((c, next_id, ts, t, x, g, k))
            mine.append({"id": next_id, "ts": ts, "__type": t, "x": x, "g": g, "k": k})
            next_id += 1
        per_case.append(mine)
    frames = typed_frames(spark, rows)
    if not frames:
        return
    got_rows = run(spark, aggregation_with_case(text), frames)
    q = cetql.parse(text)
    names = [aggregate_to_text(a) for a in q.aggregates]
    groups = [c.name for c in q.group_by]
    got = {}
    for r in got_rows:
        if r["COUNT(*)"] == 0:
            continue  # the reference lists only groups with trends
        got[(r["case"], r["window_start"], tuple(r[g] for g in groups))] = {n: r[n] for n in names}
    want = {}
    for c, evs in enumerate(per_case):
        for (start, key), values in reference_aggregates(text, evs).items():
            want[(c, start, key)] = values
    assert got.keys() == want.keys()
    for key, values in want.items():
        for n, v in values.items():
            g = got[key][n]
            if isinstance(v, float) or isinstance(g, float):
                assert v is not None and g is not None and math.isclose(float(g), float(v)), (key, n, g, v)
            else:
                assert g == v, (key, n, g, v)


def test_readme_cluster_example_runs(spark, capsys):
    """The README's GRETA Q2 command on the example cluster stream: one row
    per (window, mapper), sums of cpu over rising-load runs."""
    from pathlib import Path

    from cetql.surfaces.cli.main import main

    root = Path(__file__).resolve().parents[2]
    data = root / "examples" / "data" / "cluster"
    args = ["run", str(root / "examples/queries/greta_q2_cluster.cet")]
    for t in ("Start", "Measurement", "End"):
        args += ["--input", f"{t}={data / (t.lower() + '.csv')}"]
    assert main([*args, "--limit", "1000", "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "rows" in out and "SUM(M.cpu)" in out
    q = cetql.compile((root / "examples/queries/greta_q2_cluster.cet").read_text())
    frames = {t: str(data / (t.lower() + ".csv")) for t in ("Start", "Measurement", "End")}
    rows = q.run(frames, spark=spark).collect()
    keys = [(r.window_start, r.mapper) for r in rows]
    assert len(keys) == len(set(keys)) and any(r["SUM(M.cpu)"] > 0 for r in rows)
