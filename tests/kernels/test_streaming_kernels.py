"""The streaming operator's per-key logic (`kernels.stream`), replayed
without Spark: random queries (detection and aggregation, every trend set,
tumbling, copied and blocked sliding windows, equivalence, GROUP-BY) over
random streams cut into random micro-batches that arrive out of order.

The replay does what the stateful operator does — pack each micro-batch's
kernel rows by key, drop the events behind the watermark, keep the rest
with a timer per window end, and when the watermark passes a timer answer
the key's closed windows — and the watermark moves as Spark moves it (the
largest event time of the earlier micro-batches, minus the delay).  Then:

- every window is answered once, and its rows are the batch kernels' rows
  on the events that were not late (which equal the reference's, by
  test_kernels); with no late event, the batch rows themselves;
- an event is late exactly when its time was at or behind the watermark
  its micro-batch ran under, and is counted once;
- the state holds only events of open windows.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pyarrow as pa
from budget import budget
from checks import compile_or_skip
from generators import queries, stream
from harness import kernel_table, plan_for, run_local
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cetql.backends.spark import streaming
from cetql.base.options import RunOptions
from cetql.kernels import stream as S
from cetql.planner.physical.kernel import kernel_spec

FAST = settings(max_examples=budget(300), deadline=None, suppress_health_check=list(HealthCheck))
CLOCK = S.Clock(Fraction(1000))  # numeric seconds


def stream_spec(phys) -> S.StreamSpec:
    """The operator's spec as the Spark layer reads it off a streaming plan;
    for a batch plan, keyed as its groups are."""
    if phys.stream is not None:
        spec = streaming.stream_spec(phys)
        assert spec.clock == CLOCK
        return spec
    w = phys.windows
    copies = S.ONE if w.sharing is None else S.BLOCKS if w.block else S.COPY
    return S.StreamSpec(kernel_spec(phys), copies, streaming._number(w.length), streaming._number(w.slide), CLOCK)


def replay(plan, phys, events, batches, delay_ms):
    """(output rows, ids of late events, state sizes after each batch)."""
    spec = stream_spec(phys)
    table = kernel_table(plan, phys, events)
    ids = table.column(kernel_spec(phys).columns.id).to_pylist()
    group = list(kernel_spec(phys).columns.group)
    state: dict = {}  # key → list of tables
    timers: dict = {}  # key → set of clocks
    out, late_ids, sizes = [], set(), []
    watermark, latest = 0, None
    for batch in batches:
        chosen = {e["id"] for e in batch}
        rows = table.filter(pa.array([i in chosen for i in ids], type=pa.bool_()))
        for packed in S.pack_fn(group)(iter(rows.to_batches())):
            for r in range(packed.num_rows):
                key = tuple(packed.column(g)[r].as_py() for g in group)
                events_in = S.from_ipc([packed.column("blob")[r].as_py()])
                kept, late = S.accept(spec, events_in, watermark)
                dropped = set(events_in.column(spec.kernel.columns.id).to_pylist()) - set(
                    kept.column(spec.kernel.columns.id).to_pylist()
                )
                late_ids |= dropped
                if kept.num_rows:
                    state.setdefault(key, []).append(S.to_ipc(kept))
                    timers.setdefault(key, set()).add(S.next_timer(spec, kept))
        _fire(spec, state, timers, watermark, out)
        sizes.append(sum(S.from_ipc(v).num_rows for v in state.values()))
        clocks = [int(CLOCK.of(pa.array([e["ts"]]).to_numpy())[0]) for e in batch]
        latest = max([latest or 0, *clocks]) if clocks else latest
        if latest is not None:
            watermark = max(watermark, latest - delay_ms)
    _fire(spec, state, timers, 1 << 62, out)  # the end of the stream: every window closes
    assert not state and not any(timers.values()), "state left after every window closed"
    return out, late_ids, sizes


def _fire(spec, state, timers, watermark, out):
    for key in list(timers):
        due = sorted(t for t in timers[key] if t <= watermark)
        if not due:
            continue
        timers[key] -= set(due)
        closed = S.close(spec, S.from_ipc(state[key]), watermark)
        assert closed.windows, "a timer fired for a key with no window to answer"
        for b in closed.batches:
            out += pa.Table.from_batches([b]).to_pylist()
        if closed.remaining is None:
            del state[key]
            assert not timers[key], "timers left for a key whose windows all closed"
            del timers[key]
        else:
            state[key] = [S.to_ipc(closed.remaining)]
            timers[key].add(S.next_timer(spec, closed.remaining))
            assert min(timers[key]) > watermark


def micro_batches(draw, events, max_delay):
    """The events in random micro-batches, each shuffled, arriving up to
    `max_delay` seconds out of order."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    arrival = sorted(events, key=lambda e: e["ts"] + rnd.uniform(0, max_delay))
    cuts = sorted(rnd.sample(range(1, len(arrival)), min(len(arrival) - 1, rnd.randint(0, 5)))) if arrival else []
    out, last = [], 0
    for c in [*cuts, len(arrival)]:
        chunk = arrival[last:c]
        rnd.shuffle(chunk)
        out.append(chunk)
        last = c
    return out


def _key(row, plan):
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in row.items()))


def streamed(text, events, typed=False, options=None):
    """(logical, physical) plans of the query over the events read as a
    stream (blocks of at least 64 windows a key; detection with an id column)."""
    types = sorted({e["__type"] for e in events if e.get("__type")}) if typed else ()
    options = RunOptions.of(options, id_col="id")
    return plan_for(text, typed=typed, types=types, options=options, columns=sorted({k for e in events for k in e}),
                    streaming=True)  # fmt: skip


