"""What refused input rows and ids are called, and which column types can
hold ids: the words and rules of the scan's checks, said alike by every
engine (each engine applies them its own way)."""

from __future__ import annotations

from cetql.base.errors import SchemaError

ID_REFUSED = "cetql: invalid id"  # the start of the message a null or repeated id raises
# The messages of refused rows, in words every engine uses
NULL_ID = "a row of id column '{label}' has no id"
REPEATED_ID = ("id ", " of id column '{label}' is on ", " rows")  # around the id and the number of rows
ID_ADVICE = "; every event needs its own id: fix the input, or run with --drop-invalid to drop such rows"
ROWS_ADVICE = "; fix the input, or run with --drop-invalid to drop those rows"


def no_time(name: str, n: int, where: str = "") -> str:
    """What rows with a null (NaN, infinite) time are called."""
    return f"time column '{name}'{where}: {n:,} row(s) have no time (null, NaN or infinite)"

def unreadable(name: str, n: int, sample, spark_type: str, where: str = "") -> str:
    """What values of a text column that cannot be read as its type are called."""
    what = {"bigint": "a whole number", "double": "a number", "timestamp": "a time",
            "boolean": "true or false"}.get(spark_type, spark_type)  # fmt: skip
    return f"column '{name}'{where} holds {n:,} value(s) that cannot be read as {what} (e.g. {sample!r})"


def outside(name: str, text: str, n: int | None = None, where: str = "") -> str:
    """What rows whose time lies outside the range the plan's windows are
    exact in (`physical.ranges`: `text`) are called; `n` of them."""
    rows = f": {n:,} row(s) have" if n is not None else " holds"
    return f"time column '{name}'{where}{rows} a time outside the range its windows can be computed in ({text})"

# Spark types an id may have: whole numbers, decimals and text compare
# exactly and round-trip through Arrow to the kernels.
_ID_TYPES = ("tinyint", "smallint", "int", "bigint", "string")


def id_type_error(id_col: str, spark_type: str, cls: str | None = None) -> SchemaError | None:
    """Why a column of this type cannot hold event ids, or None."""
    t = spark_type.lower()
    if cls != "timestamp" and (t in _ID_TYPES or t.startswith(("decimal", "varchar", "char"))):
        return None
    what = "a timestamp" if cls == "timestamp" or t.startswith(("timestamp", "date")) else f"of type {spark_type}"
    return SchemaError(
        f"id column '{id_col}' is {what}; ids must be whole numbers or text: name another column with --id-col, "
        "or leave it out to number the events in input order"
    )


def check_id_type(id_col: str, spark_type: str, cls: str | None = None) -> None:
    """Refuse an id column of a type ids cannot have (before Spark runs)."""
    error = id_type_error(id_col, spark_type, cls)
    if error is not None:
        raise error
