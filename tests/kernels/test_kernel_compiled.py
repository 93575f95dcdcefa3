"""The compiled kernels (`kernels.select`'s COUNT and WALK variants, numba)
against the reference kernels (pure Python, `compiled=never`): generated queries of the shapes
the compiled paths cover — COUNT(*) of E+ with no, an equal or a range
predicate; detection of E+ with an equal predicate, ALL and COMPLETE — and
generated queries of every shape (where the compiled paths must step
aside), on generated streams with nulls, NaN, ±infinity, -0.0, ties, over
sliding windows; both paths must give the same rows in the same order.
Counts past 2^63 leave int64 for wider limbs (`jit_wide`), and past those
for the reference's Python integers."""

import math

import numpy as np
import pytest
from budget import budget
from checks import compile_or_skip
from generators import DRAWN, queries, stream
from harness import run_local
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.base.options import RunOptions
from cetql.kernels import jit, jit_wide, select
from cetql.kernels import spec as K
from cetql.planner.physical.kernel import kernel_spec

pytestmark = pytest.mark.skipif(not select.available(), reason="numba is not installed")
SOME = settings(max_examples=budget(60), deadline=None, suppress_health_check=list(HealthCheck))
OPS = ["=", "<", "<=", ">", ">="]


def both(monkeypatch, text, events, **options):
    """(compiled rows, reference rows, kernel spec) of one query."""
    _, phys, want = run_local(text, events, compiled="never", **options)
    _, phys, got = run_local(text, events, compiled="always", **options)
    return got, want, kernel_spec(phys)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def rows_equal(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        assert all(same(g[k], w[k]) for k in g), (g, w)


def wide_stream(max_size=24):
    """Events with an integer x and a DOUBLE y of the special values, ties."""
    field = st.sampled_from(["x", "y"])
    return st.tuples(stream(False, max_size=max_size, max_time=12, special=True), field, field)


def predicate(op: str | None, lc: str, hc: str) -> str:
    return "" if op is None else f" AND s[i].{lc} {op} s[i-1].{hc}"


@SOME
@given(wide_stream(), st.sampled_from([None, *OPS]), st.sampled_from([(4, 2), (6, 3), (5, 5)]), st.booleans(),
       st.booleans())  # fmt: skip
def test_count_of_kleene_is_the_references(monkeypatch, drawn, op, window, approx, keyed):
    events, lc, hc = drawn
    where = "[g]" if keyed else "TRUE"
    group = " GROUP-BY g" if keyed else ""
    text = (f"RETURN {'g, ' if keyed else ''}COUNT(*) PATTERN S+ s[] WHERE {where}{predicate(op, lc, hc)}{group} "
            f"WITHIN {window[0]} SLIDE {window[1]}")  # fmt: skip
    compile_or_skip(text, typed=False)
    got, want, spec = both(monkeypatch, text, events, approx=approx)
    if spec.algorithm == K.KLEENE_COUNT:
        assert select.shape(spec) == select.Variant.COUNT or spec.propagate
    rows_equal(got, want)


@SOME
@given(wide_stream(), st.sampled_from(["ALL", "COMPLETE", "MAXIMAL"]), st.sampled_from([(4, 2), (6, 3), (5, 5)]),
       st.booleans())  # fmt: skip
def test_detection_of_kleene_is_the_references(monkeypatch, drawn, trend_set, window, keyed):
    events, lc, hc = drawn
    text = (f"PATTERN S+ s[] WHERE {'[g]' if keyed else 'TRUE'}{predicate('=', lc, hc)} "
            f"WITHIN {window[0]} SLIDE {window[1]}")  # fmt: skip
    compile_or_skip(text, typed=False)
    got, want, spec = both(monkeypatch, text, events, trends=trend_set, max_trends=0)
    if trend_set != "MAXIMAL" and not spec.shared_graph:
        assert select.shape(spec) == select.Variant.WALK
    rows_equal(got, want)


@SOME
@given(queries(aggregation=True, special=True), stream(False, special=True))
def test_generated_aggregations_are_the_references(monkeypatch, text, events):
    compile_or_skip(text, typed=False)
    got, want, _ = both(monkeypatch, text, events)
    rows_equal(got, want)


@SOME
@given(queries(aggregation=False, special=True), stream(False, special=True), st.sampled_from(["ALL", "COMPLETE"]))
def test_generated_detections_are_the_references(monkeypatch, text, events, trend_set):
    compile_or_skip(text, typed=False)
    got, want, _ = both(monkeypatch, text, events, trends=trend_set, max_trends=0)
    rows_equal(got, want)


@pytest.mark.parametrize("op", [None, "<", "="])
@pytest.mark.parametrize("approx", [False, True])
def test_counts_past_int64_are_exact(monkeypatch, op, approx):
    """70 events of one value and rising times: 2^70 - 1 trends without a
    predicate or with =, past int64; with < each event extends the ones
    before it with a smaller x (here none: 70)."""
    events = [{"ts": t, "id": t, "x": 1, "y": 1.0, "g": "g", "k": "u"} for t in range(70)]
    text = f"RETURN COUNT(*) PATTERN S+ s[] WHERE TRUE{predicate(op, 'x', 'x')} WITHIN 100 SLIDE 100"
    got, want, spec = both(monkeypatch, text, events, approx=approx, exact="string")
    assert select.shape(spec) == select.Variant.COUNT
    rows_equal(got, want)
    expected = 70 if op == "<" else 2**70 - 1
    assert float(got[0]["COUNT(*)"]) == float(expected) if approx else got[0]["COUNT(*)"] == str(expected)


def test_nan_and_null_keys_pair_as_sql_says(monkeypatch):
    """NaN = NaN holds, null = null does not, -0.0 = 0.0 holds."""
    ys = [math.nan, math.nan, None, None, -0.0, 0.0, *DRAWN]
    events = [{"ts": t, "id": t, "y": y, "x": 1, "g": "g", "k": "u"} for t, y in enumerate(ys)]
    for text in ("PATTERN S+ s[] WHERE s[i].y = s[i-1].y WITHIN 100 SLIDE 100",
                 "RETURN COUNT(*) PATTERN S+ s[] WHERE s[i].y >= s[i-1].y WITHIN 100 SLIDE 100"):  # fmt: skip
        got, want, _ = both(monkeypatch, text, events, trends="ALL", max_trends=0)
        rows_equal(got, want)


def long_stream(draw_events):
    """64-400 events over few values and times: counts of 2^63 … 2^400."""
    n = draw_events.draw(st.integers(64, 400))
    xs = draw_events.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    step = draw_events.draw(st.sampled_from([1, 2, 3]))
    return [{"ts": t // step, "id": t, "x": x, "y": float(x), "g": "g", "k": "u"} for t, x in enumerate(xs)]


@settings(max_examples=budget(25), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.sampled_from([None, *OPS]), st.sampled_from(["x", "y"]))
def test_counts_in_wide_limbs_are_the_references(monkeypatch, data, op, col):
    """Counts far past int64 (ties in time, few distinct values) come from
    the limbs, digit for digit the reference's Python integers."""
    events = long_stream(data)
    text = f"RETURN COUNT(*) PATTERN S+ s[] WHERE TRUE{predicate(op, col, col)} WITHIN 1000 SLIDE 1000"
    got, want, spec = both(monkeypatch, text, events, exact="string")
    assert select.shape(spec) == select.Variant.COUNT
    rows_equal(got, want)


@pytest.mark.parametrize("limbs", [1, 2, 3])
def test_limbs_overflow_exactly_at_their_width(limbs):
    """n events at distinct times and no predicate make 2^n - 1 trends: it
    fits in L limbs for n = 64·L and not for one event more."""
    bits = 64 * limbs
    for n, fits in ((bits, True), (bits + 1, False)):
        t = np.arange(n, dtype=np.int64)
        zeros, ok = np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)
        totals, over = jit_wide.kleene_counts_wide(np.array([0]), np.array([n]), t, zeros, ok, zeros, ok, jit.NONE,
                                                   limbs)  # fmt: skip
        assert bool(over[0]) is not fits
        if fits:
            assert jit_wide.to_int(totals[0]) == 2**n - 1


def test_the_warm_up_runs_after_the_import_and_keeps_no_error():
    """`select.preload`'s warm-up (a kernel on a few rows, loading the
    compiled loops from the cache) runs in the thread once numba imported;
    an error in it is dropped (the run meets its own); none is started
    where no compiled variant may run."""
    from harness import plan_for

    _, phys = plan_for("RETURN COUNT(*) PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10")
    spec, calls = kernel_spec(phys), []

    def warm():
        calls.append(select.available())
        raise ArithmeticError("a warm-up's overflow")

    thread = select.preload(spec, select.MIN_ROWS, warm)
    thread.join()
    assert calls == ([True] if select.available() else [])
    assert select.preload(spec, select.MIN_ROWS - 1, warm) is None
    assert select.variant(select.always(spec), 1) == select.variant(spec, select.MIN_ROWS)  # its few rows: compiled


def test_compiled_loops_are_imported_ahead_only_where_they_may_run():
    """`select.preload` starts numba's import beside the engine's reading
    where a compiled variant may run on that many events (a COUNT(*) of
    E+ from MIN_ROWS events on), never for a smaller input, a shape only
    the reference runs, or compiled loops turned off."""
    from harness import plan_for

    def started(text: str, events: int, **options) -> bool:
        _, phys = plan_for(text, options=RunOptions.of(**options))
        thread = select.preload(kernel_spec(phys), events)
        if thread is not None:
            thread.join()
        return thread is not None

    count = "RETURN COUNT(*) PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10"
    assert started(count, select.MIN_ROWS)
    assert not started(count, select.MIN_ROWS - 1)
    assert not started(count, 10**6, compiled="never")
    assert started(count, 1, compiled="always")
    assert not started("RETURN SUM(e.x) PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10", 10**6)  # the reference's


def test_the_warm_up_keeps_no_batch():
    """The embedded engine's warm-up (`compiler.warm_up`) drops each batch
    as the kernel gives it: eight events can have millions of trends (2^8 a
    window, in each of a long WITHIN's windows), and holding them all would
    cost what the run itself streams through."""
    import weakref

    import pyarrow as pa

    from cetql.backends.embedded.compiler import warm_up

    alive, most = set(), []

    class Batch:
        pass

    def kernel(spec):
        assert spec.compiled == select.always(spec).compiled

        def fn(batches):
            for _ in range(5):
                b = Batch()
                alive.add(id(b))
                weakref.finalize(b, alive.discard, id(b))
                most.append(len(alive))
                yield b

        return fn

    from harness import plan_for

    _, phys = plan_for("RETURN COUNT(*) PATTERN E+ e[] WHERE e[i].x > e[i-1].x WITHIN 10")
    warm_up(kernel, kernel_spec(phys), pa.table({"x": [1]}))
    assert max(most) <= 2, most  # the one it gives, and the one before it (still named by the loop)
