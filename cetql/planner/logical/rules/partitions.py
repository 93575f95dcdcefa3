"""How many Spark partitions the kernels run in: one task each, so enough
to keep every task slot of the session busy, and the same however the
session was started (a session cetql did not start keeps its own shuffle
settings for everything else)."""

from __future__ import annotations

from dataclasses import replace

from cetql.planner.logical.plan import Decision
from cetql.planner.logical.rules import Draft

READS = ("options", "resources")
SETS = ("partitions",)


def apply(d: Draft) -> Draft:
    if d.options.partitions is not None:
        return replace(d, partitions=Decision(d.options.partitions, "asked for by --partitions"))
    n = max(2, 2 * d.resources.parallelism)
    return replace(d, partitions=Decision(n, f"default: twice the tasks the session runs at once "
                                          f"({d.resources.parallelism}, {d.resources.source})"))  # fmt: skip
