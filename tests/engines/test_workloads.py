"""A workload returns, for each query, exactly the rows that query returns
alone (SEMANTICS.md, Engines and workloads): generated workloads of 2-8
queries — fixed SEQ counts with a shared prefix (A-Seq's prefix tree),
with a shared middle, with a shared Kleene part, detection and aggregation
queries with predicates and windows of their own, negations in and around
the shared parts — run shared, query by query against each run alone:
same rows, same file schema.  On the embedded engine here; on Spark and on
a stream in test_workloads_spark."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path

import pytest
from budget import budget
from engines import footer, rows, write_inputs
from generators import stream
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from workloads import alone, compiled, run_workload_to, workloads

from cetql.backends.arrow.result import ArithmeticOverflow
from cetql.backends.embedded.run import failures
from cetql.base.errors import QueryError, SchemaError
from cetql.base.options import Engine
from cetql.kernels import spec as K
from cetql.planner.physical.show import show

SETTINGS = settings(max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # fmt: skip


def shared_and_alone(texts: dict, events: list[dict], typed: bool, fmt: str):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, by_type = write_inputs(folder, events, typed, False, fmt)
        texts = valid(texts, data, by_type)
        assume(len(texts) >= 2)
        cw = compiled(texts, data, by_type, id_col="id")
        assume(cw.plan.engine.engine == Engine.EMBEDDED)
        done = run_workload_to(folder / "shared", cw, data, by_type)
        shared = {n: (rows(p), footer(p)) for n, p in done.items()}
        return cw, shared, alone(folder, texts, data, by_type, Engine.EMBEDDED, id_col="id")


def valid(texts: dict, data, by_type: dict) -> dict:
    """The queries that the inputs accept (a type mismatch, an ambiguous
    aggregation, no input of any of its types are refused alone, and so in
    a workload)."""
    out = {}
    for name, text in texts.items():
        try:
            cw = compiled({name: text}, data, by_type, id_col="id")
        except (QueryError, SchemaError):
            continue
        if data is None and not any(t in by_type for t in cw[name].types):
            continue
        out[name] = text
    return out


def check(cw, shared: dict, apart: dict) -> None:
    for name in apart:
        (got, got_footer), (want, want_footer) = shared[name], apart[name]
        assert got_footer == want_footer, (name, cw[name].source)
        assert got == want, (name, cw[name].source, cw.explain(as_string=True))


@SETTINGS
@given(st.data(), st.booleans(), st.sampled_from(["csv", "parquet"]))
def test_each_query_of_a_workload_gives_its_rows_alone(data, typed, fmt):
    texts = data.draw(workloads(typed))
    events = data.draw(stream(typed, max_size=14).filter(lambda evs: len(evs) >= 3))
    cw, shared, apart = shared_and_alone(texts, events, typed, fmt)
    check(cw, shared, apart)


def test_a_shared_prefix_is_one_tree_and_gives_each_query_its_count(tmp_path):
    """Three counts with a common prefix of two positions: one tree of
    2 + 3 counters, one kernel input, and each query's rows as alone."""
    events = [{"ts": t, "__type": "ABC"[t * 7 % 3], "x": t % 4, "g": "gh"[t % 2], "k": "uv"[t % 3 % 2], "id": t}
              for t in range(40)]  # fmt: skip
    texts = {f"q{i}": f"PATTERN SEQ(A a, B b, {tail}) WHERE a.k = 'u' AGG COUNT(*) WITHIN 10 SLIDE 5"
             for i, tail in enumerate(["A c", "B c", "!C n, A c"])}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    (group,) = cw.plan.groups
    (ex,) = group.exchanges
    (tree,) = ex.trees
    assert len(tree.nodes) == 5 and len(tree.ends) == 3
    text = cw.explain(as_string=True)
    assert "prefix tree: 5 counter(s) for 3 queries (9 apart)" in text
    done = run_workload_to(tmp_path / "shared", cw, data, by_type)
    apart = alone(tmp_path, texts, data, by_type, Engine.EMBEDDED, id_col="id")
    check(cw, {n: (rows(p), footer(p)) for n, p in done.items()}, apart)


