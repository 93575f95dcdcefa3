"""The kernels' spec, derived from the physical plan by one pure function:
every field the workers receive is a field of the plan `--explain` prints."""

from __future__ import annotations

from cetql.base.options import MAX_SHARED_CELLS
from cetql.kernels import spec as K
from cetql.planner.physical.plan import Aggregate, Detect, PhysicalPlan


def kernel_spec(p: PhysicalPlan) -> K.DetectSpec | K.AggregateSpec:
    n, w, part, root = p.names, p.windows, p.partition, p.root
    columns = K.Columns(
        group=part.group,
        time=n.time,
        id=n.id,
        row=n.row if isinstance(root, Detect) and root.with_rows else None,
        block=w.block,
        window_lo=n.window_lo if w.block else None,
        window_hi=n.window_hi if w.block else None,
    )
    context = K.Context(p.scan.time_kind.value, w.length, w.slide, tuple(k.attr for k in part.keys))
    state_keys = tuple(K.StateKey(k.state, k.column) for k in part.state_keys)
    if isinstance(root, Detect):
        return K.DetectSpec(
            columns=columns,
            template=root.template,
            trend_set=root.trend_set,
            context=context,
            max_trends=root.max_trends,
            max_edges=root.max_edges,
            batch_events=root.batch_events,
            shared_graph=root.shared_graph,
            state_keys=state_keys,
            compiled=root.compiled,
        )
    assert isinstance(root, Aggregate)
    outputs = tuple(k for k in part.keys if k.output is not None)
    return K.AggregateSpec(
        columns=columns,
        template=root.template,
        targets=root.targets,
        trend_set=root.trend_set,
        context=context,
        algorithm=root.algorithm,
        complete=root.complete,
        kernel=root.kernel,
        approx=root.approx,
        exact=root.exact,
        output_keys=tuple(k.column for k in outputs),
        output_names=tuple(k.output for k in outputs),
        shared_subkeys=tuple(k.column for k in part.subkeys),
        state_keys=state_keys,
        propagate=root.propagate,
        max_shared_cells=MAX_SHARED_CELLS,
        compiled=root.compiled,
    )
