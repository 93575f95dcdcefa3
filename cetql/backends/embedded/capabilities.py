"""What the embedded engine runs (DuckDB for the relational stages, then
the kernels, in this process): its table for the planner (`planner.
physical.engine`).  Every entry names what `compiler` and `reader` have a
rule for; the capability test (tests/engines/test_capabilities.py) walks
every value of every entry and checks each is either run by the engine,
with Spark's rows, or refused here.  Pure data: the planner reads it before
anything of the engine loads."""

from cetql.base.options import Engine, Sink, Strategy
from cetql.planner.physical.engine import Capabilities
from cetql.planner.physical.plan import Arithmetic, Bounds, TimeCast

MAX_BYTES = 1 << 30  # the inputs with every window copy: what one process holds comfortably

CAPABILITIES = Capabilities(
    engine=Engine.EMBEDDED,
    name="the embedded engine (DuckDB)",
    sinks=frozenset({Sink.PARQUET, Sink.PRINTED, Sink.TEXT_FILES}),
    formats=frozenset({"csv", "json", "parquet"}),
    streams=False,
    spark_session=False,
    time_casts=frozenset({TimeCast.NUMBER, TimeCast.MICROS, TimeCast.MICROS_TO_NANOS, TimeCast.NANOS}),
    # decimal window arithmetic stays Spark's: DuckDB casts a double time to DECIMAL through a double product
    # (1.005 -> 1.004999…) where Spark's cast is exact; the windows' division is exact in both (`sql.windows`)
    arithmetic=frozenset({Arithmetic.INTEGER}),
    bounds=frozenset({Bounds.INTEGER, Bounds.TIMESTAMP, Bounds.TIMESTAMP_NS}),
    strategies=frozenset({Strategy.LOCAL}),
    with_rows=False,
    ids_from_order=False,
    column_types=frozenset({"bigint", "int", "double", "string", "boolean", "timestamp", "timestamp(ns)"}),
    named_zones=False,
    expressions=False,
    max_bytes=MAX_BYTES,
)
