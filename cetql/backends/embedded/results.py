"""An embedded result as the renderer reads it (`surfaces.render.Rows`):
the kernels' batches gathered in a DuckDB table of the run's connection,
sorted there (nulls first, NaN last, as Spark sorts), the summary one
query, the events of trends looked up in the scanned events.  Timestamps
are given as the wall-clock times of the zone results print in."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pyarrow as pa

from cetql.backends.embedded.compiler import EVENTS, Result
from cetql.backends.sql.dialects import DUCKDB
from cetql.base.errors import UsageError
from cetql.base.words import did_you_mean

Q = DUCKDB.quote
RESULT = "__cetql_result"


def zone_of(name: str) -> dt.tzinfo:
    """A zone by IANA name or fixed offset (`+05:30`)."""
    if len(name) == 6 and name[0] in "+-" and name[3] == ":":
        sign = -1 if name[0] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(name[1:3]), minutes=int(name[4:6])))
    return ZoneInfo(name)


class EmbeddedRows:
    def __init__(self, result: Result, order: list[str], zone: str):
        self.plan = result.plan
        self.columns = list(result.schema.names)
        self._con = result.connection
        self._zone = zone_of(zone)
        self._order = order
        self._gather(result)

    def _gather(self, result: Result) -> None:
        """The kernels' batches into a table, pulled here (an error a kernel
        raises is raised in this process as it was, not inside DuckDB)."""
        con = self._con
        con.register("__cetql_batch", pa.Table.from_batches([], schema=result.schema))
        con.execute(f"CREATE TABLE {RESULT} AS SELECT * FROM __cetql_batch").fetchall()
        for batch in result.batches:
            con.register("__cetql_batch", pa.Table.from_batches([batch], schema=result.schema))
            con.execute(f"INSERT INTO {RESULT} SELECT * FROM __cetql_batch").fetchall()
        con.unregister("__cetql_batch")

    def _plain(self, v):
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(self._zone).replace(tzinfo=None)
        if isinstance(v, dict):
            return {k: self._plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self._plain(x) for x in v]
        return v

    def ordered(self, limit: int) -> Iterator[dict]:
        keys = [Q(c) for c in self._order if c != "events"]
        if "events" in self._order:
            keys += ['"events"[1]', '"events"']
        order = ", ".join(f"{k} ASC NULLS FIRST" for k in keys)
        sql = f"SELECT * FROM {RESULT}" + (f" ORDER BY {order}" if order else "") + (f" LIMIT {limit}" if limit else "")
        reader = self._con.sql(sql).to_arrow_reader(1000)
        for batch in reader:
            for r in batch.to_pylist():
                yield {k: self._plain(v) for k, v in r.items()}

    def summary(self) -> tuple[int, int, list[tuple[int, int]]]:
        if self.plan.kind.value != "detection":
            return self._con.execute(f"SELECT count(*) FROM {RESULT}").fetchall()[0][0], 0, []
        rows = self._con.execute(f'SELECT "length", count(*), count(DISTINCT "events") FROM {RESULT} '
                                 'GROUP BY "length"').fetchall()  # fmt: skip
        return sum(r[1] for r in rows), sum(r[2] for r in rows), [(r[0], r[1]) for r in rows]

    def lookup(self, ids: list, attrs: tuple[str, ...]) -> dict:
        n = self.plan.names
        have = [d[0] for d in self._con.cursor().execute(f"SELECT * FROM {EVENTS} LIMIT 0").description]
        user = [c for c in have if not c.startswith(n.prefix)]
        missing = [a for a in attrs if a not in have]
        if missing:
            raise UsageError(f"--show: no column {missing[0]} in the input{did_you_mean(missing[0], user)} "
                             f"(columns: {', '.join(user)})")  # fmt: skip
        con = self._con.cursor()  # its own results: `ordered` may be reading on the run's connection
        con.register("__cetql_ids", pa.table({"id": pa.array(ids)}))
        try:
            cols = ", ".join(Q(a) for a in attrs)
            got = con.execute(f"SELECT {Q(n.id)}, {cols} FROM {EVENTS} WHERE {Q(n.id)} IN "
                              "(SELECT id FROM __cetql_ids)").fetchall()  # fmt: skip
        finally:
            con.close()
        return {row[0]: {a: self._plain(v) for a, v in zip(attrs, row[1:])} for row in got}
