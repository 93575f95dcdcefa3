"""The Arrow schema of the batches Spark hands a kernel (`mapInArrow`), in
one place: every kernel's input and output schema is derived from it.

Spark converts a TIMESTAMP (with a zone) to Arrow in the session's time
zone, a TIMESTAMP_NTZ without one, and strings and binaries to their large
Arrow types when `spark.sql.execution.arrow.useLargeVarTypes` is set;
`to_arrow_schema` needs to be told both (without a zone it fails an
assertion on any TIMESTAMP column: a time column carried in `--with-rows`,
an attribute of a predicate or a key)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

LARGE_TYPES = "spark.sql.execution.arrow.useLargeVarTypes"


def batch_schema(df: DataFrame) -> pa.Schema:
    """The schema of `df`'s rows as a kernel receives them."""
    conf = df.sparkSession.conf
    zone = conf.get("spark.sql.session.timeZone")
    large = str(conf.get(LARGE_TYPES, "false")).lower() == "true"
    return to_arrow_schema(df.schema, timezone=zone, prefers_large_types=large)
