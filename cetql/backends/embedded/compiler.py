"""The embedded compiler: a physical plan → Arrow batches of its result,
in this process, no Spark.  The relational stages run on DuckDB, spelled
from the plan by the same SQL compilers Spark's are (`sql.expressions`,
`sql.windows`, `inputs.casts`); the kernels are the ones Spark's Python
workers run (`kernels.process`), on the sorted kernel input.

    scan (reader) → checks → filter → windows → partition → sort   (DuckDB)
    → detect | aggregate                                          (kernels)
    → window bounds and output columns                            (Arrow)

It decides nothing: only plans whose `engine` is EMBEDDED come here, and
what it runs is what `capabilities` declares.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import duckdb
import numpy as np
import pyarrow as pa

from cetql.backends.arrow.result import output
from cetql.backends.embedded import checks, reader, slices
from cetql.backends.inputs.stamps import check_unchanged
from cetql.backends.sql import windows as W
from cetql.backends.sql.columns import computed_columns, kernel_columns, same_columns
from cetql.backends.sql.dialects import DUCKDB
from cetql.backends.sql.expressions import condition
from cetql.base.processes import alive, start_time
from cetql.kernels import process, select
from cetql.planner.logical import plan as L
from cetql.planner.physical.kernel import kernel_spec
from cetql.planner.physical.plan import Detect, PhysicalPlan

Q = DUCKDB.quote
EVENTS = "__cetql_events"
READ = "__cetql_read"  # the events as read, where their ids are their places (EVENTS: a view of it)


@dataclass
class Result:
    """The result's schema and batches (lazy: the kernels run as they are
    read), what the scan dropped (--drop-invalid), and the connection that
    holds the scanned events (for looking up the events of trends).  The
    same batches as `parts` too, where the kernels run on several cores:
    each a call giving one slice's batches (the slices in order, each
    ready to run in a thread of its own: a Parquet folder's writer writes
    one file a slice); a reader reads `batches` or `parts`, not both."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    dropped: int = 0
    connection: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    plan: PhysicalPlan | None = field(default=None, repr=False)
    parts: tuple[Callable[[], Iterator[pa.RecordBatch]], ...] = ()


