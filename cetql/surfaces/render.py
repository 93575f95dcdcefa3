"""Printing results people (and programs) can read.

    table  on a terminal: the first rows, sorted by window, group and first
           event, each trend shown as the chain of its events' attribute
           values (`acct23 → acct04 → acct15` for kiting), and a summary line
    csv    when not on a terminal (or asked): every row (unless --limit
           says otherwise), a header, lists joined with `;`, lines ending
           in `\n`
    json   JSON lines

The summary (trends, distinct trends across windows, by length) goes under
the table, or to standard error for csv/json so standard output stays data;
it says when rows were left out.  Rows are streamed, never collected whole.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys
from decimal import Decimal

from cetql.base.errors import UsageError
from cetql.base.words import did_you_mean
from cetql.planner.logical.plan import Detect
from cetql.planner.semantics import ir

# ---------------------------------------------------------------- chains


def default_chain(plan) -> tuple[str, tuple[str, ...]] | None:
    """How to show a trend by default, from its predicates: ("link", (L, H))
    for an `E+` whose step is next.L = prev.H (each event links the previous
    one's H to its own: show e0.L → e0.H → e1.H → …), else ("values", attrs)
    for the attributes the edge and cross predicates read."""
    root = plan.root
    if not isinstance(root, Detect):
        return None
    edges = [p for tp in root.transitions for p in tp.predicates]
    if root.template.single_kleene is not None:
        links = [p for p in edges if p.op == ir.Op.EQUAL and isinstance(p.lval, ir.Ref) and isinstance(p.h, ir.Ref)
                 and p.lval.attr != p.h.attr]  # fmt: skip
        if len(links) == 1:
            return ("link", (links[0].lval.attr, links[0].h.attr))
    attrs = [r.attr for p in (*edges, *root.cross) for r in ir.refs(p.expr)]
    attrs = tuple(dict.fromkeys(attrs))
    return ("values", attrs) if attrs else None


def chain_text(style: str, attrs: tuple[str, ...], rows: list[dict]) -> str:
    if style == "link":
        first, link = attrs
        values = [rows[0].get(first)] + [r.get(link) for r in rows] if rows else []
        return " → ".join(_short(v) for v in values)
    return " → ".join("/".join(_short(r.get(a)) for a in attrs) for r in rows)


def _short(v) -> str:
    if v is None:
        return "∅"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    return str(v)


# ---------------------------------------------------------------- rows


def _sort_columns(df, kind: str) -> list:
    from pyspark.sql import functions as F

    cols = [F.col(c) for c in df.columns if c not in ("events", "length", "rows") and not c.startswith(("COUNT(", "SUM(", "MIN(", "MAX(", "AVG("))]  # noqa: E501
    if kind == "detection":
        cols = [F.col(c) for c in df.columns if c not in ("events", "length", "rows")]
        cols.append(F.element_at("events", 1))
    return cols


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return ";".join(_cell(x) for x in v)
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, Decimal):
        return format(v, "f")
    if hasattr(v, "asDict"):
        return json.dumps(_plain(v), default=str)
    return str(v)


def _plain(v):
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    return v


def summary(df, kind: str) -> str:
    """One line: how many rows/trends, distinct across windows, by length."""
    return _summary(df, kind)[0]


def _summary(df, kind: str) -> tuple[str, int]:
    """(the summary line, the number of rows)."""
    from pyspark.sql import functions as F

    if kind != "detection":
        n = df.count()
        return f"{n:,} row{'s' if n != 1 else ''}", n
    by_length = df.groupBy("length").agg(F.count(F.lit(1)).alias("n"), F.countDistinct("events").alias("d")).collect()
    total = sum(r["n"] for r in by_length)
    distinct = sum(r["d"] for r in by_length)
    parts = ", ".join(f"{r['length']}: {r['n']:,}" for r in sorted(by_length, key=lambda r: r["length"]))
    text = f"{total:,} trend{'s' if total != 1 else ''}"
    if total:
        text += f"; {distinct:,} distinct across windows; by length {parts}"
    return text, total


TABLE_BATCH = 1000  # rows per table when a terminal is asked for every row (--limit 0): never all in memory


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def print_result(execution, *, limit: int | None, fmt: str | None, show=None, stream=None) -> None:
    """Print the result on `stream` (standard output by default).

    On a terminal: a table (`fmt` None) of the first `limit` rows (None: 20;
    0: all), then the summary, which says how many were shown.  Elsewhere (a
    pipe, a file): CSV (`fmt` None) or JSON lines of every row (`limit`
    None or 0; a positive `limit` cuts, and the summary on standard error
    says so).  Rows are streamed from Spark (`toLocalIterator`, or bounded
    by `limit`), never collected whole; CSV lines end in `\n`."""
    stream = stream if stream is not None else sys.stdout
    df = execution.dataframe
    kind = execution.plan.kind.value
    terminal = _isatty(stream)
    if fmt in (None, "parquet"):
        fmt = "table" if terminal else "csv"
    if limit is None:
        limit = 20 if terminal else 0
    ordered = df.orderBy(*_sort_columns(df, kind))
    chosen = ordered.limit(limit) if limit else ordered
    if fmt == "table":
        chain = None
        if kind == "detection":
            chain = ("values", tuple(show)) if show else default_chain(execution.plan.logical)
        _print_tables(execution, df, chosen, limit, kind, chain, stream)
        return
    columns = df.columns
    written = 0
    if fmt == "csv":
        w = csv.writer(stream, lineterminator="\n")
        w.writerow(columns)
        for r in chosen.toLocalIterator():
            w.writerow([_cell(r[c]) for c in columns])
            written += 1
    else:
        for r in chosen.toLocalIterator():
            stream.write(json.dumps({c: _plain(r[c]) for c in columns}, default=str) + "\n")
            written += 1
    stream.flush()
    line, total = _summary(df, kind)
    print(line + (f" (first {written:,} written, as --limit {limit} asks)" if written < total else ""), file=sys.stderr)


def _print_tables(execution, df, chosen, limit: int, kind: str, chain, stream) -> None:
    from rich.console import Console

    console = Console(file=stream, soft_wrap=False, highlight=False)
    if limit:  # at most `limit` rows: one table
        rows = chosen.collect()
        line, total = _summary(df, kind)
        chains = _chains(execution, rows, chain) if chain is not None and rows else {}
        console.print(_table(df, rows, chains))
        console.print(line + (f" (first {len(rows):,} shown)" if len(rows) < total else ""))
        return
    batch: list = []
    printed = False
    for r in chosen.toLocalIterator():
        batch.append(r)
        if len(batch) == TABLE_BATCH:
            console.print(_table(df, batch, _chains(execution, batch, chain) if chain is not None else {}))
            batch, printed = [], True
    if batch or not printed:  # the last rows, or the header of an empty result
        console.print(_table(df, batch, _chains(execution, batch, chain) if chain is not None and batch else {}))
    console.print(_summary(df, kind)[0])


def _table(df, rows, chains: dict):
    from rich.table import Table

    table = Table(show_lines=False)
    columns = [c for c in df.columns if c != "rows"]
    if chains:
        columns = [c for c in columns if c != "events"] + ["trend"]
    for c in columns:
        table.add_column(c, overflow="fold", justify="right" if c == "length" else "left")
    if "rows" in df.columns:
        table.add_column("rows")
    for r in rows:
        cells = []
        for c in columns:
            if c == "trend":
                cells.append(chains.get(tuple(r["events"]), _cell(r["events"])))
            elif c == "events":
                cells.append("[" + ", ".join(str(x) for x in r[c]) + "]")
            else:
                cells.append(_cell(r[c]))
        if "rows" in df.columns:
            cells.append(_rows_table(r["rows"]))
        table.add_row(*cells)
    return table


def _rows_table(rows):
    from rich.table import Table

    t = Table(show_header=True, box=None, pad_edge=False)
    if not rows:
        return t
    names = list(rows[0].asDict().keys())
    for n in names:
        t.add_column(n)
    for r in rows:
        t.add_row(*(_cell(r[n]) for n in names))
    return t


def _chains(execution, rows, chain) -> dict:
    """Chains of attribute values for the trends shown: their events are
    looked up among the scanned events (one small job)."""
    style, attrs = chain
    ids = sorted({x for r in rows for x in r["events"]})
    if "rows" in rows[0].asDict():
        by_trend = {}
        for r in rows:
            by_trend[tuple(r["events"])] = chain_text(style, attrs, [x.asDict() for x in r["rows"]])
        return by_trend
    events, id_col = execution.events()
    missing = [a for a in attrs if a not in events.columns]
    if missing:
        names = [c for c in events.columns if c != id_col]
        raise UsageError(f"--show: no column {missing[0]} in the input{did_you_mean(missing[0], names)} "
                         f"(columns: {', '.join(names)})")  # fmt: skip
    found = {r[id_col]: r.asDict() for r in events.filter(events[id_col].isin(ids)).select(id_col, *attrs).collect()}
    return {
        tuple(r["events"]): chain_text(style, attrs, [found.get(i, {}) for i in r["events"]]) for r in rows
    }
