"""The embedded engine's face for the surfaces: run a plan, read its result
as the renderer does, and say every failure in one line (DuckDB's, Arrow's
and the system's words mapped to cetql's)."""

from __future__ import annotations

from contextlib import contextmanager

import duckdb
import pyarrow as pa

from cetql.backends.embedded.compiler import Result
from cetql.backends.embedded.compiler import run as execute
from cetql.backends.embedded.output import ArithmeticOverflow, overflow
from cetql.backends.embedded.results import EmbeddedRows
from cetql.base.errors import OVERFLOW_MESSAGE, CetqlError

__all__ = ["execute", "failures", "rows"]


class RunFailed(CetqlError):
    """The run failed on something outside the query: a file, the disk, memory."""

    exit_code = 1


def rows(result: Result, order: list[str]) -> EmbeddedRows:
    return EmbeddedRows(result, order, result.plan.logical.options.time_zone)


@contextmanager
def failures():
    """Failures of the engine and the system as one-line cetql errors."""
    try:
        yield
    except (CetqlError, KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as e:  # a full disk, a file gone: what the system said, and where
        raise RunFailed(f"the run failed: {e}") from None
    except Exception as e:  # noqa: BLE001 - said in one line, never a trace
        if overflow(e):
            raise ArithmeticOverflow(OVERFLOW_MESSAGE) from None
        if isinstance(e, duckdb.Error):
            raise RunFailed(f"the run failed reading the input: {_first(e)}") from None
        if isinstance(e, pa.ArrowException):
            raise RunFailed(f"the run failed reading or writing Arrow data: {_first(e)}") from None
        raise


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:400]
