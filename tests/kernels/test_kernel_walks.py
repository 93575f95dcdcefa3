"""The worked example of `kernels.walks` (the `a1 b2 a3 b4` graph of
`(SEQ(A+ a[], B b))+`), checked as the docstring states it: node ids, the
per-node facts, the trends of each set, a window of a block; and the trends
against the reference."""

from checks import detected, wanted
from harness import kernel_table, plan_for

from cetql.base.options import RunOptions, TrendSet
from cetql.kernels import process
from cetql.kernels.graph import facts
from cetql.kernels.walks import Walk, accepts
from cetql.planner.physical.kernel import kernel_spec

TEXT = "PATTERN (SEQ(A+ a[], B b))+ WITHIN 10"
EVENTS = [{"id": t, "ts": t, "__type": x} for x, t in (("A", 1), ("B", 2), ("A", 3), ("B", 4))]


def _graph():
    plan, phys = plan_for(TEXT, typed=True, types=["A", "B"], options=RunOptions.of(max_trends=0),
                          columns=sorted(EVENTS[0]))  # fmt: skip
    ((rows, g),) = process.group_graphs(kernel_spec(phys), kernel_table(plan, phys, EVENTS))
    return g


def test_the_worked_example_graph():
    g = _graph()
    assert g.names == ["a", "b"] and g.S == 2
    a1, b2, a3, b4 = 0, 3, 4, 7
    assert [v for v in range(len(g)) if g.node[v]] == [a1, b2, a3, b4]
    assert {v: list(g.succ[v]) for v in (a1, b2, a3, b4)} == {a1: [b2, a3, b4], b2: [a3], a3: [b4], b4: []}
    f = facts(g)
    assert [f.need[v] for v in (a1, b2, a3, b4)] == [3, 3, 7, 7]
    assert [f.first_end[v] for v in (a1, b2, a3, b4)] == [3, 8, 7, 8]
    assert [f.last_start[v] for v in (a1, b2, a3, b4)] == [-1, 0, 0, 4]
    assert [Walk(g, TrendSet.COMPLETE).emit_at[v] for v in (a1, b2, a3, b4)] == [-1, 8, -1, 8]


def test_the_worked_example_trends():
    g = _graph()
    found = {ts: sorted(tuple(p) for p in Walk(g, ts).trends()) for ts in TrendSet}
    a1, b2, a3, b4 = 0, 3, 4, 7
    assert found[TrendSet.ALL] == sorted([(a1, b2), (a1, b2, a3, b4), (a1, a3, b4), (a1, b4), (a3, b4)])
    assert found[TrendSet.COMPLETE] == sorted([(a1, b2), (a1, b2, a3, b4), (a1, a3, b4), (a1, b4)])
    assert found[TrendSet.MAXIMAL] == sorted([(a1, b2), (a1, b2, a3, b4)])
    assert list(Walk(g, TrendSet.COMPLETE).window(2, 4)) == [[a3, b4]]  # events a3 b4 only
    assert list(Walk(g, TrendSet.COMPLETE).window(0, 2)) == [[a1, b2]]
    for ts in TrendSet:
        assert detected(TEXT, EVENTS, True, ts.value) == wanted(TEXT, EVENTS, True, ts.value)


def test_acceptance():
    for ts in TrendSet:
        assert not accepts(ts, ends=False)
        assert accepts(ts, ends=True)
        assert accepts(ts, ends=True, vetoed=True) == accepts(ts, ends=True, appendable=True) == (ts is TrendSet.ALL)
