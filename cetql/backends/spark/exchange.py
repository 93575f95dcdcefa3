"""The exchange before the kernels: rows hash-partitioned by their group and
sorted within each partition, as every kernel receives them."""

from __future__ import annotations

from pyspark.sql import DataFrame

from cetql.planner.physical.plan import PhysicalPlan


def sorted_groups(plan: PhysicalPlan, df: DataFrame) -> DataFrame:
    """The kernel's input: hash-partitioned by group into the plan's count of
    partitions (one kernel task each), each sorted by group, time, id."""
    group = list(plan.partition.group)
    return (df.repartition(plan.partition.partitions, *group)
            .sortWithinPartitions(*group, plan.names.time, plan.names.id))  # fmt: skip
