"""Detection: the kernel configuration (built on the driver from the
classified predicates) and the per-partition processor that runs it over
Arrow batches sorted by (window, partition keys, time, id).

`process_table` is pure pyarrow + Python, so tests run it without Spark; the
Spark wrapper only partitions, sorts and calls it through `mapInArrow`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from cetql import ast as A

from . import kernel as K
from .batches import group_starts, map_groups
from .exprs import to_python
from .sources import ID, TIME, WINDOW

KEY = "__k{}"
LVAL, HVAL = "__l{}", "__h{}"
MASK = "__m_{}"
ATTR = "__a_{}"
ROW = "__row"


@dataclass
class DetectConfig:
    mode: str  # "kleene" or "generic"
    trend_set: str
    keys: list[str]  # internal key columns (after WINDOW)
    params: dict
    # kleene mode
    equal: list[tuple[str, str]] = field(default_factory=list)  # (lval col, h col)
    ranges: list[tuple[str, str, str]] = field(default_factory=list)  # (lval col, op, h col)
    others: list[tuple[A.Expr, dict]] = field(default_factory=list)  # (expr, roles)
    # generic mode
    positions: dict[str, str] = field(default_factory=dict)  # position -> mask column
    start: list[str] = field(default_factory=list)
    end: list[str] = field(default_factory=list)
    follow: dict[str, list[str]] = field(default_factory=dict)
    kleene: list[str] = field(default_factory=list)
    edge: dict[tuple[str, str], list[tuple[A.Expr, dict]]] = field(default_factory=dict)
    cross: list[tuple[tuple[str, ...], A.Expr, dict]] = field(
        default_factory=list
    )  # (vars, expr, var-as-written -> var)
    attrs: list[str] = field(default_factory=list)  # attributes read by Python-side predicates
    with_rows: bool = False


class _Cols:
    """`env[role][attr]` access into column lists, without building rows."""

    __slots__ = ("cols", "i")

    def __init__(self, cols, i):
        self.cols, self.i = cols, i

    def __getitem__(self, attr):
        return self.cols[attr][self.i]


def _pair_fn(expr, roles, cols, params):
    f = to_python(expr, lambda a: (roles[(a.var, a.index)], a.attr), params)

    def check(i, j):
        return f({"prev": _Cols(cols, i), "next": _Cols(cols, j)})

    return check


def _cross_fn(expr, var_of, cols, params):
    f = to_python(expr, lambda a: (var_of[a.var], a.attr), params)

    def check(binding):
        return f({v: _Cols(cols, i) for v, i in binding.items()})

    return check


def run_group(cfg: DetectConfig, times: list, cols: dict[str, list]) -> Iterator[list[int]]:
    """Trends of one (window, partition) group as lists of row offsets."""
    if cfg.mode == "kleene":
        spec = K.KleeneSpec(
            equal=[(cols[lc], cols[hc]) for lc, hc in cfg.equal],
            ranges=[(cols[lc], op, cols[hc]) for lc, op, hc in cfg.ranges],
            others=[_pair_fn(e, r, cols, cfg.params) for e, r in cfg.others],
        )
        return K.kleene_paths(times, spec, cfg.trend_set)
    spec = K.PatternSpec(
        positions={p: (lambda m: lambda i: m[i] is True)(cols[c]) for p, c in cfg.positions.items()},
        start=set(cfg.start),
        end=set(cfg.end),
        follow=cfg.follow,
        kleene=set(cfg.kleene),
        edge={k: [_pair_fn(e, r, cols, cfg.params) for e, r in v] for k, v in cfg.edge.items()},
        cross=[(vars_, _cross_fn(e, var_of, cols, cfg.params)) for vars_, e, var_of in cfg.cross],
    )
    return iter(K.generic_trends(times, spec, cfg.trend_set))


def edge_specs(preds, transitions, to_col, extra_cols: dict, python_attrs) -> dict[tuple[str, str], dict]:
    """The edge predicates of each transition p → q: an equal or range one
    gets its two sides as columns (`lval` of the next event, `h` of the
    previous one, added to `extra_cols`) for the ABI index; any other is kept
    as an expression for the kernel (its attributes reported to `python_attrs`)."""
    from .classify import EDGE, EQUAL, RANGE

    specs: dict[tuple[str, str], dict] = {}
    for p, q in transitions:
        spec = {"equal": [], "ranges": [], "others": []}
        for k, pr in enumerate(preds):
            if pr.kind != EDGE or (pr.prev_var, pr.next_var) != (p, q):
                continue
            if pr.op in (EQUAL, RANGE):
                lc, hc = LVAL.format(k), HVAL.format(k)
                extra_cols[lc] = to_col(pr.lval)
                extra_cols[hc] = to_col(pr.rval)
                if pr.op == EQUAL:
                    spec["equal"].append((lc, hc))
                else:
                    spec["ranges"].append((lc, pr.comparator, hc))
            else:
                spec["others"].append((pr.expr, pr.roles))
                python_attrs(pr.expr)
        specs[(p, q)] = spec
    return specs


def _needed_columns(cfg: DetectConfig) -> list[str]:
    names = [c for pair in cfg.equal for c in pair] + [c for lc, _, hc in cfg.ranges for c in (lc, hc)]
    names += list(cfg.positions.values()) + [ATTR.format(a) for a in cfg.attrs]
    return list(dict.fromkeys(names))


def output_schema(cfg: DetectConfig, table_schema: pa.Schema) -> pa.Schema:
    fields = [pa.field(WINDOW, pa.int64())]
    fields += [table_schema.field(k) for k in cfg.keys]
    fields += [pa.field("events", pa.list_(table_schema.field(ID).type)), pa.field("length", pa.int32())]
    if cfg.with_rows:
        fields.append(pa.field("rows", pa.list_(table_schema.field(ROW).type)))
    return pa.schema(fields)


def process_table(cfg: DetectConfig, table: pa.Table, batch_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """Run the kernel over every complete group of a sorted table."""
    n = table.num_rows
    if n == 0:
        return
    starts = group_starts(table, [WINDOW, *cfg.keys])
    times = table.column(TIME).to_pylist()
    # Attribute columns keyed by the name predicates use.
    cols = {c: table.column(c).to_pylist() for c in _needed_columns(cfg)}
    for a in cfg.attrs:
        cols[a] = cols[ATTR.format(a)]
    schema = output_schema(cfg, table.schema)

    out_group: list[int] = []  # row offset of each trend's group start (for keys)
    lengths: list[int] = []
    values: list[int] = []  # the trends' events, as offsets within their group
    for start, end in zip(starts, [*starts[1:], n]):
        g_times = times[start:end]
        g_cols = {k: v[start:end] for k, v in cols.items()}
        for path in run_group(cfg, g_times, g_cols):
            out_group.append(start)
            lengths.append(len(path))
            values.extend(path)
            if len(out_group) >= batch_rows:
                yield _batch(cfg, table, schema, out_group, lengths, values)
                out_group, lengths, values = [], [], []
    if out_group:
        yield _batch(cfg, table, schema, out_group, lengths, values)


def _batch(cfg, table, schema, group_rows, lengths, values) -> pa.RecordBatch:
    import numpy as np

    starts = np.asarray(group_rows, dtype=np.int64)
    counts = np.asarray(lengths, dtype=np.int32)
    offs = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    rows = pa.array(np.asarray(values, dtype=np.int64) + np.repeat(starts, counts))  # group offset -> table row
    take_groups = pa.array(starts)
    arrays = [table.column(WINDOW).take(take_groups)]
    arrays += [table.column(k).take(take_groups) for k in cfg.keys]
    arrays.append(pa.ListArray.from_arrays(offs, table.column(ID).take(rows).combine_chunks()))
    arrays.append(pa.array(counts))
    if cfg.with_rows:
        arrays.append(pa.ListArray.from_arrays(offs, table.column(ROW).take(rows).combine_chunks()))
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def map_partition(cfg: DetectConfig):
    """The function given to `mapInArrow`."""
    return map_groups([WINDOW, *cfg.keys], lambda table: process_table(cfg, table))
