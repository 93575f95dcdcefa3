"""The in-process compiler: a physical plan → Arrow batches of its result,
one function per operator, as `planner.spark.compiler` spells the same
plan for Spark (and deciding nothing either):

    scan → filter → windows → partition → sort → detect | aggregate

The kernels are the ones Spark's Python workers run (`kernels.process`),
called once on the whole sorted table.  Only plans whose `engine` is LOCAL
come here (`physical.engine` says which and why).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cetql.backends.embedded.exprs import OVERFLOW, ArithmeticOverflow, checked, evaluate
from cetql.backends.inputs.refusals import (
    ID_ADVICE,
    ID_REFUSED,
    NULL_ID,
    REPEATED_ID,
    ROWS_ADVICE,
    check_id_type,
    no_time,
)
from cetql.backends.inputs.sources import arrow_to_spark
from cetql.base.errors import CetqlError
from cetql.kernels import process
from cetql.planner.logical import plan as L
from cetql.planner.logical.plan import InvalidRows
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Bounds, Detect, PhysicalPlan, TimeCast

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class RowsRefused(CetqlError):
    """Input rows the scan refuses (a null time, a null or repeated id)."""

    exit_code = 1


@dataclass
class Result:
    """The result's schema and batches (lazy: the kernels run as they are
    read), and what the scan dropped (--drop-invalid)."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    dropped: int = 0


def run(plan: PhysicalPlan) -> Result:
    """The plan's result, read from its input files."""
    events, dropped = scan(plan, read(plan))
    kernel_in = sort(plan, partition(plan, windows(plan, filter_events(plan, events))))
    spec = kernel_spec(plan)
    if isinstance(plan.root, Detect):
        fn, schema = process.detect_fn(spec), process.detect_schema(spec, kernel_in.schema)
    else:
        fn, schema = process.aggregate_fn(spec), process.aggregate_schema(spec, kernel_in.schema)
    out_schema, project = output(plan, schema)
    batches = (project(b) for b in kernels(fn, kernel_in, plan.names.window))
    return Result(out_schema, batches, dropped)


def kernels(fn, table: pa.Table, window: str, workers: int | None = None) -> Iterator[pa.RecordBatch]:
    """`fn` (a kernel, as `mapInArrow` calls it) over the sorted table, cut
    at window boundaries into one slice per core (at most 8), the slices run
    at once in threads (the compiled loops release the GIL); batches in
    table order, each slice a few batches ahead at most (what the kernels
    hold is what one task holds on Spark); a reader that stops stops them."""
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
    END = object()

    def work(part: pa.Table, out: queue.Queue) -> None:
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
            out.put(END)
        except BaseException as e:  # noqa: BLE001 - handed to the reader, raised there
            out.put(e)

    queues = [queue.Queue(maxsize=2) for _ in cuts[1:]]
    for (a, z), q in zip(zip(cuts, cuts[1:]), queues):
        threading.Thread(target=work, args=(table.slice(a, z - a), q), daemon=True).start()
    try:
        for q in queues:
            while (item := q.get()) is not END:
                if isinstance(item, BaseException):
                    raise item
                yield item
    finally:
        stop.set()


SPLIT_FROM = 100_000  # rows of the kernels' input from which they run on every core
BATCH_ROWS = 1 << 20


# ---------------------------------------------------------------- Scan


def read(plan: PhysicalPlan) -> list[pa.Table]:
    """Each input's columns that the plan reads, from its Parquet files in
    order (in the order of the scan's inputs)."""
    import pyarrow.parquet as pq

    s = plan.scan
    by_type = {f.type_name: f.files for f in plan.logical.find(L.Scan).inputs.each}
    wanted = list(dict.fromkeys([s.time_col, *([s.id_col] if s.id_col else []), *s.checked]))
    out = []
    for si in s.inputs:
        files = by_type[si.type_name]
        present = [c for c in wanted if c in dict(files.arrow)]
        tables = [pq.ParquetFile(f).read(columns=present) for f in files.paths]  # (not read_table: pandas comes too)
        out.append(pa.concat_tables(tables) if len(tables) > 1 else tables[0])
    return out


