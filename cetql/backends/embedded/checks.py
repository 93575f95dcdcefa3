"""The scan's checks on the embedded engine, in the words every engine uses
(`inputs.refusals`): a row with no time or an unreadable value in a column
the plan reads fails the query with the counts and a sample — or is
dropped and counted (--drop-invalid); a user's ids are present and unique
across the inputs."""

from __future__ import annotations

from cetql.backends.embedded import reader
from cetql.backends.inputs import casts, refusals
from cetql.backends.sql.dialects import DUCKDB
from cetql.base.errors import CetqlError
from cetql.planner.logical.plan import InvalidRows

Q, L = DUCKDB.quote, DUCKDB.literal


class RowsRefused(CetqlError):
    """Input rows the scan refuses (a null time, an unreadable value, a null
    or repeated id)."""

    exit_code = 1


def check_rows(con, plan, events: str, sources: dict) -> int:
    """Refuse (or drop, counted) invalid rows and ids of the events table;
    the number of rows dropped."""
    n, scan = plan.names, plan.scan
    drop = scan.invalid == InvalidRows.DROP
    invalid = f"{Q(n.time)} IS NULL OR {outside(plan)} OR {Q(n.bad)} IS NOT NULL"
    (bad,) = con.execute(f"SELECT count(*) FROM {events} WHERE {invalid}").fetchall()[0]
    if bad and not drop:
        raise RowsRefused(diagnose(con, plan, events, sources))
    dropped = 0
    if bad:
        con.execute(f"DELETE FROM {events} WHERE {invalid}").fetchall()
        dropped += bad
    if scan.id_col is not None:
        for source in sources.values():
            col = next((c for c in source.columns if c.name == scan.id_col), None)
            if col is not None:
                refusals.check_id_type(scan.id_col, col.type, col.cls)
        if scan.unique_ids:
            dropped += _check_ids(con, events, n.id, scan.id_col, drop)
    return dropped


def outside(plan) -> str:
    """SQL: the internal time lies outside the range the plan's windows are
    exact in (`physical.ranges`), as the Spark scan refuses it."""
    times = plan.windows.times
    if times is None:
        return "FALSE"
    t = Q(plan.names.time)
    return f"({t} < {L(times.lo)} OR {t} > {L(times.hi)})"


def _check_ids(con, events: str, ident: str, label: str, drop: bool) -> int:
    i = Q(ident)
    repeated = f"SELECT {i} FROM {events} WHERE {i} IS NOT NULL GROUP BY {i} HAVING count(*) > 1"
    if drop:
        before = con.execute(f"SELECT count(*) FROM {events}").fetchall()[0][0]
        con.execute(f"DELETE FROM {events} WHERE {i} IS NULL OR {i} IN ({repeated})").fetchall()
        return before - con.execute(f"SELECT count(*) FROM {events}").fetchall()[0][0]
    refused = refusals.ID_REFUSED.removeprefix("cetql: ")
    (nulls,) = con.execute(f"SELECT count(*) FROM {events} WHERE {i} IS NULL").fetchall()[0]
    if nulls:
        raise RowsRefused(f"{refused}: {refusals.NULL_ID.format(label=label)}{refusals.ID_ADVICE}")
    found = con.execute(f"SELECT {i}, count(*) FROM {events} WHERE {i} IN ({repeated}) GROUP BY {i} "
                        f"ORDER BY min(rowid) LIMIT 1").fetchall()  # fmt: skip
    if found:
        first = found[0]
        before, between, after = (x.format(label=label) for x in refusals.REPEATED_ID)
        raise RowsRefused(f"{refused}: {before}{first[0]}{between}{first[1]}{after}{refusals.ID_ADVICE}")
    return 0


def diagnose(con, plan, events: str, sources: dict) -> str:
    """Why the scan refused rows: per input, the rows with no time and each
    checked column's unreadable values, counted, with a sample."""
    n, scan = plan.names, plan.scan
    parts = []
    for si in scan.inputs:
        source = sources[si.type_name]
        where = f" of input {si.type_name}" if si.type_name else ""
        mine = f"{Q(n.type)} IS NOT DISTINCT FROM {L(si.type_name)}" if si.type_name else "TRUE"
        (timeless,) = con.execute(f"SELECT count(*) FROM {events} WHERE {mine} AND {Q(n.time)} IS NULL").fetchall()[0]
        (beyond,) = con.execute(f"SELECT count(*) FROM {events} WHERE {mine} AND {outside(plan)}").fetchall()[0]
        for c in source.columns:
            if c.name not in scan.checked or not source.text or c.type in ("string", "nested"):
                continue  # text is read as it is: never unreadable
            count, sample = _unreadable(con, plan, source, c)
            if count:
                parts.append(refusals.unreadable(c.name, count, sample, c.type, where))
        if timeless:
            parts.append(refusals.no_time(scan.time_col, timeless, where))
        if beyond:
            parts.append(refusals.outside(scan.time_col, plan.windows.times.text, beyond, where))
    if not parts:
        return "an input row was refused (null time or unreadable value)" + refusals.ROWS_ADVICE
    return "; ".join(parts) + refusals.ROWS_ADVICE


def _unreadable(con, plan, source, column) -> tuple[int, str | None]:
    """(rows whose text in `column` cannot be read as its type, one such
    text), read again from the files (the events table holds typed values)."""
    zone = plan.logical.options.time_zone
    counts, sample = 0, None
    suffix = f" AS {Q(column.name)}"
    for table, present in reader.files_sql(source):
        if column.name not in present:
            continue
        cols, _, parts = reader.typed_columns(source, present, (), zone)
        typed = next(c for c in cols if c.endswith(suffix)).removesuffix(suffix)
        inner = f"SELECT *{''.join(', ' + p for p in parts)} FROM {table}"
        flag = casts.invalid(DUCKDB, column.name, typed)
        got = con.execute(f"SELECT count(*), min({Q(column.name)}) FROM ({inner}) WHERE {flag}").fetchall()[0]
        counts += got[0]
        sample = sample if sample is not None else got[1]
    return counts, sample
