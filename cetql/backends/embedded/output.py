"""The embedded engine's failures of arithmetic: DuckDB's and Arrow's
errors for a number past its type (the result's columns: `arrow.result`)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from cetql.backends.arrow.result import says_overflow


def overflow(e: BaseException) -> bool:
    """An error of DuckDB or Arrow that says a number went past its type."""
    return isinstance(e, (pa.ArrowInvalid, duckdb.OutOfRangeException)) and says_overflow(e)
