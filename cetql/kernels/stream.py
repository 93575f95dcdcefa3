"""Windows of a stream: what the stateful operator keeps for a key, when a
window closes, and how a closed window's events reach the batch kernels.

The operator (`cetql.planner.spark.streaming`) is keyed exactly as the batch
kernels' groups are: (window, partition keys), or (block of windows,
partition keys) where the plan shares blocks.  A key's state is its events
of open windows, as Arrow IPC chunks; this module decides, for one key:

    accept(spec, events, watermark)  the events not behind the watermark
                                     (and how many were, counted once each)
    next_timer(spec, events)         the clock time at which the earliest of
                                     their windows closes
    close(spec, events, watermark)   the rows of every window the watermark
                                     has passed (by `detect_table` or
                                     `aggregate_table`, as in batch), and
                                     the events still in an open window

The clock is Spark's event time: whole milliseconds since an origin
(`OFFSET`, so that no event is behind the watermark Spark starts at, 0).
A window [start, end) closes when the watermark reaches `clock(end)`; an
event is behind the watermark when its clock is at or below it.  Since
`t < end` gives `clock(t) <= clock(end)`, an event accepted after its window
closed would be behind the watermark: no emitted window ever changes.

Pure pyarrow and numpy: tests run these functions without Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa

from cetql.base.errors import CetqlError
from cetql.kernels import spec as K
from cetql.kernels.batches import group_starts
from cetql.kernels.process import aggregate_table, detect_table
from cetql.kernels.workload import workload_table
from cetql.kernels.workload_spec import WorkloadSpec

OFFSET = 1 << 50  # the clock's origin: time 0 of the column is 2^50 ms (about 35,700 years) after Spark's 0
MAX_CLOCK = (1 << 63) // 1000 - 1  # Spark keeps event time in microseconds: the largest clock it can hold

# How windows reach keys, as the plan's Windows operator chose:
ONE = "one"  # tumbling: an event is in one window, a key per window
COPY = "copy"  # a key per window, an event copied into each of its windows
BLOCKS = "blocks"  # a key per block of windows, an event in at most two blocks


@dataclass(frozen=True)
class Clock:
    """Milliseconds of Spark's event-time clock per unit of the time column:
    `per_unit` (1000 for seconds, 1 for milliseconds, 1/1000 for
    microseconds, …)."""

    per_unit: Fraction

    def of(self, times: np.ndarray) -> np.ndarray:
        """The clock of each time (int64): exact for integer times."""
        num, den = self.per_unit.numerator, self.per_unit.denominator
        if times.dtype.kind in "iu":
            times = times.astype(np.int64)
            if len(times) and int(np.abs(times).max()) > (MAX_CLOCK - OFFSET) * den // num:
                raise CetqlError(
                    f"a time value ({int(np.abs(times).max())}) is too large for the stream's millisecond clock; "
                    "give the time column's unit (--time-unit ms, us or ns)"
                )
            return times * num // den + OFFSET
        out = np.floor(times * float(self.per_unit))
        if len(out) and np.abs(out).max() > MAX_CLOCK - OFFSET:
            raise CetqlError("a time value is too large for the stream's millisecond clock; give --time-unit")
        return out.astype(np.int64) + OFFSET

    def at(self, t) -> int:
        """The clock at which a window ending at `t` closes: exact for an
        integer end, one millisecond later for a fractional one (so that no
        event of the window, rounded, lies past it)."""
        if isinstance(t, int):
            return t * self.per_unit.numerator // self.per_unit.denominator + OFFSET
        return int(np.floor(t * float(self.per_unit))) + 1 + OFFSET

    def time(self, clock: int) -> float:
        """The time-column value of a clock reading (for messages)."""
        return float(Fraction(clock - OFFSET) / self.per_unit)


@dataclass(frozen=True)
class StreamSpec:
    """What the stateful operator needs: the batch kernel's spec, how
    windows reach keys, the window, and the clock."""

    kernel: K.DetectSpec | K.AggregateSpec | WorkloadSpec  # a workload's: its exchange's members, at once
    copies: str  # ONE, COPY or BLOCKS
    length: int | float  # the window, in time-column units (as the kernel's Context)
    slide: int | float
    clock: Clock

    @property
    def detect(self) -> bool:
        return isinstance(self.kernel, K.DetectSpec)

    def end_clock(self, k: int) -> int:
        """The clock at which window k closes."""
        return self.clock.at(k * self.slide + self.length)


# ---------------------------------------------------------------- Arrow IPC


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(blobs) -> pa.Table | None:
    """One table of the chunks (None without any)."""
    tables = [pa.ipc.open_stream(b).read_all() for b in blobs if b is not None]
    if not tables:
        return None
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def pack_fn(group: list[str]):
    """The function given to `mapInArrow` before the operator: the rows of a
    Spark partition as one row per key — the key's columns and its events
    as an Arrow IPC chunk (so that they reach the operator with their exact
    types, where its pandas rows would turn a nullable integer into a
    float)."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        table = pa.concat_tables(tables).combine_chunks()
        table = table.sort_by([(c, "ascending") for c in group])
        starts = group_starts(table, group)
        ends = [*starts[1:], table.num_rows]
        at = pa.array(starts, type=pa.int64())
        keys = [table.column(c).take(at).combine_chunks() for c in group]
        blobs = pa.array([to_ipc(table.slice(a, z - a)) for a, z in zip(starts, ends)], type=pa.binary())
        yield pa.RecordBatch.from_arrays([*keys, blobs], names=[*group, "blob"])

    return fn