def test_counts_past_64_bits_are_exact_in_a_prefix_tree(tmp_path):
    """Counts of SEQ of ten events over 400 events pass 2^62: the tree counts
    them again in Python integers, and each query's DECIMAL(38) count is
    the one it gives alone (A-Seq's own counters)."""
    events = [{"ts": t, "__type": None, "x": t % 4, "g": "g", "k": "uv"[t % 2], "id": t} for t in range(400)]
    seq = ", ".join(f"A v{i}" for i in range(9))
    texts = {"all": f"PATTERN SEQ({seq}, A w) AGG COUNT(*) WITHIN 1000",
             "u": f"PATTERN SEQ({seq}, A w) WHERE w.k = 'u' AGG COUNT(*) WITHIN 1000"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, False, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    (tree,) = cw.plan.groups[0].exchanges[0].trees
    assert len(tree.nodes) == 11
    done = run_workload_to(tmp_path / "shared", cw, data, by_type)
    apart = alone(tmp_path, texts, data, by_type, Engine.EMBEDDED, id_col="id")
    check(cw, {n: (rows(p), footer(p)) for n, p in done.items()}, apart)
    assert apart["all"][0][0]["COUNT(*)"] > 2**62


def test_an_expression_of_one_query_is_never_evaluated_on_rows_only_another_takes(tmp_path):
    """q's edge predicate multiplies x, which overflows 64 bits on the one
    event q never takes (x < 100 leaves it out) and wide takes: alone, both
    run; in the workload too, with the same rows."""
    events = [{"ts": t, "__type": None, "x": t % 7, "g": "g", "k": "u", "id": t} for t in range(30)]
    events.append({"ts": 30, "__type": None, "x": 2**62, "g": "g", "k": "u", "id": 30})
    texts = {"q": "PATTERN A+ a[] WHERE a.x < 100 AND a[i].x > a[i-1].x * 1000 WITHIN 10 AGG COUNT(*)",
             "wide": "PATTERN A+ a[] WHERE a[i].x > a[i-1].x WITHIN 10 AGG COUNT(*)"}  # fmt: skip
    data, by_type = write_inputs(tmp_path, events, False, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    (ex,) = cw.plan.groups[0].exchanges
    assert any(c.guard is not None for c in ex.columns)
    done = run_workload_to(tmp_path / "shared", cw, data, by_type)
    apart = alone(tmp_path, texts, data, by_type, Engine.EMBEDDED, id_col="id")
    check(cw, {n: (rows(p), footer(p)) for n, p in done.items()}, apart)


def test_literals_of_other_types_are_other_columns(tmp_path):
    """`x * 2` overflows 64 bits where `x * 2.0` gives a double: two queries
    whose edges differ only so compute two columns (and share no edge), so
    the one that fails alone fails in the workload, and the other's rows
    are its own; `2`, `2.0` and `true` are equal Python values, never one
    definition."""
    events = [{"ts": t, "__type": "AB"[min(t, 1)], "x": x, "g": "g", "k": "u", "id": t}
              for t, x in enumerate([1, 3, 2**62, 5, 2**63 - 1, 2])]  # fmt: skip
    base = "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > b[i-1].x * {} WITHIN 100"
    texts = {"dbl": "RETURN COUNT(*), SUM(b.x) " + base.format("2.0"), "int": "RETURN COUNT(*), MAX(b.x) " + base.format("2")}
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    cw = compiled(texts, data, by_type, id_col="id")
    (ex,) = cw.plan.groups[0].exchanges
    assert {show(c.definition) for c in ex.columns} >= {"(x * 2.0)", "(x * 2)"}, cw.explain(as_string=True)
    with pytest.raises(ArithmeticOverflow), failures():  # the one-line error the CLI shows
        alone(tmp_path, {"int": texts["int"]}, data, by_type, Engine.EMBEDDED, id_col="id")
    with pytest.raises(ArithmeticOverflow), failures():
        run_workload_to(tmp_path / "shared", cw, data, by_type)
    assert K.identity(K.Lit(2)) != K.identity(K.Lit(2.0)) != K.identity(K.Lit(True))
    assert K.identity(K.Lit(Decimal("2"))) != K.identity(K.Lit(2))


def test_a_kernel_error_in_a_workload_names_its_query(tmp_path):
    """A count past DECIMAL(38) fails as alone — in a query's own kernel
    and in a shared propagation — and the error says which query it is."""
    from cetql.kernels.errors import AggregateOverflow

    events = [{"ts": t, "__type": "A" if t == 0 else "B", "x": 1, "g": "g", "k": "u", "id": t} for t in range(201)]
    data, by_type = write_inputs(tmp_path, events, True, False, "parquet")
    cases = {"runs": {"runs": "RETURN COUNT(*) PATTERN B+ b[] WITHIN 1000",  # its own kernel (2^200 - 1 runs)
                      "pairs": "RETURN COUNT(*) PATTERN SEQ(A a, B b) WITHIN 1000"},
             "heads": {"heads": "RETURN COUNT(*), SUM(b.x) PATTERN SEQ(A a, B+ b[]) WITHIN 1000",  # one propagation
                       "top": "RETURN MAX(b.x) PATTERN SEQ(A a, B+ b[]) WITHIN 1000"}}  # fmt: skip
    for failing, texts in cases.items():
        cw = compiled(texts, data, by_type, id_col="id")
        assert cw.plan.groups and not cw.plan.alone, cw.explain(as_string=True)
        with pytest.raises(AggregateOverflow, match=f"^query {failing}: COUNT\\(\\*\\) = .* does not fit DECIMAL\\(38,0\\)"):
            run_workload_to(tmp_path / failing, cw, data, by_type)