def _time(cast: TimeCast, col) -> pa.Array:
    if cast == TimeCast.MICROS:  # the instant's count of its own unit (UTC), in microseconds
        raw = pc.cast(col, pa.int64())
        scale = {"s": 1_000_000, "ms": 1_000, "us": 1}[col.type.unit]
        return raw if scale == 1 else checked(pc.multiply_checked, raw, scale)
    if cast == TimeCast.NUMBER:
        return pc.cast(col, pa.int64())
    raise TypeError(f"the in-process engine does not read times by {cast}")


def _repeated(text: str | None, n: int) -> pa.Array:
    """`text` n times, as a string array (built from its buffers: pyarrow's
    conversions of Python values load pandas, a fifth of a second)."""
    if text is None:
        return pa.nulls(n, pa.string())
    data = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def scan(plan: PhysicalPlan, tables: list[pa.Table]) -> tuple[pa.Table, int]:
    """The events with id, time and type columns, the inputs one after the
    other (a column an input lacks is null there, as Spark's unionByName
    gives it); rows with a null time fail the query (or are dropped,
    counted), and so do null or repeated ids."""
    op, n = plan.scan, plan.names
    frames, before = [], 0
    for si, table in zip(op.inputs, tables):
        time = pc.cast(_time(si.time_cast, table.column(op.time_col).combine_chunks()), pa.int64())
        # ids from input order: row numbers over the inputs one after the other (only aggregation, where no id is shown)
        ident = table.column(op.id_col).combine_chunks() if op.id_col else pa.array(np.arange(table.num_rows) + before)
        before += table.num_rows
        kind = _repeated(si.type_name, table.num_rows)
        for name, col in ((n.id, ident), (n.time, time), (n.type, kind)):
            table = table.append_column(name, col)
        frames.append(table)
    out = frames[0] if len(frames) == 1 else _union(frames)
    rows = out.num_rows
    timeless = pc.is_null(out.column(n.time))
    missing = pc.sum(timeless).as_py() or 0
    if missing and op.invalid == InvalidRows.REJECT:
        raise RowsRefused(no_time(op.time_col, missing) + ROWS_ADVICE)
    if missing:
        out = out.filter(pc.invert(timeless))
    if op.id_col:
        check_id_type(op.id_col, arrow_to_spark(out.schema.field(op.id_col).type))
        out = _check_ids(out, n.id, op.id_col, drop=op.invalid == InvalidRows.DROP)
    return out, rows - out.num_rows


def _union(frames: list[pa.Table]) -> pa.Table:
    """Tables one after the other, by column name; a missing column null
    (the plan sent inputs whose columns differ in type to Spark)."""
    fields: dict[str, pa.Field] = {}
    for f in frames:
        for one in f.schema:
            fields.setdefault(one.name, one)
    schema = pa.schema(list(fields.values()))
    full = []
    for f in frames:
        for one in schema:
            if one.name not in f.column_names:
                f = f.append_column(one.name, pa.nulls(f.num_rows, one.type))
        full.append(f.select(schema.names).cast(schema))
    return pa.concat_tables(full)


def _check_ids(table: pa.Table, id_col: str, label: str, *, drop: bool) -> pa.Table:
    """Ids present and unique: as `spark.checks.check_ids` (its messages)."""
    ids = table.column(id_col).combine_chunks()
    if not ids.null_count and pa.types.is_integer(ids.type):
        a = ids.to_numpy()
        if len(a) < 2 or bool((a[1:] > a[:-1]).all()):  # ids in increasing order (the usual case): unique
            return table
    counts = pc.value_counts(ids)
    values, n = counts.field("values"), counts.field("counts")
    repeated = values.filter(pc.and_(pc.greater(n, 1), pc.is_valid(values)))
    nulls = pc.sum(pc.is_null(ids)).as_py() or 0
    if drop:
        keep = pc.and_(pc.is_valid(ids), pc.invert(pc.is_in(ids, value_set=repeated)))
        return table.filter(keep) if (nulls or len(repeated)) else table
    refused = ID_REFUSED.removeprefix("cetql: ")
    if nulls:
        raise RowsRefused(f"{refused}: {NULL_ID.format(label=label)}{ID_ADVICE}")
    if len(repeated):
        first = repeated[0]
        times = pc.sum(pc.equal(ids, first)).as_py()
        before, between, after = (x.format(label=label) for x in REPEATED_ID)
        raise RowsRefused(f"{refused}: {before}{first.as_py()}{between}{times}{after}{ID_ADVICE}")
    return table


