"""The E+ kernel against the brute-force reference, without Spark: many
random streams, one window each."""

from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_trends

from cetql.planner.kernel import KleeneSpec, kleene_paths

TREND_SETS = ["COMPLETE", "MAXIMAL", "ALL"]

events = st.lists(
    st.fixed_dictionaries(
        {
            "ts": st.integers(0, 6),
            "src": st.sampled_from("ABC"),
            "dst": st.sampled_from("ABC"),
            "price": st.none() | st.integers(0, 4),
        }
    ),
    max_size=8,
).map(lambda evs: [dict(e, id=i) for i, e in enumerate(sorted(evs, key=lambda e: e["ts"]))])


def _kernel(evs, spec_of, trend_set):
    times = [e["ts"] for e in evs]
    ids = [e["id"] for e in evs]
    return {tuple(ids[i] for i in p) for p in kleene_paths(times, spec_of(evs), trend_set)}


def _reference(text, evs, trend_set):
    got = reference_trends(text, evs, trend_set=trend_set)
    return got.get((0, 100), set())


@settings(max_examples=150, deadline=None)
@given(events, st.sampled_from(TREND_SETS))
def test_equal_predicate(evs, trend_set):
    text = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst WITHIN 100"
    spec = lambda es: KleeneSpec(equal=[([e["src"] for e in es], [e["dst"] for e in es])])  # noqa: E731
    assert _kernel(evs, spec, trend_set) == _reference(text, evs, trend_set)


@settings(max_examples=150, deadline=None)
@given(events, st.sampled_from(TREND_SETS), st.sampled_from([">", ">=", "<", "<="]))
def test_range_predicate_with_h(evs, trend_set, op):
    text = f"PATTERN Stock+ s[] WHERE s[i].price {op} 2 * s[i-1].price - 1 WITHIN 100"
    spec = lambda es: KleeneSpec(  # noqa: E731
        ranges=[([e["price"] for e in es], op, [None if e["price"] is None else 2 * e["price"] - 1 for e in es])]
    )
    assert _kernel(evs, spec, trend_set) == _reference(text, evs, trend_set)


@settings(max_examples=100, deadline=None)
@given(events, st.sampled_from(TREND_SETS))
def test_equal_range_and_other_together(evs, trend_set):
    text = "PATTERN Check+ c[] WHERE c[i].src = c[i-1].dst AND c[i].price > c[i-1].price AND c[i].src != c[i-1].src WITHIN 100"

    def spec(es):
        src = [e["src"] for e in es]
        price = [e["price"] for e in es]
        return KleeneSpec(
            equal=[(src, [e["dst"] for e in es])],
            ranges=[(price, ">", price)],
            others=[lambda i, j: src[j] != src[i]],
        )

    assert _kernel(evs, spec, trend_set) == _reference(text, evs, trend_set)


def test_worked_examples():
    # SEMANTICS.md: c1 A→B @1, c2 B→C @2, c3 B→D @3, c4 D→E @4
    src, dst = ["A", "B", "B", "D"], ["B", "C", "D", "E"]
    assert list(kleene_paths([1, 2, 3, 4], KleeneSpec(equal=[(src, dst)]))) == [[0, 1], [0, 2, 3]]
    # prices 1, 2, 3 rising: CETs (1,2,3), (1,3); the only MAXIMAL one (1,2,3)
    p = [1, 2, 3]
    spec = KleeneSpec(ranges=[(p, ">", p)])
    assert sorted(kleene_paths([1, 2, 3], spec)) == [[0, 1, 2], [0, 2]]
    assert list(kleene_paths([1, 2, 3], spec, "MAXIMAL")) == [[0, 1, 2]]


@settings(max_examples=60, deadline=None)
@given(events, st.integers(1, 5))
def test_groups_straddling_arrow_batches(evs, batch_size):
    """The mapInArrow function carries an unfinished group into the next
    batch: any batch size gives what one whole table gives."""
    import pyarrow as pa

    from cetql.planner.detect import DetectConfig, map_partition, process_table

    evs = sorted(evs, key=lambda e: (e["ts"] // 3, e["ts"], e["id"]))
    table = pa.table(
        {
            "__wk": [e["ts"] // 3 for e in evs],
            "__t": [e["ts"] for e in evs],
            "__id": [e["id"] for e in evs],
            "__l0": [e["src"] for e in evs],
            "__h0": [e["dst"] for e in evs],
        },
        schema=pa.schema(
            [
                ("__wk", pa.int64()),
                ("__t", pa.int64()),
                ("__id", pa.int64()),
                ("__l0", pa.string()),
                ("__h0", pa.string()),
            ]
        ),
    )
    cfg = DetectConfig(mode="kleene", trend_set="COMPLETE", keys=[], params={}, equal=[("__l0", "__h0")])

    def flat(batches):
        return sorted((w, tuple(e)) for b in batches for w, e in zip(b.column(0).to_pylist(), b.column(1).to_pylist()))

    whole = flat(process_table(cfg, table))
    assert flat(map_partition(cfg)(iter(table.to_batches(max_chunksize=batch_size)))) == whole


@settings(max_examples=150, deadline=None)
@given(events, st.sampled_from(["=", ">", ">=", "<", "<=", None]), st.booleans())
def test_scalar_count_paths_equal_the_generic_dp(evs, op, approx):
    """greta.kleene_count (index and scan) = greta.aggregate = the reference."""
    from cetql.planner import greta as G

    times = [e["ts"] for e in evs]
    price = [e["price"] for e in evs]
    if op is None:
        edge, where = G.Edge(), ""
    elif op == "=":
        edge, where = G.Edge(equal=[([e["src"] for e in evs], [e["dst"] for e in evs])]), "WHERE S.src = PREV.dst"
        where = "WHERE S[i].src = S[i-1].dst"
    else:
        edge, where = G.Edge(ranges=[(price, op, price)]), f"WHERE S[i].price {op} S[i-1].price"
    t = G.Template({"S": lambda e: True}, {"S"}, {"S"}, {("S", "S"): edge})
    (generic,) = G.aggregate(t, times, [G.Target("COUNT")], approx=approx)
    index = G.kleene_count(times, edge, approx, "index")
    scan = G.kleene_count(times, edge, approx, "scan")
    from reference import reference_aggregates

    ref = reference_aggregates(f"RETURN COUNT(*) PATTERN Stock+ S[] {where} WITHIN 100", evs, typed=False)
    want = ref.get((0, ()), {"COUNT(*)": 0})["COUNT(*)"]
    assert generic == index == scan == want
