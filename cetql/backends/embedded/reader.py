"""The embedded engine's reader: each input as DuckDB SQL, read with the
columns and types the plan's scan carries (`Source`, described once by
`inputs.sources`), so it reads what Spark reads.

- CSV as RFC 4180 text (one read per header order, unioned by name), JSON
  lines by key, every column as text, then read as its type by the rules
  every engine applies (`inputs.casts`; ISO times below);
- Parquet as stored; timestamps as instants (a naive one in the reader's
  zone, which the plan allows only as UTC or a fixed offset).

Each input's relation has the source's columns (typed), `__bad` (a checked
column whose value could not be read), and the plan's id, time and type
columns.
"""

from __future__ import annotations

from cetql.backends.inputs import casts
from cetql.backends.inputs.times import ISO
from cetql.backends.sql.dialects import DUCKDB
from cetql.planner.physical.plan import PhysicalPlan, ScanInput, TimeCast
from cetql.planner.semantics.sources import Column, Source

Q = DUCKDB.quote
L = DUCKDB.literal


def offset_seconds(zone: str) -> int:
    """The offset of UTC or a fixed-offset zone (`+05:30`), in seconds."""
    if len(zone) == 6 and zone[0] in "+-" and zone[3] == ":":
        return (-1 if zone[0] == "-" else 1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return 0


def files_sql(source: Source) -> list[tuple[str, tuple[str, ...]]]:
    """(a DuckDB table function over files, the columns it gives as text or
    as stored) for each read the source needs."""
    if source.format == "parquet":
        return [(f"read_parquet({L_list(source.files)})", tuple(c.name for c in source.columns))]
    names = tuple(c.name for c in source.columns)
    if source.format == "json":
        cols = "{" + ", ".join(f"{L(n)}: 'VARCHAR'" for n in names) + "}"
        return [(f"read_json({L_list(source.files)}, format = 'newline_delimited', columns = {cols}, "
                 "maximum_object_size = 1073741824)", names)]  # fmt: skip
    by_order: dict[tuple[str, ...], list[str]] = {}
    headers = source.headers or (names,) * len(source.files)
    for f, header in zip(source.files, headers):
        by_order.setdefault(header, []).append(f)
    out = []
    for header, files in by_order.items():
        cols = "{" + ", ".join(f"{L(n)}: 'VARCHAR'" for n in header) + "}"
        out.append((f"read_csv({L_list(files)}, header = true, auto_detect = false, columns = {cols}, delim = ',', "
                    "quote = '\"', escape = '\"', strict_mode = true, null_padding = false)", header))  # fmt: skip
    return out


def L_list(items) -> str:  # noqa: N802 - a literal, as `L`
    return "[" + ", ".join(L(str(i)) for i in items) + "]"


# ---------------------------------------------------------------- ISO times

PARTS = ("y", "mo", "d", "h", "mi", "s", "f", "z")


def iso_text(name: str) -> str:
    """SQL: the text of column `name` as Spark's cast of times reads it:
    trimmed, and without one line terminator that ends it (`casts`)."""
    return casts.unterminated(DUCKDB, casts.trimmed(DUCKDB, name))


def iso_parts(text: str) -> str:
    """SQL: the parts of an ISO time (`times.ISO`) as a struct of texts
    ('' where a part is absent; every part '' where the text is not one)."""
    return f"regexp_extract({text}, {L(ISO)}, [{', '.join(L(p) for p in PARTS)}])"


def iso_nanos(p: str, zone: str) -> str:
    """SQL: epoch nanoseconds (HUGEINT) of the ISO time whose parts are the
    struct `p`, null where it is not one (no such date or clock time, an
    offset past 18 hours, year 0); a time without an offset is in `zone` (UTC or a fixed
    offset)."""
    part = lambda g: f"CAST(nullif({p}.{g}, '') AS INTEGER)"  # noqa: E731
    wall = (f"TRY(make_timestamp({part('y')}, {part('mo')}, {part('d')}, coalesce({part('h')}, 0), "
            f"coalesce({part('mi')}, 0), coalesce({part('s')}, 0)))")  # fmt: skip
    frac = f"coalesce(CAST(rpad(nullif({p}.f, ''), 9, '0') AS BIGINT), 0)"
    digits = f"replace({p}.z, ':', '')"
    hh = f"CAST(substr({digits}, 2, 2) AS INTEGER)"
    mm = f"coalesce(CAST(nullif(substr({digits}, 4, 2), '') AS INTEGER), 0)"
    sign = f"CASE WHEN starts_with({p}.z, '-') THEN -1 ELSE 1 END"
    offset = (f"CASE WHEN {p}.z = '' THEN {offset_seconds(zone)} WHEN {p}.z = 'Z' THEN 0 "
              f"WHEN {mm} <= 59 AND {hh} * 60 + {mm} <= 1080 THEN {sign} * ({hh} * 3600 + {mm} * 60) END")  # fmt: skip
    nanos = f"CAST(epoch_us({wall}) AS HUGEINT) * 1000 + {frac} - CAST({offset} AS HUGEINT) * 1000000000"
    # a wall clock java.time reads (Spark's cast, `times.iso_parts`): DuckDB's make_timestamp takes hour 24 and
    # second 60 as the next day and minute
    clock = f"coalesce({part('h')}, 0) <= 23 AND coalesce({part('s')}, 0) <= 59"
    return f"(CASE WHEN {part('y')} >= 1 AND {clock} THEN {nanos} END)"


def _timestamp_text(p: str, col: Column, zone: str) -> str:
    """SQL of an ISO text column (its parts `p`) read as Spark reads it:
    epoch nanoseconds (a BIGINT) for a nanosecond column, else a
    TIMESTAMPTZ to the microsecond (null where a digit lies below it)."""
    nanos = iso_nanos(p, zone)
    if col.nanos:
        return f"TRY_CAST({nanos} AS BIGINT)"
    micros = f"CASE WHEN {nanos} % 1000 = 0 THEN TRY_CAST({nanos} // 1000 AS BIGINT) END"
    return f"CAST(make_timestamp({micros}) AS TIMESTAMPTZ)"


# ---------------------------------------------------------------- one input


# an unsigned Parquet column's Spark type (`sources.arrow_to_spark`), in DuckDB's words
SIGNED = {"bigint": "BIGINT", "int": "INTEGER", "smallint": "SMALLINT", "decimal(20,0)": "DECIMAL(20, 0)"}


def typed_columns(source: Source, present: tuple[str, ...], checked: tuple[str, ...], zone: str):
    """([SQL AS name] of each source column, SQL of the first checked column
    whose value cannot be read (else NULL), [SQL AS name] of the parts of
    ISO time columns the first need)."""
    cols, bad, parts = [], [], []
    unsigned = {n for n, t in source.arrow if t.startswith("uint")} if source.format == "parquet" else set()
    for i, c in enumerate(source.columns):
        name = Q(c.name)
        if c.name not in present:  # a column this file order lacks (the reader refused such files before)
            cols.append(f"NULL AS {name}")
            continue
        if source.text and c.type not in ("string", "nested"):
            if c.type == "timestamp":
                parts.append(f"{iso_parts(iso_text(c.name))} AS {Q(f'__iso{i}')}")
                value = _timestamp_text(Q(f"__iso{i}"), c, zone)
            else:
                value = casts.typed_text(DUCKDB, c.name, c.type)
            if c.name in checked:
                bad.append(f"WHEN {casts.invalid(DUCKDB, c.name, value)} THEN {L(c.name)}")
            cols.append(f"{value} AS {name}")
        elif c.nanos and source.format == "parquet":  # nanoseconds since the epoch, a BIGINT, as Spark reads them
            shift = offset_seconds(zone) * 1_000_000_000 if c.naive else 0
            cols.append(f"(epoch_ns({name}) - {shift}) AS {name}")
        elif c.naive and source.format == "parquet":  # a wall-clock time, in the reader's zone
            shift = offset_seconds(zone) * 1_000_000
            cols.append(f"CAST(make_timestamp(epoch_us({name}) - {shift}) AS TIMESTAMPTZ) AS {name}")
        elif c.name in unsigned and c.type in SIGNED:  # as Spark reads them (uint64 a decimal(20,0))
            cols.append(f"CAST({name} AS {SIGNED[c.type]}) AS {name}")
        else:
            cols.append(name)
    return cols, ("CASE " + " ".join(bad) + " END") if bad else "NULL", parts


def time_sql(cast: TimeCast, time_col: str) -> str:
    """SQL of the internal time (a BIGINT) from the typed time column."""
    t = Q(time_col)
    if cast == TimeCast.NUMBER:
        return f"CAST({t} AS BIGINT)"
    if cast == TimeCast.NANOS:  # read as epoch nanoseconds already (text and Parquet alike)
        return f"CAST({t} AS BIGINT)"
    micros = f"epoch_us({t})"
    if cast == TimeCast.MICROS_TO_NANOS:
        return f"({micros} * 1000)"
    if cast == TimeCast.MICROS:
        return micros
    raise ValueError(f"the embedded engine has no rule for times read by {cast}")  # the capability table refuses it


def input_sql(plan: PhysicalPlan, si: ScanInput, source: Source) -> str:
    """One input as a relation: its typed columns, __bad, and the plan's id,
    time and type columns."""
    n, scan, zone = plan.names, plan.scan, plan.logical.options.time_zone
    reads = []
    for table, present in files_sql(source):
        cols, bad, parts = typed_columns(source, present, scan.checked, zone)
        inner = f"SELECT *{''.join(', ' + p for p in parts)} FROM {table}"
        reads.append(f"SELECT {', '.join(cols)}, {bad} AS {Q(n.bad)} FROM ({inner})")
    typed = " UNION ALL ".join(reads)
    ident = Q(scan.id_col) if scan.id_col else "NULL"
    time = time_sql(si.time_cast, scan.time_col)
    kind = L(si.type_name) if si.type_name is not None else "CAST(NULL AS VARCHAR)"
    select = "*"
    if si.time_cast == TimeCast.NANOS:  # rows show the time to the microsecond, as Spark's scan does
        micros = DUCKDB.exact_div.format(a=f"({time} - {DUCKDB.pmod.format(a=time, b=1000)})", b=1000)
        select = f"* REPLACE (CAST(make_timestamp({micros}) AS TIMESTAMPTZ) AS {Q(scan.time_col)})"
    return (f"SELECT {select}, {ident} AS {Q(n.id)}, {time} AS {Q(n.time)}, {kind} AS {Q(n.type)} "
            f"FROM ({typed})")  # fmt: skip
