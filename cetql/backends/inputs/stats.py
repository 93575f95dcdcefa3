"""Column statistics of Parquet inputs for the planner's estimates, learnt
without an engine and cheaply: each column's least and greatest value from
the row groups' footers, and its distinct values and the share of its most
frequent value estimated from a sample of the first rows (`ColumnStats`)."""

from __future__ import annotations

import datetime as dt
import math

from cetql.planner.semantics.sources import ColumnStats

SAMPLE_ROWS = 20_000  # rows of the first file read to estimate distinct values


def _number(v, nanos: bool) -> float | None:
    """A footer's statistic as a number: times as epoch micro- (nano-)seconds."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dt.datetime):
        v = v if v.tzinfo else v.replace(tzinfo=dt.UTC)
        return v.timestamp() * (1e9 if nanos else 1e6)
    try:
        return float(v)  # Decimal
    except (TypeError, ValueError):
        return None


def _ranges(files: tuple[str, ...]) -> dict[str, tuple]:
    import pyarrow.parquet as pq  # start-up cost: only Parquet inputs read footers

    out: dict[str, tuple] = {}
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                st = col.statistics
                if st is None or not st.has_min_max:
                    continue
                name = col.path_in_schema
                nanos = "NANOS" in str(getattr(col, "physical_type", "")) or "nanos" in str(st.logical_type).lower()
                lo, hi = _number(st.min, nanos), _number(st.max, nanos)
                if lo is None or hi is None:
                    continue
                was = out.get(name)
                out[name] = (lo, hi) if was is None else (min(was[0], lo), max(was[1], hi))
    return out


def _counts(column) -> list[int]:
    """How many rows hold each distinct value of a sample's column (null one
    value, NaN one value), counted by Arrow."""
    import pyarrow.compute as pc  # start-up cost: only Parquet inputs are counted

    if len(column) == 0:
        return []
    return pc.value_counts(column).field("counts").to_pylist()


def _distinct(counts: list[int], sampled: int, rows: int) -> int:
    """Distinct values over `rows` rows from a sample of `sampled` rows, each
    distinct value's count in it given (GEE)."""
    if not sampled:
        return 0
    once = sum(1 for c in counts if c == 1)
    scaled = math.sqrt(max(rows, sampled) / sampled) * once + (len(counts) - once)
    return max(1, min(rows, round(scaled)))


def _top(column) -> float:
    """The share of the sample's rows holding its most frequent non-null value."""
    present = column.drop_null()
    return max(_counts(present)) / len(column) if len(present) else 0.0


def of_parquet(files: tuple[str, ...], rows: int) -> tuple[ColumnStats, ...]:
    import pyarrow as pa  # start-up cost: only Parquet inputs read footers
    import pyarrow.parquet as pq  # start-up cost: only Parquet inputs read footers

    if not files:
        return ()
    ranges = _ranges(files)
    sample = next(pq.ParquetFile(files[0]).iter_batches(batch_size=SAMPLE_ROWS), None)
    out = []
    for name in sample.schema.names if sample is not None else ():
        column = sample.column(name)
        if pa.types.is_nested(column.type):  # lists, structs, maps: no statistic (Arrow counts no such values)
            continue
        lo, hi = ranges.get(name, (None, None))
        out.append(ColumnStats(name, lo, hi, _distinct(_counts(column), len(column), rows), _top(column)))
    return tuple(out)
