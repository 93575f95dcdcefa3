"""The embedded engine's kernels on every core (`embedded.slices`): the
sorted kernel input cut at window boundaries, one thread a slice; the
batches come out in table order, exactly as one thread gives them; a later
slice runs ahead of the reader while its output fits its share of
AHEAD_BYTES (so the slices do run at once), and never holds more than that
share or two batches, whichever is more."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest
from budget import budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.backends.embedded import slices

SOME = settings(max_examples=budget(100), deadline=None, suppress_health_check=list(HealthCheck))


def _table(windows: list[int]) -> pa.Table:
    ws = sorted(windows)
    return pa.table({"w": pa.array(ws, pa.int64()), "x": pa.array(range(len(ws)), pa.int64())})


def _fn(chunk: int):
    """A kernel's shape: each input batch's rows as output batches of `chunk` rows."""

    def fn(batches):
        for b in batches:
            for at in range(0, b.num_rows, chunk):
                part = b.slice(at, chunk)
                yield pa.record_batch([part.column(0), pa.compute.multiply(part.column(1), 2)], names=["w", "y"])

    return fn


@SOME
@given(st.lists(st.integers(0, 30), min_size=1, max_size=300), st.integers(2, 8), st.integers(1, 40),
       st.sampled_from([0, 64, 1 << 20]))  # fmt: skip
def test_slices_give_one_threads_batches_in_order(monkeypatch, windows, workers, chunk, ahead):
    monkeypatch.setattr(slices, "SPLIT_FROM", 1)
    monkeypatch.setattr(slices, "AHEAD_BYTES", ahead)
    table, fn = _table(windows), _fn(chunk)
    alone = pa.Table.from_batches(list(fn(iter(table.to_batches()))))
    seen = []
    put = slices.Ahead.put

    def watched(self, item):
        ok = put(self, item)
        seen.append((len(self.items), self.bytes, self.limit))
        return ok

    monkeypatch.setattr(slices.Ahead, "put", watched)
    together = pa.Table.from_batches(list(slices.kernels(fn, slices.cut(table, "w", workers))), schema=alone.schema)
    assert together.equals(alone)
    # what a slice holds: two batches, or more only within its share
    assert all(n <= slices.AHEAD_BATCHES or held <= limit for n, held, limit in seen)


def test_a_later_slice_runs_to_its_end_while_the_first_is_read(monkeypatch):
    """The first slice's kernel waits for the second to finish: with the
    second's output within its share, both end (a queue of two batches
    would hold the second slice back until the first was read: no end)."""
    monkeypatch.setattr(slices, "SPLIT_FROM", 1)
    table = _table([0] * 50 + [1] * 50)
    second_done = threading.Event()

    def fn(batches):
        first = None
        for b in batches:
            first = b.column(0)[0].as_py() if first is None else first
            if first == 0:
                second_done.wait(60)
                assert second_done.is_set(), "the second slice was held back"
            for at in range(b.num_rows):
                yield b.slice(at, 1)
        if first == 1:
            second_done.set()

    got = pa.Table.from_batches(list(slices.kernels(fn, slices.cut(table, "w", 2))))
    assert got.column("w").to_pylist() == [0] * 50 + [1] * 50


def test_a_kernels_error_reaches_the_reader_and_stops_the_slices(monkeypatch):
    monkeypatch.setattr(slices, "SPLIT_FROM", 1)
    table = _table([0] * 10 + [1] * 10 + [2] * 10)

    def fn(batches):
        for b in batches:
            if b.column(0)[0].as_py() == 1:
                raise ArithmeticError("overflow in slice two")
            yield b

    with pytest.raises(ArithmeticError, match="slice two"):
        list(slices.kernels(fn, slices.cut(table, "w", 3)))


def test_a_reader_that_stops_stops_a_later_slice_within_its_share(monkeypatch):
    """A later slice whose output fits its share puts without waiting: once
    the reader has stopped, its next put still ends it (its kernel is not
    run to the slice's end for batches no one reads)."""
    monkeypatch.setattr(slices, "SPLIT_FROM", 1)
    table = _table([0] * 10 + [1] * 10)
    closed, ended = threading.Event(), threading.Event()
    made = []

    def fn(batches):
        for b in batches:
            if b.column(0)[0].as_py() == 0:
                yield b
                continue
            try:
                for at in range(b.num_rows):
                    if at == 1:
                        closed.wait(60)
                    made.append(at)
                    yield b.slice(at, 1)
            finally:
                ended.set()

    it = slices.kernels(fn, slices.cut(table, "w", 2))
    next(it)
    it.close()
    closed.set()
    assert ended.wait(60)
    assert len(made) <= 2, made  # [0] where the reader stopped before the first put
