"""What the physical plan decides is what Spark does: exact decimal windows,
the distributed strategy's guard and laziness, the partition count."""

import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cetql
from cetql.base.errors import UsageError


def _windows_of(t: int, length: Decimal, slide: Decimal) -> set[Decimal]:
    """The starts of the windows [k*slide, k*slide + length) holding t, by
    exact decimal arithmetic (SEMANTICS.md, Windows)."""
    k = int(Decimal(t) // slide) + 2
    out = set()
    while k * slide + length > t - slide * 2:
        if k * slide <= t < k * slide + length:
            out.add(k * slide)
        k -= 1
    return out


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(-30, 30), st.sampled_from(["0.3", "0.7", "1.1", "2"]),
                          st.sampled_from(["0.1", "0.2", "0.25", "0.3", "1"])), min_size=30, max_size=30))  # fmt: skip
def test_decimal_windows_are_exact(spark, cases):
    """WITHIN 0.3 SLIDE 0.1 on integer times: the event at t=1 is in [0.8, 1.1),
    [0.9, 1.2) and [1.0, 1.3) — never [0.7000000000000001, 1.0) — and the
    bounds are the decimals they are.  Many (time, WITHIN, SLIDE) cases, each
    checked against exact decimal arithmetic."""
    cases = [(t, w, s) for t, w, s in cases if Decimal(s) <= Decimal(w)] + [(1, "0.3", "0.1")]
    for t, w, s in cases:
        df = spark.createDataFrame([(1, t)], "id long, ts long")
        rows = cetql.compile(f"PATTERN E+ e[] WITHIN {w} SLIDE {s}").run(df, spark=spark, id_col="id").collect()
        starts = {r.window_start for r in rows}
        assert starts == _windows_of(t, Decimal(w), Decimal(s)), (t, w, s)
        assert all(r.window_end - r.window_start == Decimal(w) for r in rows)
    assert _windows_of(1, Decimal("0.3"), Decimal("0.1")) == {Decimal("0.8"), Decimal("0.9"), Decimal("1.0")}


def test_a_million_windows_an_event_is_refused_before_anything_runs():
    with pytest.raises(UsageError, match=r"puts each event in 1,000,000 windows, more than max_windows=100000") as e:
        cetql.compile("PATTERN E+ e[] WITHIN 1000 SLIDE 0.001")
    assert "more than --max-windows 100,000" in e.value.render()  # the command line's words
    cetql.compile("PATTERN E+ e[] WITHIN 1000 SLIDE 0.001", max_windows=0)  # asked for: allowed


CHAIN = "PATTERN S+ s[] WHERE s[i].x > s[i-1].x WITHIN 100"


def test_distributed_honours_the_guard_with_the_local_count(spark):
    """Rising values 0..4: 2^5 - 1 = 31 trends of ALL (every non-empty subset is
    a rising sequence); with --max-trends 3 both strategies refuse, naming 31."""
    df = spark.createDataFrame([(i, i, i) for i in range(5)], "id long, ts long, x long")
    q = cetql.compile(CHAIN)
    messages = []
    for strategy in ("local", "distributed"):
        with pytest.raises(Exception) as failed:
            q.run(df, spark=spark, id_col="id", strategy=strategy, trends="all", max_trends=3).collect()
        found = re.search(r"window \[0, 100\)[^\n]*?more than --max-trends 3", str(failed.value))
        assert found and "31" in found.group(0), str(failed.value)[-2000:]
        messages.append(found.group(0))
    assert messages[0] == messages[1]
    rows = q.run(df, spark=spark, id_col="id", strategy="distributed", trends="all", max_trends=31).collect()
    assert len(rows) == 31


def test_building_a_distributed_dataframe_runs_no_job(spark):
    df = spark.createDataFrame([(i, i, i % 3) for i in range(20)], "id long, ts long, x long")
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("cetql-build", "building only")
    try:
        for trends in ("complete", "maximal", "all"):
            cetql.compile(CHAIN).run(df, spark=spark, id_col="id", strategy="distributed", trends=trends)
        assert tracker.getJobIdsForGroup("cetql-build") == []
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def test_an_approximate_count_past_a_double_is_an_error_not_infinity():
    """2^1100 - 1 trends of E+ over 1,100 events: past a double's range.
    Approximate counting says so, naming the window; exact counting counts."""
    from harness import run_local

    from cetql.kernels.errors import AggregateOverflow

    events = [{"id": i, "ts": i} for i in range(1100)]
    with pytest.raises(AggregateOverflow, match=r"COUNT\(\*\) in window \[0, 2000\), the whole window, has no finite approximate value"):
        run_local("RETURN COUNT(*) PATTERN E+ e[] WITHIN 2000 APPROX", events)
    _, _, out = run_local("RETURN COUNT(*) PATTERN E+ e[] WITHIN 2000", events, exact="string")
    assert out[0]["COUNT(*)"] == str(2**1100 - 1)
