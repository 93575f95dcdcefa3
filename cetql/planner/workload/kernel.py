"""The workers' spec of a shared exchange, derived from the workload plan
by one pure function, as `physical.kernel` derives one query's."""

from __future__ import annotations

from cetql.kernels import spec as K
from cetql.kernels.workload_spec import WorkloadSpec
from cetql.planner.physical.plan import Detect
from cetql.planner.workload.plan import Exchange, WorkloadPlan


def workload_spec(w: WorkloadPlan, ex: Exchange) -> WorkloadSpec:
    p = w.plan(ex.queries[0])
    n, win = p.names, p.windows
    rows = any(isinstance(w.plan(i).root, Detect) and w.plan(i).root.with_rows for i in ex.queries)
    columns = K.Columns(group=p.partition.group, time=n.time, id=n.id, row=n.row if rows else None, block=win.block,
                        window_lo=n.window_lo if win.block else None, window_hi=n.window_hi if win.block else None)  # fmt: skip
    return WorkloadSpec(columns, ex.members, ex.trees, ex.graphs, query=n.prefix + "query")
