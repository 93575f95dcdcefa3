"""A Spark result as the renderer reads it (`surfaces.render.Rows`): sorted
rows streamed from the DataFrame (`toLocalIterator`, or a limit), the
summary in one job, the events of trends looked up in one more."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import functions as F

from cetql.backends.spark.sql import quote
from cetql.base.errors import UsageError
from cetql.base.words import did_you_mean


class SparkRows:
    def __init__(self, execution, order: list[str]):
        self.plan = execution.plan
        self.execution = execution
        self.df = execution.dataframe
        self.columns = list(self.df.columns)
        self._order = order

    def ordered(self, limit: int) -> Iterator[dict]:
        keys = [F.col(quote(c)) for c in self._order if c != "events"]
        if "events" in self._order:
            keys += [F.element_at("events", 1), F.col("events")]
        chosen = self.df.orderBy(*[k.asc_nulls_first() for k in keys])
        rows = chosen.limit(limit).collect() if limit else chosen.toLocalIterator()
        for r in rows:
            yield r.asDict(recursive=True)

    def summary(self) -> tuple[int, int, list[tuple[int, int]]]:
        if self.plan.kind.value != "detection":
            return self.df.count(), 0, []
        by_length = self.df.groupBy("length").agg(F.count(F.lit(1)).alias("n"),
                                                  F.countDistinct("events").alias("d")).collect()  # fmt: skip
        return sum(r["n"] for r in by_length), sum(r["d"] for r in by_length), [(r["length"], r["n"]) for r in by_length]

    def lookup(self, ids: list, attrs: tuple[str, ...]) -> dict:
        events, id_col = self.execution.events()
        missing = [a for a in attrs if a not in events.columns]
        if missing:
            raise UsageError(f"--show: no column {missing[0]} in the input{did_you_mean(missing[0], events.columns)} (columns: "
                             f"{', '.join(c for c in events.columns if c != id_col)})")  # fmt: skip
        found = events.filter(events[id_col].isin(ids)).select(id_col, *attrs).collect()
        return {r[id_col]: r.asDict(recursive=True) for r in found}
