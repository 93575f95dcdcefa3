"""What Spark runs: every plan the planner makes (the reference engine).
Pure data, no pyspark: the planner reads it before any engine loads."""

from cetql.base.options import Engine, Sink
from cetql.planner.physical.engine import ANY, Capabilities

CAPABILITIES = Capabilities(
    engine=Engine.SPARK,
    name="Spark",
    sinks=frozenset(Sink),
    formats=frozenset({"csv", "json", "parquet", "table", "dataframe", "unknown"}),
    streams=True,
    spark_session=True,
    time_casts=ANY,
    arithmetic=ANY,
    bounds=ANY,
    strategies=ANY,
    with_rows=True,
    ids_from_order=True,
    column_types=ANY,
    named_zones=True,
    expressions=ANY,
    max_bytes=ANY,
)
