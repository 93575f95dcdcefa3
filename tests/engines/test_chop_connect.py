"""A-Seq's Chop-Connect (§4.2) for common suffixes: generated workloads of
2-8 COUNT(*) SEQ queries ending with one shared suffix (heads of their own,
some the shared prefix too; negations before, inside and after; sliding
and tumbling windows; ties in time; an equivalence sub-key now and then)
give, query by query, the rows each gives alone and the brute-force
reference's counts — and the plan chops where two different heads share
a suffix of three positions."""

from __future__ import annotations

import tempfile
from pathlib import Path

from budget import budget
from engines import footer, rows, write_inputs
from generators import WINDOWS, stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from reference import reference_aggregates
from test_workloads import check
from workloads import STEPS, alone, compiled, run_workload_to, shared_and_alone_embedded

from cetql.base.options import Engine

SETTINGS = settings(max_examples=budget(30), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip


def seq(steps, negations: dict[int, str], keyed: bool, window: tuple[int, int]) -> str:
    """COUNT(*) of SEQ(steps) with `!C n…` inserted before the given positions (len(steps): after the last)."""
    items, where = [], []
    for i, (t, pred) in enumerate(steps):
        if i in negations:
            items.append(f"!C n{i}")
            if negations[i]:
                where.append(negations[i].format(v=f"n{i}"))
        items.append(f"{t} v{i}")
        if pred:
            where.append(pred.format(v=f"v{i}"))
    if len(steps) in negations:
        items.append("!C n")
    if keyed:
        where.append("[g]")
    text = f"PATTERN SEQ({', '.join(items)})" + (f"\nWHERE {' AND '.join(where)}" if where else "")
    return f"{text}\nAGG COUNT(*)\nWITHIN {window[0]} SLIDE {window[1]}"


@st.composite
def suffix_workloads(draw):
    """(texts, suffix length, whether two heads differ): queries ending with one suffix."""
    step = st.sampled_from(STEPS)
    suffix = draw(st.lists(step, min_size=2, max_size=3))
    prefix = draw(st.lists(step, min_size=1, max_size=2))
    keyed, window = draw(st.booleans()), draw(st.sampled_from(WINDOWS))
    s = len(suffix)
    inside = draw(st.sets(st.integers(1, s), max_size=1))  # one suffix's negations: between or after, every query's
    heads, texts = [], {}
    for i in range(draw(st.integers(2, 8))):
        own = draw(st.lists(step, min_size=1, max_size=2))
        head = draw(st.sampled_from([prefix, own, [*prefix, own[0]]]))  # the shared prefix, its own, or both
        mine = {len(head) + j: "" for j in inside}
        if draw(st.booleans()):  # a negation of its own before the suffix (in its prefix part)
            mine[draw(st.integers(0, len(head)))] = draw(st.sampled_from(["", "{v}.x < 3"]))
        heads.append(tuple(head))
        texts[f"q{i}"] = seq([*head, *suffix], mine, keyed, window)
    return texts, s, len({h[0] for h in heads}) > 1


def counts(got_rows) -> dict:
    return {(r["window_start"], r.get("g")): int(r["COUNT(*)"]) for r in got_rows if int(r["COUNT(*)"]) != 0}


def reference(text: str, events: list[dict]) -> dict:
    return {(start, key[0] if key else None): int(v["COUNT(*)"])
            for (start, key), v in reference_aggregates(text, events).items()}  # fmt: skip




def trees(cw):
    return [t for g in cw.plan.groups for ex in g.exchanges for t in ex.trees]


@SETTINGS
@given(suffix_workloads(), stream(True, max_size=12, max_time=6).filter(lambda evs: len(evs) >= 3))
def test_chopped_queries_give_their_rows_alone_and_the_reference(workload, events):
    texts, s, differ = workload
    # inputs are written per type the events have: a query of a type with none would have no input (refused)
    assume({e["__type"] for e in events} >= {"A", "B", "C"})
    with tempfile.TemporaryDirectory() as tmp:
        cw, shared, apart = shared_and_alone_embedded(texts, events, Path(tmp))
    assert cw.plan.engine.engine == Engine.EMBEDDED
    # two heads of their own and three positions in common, in one kernel input: chopping saves passes (typed
    # queries read scans of their own where one would check a column in an input only others read)
    together = any(len(ex.queries) == len(texts) for g in cw.plan.groups for ex in g.exchanges)
    if differ and s == 3 and together:
        assert any(t.chops for t in trees(cw)), cw.explain(as_string=True)
    check(cw, shared, apart)
    for name, text in texts.items():
        assert counts(shared[name][0]) == reference(text, events), (name, text, cw.explain(as_string=True))


def test_suffix_counts_are_strict_in_time_and_read_from_each_start(tmp_path):
    """B and C at the same time never chain, in the suffix as in the prefix:
    a suffix counter a step early or late gives other counts than these
    (each checked alone and against the reference)."""
    at = [(0, "A"), (0, "C"), (1, "B"), (1, "C"), (2, "B"), (2, "C"), (3, "C"), (3, "A"), (4, "B"), (5, "C")]
    events = [{"ts": t, "__type": k, "x": 1, "g": "g", "k": "u", "id": i} for i, (t, k) in enumerate(at)]
    texts = {"a": "PATTERN SEQ(A a, B b, C c, C d) AGG COUNT(*) WITHIN 10",
             "c": "PATTERN SEQ(C a, B b, C c, C d) AGG COUNT(*) WITHIN 10"}  # fmt: skip
    cw, shared, apart = shared_and_alone_embedded(texts, events, tmp_path)
    (tree,) = trees(cw)
    assert len(tree.chops) == 2 and len(tree.suffixes) == 3
    text = cw.explain(as_string=True)
    assert "suffix tree: 3 counter(s)" in text and "a = prefix [(__type = 'A')] ⋈ shared suffix [" in text
    check(cw, shared, apart)
    want = {"a": 4, "c": 5}  # by hand: A0 B1 C2 C3, A0 B1 C2 C5, A0 B1 C3 C5, A0 B2 C3 C5; C0 … (4), C1 B2 C3 C5
    for name, t in texts.items():
        assert counts(shared[name][0]) == reference(t, events) == {(0, None): want[name]}


def test_no_sharing_runs_chopped_queries_alone(tmp_path):
    events = [{"ts": t, "__type": "ABC"[t % 3], "x": 1, "g": "g", "k": "u", "id": t} for t in range(12)]
    texts = {"a": "PATTERN SEQ(A a, B b, C c, A d) AGG COUNT(*) WITHIN 10",
             "c": "PATTERN SEQ(C a, B b, C c, A d) AGG COUNT(*) WITHIN 10"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    assert trees(compiled(texts, data, by_type, id_col="id"))[0].chops
    cw = compiled(texts, data, by_type, sharing="none", id_col="id")
    assert not cw.plan.groups and "Chop-Connect" not in cw.explain(as_string=True)


def test_counts_past_64_bits_are_exact_when_chopped(tmp_path):
    """SEQ of ten events over 400: the suffix counts, and their products
    with the prefix counts, pass 2^62; the tree counts again in Python
    integers, and each query's count is the one it gives alone."""
    events = [{"ts": t, "__type": None, "x": t % 4, "g": "g", "k": "uv"[t % 2], "id": t} for t in range(400)]
    seq_ = ", ".join(f"A v{i}" for i in range(1, 10))
    texts = {"u": f"PATTERN SEQ(A w, {seq_}) WHERE w.k = 'u' AGG COUNT(*) WITHIN 1000",
             "v": f"PATTERN SEQ(A w, {seq_}) WHERE w.k = 'v' AGG COUNT(*) WITHIN 1000"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, False, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    (tree,) = trees(cw)
    assert len(tree.chops) == 2 and len(tree.suffixes) == 9
    done = run_workload_to(tmp_path / "shared", cw, data, by_type)
    apart = alone(tmp_path, texts, data, by_type, Engine.EMBEDDED, id_col="id")
    check(cw, {n: (rows(p), footer(p)) for n, p in done.items()}, apart)
    assert apart["u"][0][0]["COUNT(*)"] > 2**62
