"""The kernels over the sorted kernel input, on every core: the table cut
at window boundaries (a group never spans two slices), one thread a slice
(the compiled loops release the GIL), batches in table order."""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

SPLIT_FROM = 100_000  # rows of the kernels' input from which they run on every core
BATCH_ROWS = 1 << 20
# Bytes of output the slices not yet read may hold, together: a later slice runs ahead of the reader (it is read
# after every slice before it) until its share is full, so the slices run at once when their output is small, and
# what waits in memory stays bounded when it is not.  Each slice may always hold two batches (each at most
# options.MAX_BATCH_EVENTS event ids), as a Spark task's output queue does.
AHEAD_BYTES = 256 << 20
AHEAD_BATCHES = 2


def cut(table: pa.Table, window: str, workers: int | None = None) -> list[pa.Table]:
    """The sorted table cut at window boundaries (a group never spans two
    slices) into one slice per core (at most 8), in table order; the whole
    table under SPLIT_FROM rows or on one core."""
    workers = workers or min(os.cpu_count() or 1, 8)
    if workers < 2 or table.num_rows < SPLIT_FROM:
        return [table]
    wk = table.column(window).to_numpy()
    cuts = [0]
    for i in range(1, workers):
        at = int(np.searchsorted(wk, wk[len(wk) * i // workers], side="left"))  # a window's first row: a group's
        if at > cuts[-1]:
            cuts.append(at)
    cuts.append(len(wk))
    return [table.slice(a, z - a) for a, z in zip(cuts, cuts[1:])]


def run(fn, part: pa.Table) -> Iterator[pa.RecordBatch]:
    """`fn` (a kernel, as `mapInArrow` calls it) over one slice."""
    return fn(iter(part.to_batches(max_chunksize=BATCH_ROWS)))


def kernels(fn, parts: list[pa.Table]) -> Iterator[pa.RecordBatch]:
    """`fn` over the sorted table's slices (`cut`), run at once in threads;
    batches in table order, each later slice ahead of the reader by at most
    its share of AHEAD_BYTES (or two batches); a reader that stops stops
    them."""
    if len(parts) == 1:
        yield from run(fn, parts[0])
        return
    stop = threading.Event()
    share = AHEAD_BYTES // max(1, len(parts) - 1)  # the first slice is read as it runs
    queues = [Ahead(0 if i == 0 else share, stop) for i in range(len(parts))]
    for part, q in zip(parts, queues):
        threading.Thread(target=_work, args=(fn, part, q), daemon=True).start()
    try:
        for q in queues:
            while (item := q.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
    finally:
        stop.set()


_END = object()


class Ahead:
    """One slice's batches not yet read: `put` waits while it holds more
    than AHEAD_BATCHES batches and more than `limit` bytes, and returns
    False, keeping nothing, once the reader stopped (whether it waited or
    not); `get` waits for the next."""

    def __init__(self, limit: int, stop: threading.Event):
        self.limit, self.stop = limit, stop
        self.items: deque = deque()
        self.bytes = 0
        self.cond = threading.Condition()

    def put(self, item) -> bool:
        size = item.nbytes if isinstance(item, pa.RecordBatch) else 0
        with self.cond:
            while not self.stop.is_set() and len(self.items) >= AHEAD_BATCHES and self.bytes + size > self.limit:
                self.cond.wait(0.1)
            if self.stop.is_set():  # the reader has gone: no batch is kept, and the kernel stops at its next
                return False
            self.items.append((item, size))
            self.bytes += size
            self.cond.notify_all()
        return True

    def get(self):
        with self.cond:
            while not self.items:
                self.cond.wait()
            item, size = self.items.popleft()
            self.bytes -= size
            self.cond.notify_all()
        return item


def _work(fn, part: pa.Table, out: Ahead) -> None:
    try:
        for batch in run(fn, part):
            if not out.put(batch):
                return
        out.put(_END)
    except BaseException as e:  # noqa: BLE001 - handed to the reader, raised there
        out.put(e)
