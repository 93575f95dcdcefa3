"""The kernel input's columns put back before the kernel, where an engine
moved each value once (`sql.columns`): a column that is another's
expression is the same array under its own name, a mask true for every
event an array of trues."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa


def restore(order: list[str], same: dict[str, str], constant: tuple[str, ...]) -> Callable:
    """batches → the same batches with every column of `order`, in order."""

    def put_back(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            trues = pa.repeat(pa.scalar(True), b.num_rows) if constant else None
            arrays = [trues if c in constant else b.column(same.get(c, c)) for c in order]
            yield pa.RecordBatch.from_arrays(arrays, names=order)

    return put_back


def restored_fields(schema: pa.Schema, order: list[str], same: dict[str, str], constant: tuple[str, ...]) -> pa.Schema:
    """The schema of `restore`'s batches, from the schema of those it is given."""
    fields = []
    for c in order:
        if c in constant:
            fields.append(pa.field(c, pa.bool_(), nullable=False))
        else:
            fields.append(schema.field(same.get(c, c)).with_name(c))
    return pa.schema(fields)