def connect() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the session settings every run uses: UTC
    (no machine zone in any value), every core, and what it spills to disk
    in a folder of its own under the system's temporary folder, removed with
    the connection (DuckDB's default is `.tmp` in the working folder); its
    name says which process owns it, and the folders of this user's
    processes that were killed (no exit handler ran) are removed first."""
    sweep_spills()
    pid = os.getpid()
    spill = tempfile.mkdtemp(prefix=f"{SPILL}{pid}-{start_time(pid)}-")
    con = duckdb.connect(config={"threads": max(1, os.cpu_count() or 1), "temp_directory": spill})
    _SPILLS[con] = weakref.finalize(con, shutil.rmtree, spill, True)
    con.execute("SET TimeZone = 'UTC'").fetchall()
    return con


_SPILLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a connection: the removal of its spill folder
SPILL = "cetql-duckdb-"  # a spill folder's name: this, its owner's pid and start time, a random part
_OWNED = re.compile(rf"^{SPILL}(?P<pid>\d+)-(?P<start>\d+)-[^/]+$")


def sweep_spills(folder: str | None = None) -> list[str]:
    """Remove the spill folders (in `folder`, default the temporary folder)
    of this user's cetql processes that are gone — a process killed (the
    kernel's out-of-memory killer, SIGKILL) leaves its spill, which may be
    large, behind; the names removed.  Another user's folder, a link, or a
    folder whose process still runs is left alone."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(SPILL)]
    except OSError:
        return removed
    for e in entries:
        m = _OWNED.match(e.name)
        try:
            mine = e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_uid == os.getuid()
        except OSError:
            continue
        if m is None or not mine or alive(int(m["pid"]), int(m["start"])):
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        removed.append(e.name)
    return removed


def close(con: duckdb.DuckDBPyConnection | None) -> None:
    """Close a connection of `connect` and remove its spill folder now: a
    process that ends without Python's exit handlers (a serve's forked run)
    leaves nothing behind.  Closing a closed one does nothing."""
    if con is None:
        return
    con.close()
    if (remove := _SPILLS.pop(con, None)) is not None:
        remove()


def run(plan: PhysicalPlan) -> Result:
    """The plan's result, read from its input files."""
    spec = kernel_spec(plan)
    con = connect()
    try:
        return _run(plan, spec, con)
    except BaseException:  # Ctrl-C during the scan or the sort included: its spill folder goes with it
        close(con)
        raise


def _run(plan: PhysicalPlan, spec, con: duckdb.DuckDBPyConnection) -> Result:
    dropped = scan(con, plan)
    kernel = process.detect_fn if isinstance(plan.root, Detect) else process.aggregate_fn
    events = con.execute(f"SELECT count(*) FROM {EVENTS}").fetchall()[0][0]
    if select.may_compile(spec, events):  # numba's import and a warm-up on a few events, beside the input's query
        sample = kernel_input(con, plan, WARM_ROWS)
        select.preload(spec, events, lambda: warm_up(kernel, spec, sample))
    table = kernel_input(con, plan)
    fn = kernel(spec)
    if isinstance(plan.root, Detect):
        schema = process.detect_schema(spec, table.schema)
    else:
        schema = process.aggregate_schema(spec, table.schema)
    out_schema, project = output(plan, schema)
    cut = slices.cut(table, plan.names.window)
    batches = (project(b) for b in slices.kernels(fn, cut))
    parts = tuple(partial(_projected, project, fn, part) for part in cut) if len(cut) > 1 else ()
    return Result(out_schema, batches, dropped, con, plan, parts)


def _projected(project, fn, part: pa.Table) -> Iterator[pa.RecordBatch]:
    return (project(b) for b in slices.run(fn, part))


def warm_up(kernel, spec, sample: pa.Table) -> None:
    """The compiled variant of `kernel` over `sample`, its batches dropped as
    they come: a few events' trends can still be many (2^8 a window, in
    every window of a long WITHIN), and none of them is kept."""
    for _ in kernel(select.always(spec))(iter(sample.to_batches())):
        pass


# ---------------------------------------------------------------- Scan


def scan(con: duckdb.DuckDBPyConnection, plan: PhysicalPlan) -> int:
    """The events as a table of the connection: the inputs one after the
    other, by name (a column an input lacks is null there); invalid rows
    and ids checked (`checks`).  The number of rows --drop-invalid dropped."""
    sources = {f.type_name: f.source for f in plan.logical.find(L.Scan).inputs.each}
    parts = [reader.input_sql(plan, si, sources[si.type_name]) for si in plan.scan.inputs]
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM ({p})" for p in parts)
    for si in plan.scan.inputs:  # the files as planned: before they are read, and after (a change while read)
        check_unchanged(si.stamps, si.label)
    by_place = plan.scan.id_col is None and not _names_rowid(plan)
    if by_place:
        # ids from input order (only aggregation, where none is shown): the rows' places in the table as read (a
        # table keeps the order it was made in; row_number() over the whole read ran on one thread, a third of
        # reading a CSV), kept by rows --drop-invalid leaves
        con.execute(f"CREATE TABLE {READ} AS {union}").fetchall()
        con.execute(f"CREATE VIEW {EVENTS} AS SELECT * REPLACE (rowid AS {Q(plan.names.id)}) FROM {READ}").fetchall()
    else:
        if plan.scan.id_col is None:  # an input's own column `rowid` hides the row ids: numbered as read
            union = f"SELECT * REPLACE (CAST(row_number() OVER () - 1 AS BIGINT) AS {Q(plan.names.id)}) FROM ({union})"
        con.execute(f"CREATE TABLE {EVENTS} AS {union}").fetchall()
    for si in plan.scan.inputs:
        check_unchanged(si.stamps, si.label)
    return checks.check_rows(con, plan, READ if by_place else EVENTS, sources)


def _names_rowid(plan: PhysicalPlan) -> bool:
    """Does an input have a column named `rowid` (DuckDB's names ignore case)?"""
    return any(c.name.lower() == "rowid" for f in plan.logical.find(L.Scan).inputs.each
               for c in (f.source.columns if f.source is not None else ()))  # fmt: skip


# ---------------------------------------------------------------- Filter, Windows, Partition, sort


WARM_ROWS = 8  # events of the warm-up's input: few enough that their trends are few (at most 2^8 a window)


def kernel_input(con: duckdb.DuckDBPyConnection, plan: PhysicalPlan, events: int | None = None) -> pa.Table:
    """The kernel's input as an Arrow table (of the first `events` events the
    filter keeps, if given); a key or derived column that is another's
    expression (`price` on both sides of `S.price < NEXT(S).price`) computed
    and sorted once, the same array under each name.  Where each event is
    copied into its windows (sliding windows, no blocks), the events are
    sorted once and their rows placed in window order by their places
    (`in_windows`): the same table as the copies sorted, whose sort took a
    third of a run."""
    if plan.windows.sharing is not None and not plan.windows.block:
        sql, same = events_sql(plan, events)
        table = in_windows(con.sql(sql).to_arrow_table(), plan.names.window)
    else:
        sql, same = kernel_input_sql(plan, events)
        table = con.sql(sql).to_arrow_table()
    order = kernel_columns(plan)
    return pa.table([table.column(same.get(c, c)) for c in order], names=order)


def kernel_input_sql(plan: PhysicalPlan, events: int | None = None) -> tuple[str, dict[str, str]]:
    """The kernel's input: each (event, window) — or (event, block) — row,
    its masks, keys and derived columns, sorted by the group columns, time
    and id (nulls first, NaN last, -0.0 with 0.0, as Spark sorts); and the
    columns left out as another's expression (name: the other's name)."""
    placed = placed_sql(plan, _kept_sql(plan, events))
    return _keyed_sql(plan, placed, [*plan.partition.group, plan.names.time, plan.names.id], [])


FIRST, LAST = "__cetql_first", "__cetql_last"  # an event's first and last window (`events_sql`)


def events_sql(plan: PhysicalPlan, events: int | None = None) -> tuple[str, dict[str, str]]:
    """The kernel's input before its events are copied into their windows:
    each event once, its masks, keys and derived columns, and its first and
    last window (FIRST, LAST), sorted by the keys, time and id as
    `kernel_input_sql` sorts them; and the columns left out."""
    bounds = f"SELECT *, {W.first_window(plan, DUCKDB)} AS {Q(FIRST)}, {W.last_window(plan, DUCKDB)} AS {Q(LAST)} " \
        f"FROM ({_kept_sql(plan, events)})"  # fmt: skip
    n = plan.names
    keys = [c for c in plan.partition.group if c != n.window]
    return _keyed_sql(plan, bounds, [*keys, n.time, n.id], [FIRST, LAST], without=n.window)


def in_windows(table: pa.Table, window: str) -> pa.Table:
    """A table of events sorted by (keys, time, id), each with its first and
    last window (FIRST, LAST), as the rows of each (event, window) sorted by
    (window, keys, time, id), the window in column `window`: event i's
    windows are LAST[i], LAST[i] - 1, …, FIRST[i] (none when FIRST > LAST),
    and a stable sort by window keeps each window's events in the table's
    order."""
    first = np.asarray(table.column(FIRST).to_numpy(), dtype=np.int64)
    last = np.asarray(table.column(LAST).to_numpy(), dtype=np.int64)
    copies = np.maximum(last - first + 1, 0)
    event = np.repeat(np.arange(table.num_rows, dtype=np.int64), copies)
    began = np.cumsum(copies) - copies  # event i's first row among the copies
    k = last[event] - (np.arange(len(event), dtype=np.int64) - began[event])
    order = np.argsort(k, kind="stable")
    rest, taken = table.drop_columns([FIRST, LAST]), event[order]
    # taken in pieces: one take makes each column one array, which fails past 2 GiB of text
    rows = pa.concat_tables([rest.take(pa.array(taken[a : a + TAKE_ROWS])) for a in range(0, len(taken), TAKE_ROWS)]) \
        if len(taken) else rest.slice(0, 0)  # fmt: skip
    return rows.append_column(window, pa.chunked_array([k[order]], type=pa.int64()))


TAKE_ROWS = 1 << 20  # rows of the kernel input taken at once (`in_windows`)


def _kept_sql(plan: PhysicalPlan, events: int | None) -> str:
    """The events the filter keeps (the first `events`, if given), with their masks."""
    filt = plan.filter
    masks = [f"{condition(m.definition, DUCKDB)} AS {Q(m.column)}" for m in filt.masks]
    any_mask = " OR ".join(Q(m.column) for m in filt.masks) or "TRUE"
    stage = f"SELECT *, {', '.join(masks)} FROM {EVENTS} WHERE {condition(filt.constant, DUCKDB)}" if masks else \
        f"SELECT * FROM {EVENTS} WHERE {condition(filt.constant, DUCKDB)}"  # fmt: skip
    return f"SELECT * FROM ({stage}) WHERE {any_mask}{'' if events is None else f' LIMIT {events}'}"


def _keyed_sql(plan: PhysicalPlan, rows: str, order: list[str], extra: list[str],
               without: str | None = None) -> tuple[str, dict[str, str]]:  # fmt: skip
    """`rows` with the plan's keys and derived columns (an expression that is
    another's computed once: the columns left out, name: the other's name),
    rows without every key dropped, the kernel input's columns (but
    `without`) and `extra`, sorted by `order` as Spark sorts."""
    part = plan.partition
    same = same_columns(plan)
    keyed = [f"{e} AS {Q(c)}" for e, c in computed_columns(plan) if c not in same]
    present = " AND ".join(f"{Q(k.attr)} IS NOT NULL" for k in part.keys) or "TRUE"
    cols = [c for c in kernel_columns(plan) if c not in same and c != without] + extra
    by = ", ".join(f"{_sort_key(plan, c)} ASC NULLS FIRST" for c in order)
    sql = (f"SELECT {', '.join(Q(c) for c in cols)} FROM (SELECT *{''.join(', ' + k for k in keyed)} "
           f"FROM ({rows}) WHERE {present}) ORDER BY {by}")  # fmt: skip
    return sql, same


def placed_sql(plan: PhysicalPlan, stage: str) -> str:
    """The rows of `stage` placed in their windows: one row per (event,
    window) — or (event, block) — in the plan's exact arithmetic."""
    n, w = plan.names, plan.windows
    wk = Q(n.window)
    if w.sharing is None:
        return f"SELECT *, {W.last_window(plan, DUCKDB)} AS {wk} FROM ({stage})"
    if w.block:
        lo, hi = Q(n.window_lo), Q(n.window_hi)
        bounds = f"SELECT *, {W.first_window(plan, DUCKDB)} AS {lo}, {W.last_window(plan, DUCKDB)} AS {hi} FROM ({stage})"
        blocks = f"generate_series({W.block_of(DUCKDB, lo, w.block)}, {W.block_of(DUCKDB, hi, w.block)})"
        return f"SELECT *, unnest({blocks}) AS {wk} FROM ({bounds})"
    # k_hi - j for j < per_event, kept from k_lo on: DuckDB joins a short range faster than it unnests a list
    last, j = W.last_window(plan, DUCKDB), f"{_RANGE}.{Q(_STEP)}"
    return (f"SELECT {_ROWS}.*, ({last}) - {j} AS {wk} FROM ({stage}) {_ROWS}, range({w.per_event}) {_RANGE}({Q(_STEP)}) "
            f"WHERE ({last}) - {j} >= {W.first_window(plan, DUCKDB)}")  # fmt: skip


_ROWS, _RANGE, _STEP = "__cetql_rows", "__cetql_range", "__cetql_step"  # names only these two relations use


def order_sql(plan: PhysicalPlan) -> str:
    """The kernels' order: group columns, time, id, as Spark sorts them."""
    n, part = plan.names, plan.partition
    return ", ".join(f"{_sort_key(plan, c)} ASC NULLS FIRST" for c in [*part.group, n.time, n.id])


def _sort_key(plan: PhysicalPlan, column: str) -> str:
    """A group column as Spark orders it: -0.0 beside 0.0 (equal, so the
    next keys order them), NaN above every number (DuckDB's own order)."""
    floating = {k.column for k in plan.partition.keys if _floating(plan, k.attr)}
    if column in floating:
        return f"(CASE WHEN {Q(column)} = 0 THEN CAST(0 AS DOUBLE) ELSE {Q(column)} END)"
    return Q(column)


def _floating(plan: PhysicalPlan, attr: str) -> bool:
    for f in plan.logical.find(L.Scan).inputs.each:
        for c in f.source.columns if f.source is not None else ():
            if c.name == attr and c.type in ("double", "float"):
                return True
    return False
