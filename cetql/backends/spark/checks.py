"""Checks of the events that the scan applies, as DataFrame → DataFrame
functions (lazy: they run inside the query's own job).

Ids given by the user (`--id-col`) identify events: every trend refers to
its events by id, so an id must be present and unique across all inputs.
A null or repeated id fails the query with the id, how many rows hold it
and what to do (`check_ids`); with --drop-invalid every row whose id is
null or repeated is dropped (no copy is kept: none can be told to be the
right one), and counted with the other dropped rows.
"""

from __future__ import annotations

from cetql.backends.inputs.refusals import ID_ADVICE, ID_REFUSED, NULL_ID, REPEATED_ID, check_id_type  # noqa: F401
from cetql.backends.spark.sql import quote


def check_present_ids(df, id_col: str, *, drop: bool, label: str | None = None):
    """`df` with its id column checked present (a stream's: no window over
    it can tell repeated ids): a null id fails the query, or with `drop` its
    row is left out."""
    from pyspark.sql import functions as F

    label = label or id_col
    ident = F.col(quote(id_col))
    check_id_type(label, dict(df.dtypes)[id_col])
    if drop:
        return df.filter(ident.isNotNull())
    why = F.lit(f"{ID_REFUSED}: {NULL_ID.format(label=label)}")
    return df.withColumn(id_col, F.when(ident.isNotNull(), ident).otherwise(F.raise_error(why).cast(dict(df.dtypes)[id_col])))


def check_ids(df, id_col: str, *, drop: bool, label: str | None = None):
    """`df` with its id column checked: present and unique.  Without `drop`
    a null or repeated id fails the query (`raise_error`, message starting
    with ID_REFUSED); with `drop` those rows are left out.  `label` is the
    column's name as the user wrote it (default: `id_col`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    label = label or id_col
    ident = F.col(quote(id_col))
    check_id_type(label, dict(df.dtypes)[id_col])
    tmp = f"{id_col}__n"  # the rows of each id, counted once (written three times below, Spark counts it three times)
    df = df.withColumn(tmp, F.count(F.lit(1)).over(Window.partitionBy(ident)))
    n = F.col(quote(tmp))
    if drop:
        return df.filter(ident.isNotNull() & (n == 1)).drop(tmp)
    before, between, after = (x.format(label=label) for x in REPEATED_ID)
    why = F.when(ident.isNull(), F.lit(f"{ID_REFUSED}: {NULL_ID.format(label=label)}")).when(
        n > 1,
        F.concat(F.lit(f"{ID_REFUSED}: {before}"), ident.cast("string"), F.lit(between), n.cast("string"),
                 F.lit(after)),  # fmt: skip
    )
    why = F.concat(why, F.lit(ID_ADVICE))
    dtype = df.schema[id_col].dataType
    checked = F.when(ident.isNotNull() & (n == 1), ident).otherwise(F.raise_error(why).cast(dtype))
    return df.withColumn(id_col, checked).drop(tmp)
