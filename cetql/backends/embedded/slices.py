"""The kernels over the sorted kernel input, on every core: the table cut
at window boundaries (a group never spans two slices), one thread a slice
(the compiled loops release the GIL), batches in table order."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

SPLIT_FROM = 100_000  # rows of the kernels' input from which they run on every core
BATCH_ROWS = 1 << 20


def kernels(fn, table: pa.Table, window: str, workers: int | None = None) -> Iterator[pa.RecordBatch]:
    """`fn` (a kernel, as `mapInArrow` calls it) over the sorted table, cut
    at window boundaries into one slice per core (at most 8), the slices run
    at once in threads; batches in table order, each slice a few batches
    ahead at most (what the kernels hold is what one task holds on Spark);
    a reader that stops stops them."""
    workers = workers or min(os.cpu_count() or 1, 8)
    if workers < 2 or table.num_rows < SPLIT_FROM:
        yield from fn(iter(table.to_batches(max_chunksize=BATCH_ROWS)))
        return
    wk = table.column(window).to_numpy()
    cuts = [0]
    for i in range(1, workers):
        at = int(np.searchsorted(wk, wk[len(wk) * i // workers], side="left"))  # a window's first row: a group's
        if at > cuts[-1]:
            cuts.append(at)
    cuts.append(len(wk))
    stop = threading.Event()
    queues = [queue.Queue(maxsize=2) for _ in cuts[1:]]
    for (a, z), q in zip(zip(cuts, cuts[1:]), queues):
        threading.Thread(target=_work, args=(fn, table.slice(a, z - a), q, stop), daemon=True).start()
    try:
        for q in queues:
            while (item := q.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
    finally:
        stop.set()


_END = object()


def _work(fn, part: pa.Table, out: queue.Queue, stop: threading.Event) -> None:
    try:
        for batch in fn(iter(part.to_batches(max_chunksize=BATCH_ROWS))):
            while not stop.is_set():
                try:
                    out.put(batch, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
        out.put(_END)
    except BaseException as e:  # noqa: BLE001 - handed to the reader, raised there
        out.put(e)