def _check(text, typed, events, batches, delay_ms, options, widen=True):
    plan, phys, _ = run_local(text, events, typed=typed, options=options)
    if widen:
        plan, phys = streamed(text, events, typed, options)
        assert phys.stream is not None and phys.windows.block >= 64
    got, late_ids, _ = replay(plan, phys, events, batches, delay_ms)
    kept = [e for e in events if e["id"] not in late_ids]
    _, _, want = run_local(text, kept, typed=typed, options=options)
    assert sorted(map(repr, (_key(r, plan) for r in got))) == sorted(map(repr, (_key(r, plan) for r in want))), text
    return late_ids


@FAST
@given(st.data(), st.booleans(), st.booleans(), st.sampled_from(["COMPLETE", "MAXIMAL", "ALL"]), st.booleans())
def test_streamed_windows_equal_batch_windows(data, typed, aggregation, trend_set, widen):
    """Keyed by the stream's blocks of windows, or as the batch plan keys its groups."""
    text = data.draw(queries(aggregation, repeated_types=not typed))
    trends = None if aggregation else trend_set
    options = RunOptions.of(trends=trends, max_trends=0)
    compile_or_skip(text, typed=typed, options=options)
    events = data.draw(stream(typed, max_size=9, max_time=20))
    assume(events)
    batches = micro_batches(data.draw, events, max_delay=data.draw(st.sampled_from([0, 3, 8])))
    delay_ms = data.draw(st.sampled_from([0, 2000, 100_000]))
    late = _check(text, typed, events, batches, delay_ms, options, widen)
    if delay_ms == 100_000:
        assert not late


@FAST
@given(st.data())
def test_late_events_are_exactly_those_behind_the_watermark(data):
    """Late = at or behind the watermark its micro-batch ran under (the
    largest time of the earlier micro-batches minus the delay), each event
    counted once however many windows (or blocks) it was copied into."""
    text = "PATTERN Check+ c[] WHERE c[i].x <= c[i-1].x\nWITHIN 6 SLIDE 2"
    if data.draw(st.booleans()):
        text = "RETURN COUNT(*) PATTERN Check+ c[] WHERE c[i].x <= c[i-1].x\nWITHIN 9 SLIDE 3"
    events = data.draw(stream(False, max_size=12, max_time=30))
    assume(events)
    batches = micro_batches(data.draw, events, max_delay=10)
    delay_ms = data.draw(st.sampled_from([0, 1000, 4000]))
    plan, phys = streamed(text, events)
    table = kernel_table(plan, phys, events)
    spec = stream_spec(phys)
    counted = 0
    watermark, latest, expected = 0, None, set()
    passing = set(table.column(kernel_spec(phys).columns.id).to_pylist())
    for batch in batches:
        expected |= {e["id"] for e in batch if e["id"] in passing and e["ts"] * 1000 + S.OFFSET <= watermark}
        chosen = {e["id"] for e in batch}
        rows = table.filter(
            pa.array([i in chosen for i in table.column(kernel_spec(phys).columns.id).to_pylist()], type=pa.bool_())
        )
        for packed in S.pack_fn(list(kernel_spec(phys).columns.group))(iter(rows.to_batches())):
            for blob in packed.column("blob").to_pylist():
                counted += S.accept(spec, S.from_ipc([blob]), watermark)[1]
        if batch:
            latest = max(latest or 0, max(e["ts"] * 1000 + S.OFFSET for e in batch))
            watermark = max(watermark, latest - delay_ms)
    assert counted == len(expected)
    _check(text, False, events, batches, delay_ms, RunOptions.of(max_trends=0))


def test_state_holds_open_windows_only():
    """A long stream in time order: the events kept stay within the windows
    still open, however long the stream grows (GRETA's pane purge)."""
    text = "PATTERN Check+ c[] WHERE c[i].x <= c[i-1].x\nWITHIN 10 SLIDE 2"
    rnd = random.Random(7)
    events = [{"ts": t, "x": rnd.randint(0, 3), "g": "g", "k": "u", "id": t} for t in range(400)]
    for plan, phys in (plan_for(text, columns=("ts", "x", "g", "k", "id")), streamed(text, events)):
        batches = [events[i : i + 10] for i in range(0, len(events), 10)]
        _, _, sizes = replay(plan, phys, events, batches, 0)
        # an event is in at most 2 blocks; the open windows span at most 10 + 10 + 2 time units
        assert max(sizes) <= 2 * (10 + 10 + 2 + 2)
        assert max(sizes[len(sizes) // 2 :]) <= max(sizes[: len(sizes) // 2]) + 4


def test_clock_keeps_window_ends_exact():
    """An event before a window's end never has a later clock than the end;
    fractional ends are rounded up a millisecond."""
    clock = S.Clock(Fraction(1, 1000))  # microseconds
    ts = pa.array([999, 1000, 1001, 1999, 2000]).to_numpy()
    assert (clock.of(ts) - S.OFFSET).tolist() == [0, 1, 1, 1, 2]
    assert clock.at(2000) - S.OFFSET == 2
    seconds = S.Clock(Fraction(1000))
    assert seconds.at(0.5) - S.OFFSET == 501
    assert (seconds.of(pa.array([0.4999, 0.5]).to_numpy()) - S.OFFSET).tolist() == [499, 500]
