"""The embedded engine's face for the surfaces: run a plan, read its result
as the renderer does, and say every failure in one line (DuckDB's, Arrow's
and the system's words mapped to cetql's)."""

from __future__ import annotations

import importlib.abc
import sys
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from cetql.backends.arrow.result import ArithmeticOverflow
from cetql.backends.embedded import compiler
from cetql.backends.embedded.compiler import Result
from cetql.backends.embedded.output import overflow
from cetql.backends.embedded.results import EmbeddedRows, zone_of
from cetql.base.errors import OVERFLOW_MESSAGE, CetqlError

__all__ = ["closing", "execute", "failures", "rows", "zone_of"]


class RunFailed(CetqlError):
    """The run failed on something outside the query: a file, the disk, memory."""

    exit_code = 1


def execute(plan) -> Result:
    """The plan's result (`compiler.run`), pyarrow kept from loading pandas."""
    _without_pandas()
    return compiler.run(plan)


class _PandasAbsent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ARG002 - the finder protocol's signature
        if name == "pandas":
            raise ImportError("not loaded for the embedded engine")
        return None


def _without_pandas() -> None:
    """pyarrow imports pandas (a third of a second, a third of a small run)
    at its first conversion of Python values, to tell pandas objects apart;
    the engine never gives it one.  pyarrow asks once, and remembers: asked
    here with pandas hidden, it converts without it (a later `to_pandas()`
    still finds pandas, which it imports then)."""
    if "pandas" in sys.modules:
        return
    finder = _PandasAbsent()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


@contextmanager
def closing(made: list[Result]):
    """Closes the connections of the results in `made` (the run's, as it
    makes them) when the block ends, however it ends."""
    try:
        yield
    finally:
        for r in made:  # several results may share one: closing is done once, asked again
            compiler.close(r.connection)


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