def unpack_fn(schema: pa.Schema):
    """The function given to `mapInArrow` after the operator: its chunks of
    result rows, as rows of the kernel's output schema."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for blob in batch.column(0).to_pylist():
                if blob is None:
                    continue
                for b in pa.ipc.open_stream(blob):
                    yield pa.Table.from_batches([b]).cast(schema).to_batches()[0] if b.num_rows else b

    return fn


# ---------------------------------------------------------------- one key


def _windows(spec: StreamSpec, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The first and last window of each event within its key."""
    c = spec.kernel.columns
    k = np.asarray(table.column(c.group[0]).to_numpy(), dtype=np.int64)
    if spec.copies != BLOCKS:
        return k, k
    lo = np.asarray(table.column(c.window_lo).to_numpy(), dtype=np.int64)
    hi = np.asarray(table.column(c.window_hi).to_numpy(), dtype=np.int64)
    return np.maximum(lo, k * c.block), np.minimum(hi, k * c.block + c.block - 1)


def _times(spec: StreamSpec, table: pa.Table) -> np.ndarray:
    return table.column(spec.kernel.columns.time).to_numpy()


def _first(spec: StreamSpec, table: pa.Table) -> np.ndarray:
    """Whether a row is its event's first copy (an event is counted once)."""
    c = spec.kernel.columns
    k = np.asarray(table.column(c.group[0]).to_numpy(), dtype=np.int64)
    if spec.copies == ONE:
        return np.ones(len(k), dtype=bool)
    if spec.copies == BLOCKS:
        lo = np.asarray(table.column(c.window_lo).to_numpy(), dtype=np.int64)
        return k == lo // c.block
    # copy: the event's first window, as the Windows operator computes it
    t = _times(spec, table)
    w, s = spec.length, spec.slide
    if t.dtype.kind in "iu" and isinstance(w, int) and isinstance(s, int):
        first = (t.astype(np.int64) - w) // s + 1
    else:
        first = np.floor((t.astype(np.float64) - w) / s).astype(np.int64) + 1
    return k == first


def accept(spec: StreamSpec, table: pa.Table, watermark: int) -> tuple[pa.Table, int]:
    """(the events not behind the watermark, how many events were — each
    counted once, however many windows it was copied into)."""
    late = spec.clock.of(_times(spec, table)) <= watermark
    if not late.any():
        return table, 0
    dropped = int(np.count_nonzero(late & _first(spec, table)))
    return table.filter(pa.array(~late)), dropped


def _union(lo: np.ndarray, hi: np.ndarray) -> list[int]:
    """The windows some event is in (event i: windows lo[i] … hi[i])."""
    if not len(lo):
        return []
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)  # sorted by first window
    ks: list[int] = []
    covered = None  # windows below this are listed
    for a, z in pairs.tolist():
        a = a if covered is None else max(a, covered)
        ks += range(a, z + 1)
        covered = max(covered or a, z + 1)
    return ks


def next_timer(spec: StreamSpec, table: pa.Table) -> int:
    """The clock at which the earliest window of these events (in their key)
    closes: a key keeps a timer for its earliest open window, and sets the
    next one when that fires (every window whose end the watermark has
    passed by then closes with it)."""
    lo, _ = _windows(spec, table)
    return spec.end_clock(int(lo.min()))


@dataclass
class Closed:
    """What closing a key's windows gave."""

    batches: list[pa.RecordBatch]  # the result rows
    remaining: pa.Table | None  # the events still in an open window (None: none)
    windows: int  # windows answered
    purged: int  # event rows dropped from the state


def close(spec: StreamSpec, table: pa.Table, watermark: int) -> Closed:
    """Answer every window of the key the watermark has passed, with the
    batch kernels, and keep the events of its open windows only."""
    lo, hi = _windows(spec, table)
    present = np.unique(np.concatenate([lo, hi]))
    ends = {int(k): spec.end_clock(int(k)) for k in range(int(present.min()), int(present.max()) + 1)}
    closing = [k for k, at in ends.items() if at <= watermark]
    if not closing:
        return Closed([], table, 0, 0)
    last = max(closing)
    c = spec.kernel.columns
    chosen = table.filter(pa.array(lo <= last))
    if spec.copies == BLOCKS:  # the kernel evaluates the windows its rows span: the closed ones
        chosen = _set(chosen, c.window_hi, np.minimum(hi[lo <= last], last))
        chosen = _set(chosen, c.window_lo, lo[lo <= last])
    order = [(c.time, "ascending"), (c.id, "ascending")]
    chosen = chosen.sort_by(order)
    run = workload_table if isinstance(spec.kernel, WorkloadSpec) else detect_table if spec.detect else aggregate_table
    batches = list(run(spec.kernel, chosen))
    answered = len(_union(lo[lo <= last], np.minimum(hi[lo <= last], last)))
    keep = hi > last
    if not keep.any():
        return Closed(batches, None, answered, table.num_rows)
    remaining = table.filter(pa.array(keep))
    if spec.copies == BLOCKS:
        remaining = _set(remaining, c.window_lo, np.maximum(lo[keep], last + 1))
    return Closed(batches, remaining, answered, int(np.count_nonzero(~keep)))


def _set(table: pa.Table, name: str, values: np.ndarray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))