# ---------------------------------------------------------------- Filter


def _true(a: pa.Array) -> np.ndarray:
    """Where a condition is true (null: false)."""
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), dtype=bool)


def filter_events(plan: PhysicalPlan, table: pa.Table) -> pa.Table:
    """Constant conditions, then one mask column per position; events that
    may take no position are dropped."""
    op = plan.filter
    if op.constant is not None:
        table = table.filter(pa.array(_true(evaluate(op.constant, table))))
    keep = np.zeros(table.num_rows, dtype=bool)
    for m in op.masks:
        mask = _true(evaluate(m.definition, table))
        table = table.append_column(m.column, pa.array(mask))
        keep |= mask
    return table if keep.all() else table.filter(pa.array(keep))


# ---------------------------------------------------------------- Windows


def windows(plan: PhysicalPlan, table: pa.Table) -> tuple[pa.Table, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(events, each row's window or block index, first and last window)
    — rows are repeated later, by `partition`: windows [k*s, k*s + w) in
    64-bit integers, failing as Spark's ANSI arithmetic does where a bound
    leaves them."""
    n, w = plan.names, plan.windows
    t = np.asarray(table.column(n.time).to_numpy(), dtype=np.int64)
    if len(t):
        _check_64_bits(int(t.min()), int(t.max()), int(w.length), int(w.slide), sliding=w.sharing is not None)
    k_hi = np.floor_divide(t, w.slide)
    k_lo = np.floor_divide(t - w.length, w.slide) + 1
    return table, k_lo, k_hi


def _check_64_bits(t_min: int, t_max: int, length: int, slide: int, *, sliding: bool) -> None:
    """Fail where Spark's ANSI arithmetic fails on the expressions the Spark
    compiler spells (`floor_div(x, s)` as `(x - pmod(x, s)) div s`; the
    bounds `k * s` and `k * s + w`): each step of the smallest and the
    largest time (every step is monotone in the time) within 64 bits."""
    def floor_start(x: int) -> int:  # x - pmod(x, s)
        if not INT64_MIN <= x - x % slide <= INT64_MAX:
            raise ArithmeticOverflow(OVERFLOW)
        return x - x % slide

    for t in (t_min, t_max):
        starts = [floor_start(t)]  # k_hi * s
        if sliding:
            if not INT64_MIN <= t - length <= INT64_MAX:
                raise ArithmeticOverflow(OVERFLOW)
            starts.append(floor_start(t - length) + slide)  # k_lo * s
        for start in starts:
            if not INT64_MIN <= start + length <= INT64_MAX or not INT64_MIN <= start <= INT64_MAX:
                raise ArithmeticOverflow(OVERFLOW)


def _sequences(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each element, value) of Spark's `sequence(lo, hi)` per row:
    lo … hi by 1, or by -1 where lo > hi."""
    step = np.where(lo <= hi, 1, -1)
    count = np.abs(hi - lo) + 1
    rows = np.repeat(np.arange(len(lo)), count)
    starts = np.cumsum(count) - count
    offset = np.arange(int(count.sum())) - np.repeat(starts, count)
    return rows, np.repeat(lo, count) + offset * np.repeat(step, count)


# ---------------------------------------------------------------- Partition


def partition(plan: PhysicalPlan, placed) -> tuple[pa.Table, np.ndarray | None, np.ndarray]:
    """Key columns (rows with a null key are in no trend), derived columns
    and the kernel's columns only; then which event each row of the
    kernel's input is (None: each event once) and its window (or block) —
    one row per (event, window) or per (event, block), made by `sort`."""
    table, k_lo, k_hi = placed
    n, w, part = plan.names, plan.windows, plan.partition
    keep = np.ones(table.num_rows, dtype=bool)
    for k in part.keys:
        keep &= np.asarray(pc.is_valid(table.column(k.attr)).to_numpy(zero_copy_only=False), dtype=bool)
    if not keep.all():
        table, k_lo, k_hi = table.filter(pa.array(keep)), k_lo[keep], k_hi[keep]
    for k in (*part.keys, *part.subkeys, *part.state_keys):
        table = table.append_column(k.column, table.column(k.attr))
    for d in plan.root.derived:
        table = table.append_column(d.column, evaluate(d.definition, table))
    if w.block:
        table = table.append_column(n.window_lo, pa.array(k_lo)).append_column(n.window_hi, pa.array(k_hi))
    cols = [*part.group[1:], n.time, n.id, *(m.column for m in plan.filter.masks)]
    if w.block:
        cols += [n.window_lo, n.window_hi]
    cols += [d.column for d in plan.root.derived] + [k.column for k in part.subkeys]
    cols += [k.column for k in part.state_keys]
    table = table.select(list(dict.fromkeys(cols)))
    if w.sharing is None:
        return table, None, k_hi
    if w.block:
        return (table, *_sequences(np.floor_divide(k_lo, w.block), np.floor_divide(k_hi, w.block)))
    return (table, *_sequences(k_lo, k_hi))


def sort(plan: PhysicalPlan, placed: tuple[pa.Table, np.ndarray | None, np.ndarray]) -> pa.Table:
    """The kernel's input: each (event, window) row, sorted by the group
    columns, time, id as Spark sorts them (nulls first, NaN last, -0.0 with
    0.0), the group columns first — the wide columns taken once."""
    table, rows, window = placed
    n, group = plan.names, list(plan.partition.group)
    narrow = [n.window, *group[1:], n.time, n.id]

    def key(c):
        col = table.column(c)
        return col if rows is None else col.take(pa.array(rows))

    keys = pa.table([pa.array(window, pa.int64()), *(key(c) for c in narrow[1:])], names=narrow)
    sort_keys = [(c, "ascending", "at_start") for c in narrow]
    try:
        order = pc.sort_indices(keys, sort_keys=sort_keys)
    except (TypeError, ValueError, pa.ArrowInvalid):  # pyarrow before 25: one null placement for every key
        order = pc.sort_indices(keys, sort_keys=[k[:2] for k in sort_keys], null_placement="at_start")
    order = order.to_numpy()
    taken = table.take(pa.array(order if rows is None else rows[order]))
    out = taken.add_column(0, n.window, pa.array(window[order], pa.int64()))
    return out.select([*group, *(c for c in out.column_names if c not in group)])


# ---------------------------------------------------------------- Output


def output(plan: PhysicalPlan, kernel_schema: pa.Schema):
    """(schema, batch → batch) of the result's columns, as the Spark
    compiler selects them: window bounds, keys (by their attributes' names),
    then the trends or the aggregates."""
    n, w = plan.names, plan.windows
    keys = [k for k in plan.partition.keys if isinstance(plan.root, Detect) or k.output is not None]
    bound = pa.timestamp("us", tz="UTC") if w.bounds == Bounds.TIMESTAMP else pa.int64()
    if w.bounds not in (Bounds.TIMESTAMP, Bounds.INTEGER):
        raise TypeError(f"the in-process engine does not show window bounds as {w.bounds}")
    rest = ["events", "length"] if isinstance(plan.root, Detect) else [t.name for t in kernel_spec(plan).targets]
    fields = [pa.field("window_start", bound), pa.field("window_end", bound)]
    fields += [pa.field(k.attr, kernel_schema.field(k.column).type) for k in keys]
    fields += [kernel_schema.field(c) for c in rest]
    schema = pa.schema(fields)
    slide, length = int(w.slide), int(w.length)

    def project(batch: pa.RecordBatch) -> pa.RecordBatch:
        k = np.asarray(batch.column(n.window).to_numpy(zero_copy_only=False), dtype=np.int64)
        start = k * slide
        arrays = [pa.array(start).cast(bound), pa.array(start + length).cast(bound)]
        arrays += [batch.column(key.column) for key in keys] + [batch.column(c) for c in rest]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    return schema, project
