"""The planner's statistics of Parquet inputs (`inputs.stats`): counted by
Arrow, equal to a plain count of the sample's values; a column Arrow cannot
count (lists, structs) has no statistic, and the input still plans and runs."""

from __future__ import annotations

import math
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from cetql.backends.inputs import stats
from cetql.surfaces.cli.main import main


def _gee(values: list, rows: int) -> int:
    """The GEE estimate, from Python's own count of the values."""
    counts = Counter(values)
    once = sum(1 for c in counts.values() if c == 1)
    return max(1, min(rows, round(math.sqrt(max(rows, len(values)) / len(values)) * once + len(counts) - once)))


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=1, max_size=40),
                 st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "é", ""])), min_size=1, max_size=40)),
       st.integers(0, 10_000))  # fmt: skip
def test_counts_are_python_counts(values, extra):
    rows = len(values) + extra
    column = pa.array(values)
    assert stats._distinct(stats._counts(column), len(column), rows) == _gee(values, rows)
    present = Counter(v for v in values if v is not None)
    assert stats._top(column) == (max(present.values()) / len(values) if present else 0.0)


def test_nested_column_has_no_statistic(tmp_path):
    flat = pa.table({"ts": [1, 2, 3, 7], "id": [1, 2, 3, 4]})
    data = tmp_path / "e.parquet"
    pq.write_table(flat.append_column("tags", pa.array([[1], [2], [1], []])).append_column("s", pa.array([{"a": 1}] * 4)),
                   data)  # fmt: skip
    assert {s.name for s in stats.of_parquet((str(data),), 4)} == {"ts", "id"}
    pq.write_table(flat, tmp_path / "flat.parquet")
    q = tmp_path / "q.cet"
    q.write_text("PATTERN E+ e[] WITHIN 10 SLIDE 5")
    got = {}
    for name in ("e", "flat"):
        assert main(["run", str(q), "--input", str(tmp_path / f"{name}.parquet"), "--id-col", "id", "--output",
                     str(tmp_path / f"o-{name}"), "--no-serve"]) in (0, None)  # fmt: skip
        got[name] = sorted(map(str, pq.read_table(tmp_path / f"o-{name}").to_pylist()))
    assert got["e"] == got["flat"] and got["e"]
