"""The Arrow layer of the kernels: what Spark's `mapInArrow` calls.

    detect_fn(spec)      RecordBatches sorted by (group, time, id) → trends (`detect`)
    aggregate_fn(spec)   … → one row of aggregates per group (`aggregate`)
    guard_fn(spec)       … → no row; fails as detection would past --max-trends
                         (the distributed strategy counts before it expands)
    detect_schema / aggregate_schema / guard_schema: the one definition of
    each output schema (the Spark side converts it to Spark's)

Pure pyarrow and Python: tests run these functions directly, without Spark.

How the kernels fit together, for a first read: `spec` (what a worker
receives) → `batches` (groups of a sorted table) → `parts` (equivalence
keys inside a group) → `template` (a group's events against the pattern:
nodes, predicates, negations, GRETA's propagation) over `index` (the ABI
attribute index) and `compare` (what a comparison means) → detection:
`graph` (nodes and successors), `walks` (paths depth first), `runs`
(several states an event) → aggregation: `greta` (vectors), `classes`
(several states an event), `kleene` (COUNT(*) of E+), `aseq` (fixed SEQ).
"""

from __future__ import annotations

from cetql.kernels import spec as K
from cetql.kernels.aggregate import aggregate_schema, aggregate_table
from cetql.kernels.batches import map_groups
from cetql.kernels.detect import detect_schema, detect_table, group_graphs, guard_schema, guard_table

__all__ = ["aggregate_fn", "aggregate_schema", "aggregate_table", "detect_fn", "detect_schema", "detect_table",
           "group_graphs", "guard_fn", "guard_schema", "guard_table"]  # fmt: skip


def detect_fn(spec: K.DetectSpec):
    """The function given to `mapInArrow` for detection."""
    return map_groups(list(spec.columns.group), lambda table: detect_table(spec, table))


def aggregate_fn(spec: K.AggregateSpec):
    """The function given to `mapInArrow` for aggregation."""
    return map_groups(list(spec.columns.group), lambda table: aggregate_table(spec, table))


def guard_fn(spec: K.DetectSpec):
    """For the distributed strategy: count each group's trends as the local
    kernel does and fail with its message past `max_trends`; yields no row."""
    return map_groups(list(spec.columns.group), lambda table: guard_table(spec, table))
